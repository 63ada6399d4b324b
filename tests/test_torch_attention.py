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


_TORCH_DTYPES = {"f32": torch.float32, "f64": torch.float64, "bf16": torch.bfloat16, "f16": torch.float16}


def _gqa_inputs(groups: int, mask: str) -> tuple[Any, ...]:
    """q [2, 2g, 5, 8] against k, v [2, 2, 7, 8] (L != S), a fixed output weight, and the mask."""
    g = torch.Generator().manual_seed(4 + groups)
    q, k, v = (torch.randn(2, h, n, 8, generator=g, dtype=torch.float64) for h, n in ((2 * groups, 5), (2, 7), (2, 7)))
    w = torch.randn(2, 2 * groups, 5, 8, generator=g, dtype=torch.float64)
    m = None
    if mask == "keys":  # key padding: foldable (constant along heads and rows)
        m = torch.zeros(2, 1, 1, 7, dtype=torch.float64)
        m[0, ..., -1], m[1, ..., 0] = -math.inf, 1.5
    elif mask == "rows":
        m = torch.randn(5, 7, generator=g, dtype=torch.float64)
        m[1, 2] = -math.inf
    return q, k, v, w, m


@pytest.mark.parametrize("target", ["metal", "wgpu"])
@pytest.mark.parametrize("dtype", ["f32", "f64", "bf16", "f16"])
@pytest.mark.parametrize(("groups", "causal", "mask"), [(2, True, "none"), (4, False, "keys"), (2, False, "rows")])
def test_grouped_query_attention_trains_as_eager(target: str, dtype: str, groups: int, causal: bool,
                                                 mask: str) -> None:
    # k and v with fewer heads than q (enable_gqa, as transformers' LLaMA hands them over): the flash kernels
    # on grouped shapes import as the attention ops with `groups` and lower whole; gradients as eager's
    q64, k64, v64, w64, m64 = _gqa_inputs(groups, mask)
    dt = _TORCH_DTYPES[dtype]

    def step(q: Any, k: Any, v: Any, w: Any, *m: Any) -> Any:
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=m[0] if m else None, is_causal=causal, enable_gqa=True)
        return (y * w).sum()

    def grads(fn: Callable[..., Any], dtype: Any) -> tuple[Any, ...]:
        q, k, v = (t.to(dtype).requires_grad_() for t in (q64, k64, v64))
        rest = (w64.to(dtype),) + (() if m64 is None else (m64.to(dtype),))
        return torch.autograd.grad(fn(q, k, v, *rest), (q, k, v))

    be = elt.backend(target)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = grads(torch.compile(step, backend=be, dynamic=False), dt)
    want, ref = grads(step, dt), grads(step, torch.float64)
    assert not [str(w.message) for w in caught if "runs in PyTorch" in str(w.message)], be.summary()
    assert be.unlowered_ops == {}, be.summary()
    assert {g.kind for g in be.graphs if g.status == "lowered"} == {"forward", "backward"}, be.summary()
    for name, g, w, r in zip("qkv", got, want, ref):
        assert g.dtype == w.dtype and g.shape == w.shape, name
        if dt in (torch.float32, torch.float64):
            tol = 1e-12 if dt == torch.float64 else 2e-5
            torch.testing.assert_close(g, w, rtol=tol, atol=tol, msg=lambda m: f"d{name}: {m}")
        else:  # computed in float32 and rounded once: no further from float64 than eager's, plus an ulp
            ulp = torch.finfo(dt).eps * float(r.abs().max())
            assert float((g.double() - r).abs().max()) <= float((w.double() - r).abs().max()) + ulp, name


def test_grouped_attention_imports_with_groups_and_exports_one_to_one() -> None:
    q, k, v, dy = (t.float() for t in _qkv(5, 7, 3))
    k, v = k[:, :1], v[:, :1]  # one kv head for q's 3

    def f(q: Any, k: Any, v: Any, dy: Any) -> Any:
        out, lse = FLASH(q, k, v, 0.0, True)
        return (out, lse, *FLASH_BWD(dy, q, k, v, out, lse, 0.0, True))

    gm = make_fx(f, tracing_mode="fake")(q, k, v, dy)
    graph = elt.import_graph(gm).graph
    assert {n.attrs.get("groups") for n in graph.nodes if n.op.startswith("Attention")} == {3}
    assert graph.to_dict()["version"] == 3
    assert sorted(_round_trip(f, q, k, v, dy)) == sorted(ATTENTION_OPS)


def test_heads_that_are_no_multiple_are_refused_with_a_reason() -> None:
    # torch's CPU kernel runs q of 6 heads against k of 4 without a word; the importer refuses it
    g = torch.Generator().manual_seed(5)
    q, k, v = (torch.randn(1, h, 4, 8, generator=g) for h in (6, 4, 4))
    gm = make_fx(lambda q, k, v: FLASH(q, k, v, 0.0, False), tracing_mode="fake")(q, k, v)
    with pytest.raises(Exception, match="q's heads being a multiple of k's"):
        elt.import_graph(gm)
