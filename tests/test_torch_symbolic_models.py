"""transformers' GPT-2 and BERT and a LLaMA-like block train over varied sequence lengths and batch sizes,
compiled as users compile them (dynamo's default, and `dynamic=True`), every graph lowered per shape.

Random weights from small configs (nothing downloaded), dropout as shipped (the generator is seeded
before each step: `torch_models.step_of`). `strict=True`: an unmapped op, or any failure, raises, so
nothing runs in PyTorch, because of its sizes or otherwise. Six lengths and two batch sizes, as issue
25 asks (`python bench/torch_compile.py --dynamic` times such a loop).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

torch = pytest.importorskip("torch")

import egraph_lower.torch as elt  # noqa: E402
from torch_models import CASES, Case, hf_cases, step_of  # noqa: E402

pytestmark = pytest.mark.usefixtures("fresh_dynamo")

SHAPES = ((2, 8), (2, 12), (3, 10), (3, 6), (2, 14), (3, 9))  # (batch, length): the first static under dynamic=None


def _cases() -> dict[str, Case]:
    return {c.name: c for c in hf_cases()} | {"llama": CASES["llama"]}


def _batch(name: str, b: int, n: int, g: torch.Generator) -> tuple[Any, ...]:
    vocab = 48 if name == "llama" else 128
    ids = torch.randint(0, vocab, (b, n), generator=g)
    return (ids, torch.randint(0, 3, (b,), generator=g)) if name == "hf_bert" else (ids,)


@pytest.mark.parametrize("dynamic", [None, True], ids=["default", "dynamic"])
@pytest.mark.parametrize(("name", "target"), [("hf_gpt2", "metal"), ("hf_bert", "wgpu"), ("llama", "metal"),
                                              ("hf_gpt2", "wgpu"), ("hf_bert", "metal"), ("llama", "wgpu")])
def test_varied_lengths_train_lowered_as_eager(name: str, target: str, dynamic: bool | None) -> None:
    cases = _cases()
    if name not in cases:
        pytest.skip("transformers is not installed")
    case = cases[name]
    eager = case.model()
    compiled = copy.deepcopy(eager)
    be = elt.backend(target, strict=True)
    step = step_of(case, compiled, lambda f: torch.compile(f, backend=be, dynamic=dynamic))
    want = step_of(case, eager)
    g = torch.Generator().manual_seed(3)
    for b, n in SHAPES:
        batch = _batch(name, b, n, g)
        eager.zero_grad()
        compiled.zero_grad()
        torch.testing.assert_close(step(batch), want(batch), rtol=1e-4, atol=1e-5)
        for (pname, p), q in zip(compiled.named_parameters(), eager.parameters()):
            if q.grad is None:
                assert p.grad is None, pname
            else:
                torch.testing.assert_close(p.grad, q.grad, rtol=1e-3, atol=1e-5,
                                           msg=lambda m: f"{pname} at {b}x{n}: {m}")  # noqa: B023
    summary = be.summary()
    assert "symbolic shapes" not in summary and not be.unlowered_ops, summary
    shapes = [r for r in be.graphs if r.of is not None]
    met = len(SHAPES) if dynamic else len(SHAPES) - 1
    assert len(shapes) == 2 * met, summary  # a forward and a backward per shape met
    assert all(r.status == "lowered" and r.replaced and not r.errors for r in be.graphs if r.status != "per shape"), \
        summary
    lengths = {n for _, n in SHAPES[len(SHAPES) - met:]}
    assert all(r.sizes and lengths & set(r.sizes.values()) for r in shapes), summary  # named by its sizes
