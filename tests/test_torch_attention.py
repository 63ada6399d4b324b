"""Attention with PyTorch: the evaluator against torch's own kernels in float64, the aten import and
export one to one, and training steps (a causal GPT-style block, attention with narrow values) compiled
for metal and wgpu with no backward aten op left, gradients as eager's."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.fx.experimental.proxy_tensor import make_fx  # noqa: E402

import egraph_lower as el  # noqa: E402
import egraph_lower.torch as elt  # noqa: E402
from egraph_lower.opdefs import OPDEFS  # noqa: E402
from support import f64  # noqa: E402
from torch_models import PreNormBlock, ViT  # noqa: E402
from torch_steps import train_like_eager  # noqa: E402

pytestmark = pytest.mark.usefixtures("fresh_dynamo")  # each test compiles anew

A = torch.ops.aten
FLASH, FLASH_BWD = A._scaled_dot_product_flash_attention_for_cpu, A._scaled_dot_product_flash_attention_for_cpu_backward
ATTENTION_OPS = {"Attention", "AttentionLogSumExp", "AttentionBackwardQuery", "AttentionBackwardKey",
                 "AttentionBackwardValue"}


def close(got: np.ndarray, want: Any) -> None:
    np.testing.assert_allclose(got, want.detach().numpy(), rtol=1e-10, atol=1e-12)


def _qkv(rows: int, cols: int, seed: int) -> tuple[Any, ...]:
    g = torch.Generator().manual_seed(seed)
    q, k = torch.randn(2, 3, rows, 8, generator=g, dtype=torch.float64), torch.randn(2, 3, cols, 8, generator=g,
                                                                                     dtype=torch.float64)
    v, dy = torch.randn(2, 3, cols, 8, generator=g, dtype=torch.float64), torch.randn(2, 3, rows, 8, generator=g,
                                                                                      dtype=torch.float64)
    return q, k, v, dy


# --------------------------------------------------------------------------- evaluator vs torch, float64

def _masks(rows: int, cols: int) -> dict[str, Any]:
    g = torch.Generator().manual_seed(9)
    additive = torch.randn(rows, cols, generator=g, dtype=torch.float64)
    additive[1, 0] = -math.inf
    full = additive.clone()
    full[2] = -math.inf  # a fully masked row
    return {"none": None, "additive": additive, "fully-masked-row": full,
            "large-logits": torch.full((rows, cols), 40.0, dtype=torch.float64) * (torch.arange(cols) % 2)}


@pytest.mark.parametrize("mask_name", ["none", "additive", "fully-masked-row", "large-logits"])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize(("rows", "cols"), [(5, 7), (6, 3)])
def test_attention_ops_agree_with_torch_flash_kernels(mask_name: str, causal: bool, rows: int, cols: int) -> None:
    q, k, v, dy = _qkv(rows, cols, rows * cols)
    if mask_name == "large-logits":
        q = q * 30.0
    mask = _masks(rows, cols)[mask_name]
    for scale in (None, 0.3):
        attrs: dict[str, object] = {"causal": causal} if scale is None else {"causal": causal, "scale": scale}
        out, lse = FLASH(q, k, v, 0.0, causal, attn_mask=mask, scale=scale)
        m = torch.zeros(()) if mask is None else mask
        close(f64("Attention", attrs, q, k, v, m), out)
        close(f64("AttentionLogSumExp", attrs, q, k, m), lse)
        dq, dk, dv = FLASH_BWD(dy, q, k, v, out, lse, 0.0, causal, attn_mask=mask, scale=scale)
        close(f64("AttentionBackwardQuery", attrs, q, k, v, m, out, lse, dy), dq)
        close(f64("AttentionBackwardKey", attrs, q, k, v, m, out, lse, dy), dk)
        close(f64("AttentionBackwardValue", attrs, q, k, m, lse, dy), dv)


def test_attention_with_another_value_width_agrees_with_torch_autograd() -> None:
    # E != Ev: torch takes its math path (no flash kernel); the format's ops are the same gradients
    q, k, _, _ = _qkv(4, 6, 1)
    v = torch.randn(2, 3, 6, 5, dtype=torch.float64, requires_grad=True)
    q, k = q.requires_grad_(), k.requires_grad_()
    mask = _masks(4, 6)["additive"]
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=False)
    dy = torch.randn_like(out)
    dq, dk, dv = torch.autograd.grad(out, (q, k, v), dy)
    m = mask
    close(f64("Attention", {}, q, k, v, m), out)
    lse = torch.tensor(f64("AttentionLogSumExp", {}, q, k, m))
    close(f64("AttentionBackwardQuery", {}, q, k, v, m, out, lse, dy), dq)
    close(f64("AttentionBackwardKey", {}, q, k, v, m, out, lse, dy), dk)
    close(f64("AttentionBackwardValue", {}, q, k, m, lse, dy), dv)


def test_safe_softmax_agrees_with_torch() -> None:
    x = torch.randn(4, 3, 6, dtype=torch.float64) * 20
    x[1, 2] = -math.inf  # an all -inf row
    x[0, :, 3] = -math.inf  # and some -inf entries
    for dim in (-1, 1):
        close(f64("SafeSoftmax", {"axis": dim}, x), A._safe_softmax(x, dim))


# --------------------------------------------------------------------------- import and export

def _round_trip(fn: Callable[..., Any], *args: Any, rtol: float = 1e-5, atol: float = 1e-5) -> list[str]:
    gm = make_fx(fn, tracing_mode="fake")(*args)
    imported = elt.import_graph(gm)
    el.validated(imported.graph)
    exported = elt.export_graph(imported.graph, imported.signature)
    want, got = gm(*args), exported(*args)
    for w, g in zip(want, got):
        assert g.dtype == w.dtype and g.shape == w.shape
        torch.testing.assert_close(g, w, rtol=rtol, atol=atol)
    return [n.op for n in imported.graph.nodes if n.op.startswith("Attention")]


@pytest.mark.parametrize("mask", ["none", "float"])
@pytest.mark.parametrize("causal", [False, True])
def test_flash_attention_imports_one_to_one(mask: str, causal: bool) -> None:
    q, k, v, dy = (t.float() for t in _qkv(5, 7, 3))
    masks = {"none": None, "float": torch.randn(5, 7)}
    args = (q, k, v, dy) + ((masks[mask],) if masks[mask] is not None else ())

    def f(q: Any, k: Any, v: Any, dy: Any, *m: Any) -> Any:
        am = m[0] if m else None
        out, lse = FLASH(q, k, v, 0.0, causal, attn_mask=am, scale=None)
        return (out, lse, *FLASH_BWD(dy, q, k, v, out, lse, 0.0, causal, attn_mask=am, scale=None))

    ops = _round_trip(f, *args)
    assert sorted(ops) == sorted(ATTENTION_OPS)  # one format op per aten op (and one lse)


def test_half_precision_keeps_the_lse_in_f32() -> None:
    q, k, v, dy = (t.to(torch.bfloat16) for t in _qkv(4, 4, 5))

    def f(q: Any, k: Any, v: Any, dy: Any) -> Any:
        out, lse = FLASH(q, k, v, 0.0, True)
        return (out, lse, *FLASH_BWD(dy, q, k, v, out, lse, 0.0, True))

    gm = make_fx(f, tracing_mode="fake")(q, k, v, dy)
    graph = elt.import_graph(gm).graph
    lse = [n for n in graph.nodes if n.op == "AttentionLogSumExp"]
    assert [n.dtype for n in lse] == ["f32"]
    # bf16: the lowered kernels compute in float32 and round once (kernels_half.in_float32_as), torch's bf16
    # flash backward rounds its intermediates: each output is to be no further from float64 than eager's
    # (here dq: 0.0039 against eager's 0.0082), plus an ulp of the largest value
    imported = elt.import_graph(gm)
    exported = elt.export_graph(imported.graph, imported.signature)
    want, got = gm(q, k, v, dy), exported(q, k, v, dy)
    ref = f(*(t.double() for t in (q, k, v, dy)))
    for w, g, r in zip(want, got, ref):
        assert g.dtype == w.dtype and g.shape == w.shape
        ulp = torch.finfo(w.dtype).eps * float(r.abs().max())
        assert float((g.double() - r).abs().max()) <= float((w.double() - r).abs().max()) + ulp


def test_dropout_is_refused_with_a_reason() -> None:
    q, k, v, _ = (t.float() for t in _qkv(4, 4, 6))
    gm = make_fx(lambda q, k, v: FLASH(q, k, v, 0.1, False), tracing_mode="fake")(q, k, v)
    with pytest.raises(Exception, match="dropout_p=0.1"):
        elt.import_graph(gm)


# --------------------------------------------------------------------------- training steps

class _NarrowValues(nn.Module):
    """Attention whose values are narrower than its queries (E = 8, Ev = 4): torch takes its math path
    (MatMuls and `_safe_softmax`), not the flash kernel."""

    def __init__(self, d: int = 16) -> None:
        super().__init__()
        self.q, self.k, self.v = nn.Linear(d, 16), nn.Linear(d, 16), nn.Linear(d, 8)
        self.out = nn.Linear(8, d)
        self.register_buffer("bias", torch.randn(6, 6))  # an additive mask (finite: a constant of the graph)

    def forward(self, x: Any) -> Any:
        b, n, _ = x.shape
        q, k, v = (m(x).reshape(b, n, 2, -1).transpose(1, 2) for m in (self.q, self.k, self.v))
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=self.bias)
        return x + self.out(y.transpose(1, 2).reshape(b, n, 8))


class GPT(nn.Module):
    """A causal GPT-style model: token and position embeddings, one causal block, a tied-free LM head."""

    def __init__(self, vocab: int = 11, d: int = 16, n: int = 6) -> None:
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Parameter(torch.randn(1, n, d) * 0.1)
        self.block, self.norm, self.head = PreNormBlock(d, 2, causal=True), nn.LayerNorm(d), nn.Linear(d, vocab)

    def forward(self, ids: Any) -> Any:
        return self.head(self.norm(self.block(self.tok(ids) + self.pos)))


def _ce_step(model: nn.Module) -> Callable[..., Any]:
    def step(x: Any, y: Any) -> Any:
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        loss.backward()
        return loss
    return step


def _data(name: str) -> tuple[nn.Module, Any, Any]:
    torch.manual_seed(0)
    if name == "vit":
        return ViT(), torch.randn(4, 3, 8, 8), torch.randint(0, 5, (4,))
    if name == "narrow-values":
        return nn.Sequential(_NarrowValues(), nn.Linear(16, 5)), torch.randn(3, 6, 16), torch.randint(0, 5, (3, 6))
    ids = torch.randint(0, 11, (3, 6))
    return GPT(), ids, torch.roll(ids, -1, dims=1)


def _compiled_step(name: str, target: str) -> tuple[list[el.Graph], Any]:
    """The model trained two steps compiled for `target` (nothing may fall back to PyTorch), against eager;
    the lowered graphs and the backend."""
    eager, x, y = _data(name)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        be, record, _ = train_like_eager(eager, _ce_step, x, y, target)
    assert {g.kind for g in be.graphs if g.status == "lowered"} == {"forward", "backward"}, be.summary()
    return record, be


@pytest.mark.parametrize("name", ["vit", "gpt"])
def test_the_models_reach_the_backend_as_attention_ops(name: str) -> None:
    # on cpu nothing is expanded: the lowered graphs hold what was imported, and the exporter runs them
    record, _ = _compiled_step(name, "cpu")
    ops = {n.op for g in record for n in g.nodes}
    assert ATTENTION_OPS <= ops
    causal = {n.attrs.get("causal", False) for g in record for n in g.nodes if n.op == "Attention"}
    assert causal == {name == "gpt"}


@pytest.mark.parametrize("target", ["metal", "wgpu"])
@pytest.mark.parametrize("name", ["gpt", "narrow-values"])  # the ViT: tests/test_torch_models.py
def test_training_step_matches_eager_with_no_backward_aten_op_left(name: str, target: str) -> None:
    record, _ = _compiled_step(name, target)
    backend = el.load_backend(target)
    for graph in record:
        assert all(backend.runs_node(n) for n in graph.nodes)
        assert not [n.op for n in graph.nodes if OPDEFS[n.op].backward or n.op.startswith("Attention")]
    assert sum(n.op == "MatMul" for g in record for n in g.nodes) >= 6  # scores, P v; dP, dS k, dS^T q, P^T dy


def test_the_math_path_reaches_the_backend_as_safe_softmax() -> None:
    record, _ = _compiled_step("narrow-values", "cpu")
    ops = {n.op for g in record for n in g.nodes}
    assert "SafeSoftmax" in ops and not ops & ATTENTION_OPS


def test_grouped_query_attention_runs_in_pytorch_with_a_warning() -> None:
    # k and v with fewer heads than q (enable_gqa): refused with its reason, that piece runs as PyTorch gave it
    g = torch.Generator().manual_seed(4)
    q, k, v = (torch.randn(2, h, 5, 8, generator=g, requires_grad=True) for h in (4, 2, 2))

    def step(q: Any, k: Any, v: Any) -> Any:
        return (F.scaled_dot_product_attention(q, k, v, enable_gqa=True) ** 2).sum()

    be = elt.backend("metal")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = torch.autograd.grad(torch.compile(step, backend=be, dynamic=False)(q, k, v), (q, k, v))
    want = torch.autograd.grad(step(q, k, v), (q, k, v))
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    assert set(be.unlowered_ops) == {"aten._scaled_dot_product_flash_attention_for_cpu.default",
                                     "aten._scaled_dot_product_flash_attention_for_cpu_backward.default"}
    assert any("grouped-query attention is not mapped" in str(w.message) for w in caught)
