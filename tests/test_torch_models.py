"""The models of issues 11 and 12 (`tests/torch_models.py`) trained as a user would: each training step
compiled for metal and wgpu leaves no backward aten op in PyTorch (nothing at all, in fact) and gives
eager's gradients, dropout on; the graphs they hand the backend hold the backward ops the issues name.
Also the forward ops these models and transformers' needed mapped (masked_fill, bitwise_not, logical_not, arange,
tril / triu, constant_pad_nd, _safe_softmax) and non-finite constants, against torch's kernels."""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

import egraph_lower as el  # noqa: E402
import egraph_lower.torch as elt  # noqa: E402
from egraph_lower.ops import BACKWARD_OPS  # noqa: E402
from torch_models import CASES, Case, Gpt2Block, hf_cases, recorded_graphs, step_of  # noqa: E402
from torch_steps import train  # noqa: E402

pytestmark = pytest.mark.usefixtures("fresh_dynamo")  # each test compiles anew

GPT2_GRAPH = Path(__file__).parent / "data" / "gpt2_block_backward.json"
REGENERATE = ("the import changed: regenerate the example with `cd tests && python -c \"import dataclasses; "
              "from torch_models import CASES, recorded_graphs; g = recorded_graphs(CASES['gpt2'])['backward0']; "
              "open('data/gpt2_block_backward.json', 'w').write(dataclasses.replace(g, name='gpt2_block_backward')"
              ".to_json())\"`")


def backward_ops_left(be: Any) -> dict[str, int]:
    """The aten backward ops that ran in PyTorch: `*_backward` and `*_backward_data` (the gradient kernels
    of the issues' tables: threshold, gelu, layer / batch norm, softmax, NLL, embedding, dropout,
    convolution, pooling, slice, select ...)."""
    return {op: n for op, n in be.unlowered_ops.items() if "_backward" in op}


def train_both(case: Case, target: str, keep: tuple[str, ...] = ()) -> Any:
    """Two training steps of `case` compiled for `target` and two in eager, from the same weights and seeds;
    the backend, its recorded graphs and the backend's warnings. Asserts the gradients agree."""
    eager, compiled = case.model(), case.model()
    batch = case.data()
    record: list[el.Graph] = []
    be = elt.backend(target, record=record, keep_in_pytorch=keep)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = train(compiled, step_of(case, compiled, lambda f: torch.compile(f, backend=be, dynamic=False)),
                    batch, None)
    want = train(eager, step_of(case, eager), batch, None)
    names = [n for n, _ in eager.named_parameters()]
    assert len(got) == len(want) == 2
    for step, (g_step, w_step) in enumerate(zip(got, want)):
        assert len(g_step) == len(w_step) == len(names)
        for pname, g, w in zip(names, g_step, w_step):
            torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-5, msg=lambda m: f"step {step}, {pname}: {m}")
    return be, record, [str(w.message) for w in caught if "egraph_lower" in str(w.message)]


def assert_runnable(record: list[el.Graph], target: str) -> None:
    """Every node of the lowered graphs runs on `target`: no backward op it lacks is left in them."""
    backend = el.load_backend(target)
    for graph in record:
        assert all(backend.runs_node(n) for n in graph.nodes), graph.name
        assert not [n.op for n in graph.nodes if n.op in BACKWARD_OPS and not backend.runs(n.op)], graph.name


@pytest.mark.parametrize("target", ["metal", "wgpu"])
@pytest.mark.parametrize("name", list(CASES))
def test_training_steps_leave_no_backward_op_and_match_eager(name: str, target: str) -> None:
    be, record, warned = train_both(CASES[name], target)
    assert backward_ops_left(be) == {}, be.summary()
    assert be.unlowered_ops == {}, be.summary()
    assert not warned, be.summary()
    assert {g.kind: g.status for g in be.graphs} == {"forward": "lowered", "backward": "lowered"}, be.summary()
    assert all(g.replaced == 1 for g in be.graphs), be.summary()  # each runs as its lowered graph
    assert_runnable(record, target)


@pytest.mark.parametrize("target", ["metal", "wgpu"])
def test_a_forward_split_around_an_unmapped_op_still_runs_its_dropouts_lowered(target: str) -> None:
    """The causal mask made through an op kept in PyTorch (flip, twice: the same mask; flip is mapped now,
    so it is kept as an unmapped op is) runs in PyTorch, and the pieces of the forward on either side,
    each with dropouts, run lowered."""
    case = dataclasses.replace(CASES["gpt2"], make=lambda: Gpt2Block(masked=lambda c: ~c.flip(0).flip(0)))
    be, record, warned = train_both(case, target, keep=("aten.flip",))
    assert be.unlowered_ops == {"aten.flip.default": 2}, be.summary()
    assert [w for w in warned if "flip" not in w] == [], be.summary()
    forward, backward = be.graphs
    assert (forward.status, backward.status) == ("partly lowered", "lowered"), be.summary()
    assert forward.replaced == 2 and backward.replaced == 1, be.summary()
    assert_runnable(record, target)


@pytest.mark.parametrize("target", ["metal", "wgpu"])
def test_a_minus_infinity_mask_keeps_the_graphs_whole(target: str) -> None:
    """nanoGPT fills the causal mask with -inf, which the JSON cannot hold: it is imported as Log(0)."""
    case = dataclasses.replace(CASES["gpt2"], make=lambda: Gpt2Block(fill=float("-inf")))
    be, record, warned = train_both(case, target)
    assert be.unlowered_ops == {} and warned == [], be.summary()
    assert [g.status for g in be.graphs] == ["lowered", "lowered"], be.summary()
    assert_runnable(record, target)


@pytest.mark.parametrize(("name", "target"), [("hf_gpt2", "metal"), ("hf_bert", "wgpu")])
def test_transformers_models_train_with_dropout_as_in_eager(name: str, target: str) -> None:
    """Each model on one target (tracing them is most of a test's time; tests/test_torch_transformers.py
    has them without dropout on more)."""
    cases = {c.name: c for c in hf_cases()}
    if not cases:
        pytest.skip("transformers is not installed")
    be, record, warned = train_both(cases[name], target)
    assert be.unlowered_ops == {} and warned == [], be.summary()  # GPT-2's -inf causal mask too: Log(0)
    assert all(g.replaced >= 1 for g in be.graphs), be.summary()
    assert_runnable(record, target)


# the format's backward ops each model's backward graph must hold: the issues' op families
EXPECTED_BACKWARD = {
    "mlp": {"LayerNormBackwardInput", "LayerNormBackwardWeight", "DropoutBackward", "ActivationBackward",
            "LogSoftmaxBackward", "NllLossBackward"},
    "gpt2": {"EmbeddingBackward", "LayerNormBackwardInput", "SoftmaxBackward", "DropoutBackward",
             "ActivationBackward", "LogSoftmaxBackward", "NllLossBackward", "SliceBackward"},
    "bert": {"EmbeddingBackward", "LayerNormBackwardInput", "SoftmaxBackward", "DropoutBackward",
             "ActivationBackward", "LogSoftmaxBackward", "NllLossBackward", "SliceBackward"},
    "llama": {"EmbeddingBackward", "SoftmaxBackward", "ActivationBackward", "LogSoftmaxBackward",
              "NllLossBackward", "SliceBackward"},
    "cnn": {"Conv2dBackwardInput", "Conv2dBackwardWeight", "BatchNormTrainingBackwardInput", "ReluBackward",
            "MaxPool2dBackward", "LogSoftmaxBackward", "NllLossBackward"},
    "cnn_eval": {"Conv2dBackwardInput", "Conv2dBackwardWeight", "BatchNormInferenceBackwardInput", "ReluBackward",
                 "MaxPool2dBackward", "LogSoftmaxBackward", "NllLossBackward"},
    "resnet": {"Conv2dBackwardInput", "Conv2dBackwardWeight", "BatchNormTrainingBackwardInput", "ReluBackward",
               "AdaptiveAvgPool2dBackward", "LogSoftmaxBackward", "NllLossBackward"},
    "vit": {"Conv2dBackwardWeight", "LayerNormBackwardInput", "AttentionBackwardQuery", "AttentionBackwardKey",
            "AttentionBackwardValue", "ActivationBackward", "SliceBackward", "LogSoftmaxBackward", "NllLossBackward"},
}


# and the forward ops of their forward graphs
EXPECTED_FORWARD = {"mlp": {"Dropout", "LayerNorm"}, "gpt2": {"Embedding", "Iota", "Softmax", "Dropout", "Where"},
                    "bert": {"Embedding", "Iota", "Softmax", "Dropout", "Where"},
                    "llama": {"Embedding", "Softmax", "Concat", "Slice", "Where"}, "cnn": {"BatchNormTraining"},
                    "cnn_eval": {"BatchNormInference"}, "resnet": {"BatchNormTraining", "AdaptiveAvgPool2d"},
                    "vit": {"Conv2d", "Concat", "Attention", "AttentionLogSumExp", "LayerNorm"}}


@pytest.mark.parametrize("name", list(CASES))
def test_the_models_hand_the_backend_the_issues_ops(name: str) -> None:
    graphs = recorded_graphs(CASES[name])  # on cpu: the graphs as imported
    assert set(graphs) == {"forward0", "backward0"}
    forward, backward = graphs["forward0"].op_counts(), graphs["backward0"].op_counts()
    assert EXPECTED_FORWARD[name] <= set(forward), sorted(forward)
    assert EXPECTED_BACKWARD[name] <= set(backward), sorted(backward)
    if name == "gpt2":  # the shipped example graph is still what the model's step gives
        assert el.load_graph(str(GPT2_GRAPH)).op_counts() == backward, REGENERATE


# ---- the forward ops the models needed ------------------------------------------------------------------

A = torch.ops.aten
_G = torch.Generator().manual_seed(5)


def _r(*shape: int) -> Any:
    return torch.randn(*shape, generator=_G)


def _mask(*shape: int) -> Any:
    return torch.rand(*shape, generator=_G) < 0.5


def _rows_with_neg_inf() -> Any:
    """Rows of logits: ordinary, partly -inf, all -inf (softmax: nan, _safe_softmax: 0), with +inf and nan."""
    x = _r(5, 4)
    x[1, :2] = float("-inf")
    x[2] = float("-inf")
    x[3, 1] = float("inf")
    x[4, 0] = float("nan")
    return x


class _NonFinite(torch.nn.Module):
    """A module constant with every kind of non-finite value (an additive mask, as models keep one)."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("bias", torch.tensor([[0.0, float("-inf"), 2.5], [float("inf"), float("nan"), -0.0]]))

    def forward(self, x: Any) -> Any:
        return x + self.bias


def _imported(fn: Callable[..., Any], *args: Any) -> Any:
    from torch.fx.experimental.proxy_tensor import make_fx

    gm = make_fx(fn)(*args)
    return gm, elt.import_graph(gm, args)


@pytest.mark.parametrize(("fn", "args", "ops"), [
    (lambda x, m: x.masked_fill(m, -3.5), (_r(2, 3, 4), _mask(3, 1)), {"Where"}),
    (lambda x, m: x.masked_fill(m, float("-inf")), (_r(3), _mask(3)), {"Where", "Activation"}),
    (lambda x, m, v: x.masked_fill(m, v), (_r(2, 3), _mask(2, 3), torch.tensor(7.0)), {"Where"}),
    (lambda x, m: x.half().masked_fill(m, torch.finfo(torch.float16).min), (_r(4, 4), _mask(4, 4)),
     {"Where"}),
    (lambda m: ~m, (_mask(3, 4),), {"Compare"}),
    (lambda i: ~i, (torch.tensor([0, 5, -7, 2**62], dtype=torch.int64),), {"Binary"}),
    (lambda i: ~i, (torch.tensor([0, -1, 3], dtype=torch.int32),), {"Binary"}),
    (lambda x: torch.logical_not(x), (torch.tensor([0.0, -0.0, 2.5, float("nan")]),), {"Compare"}),
    (lambda x: torch.arange(x.shape[0]) + x, (torch.zeros(5, dtype=torch.int64),), {"Iota"}),
    (lambda x: torch.arange(3, 17, 4) * x, (torch.ones(4, dtype=torch.int64),), {"Iota"}),
    (lambda x: torch.arange(-2, 6, dtype=torch.float32) + x, (torch.zeros(8),), {"Iota"}),
    (lambda x: torch.arange(10, 0, -3, dtype=torch.int32) + x, (torch.zeros(4, dtype=torch.int32),), {"Iota"}),
    (lambda x: torch.tril(x), (_r(2, 4, 5),), {"Iota", "Where"}),
    (lambda x: torch.tril(x, -1), (_r(5, 3),), {"Iota", "Where"}),
    (lambda x: torch.triu(x, 2), (_mask(4, 6),), {"Iota", "Where"}),
    (lambda x: torch.where(torch.tril(torch.ones(x.shape[0], x.shape[0], dtype=torch.bool)), x, -1.0),
     (_r(5, 5),), {"Iota"}),
    (lambda x: torch.nn.functional.pad(x, [0, 1], value=-100), (torch.tensor([[3, 1], [0, 2]]),), {"Pad", "Where"}),
    (lambda x: torch.nn.functional.pad(x, [1, 2, 0, 3]), (_r(2, 3, 4),), {"Pad"}),
    (lambda x: torch.nn.functional.pad(x, [2, 0, 1, 1], value=0.5), (_r(3, 2),), {"Pad", "Where"}),
    (lambda x: A._safe_softmax(x, -1), (_rows_with_neg_inf(),), {"SafeSoftmax"}),
    (lambda x: A._safe_softmax(x, 0, torch.float32), (_rows_with_neg_inf().half().t(),), {"SafeSoftmax"}),
    # non-finite constants, which the JSON cannot hold: -inf is Log(0), +inf Neg(Log(0)), nan Log(-1)
    (lambda x: torch.full_like(x, float("inf")), (_r(3),), {"Activation"}),
    (lambda x: torch.full_like(x, float("-inf"), dtype=torch.float16) * x.half(), (_r(2, 3),), {"Activation"}),
    (lambda x: x.masked_fill(x > 0, float("nan")), (_r(4),), {"Activation", "Where"}),
    (lambda x: x.masked_fill(x > 0, float("-inf")).softmax(-1), (_r(3, 4),), {"Activation", "Softmax"}),
    (_NonFinite(), (_r(2, 3),), {"Activation", "Where"}),
])
def test_forward_masks_ranges_and_constants_import_to_format_ops_and_round_trip(fn: Callable[..., Any],
                                                                               args: tuple[Any, ...],
                                                                               ops: set[str]) -> None:
    gm, imported = _imported(fn, *args)
    assert ops <= set(imported.graph.op_counts())
    got = elt.export_graph(imported.graph, imported.signature)(*args)  # one tensor, as gm returns
    want = gm(*args)
    assert got.dtype == want.dtype
    torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True)
    feeds = {name: a.numpy() for name, a in zip(imported.signature.inputs, args)}
    evaluated = el.evaluate(imported.graph, feeds)[0]  # the reference evaluator rounds once from float64
    torch.testing.assert_close(torch.from_numpy(evaluated), want, equal_nan=True)


@pytest.mark.parametrize(("fn", "args", "why"), [
    (lambda x: torch.arange(0, 1, 0.25) + x, (torch.zeros(4),), "fractional"),
])
def test_what_the_format_cannot_hold_is_refused_with_its_reason(fn: Callable[..., Any], args: tuple[Any, ...],
                                                                why: str) -> None:
    with pytest.raises(elt.UnsupportedOp, match=why):
        _imported(fn, *args)
