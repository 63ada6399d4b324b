"""The dropout / index / NLL / embedding ops against PyTorch: the evaluator agrees with torch's own
kernels in float64, FX graphs round-trip through the format, and training steps compiled for metal
and wgpu leave no dropout, NLL or embedding op in PyTorch and give eager's gradients."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional

import egraph_lower as el  # noqa: E402
import egraph_lower.torch as elt  # noqa: E402
from egraph_lower.evaluate import apply  # noqa: E402

A = torch.ops.aten
REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}


def _np(t: torch.Tensor) -> np.ndarray:
    return t.detach().numpy()


def _same(got: np.ndarray, want: torch.Tensor) -> None:
    np.testing.assert_allclose(got, _np(want), rtol=1e-13, atol=1e-15)


def test_index_primitives_agree_with_torch_in_float64() -> None:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(3, 4, dtype=torch.float64, generator=g)
    idx = torch.randint(0, 4, (3, 2), generator=g)
    src = torch.randn(3, 2, dtype=torch.float64, generator=g)
    _same(apply("Gather", {"axis": 1}, [_np(x), _np(idx)], "f64"), torch.gather(x, 1, idx))
    _same(apply("ScatterAdd", {"axis": 1}, [_np(x), _np(idx), _np(src)], "f64"), torch.scatter_add(x, 1, idx, src))
    rows = torch.tensor([[2, 0], [2, 2]])
    _same(apply("Take", {"axis": 0}, [_np(x), _np(rows)], "f64"), x[rows])
    _same(apply("Iota", {"axis": 1, "dtype": "f64"}, [_np(x)], "f64"),
          torch.arange(4, dtype=torch.float64).expand(3, 4))


def test_dropout_agrees_with_native_dropout_under_its_own_mask() -> None:
    x = torch.randn(5, 6, dtype=torch.float64)
    torch.manual_seed(1)
    out, mask = A.native_dropout(x, 0.4, True)
    _same(apply("Dropout", {"scale": 1 / 0.6}, [_np(x), _np(mask)], "f64"), out)
    dy = torch.randn(5, 6, dtype=torch.float64)
    _same(apply("DropoutBackward", {"scale": 1 / 0.6}, [_np(dy), _np(mask)], "f64"),
          A.native_dropout_backward(dy, mask, 1 / 0.6))


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize(("shape", "ignore"), [((6, 4), -100), ((6, 4), 2), ((2, 4, 3, 2), 0)])
def test_nll_ops_agree_with_aten_in_float64(reduction: str, shape: tuple[int, ...], ignore: int) -> None:
    g = torch.Generator().manual_seed(2)
    logp = torch.randn(shape, dtype=torch.float64, generator=g).log_softmax(1)
    target = torch.randint(0, 4, (shape[0], *shape[2:]), generator=g)
    target.view(-1)[::3] = ignore
    weight = torch.tensor([0.1, 2.0, 30.0, 1e-3], dtype=torch.float64)
    red = REDUCTIONS[reduction]
    fwd, bwd = (A.nll_loss_forward, A.nll_loss_backward) if len(shape) == 2 else (A.nll_loss2d_forward,
                                                                                   A.nll_loss2d_backward)
    loss, total = fwd(logp, target, weight, red, ignore)
    attrs = {"reduction": reduction, "ignore_index": ignore}
    _same(apply("NllLoss", attrs, [_np(logp), _np(target), _np(weight)], "f64"), loss)
    ours_total = apply("NllLossTotalWeight", {"ignore_index": ignore}, [_np(target), _np(weight)], "f64")
    if reduction != "none":  # aten's total_weight is 0 for none (the importer maps it so)
        _same(ours_total, total)
    dy = torch.randn(loss.shape, dtype=torch.float64, generator=g)
    want = bwd(dy, logp, target, weight, red, ignore, total)
    _same(apply("NllLossBackward", attrs, [_np(logp), _np(dy), _np(target), _np(weight), ours_total], "f64"), want)


def test_nll_mean_over_no_counted_target_is_nan_as_in_torch() -> None:
    logp = torch.randn(3, 2, dtype=torch.float64).log_softmax(1)
    target = torch.full((3,), -100)
    want = F.nll_loss(logp, target)
    assert torch.isnan(want)
    assert np.isnan(apply("NllLoss", {"reduction": "mean", "ignore_index": -100},
                          [_np(logp), _np(target), np.ones(2)], "f64"))


@pytest.mark.parametrize("padding_idx", [-1, 0, 3])
def test_embedding_ops_agree_with_aten_in_float64(padding_idx: int) -> None:
    g = torch.Generator().manual_seed(3)
    weight = torch.randn(5, 3, dtype=torch.float64, generator=g)
    idx = torch.tensor([[0, 3, 3, 1], [4, 0, 0, 0]])
    _same(apply("Embedding", {}, [_np(weight), _np(idx)], "f64"), F.embedding(idx, weight))
    dy = torch.randn(2, 4, 3, dtype=torch.float64, generator=g)
    want = A.embedding_dense_backward(dy, idx, 5, padding_idx, False)
    _same(apply("EmbeddingBackward", {"num_weights": 5, "padding_idx": padding_idx}, [_np(dy), _np(idx)], "f64"),
          want)


# ---- import, export, compile ---------------------------------------------------------------------------

class Mlp(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.l1, self.drop, self.l2 = nn.Linear(6, 8), nn.Dropout(0.3), nn.Linear(8, 4)
        self.register_buffer("w", torch.tensor([0.5, 2.0, 1.0, 3.0]))

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        logits = self.l2(self.drop(torch.relu(self.l1(x))))
        return F.cross_entropy(logits, t, weight=self.w, ignore_index=1)


class Embed(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb, self.out = nn.Embedding(7, 5, padding_idx=0), nn.Linear(5, 3)

    def forward(self, i: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        logits = self.out(self.emb(i))  # [B, L, 3]
        return F.cross_entropy(logits.transpose(1, 2), t, ignore_index=-100)  # nll_loss2d's layout


def _mlp_data() -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(4)
    return torch.randn(9, 6, generator=g), torch.tensor([0, 1, 3, 2, 1, 0, 3, 3, 2])


def _embed_data() -> tuple[torch.Tensor, ...]:
    i = torch.tensor([[0, 3, 3, 6], [2, 0, 5, 5]])
    return i, torch.tensor([[1, -100, 2, 0], [2, 2, -100, 1]])


def _step(model: nn.Module, data: tuple[torch.Tensor, ...], seed: int) -> tuple[torch.Tensor, list[torch.Tensor]]:
    torch.manual_seed(seed)
    loss = model(*data)
    loss.backward()
    grads = [p.grad.clone() for p in model.parameters()]  # type: ignore[union-attr]
    model.zero_grad()
    return loss.detach(), grads


@pytest.mark.parametrize("backend", ["metal", "wgpu"])
@pytest.mark.parametrize(("make", "data"), [(Mlp, _mlp_data), (Embed, _embed_data)])
def test_training_steps_compile_whole_and_match_eager(backend: str, make, data) -> None:
    torch.manual_seed(0)
    model = make()
    inputs = data()
    want_loss, want = _step(model, inputs, seed=11)
    record: list[el.Graph] = []
    be = elt.backend(backend, strict=True, record=record)
    compiled = torch.compile(model, backend=be, dynamic=False)
    for seed in (11, 12):  # a second step: the generator is consumed as in eager
        got_loss, got = _step(compiled, inputs, seed)
        if seed == 12:
            want_loss, want = _step(model, inputs, seed)
        torch.testing.assert_close(got_loss, want_loss, rtol=1e-4, atol=1e-5)
        for g, w in zip(got, want):
            torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-5)
    assert be.unlowered_ops == {}
    assert {g.kind: g.status for g in be.graphs} == {"forward": "lowered", "backward": "lowered"}
    if make is Embed:  # the embedding's gradient: a scatter-add where the backend has one, else a MatMul
        ops = set().union(*(g.op_counts() for g in record))
        assert ("ScatterAdd" in ops) == (backend == "metal") and "EmbeddingBackward" not in ops


def test_an_fx_graph_round_trips_through_the_format() -> None:
    from torch.fx.experimental.proxy_tensor import make_fx

    def f(w, i, t, cw, dy, mask, j):
        e = A.embedding(w, i).reshape(8, 5)
        loss, total = A.nll_loss_forward(e, t, cw, 1, -100)
        g = A.nll_loss_backward(loss, e, t, cw, 1, -100, total)
        gw = A.embedding_dense_backward(g.reshape(2, 4, 5), i, 7, 3, False)
        picked = A.gather(gw, 1, j)
        spread = A.scatter_add(gw, 1, j, picked)
        return loss, total, spread, A.native_dropout_backward(dy, mask, 2.0)

    example = (torch.randn(7, 5), torch.tensor([[0, 3, 3, 6], [2, 0, 5, 5]]),
               torch.tensor([0, 2, 4, 1, 1, 0, -100, 3]), torch.rand(5), torch.randn(3, 3), torch.rand(3, 3) < 0.5,
               torch.randint(0, 5, (7, 2)))
    gm = make_fx(f)(*example)
    imported = elt.import_graph(gm, example)
    ops = imported.graph.op_counts()
    for op in ("Embedding", "NllLoss", "NllLossTotalWeight", "NllLossBackward", "EmbeddingBackward", "Gather",
               "ScatterAdd", "DropoutBackward"):
        assert op in ops
    again = el.from_json(imported.graph.to_json())
    assert again.to_json() == imported.graph.to_json()
    got = elt.export_graph(again, imported.signature)(*example)
    for a, b in zip(got, gm(*example)):
        torch.testing.assert_close(a, b)


def test_scale_grad_by_freq_is_refused_with_its_reason() -> None:
    be = elt.backend("metal", strict=True)
    model = nn.Embedding(4, 2, scale_grad_by_freq=True)
    compiled = torch.compile(model, backend=be, dynamic=False)
    with pytest.raises(Exception, match="scale_grad_by_freq"):
        compiled(torch.tensor([1, 1, 2])).sum().backward()


@pytest.mark.parametrize("reduction", [0, 1, 2])
@pytest.mark.parametrize("target", [3, -100])
def test_one_sample_nll_is_a_batch_of_one(reduction: int, target: int) -> None:
    """aten's nll_loss takes logits [C] with a 0-d target (one sample, as linear_cross_entropy hands it):
    imported as [1, C] and [1] onto the same format ops, every result reshaped back to aten's shape."""
    from torch.fx.experimental.proxy_tensor import make_fx

    def f(logp, t, w, dy):
        loss, total = A.nll_loss_forward(logp, t, w, reduction, -100)
        return loss, total, A.nll_loss_backward(dy, logp, t, w, reduction, -100, total)

    example = (torch.log_softmax(torch.randn(5, dtype=torch.float64), 0), torch.tensor(target), torch.rand(5,
               dtype=torch.float64), torch.tensor(0.7, dtype=torch.float64))
    gm = make_fx(f)(*example)
    imported = elt.import_graph(gm, example)
    assert {"NllLoss", "NllLossBackward"} <= set(imported.graph.op_counts())
    for got, want in zip(elt.export_graph(imported.graph, imported.signature)(*example), gm(*example)):
        assert got.shape == want.shape
        torch.testing.assert_close(got, want, rtol=1e-12, atol=0, equal_nan=True)


@pytest.mark.parametrize("backend", ["metal", "wgpu"])
def test_one_sample_cross_entropy_step_compiles_whole(backend: str) -> None:
    be = elt.backend(backend, strict=True)
    model = nn.Linear(4, 3)
    x, t = torch.randn(4), torch.tensor(2)
    want = torch.autograd.grad(F.cross_entropy(model(x), t), list(model.parameters()))
    loss = torch.compile(lambda x, t: F.cross_entropy(model(x), t), backend=be, dynamic=False)(x, t)
    got = torch.autograd.grad(loss, list(model.parameters()))
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)
    assert be.unlowered_ops == {}


@pytest.mark.parametrize("target", ["metal", "wgpu"])
def test_gather_and_scatter_add_of_an_empty_index_lower_whole(target: str) -> None:
    """aten skips gather's and scatter_add's rank checks for an index without elements (a [2, 0] index of
    a 1-d x: OpInfo's sample); the format's Gather and ScatterAdd would refuse it, so the importer maps
    the result it gives: an empty gather, x unchanged. Before, both ran in PyTorch."""
    from support import compiled_strict

    x, src, index = torch.randn(5), torch.randn(2, 0), torch.zeros(2, 0, dtype=torch.long)
    (y,) = compiled_strict(lambda x: (torch.gather(x, 0, index),), x, target=target)
    assert y.shape == (2, 0)
    (z,) = compiled_strict(lambda x, s: (torch.scatter_add(x, 0, index, s) * 2,), x, src, target=target)
    torch.testing.assert_close(z, x * 2)


@pytest.mark.parametrize("target", ["metal", "wgpu"])
def test_rand_randn_and_dropout_draw_eagers_numbers_under_the_same_seed(target: str) -> None:
    """rand, then dropout, then randn (of bf16 too) in one compiled step: each is an Input the exported
    module draws in graph order by eager's own call, so the same seed gives eager's values and gradients,
    nothing left in PyTorch."""
    record: list[el.Graph] = []
    be = elt.backend(target, strict=True, record=record)

    def f(x: torch.Tensor) -> torch.Tensor:
        u = torch.rand(x.shape)
        y = F.dropout(x * u, 0.3, training=True)
        return y + torch.randn(3, 4, dtype=torch.bfloat16).float() + torch.rand(4)

    x = torch.randn(3, 4, requires_grad=True)
    torch.manual_seed(11)
    want = f(x)
    (want_g,) = torch.autograd.grad(want.sum(), x)
    compiled = torch.compile(f, backend=be, dynamic=False)
    torch.manual_seed(11)
    got = compiled(x)
    (got_g,) = torch.autograd.grad(got.sum(), x)
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    torch.testing.assert_close(got_g, want_g, rtol=0, atol=0)
    assert be.unlowered_ops == {}, be.summary()
    drawn = [n.attrs["name"].rsplit(".", 1)[1] for g in record for n in g.nodes
             if n.op == "Input" and "." in n.attrs["name"]]
    assert sorted(drawn) == ["mask", "normal", "uniform", "uniform"], drawn
    torch.manual_seed(12)  # another seed draws other numbers: the module does draw them
    assert not torch.equal(compiled(x), want)
