"""Issue 20's convolution and pooling models (`tests/torch_models.py` CONVPOOL_CASES) trained as a user
would, compiled for metal and wgpu: nothing left in PyTorch but the ops each case names (none now: a
UNet, a 1-D audio CNN, a multi-loss detection head, a diffusion-style up block), and eager's gradients
(rtol 1e-4, atol 1e-5, float32, two steps)."""

from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch")

import egraph_lower as el  # noqa: E402
import egraph_lower.torch as elt  # noqa: E402
from egraph_lower.ops import BACKWARD_OPS  # noqa: E402
from torch_models import CONVPOOL_CASES, step_of  # noqa: E402
from torch_steps import train  # noqa: E402

pytestmark = pytest.mark.usefixtures("fresh_dynamo")


@pytest.mark.parametrize("target", ["metal", "wgpu"])
@pytest.mark.parametrize("name", list(CONVPOOL_CASES))
def test_convpool_model_steps_match_eager_with_nothing_else_in_pytorch(name: str, target: str) -> None:
    case, keep = CONVPOOL_CASES[name]
    eager, compiled = case.model(), case.model()
    batch = case.data()
    record: list[el.Graph] = []
    be = elt.backend(target, record=record, keep_in_pytorch=keep)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the kept ops' notices
        got = train(compiled, step_of(case, compiled, lambda f: torch.compile(f, backend=be, dynamic=False)),
                    batch, None)
    want = train(eager, step_of(case, eager), batch, None)
    names = [n for n, _ in eager.named_parameters()]
    for step, (g_step, w_step) in enumerate(zip(got, want)):
        for pname, g, w in zip(names, g_step, w_step):
            torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-5, msg=lambda m: f"step {step}, {pname}: {m}")
    left = {op.split(".")[1] if op.startswith("aten.") else op for op in be.unlowered_ops}
    assert left <= set(keep), be.summary()
    assert all(not g.errors for g in be.graphs) and all(g.lowered for g in be.graphs), be.summary()
    backend = el.load_backend(target)
    for graph in record:
        assert all(backend.runs_node(n) for n in graph.nodes), graph.name
        assert not [n.op for n in graph.nodes if n.op in BACKWARD_OPS and not backend.runs(n.op)], graph.name
