"""Layers with parameters: linear and matrix products, convolutions, normalizations (batch norm in
training and eval mode, its running statistics mutated; layer norm; group norm, unmapped today),
pooling, attention, embeddings."""

from __future__ import annotations

from hypothesis import strategies as st

from .ops import Draw, op, rank
from .program import Builder, Val

LINEAR = ("aten.addmm", "aten.mm", "aten.t", "aten.bmm")
CONV = ("aten.convolution", "aten.convolution_backward")
BATCH_NORM = ("aten._native_batch_norm_legit_functional", "aten._native_batch_norm_legit_no_training",
              "aten.native_batch_norm_backward")


def _noncontiguous_weight(draw: Draw, b: Builder, module: str, rank_: int) -> None:
    """Sometimes give the layer's weight another layout: the same values, transposed strides."""
    if rank_ >= 2 and draw(st.booleans()):
        m = module.replace("self.", "model.")
        b.layouts.append(f"{m}.weight = nn.Parameter({m}.weight.detach().transpose(0, 1).contiguous().transpose(0, 1))")
        b.features.add("parameter transposed (layer weight)")


@op("linear", rank(1), keep=LINEAR)
def _linear(draw: Draw, b: Builder, v: Val) -> None:
    out = int(draw(st.integers(1, 6)))
    bias = draw(st.booleans())
    m = b.module(f"nn.Linear({v.shape[-1]}, {out}, bias={bias}, dtype={b.dt})", "nn.Linear")
    _noncontiguous_weight(draw, b, m, 2)
    b.add(f"{m}({v.name})", v.shape[:-1] + (out,), grad=True, feature="nn.Linear", fresh=True)


@op("matmul with a parameter", rank(1), keep=LINEAR)
def _matmul(draw: Draw, b: Builder, v: Val) -> None:
    out = int(draw(st.integers(1, 5)))
    p = b.param((v.shape[-1], out), draw(st.sampled_from(["contiguous", "transposed", "sliced"])))
    b.add(f"{v.name} @ {p}", v.shape[:-1] + (out,), grad=True, feature="matmul with a parameter", fresh=True)


@op("batched matmul", rank(2), keep=LINEAR)
def _bmm(draw: Draw, b: Builder, v: Val) -> None:
    s = v.shape[:-1] + (v.shape[-2],)
    fn = "torch.bmm({0}, {0}.transpose(1, 2))" if v.rank == 3 else "{0} @ {0}.transpose(-1, -2)"
    b.add(fn.format(v.name), s, grad=v.grad, feature="bmm" if v.rank == 3 else "matmul", fresh=True)


def _conv_out(n: int, k: int, s: int, p: int, d: int) -> int:
    return (n + 2 * p - d * (k - 1) - 1) // s + 1


@op("convolution", lambda b, v: v.rank in (3, 4) and v.shape[1] >= 1 and min(v.shape[2:]) >= 1, keep=CONV)
def _conv(draw: Draw, b: Builder, v: Val) -> None:
    c, spatial = v.shape[1], v.shape[2:]
    out = int(draw(st.integers(1, 6)))
    k, s, p, d = (int(draw(st.sampled_from(xs))) for xs in ([3, 1, 2], [1, 2], [1, 0], [1, 2]))
    groups = 2 if c % 2 == 0 and out % 2 == 0 and draw(st.booleans()) else 1
    new = tuple(_conv_out(n, k, s, p, d) for n in spatial)
    if min(new) < 1:
        return
    bias = draw(st.booleans())
    cls = "nn.Conv1d" if v.rank == 3 else "nn.Conv2d"
    m = b.module(f"{cls}({c}, {out}, {k}, stride={s}, padding={p}, dilation={d}, groups={groups}, bias={bias},"
                 f" dtype={b.dt})", cls + (" (groups)" if groups > 1 else ""))
    b.add(f"{m}({v.name})", (v.shape[0], out) + new, grad=True, feature=cls, fresh=True)


@op("batch norm", lambda b, v: v.rank in (2, 3, 4) and v.shape[1] >= 1, keep=BATCH_NORM)
def _batch_norm(draw: Draw, b: Builder, v: Val) -> None:
    c = v.shape[1]
    per_channel = v.numel // c if c else 0
    train = draw(st.booleans()) and per_channel > 1
    momentum = draw(st.sampled_from([0.1, 0.5]))
    affine = draw(st.booleans())
    cls = "nn.BatchNorm2d" if v.rank == 4 else "nn.BatchNorm1d"
    m = b.module(f"{cls}({c}, momentum={momentum}, affine={affine}, dtype={b.dt})" + ("" if train else ".eval()"),
                 f"batch norm {'training (running statistics mutated)' if train else 'eval'}")
    if not train:  # running statistics other than 0 and 1, so that eval mode computes something
        mm = m.replace("self.", "model.")
        b.layouts.append(f"{mm}.running_mean.uniform_(-1, 1)")
        b.layouts.append(f"{mm}.running_var.uniform_(0.5, 2)")
    b.add(f"{m}({v.name})", v.shape, grad=v.grad or affine, feature=cls, fresh=True)


@op("layer norm", rank(1), keep=("aten.native_layer_norm", "aten.native_layer_norm_backward"))
def _layer_norm(draw: Draw, b: Builder, v: Val) -> None:
    k = int(draw(st.integers(1, min(2, v.rank))))
    affine, bias = draw(st.booleans()), draw(st.booleans())
    m = b.module(f"nn.LayerNorm({list(v.shape[-k:])}, elementwise_affine={affine}, bias={bias}, dtype={b.dt})",
                 "nn.LayerNorm")
    b.add(f"{m}({v.name})", v.shape, grad=v.grad or affine, feature="nn.LayerNorm", fresh=True)


@op("group norm", lambda b, v: v.rank >= 3 and v.shape[1] >= 1,
    keep=("aten.native_group_norm", "aten.native_group_norm_backward"))
def _group_norm(draw: Draw, b: Builder, v: Val) -> None:
    c = v.shape[1]
    g = draw(st.sampled_from([d for d in (1, 2, 3) if c % d == 0]))
    affine = draw(st.booleans())
    m = b.module(f"nn.GroupNorm({g}, {c}, affine={affine}, dtype={b.dt})", "nn.GroupNorm")
    b.add(f"{m}({v.name})", v.shape, grad=v.grad or affine, feature="nn.GroupNorm", fresh=True)


@op("pooling", lambda b, v: v.rank == 4 and min(v.shape[2:]) >= 1,
    keep=("aten.max_pool2d_with_indices", "aten.max_pool2d_with_indices_backward", "aten.avg_pool2d",
          "aten._adaptive_avg_pool2d"))
def _pool(draw: Draw, b: Builder, v: Val) -> None:
    kind = draw(st.sampled_from(["max", "avg", "adaptive"] if not b.half else ["avg", "adaptive"]))
    n, c, h, w = v.shape
    if kind == "adaptive":
        o = (int(draw(st.integers(1, 2))), int(draw(st.integers(1, 2))))
        m = b.module(f"nn.AdaptiveAvgPool2d({o})", "nn.AdaptiveAvgPool2d")
        b.add(f"{m}({v.name})", (n, c) + o, grad=v.grad, feature="nn.AdaptiveAvgPool2d")
        return
    k, s = int(draw(st.integers(1, 3))), int(draw(st.integers(1, 2)))
    p = int(draw(st.integers(0, k // 2)))
    ceil = draw(st.booleans())
    new = []
    for size in (h, w):
        span = size + 2 * p - k
        o = (-(-span // s) if ceil else span // s) + 1
        if ceil and (o - 1) * s >= size + p:
            o -= 1
        new.append(o)
    if min(new) < 1:
        return
    if kind == "max":
        m = b.module(f"nn.MaxPool2d({k}, stride={s}, padding={p}, ceil_mode={ceil})", "nn.MaxPool2d")
    else:
        inc = draw(st.booleans())
        m = b.module(f"nn.AvgPool2d({k}, stride={s}, padding={p}, ceil_mode={ceil}, count_include_pad={inc})",
                     "nn.AvgPool2d")
    b.add(f"{m}({v.name})", (n, c, new[0], new[1]), grad=v.grad, feature=f"nn.{kind.capitalize()}Pool2d")


@op("attention", lambda b, v: v.rank == 4 and v.shape[2] >= 1 and v.shape[3] >= 1,
    keep=("aten._scaled_dot_product_flash_attention_for_cpu",
          "aten._scaled_dot_product_flash_attention_for_cpu_backward"))
def _attention(draw: Draw, b: Builder, v: Val) -> None:
    causal = draw(st.booleans())
    b.add(f"F.scaled_dot_product_attention({v.name}, torch.tanh({v.name}), {v.name} * 0.5, is_causal={causal})",
          v.shape, grad=v.grad, feature="scaled_dot_product_attention" + (" causal" if causal else ""))


def embedding(draw: Draw, b: Builder, idx: Val, vocab: int) -> Val:
    dim = int(draw(st.integers(1, 5)))
    pad = draw(st.sampled_from([None, 0]))
    m = b.module(f"nn.Embedding({vocab}, {dim}, padding_idx={pad}, dtype={b.dt})", "nn.Embedding")
    b.keep.update(draw(st.sets(st.sampled_from(["aten.embedding", "aten.embedding_dense_backward"]), max_size=1)))
    return b.add(f"{m}({idx.name})", idx.shape + (dim,), grad=True, feature="nn.Embedding", fresh=True)


@op("convolution block", lambda b, v: v.rank == 4 and v.shape[1] >= 1 and min(v.shape[2:]) >= 1, keep=CONV)
def _conv_block(draw: Draw, b: Builder, v: Val) -> None:
    """Conv2d, a normalization and an activation, as CNNs stack them (ResNet's, MobileNet's, a UNet's)."""
    c, out = v.shape[1], int(draw(st.sampled_from([4, 2, 6])))
    m = b.module(f"nn.Conv2d({c}, {out}, 3, padding=1, dtype={b.dt})", "nn.Conv2d")
    norm = draw(st.sampled_from(["GroupNorm", "BatchNorm2d", "none"]))
    h = b.add(f"{m}({v.name})", (v.shape[0], out) + v.shape[2:], grad=True, feature="nn.Conv2d", fresh=True)
    if norm == "GroupNorm":
        n = b.module(f"nn.GroupNorm(2, {out}, dtype={b.dt})", "nn.GroupNorm")
        h = b.add(f"{n}({h.name})", h.shape, grad=True, feature="conv block with GroupNorm")
    elif norm == "BatchNorm2d" and h.numel // out > 1:
        n = b.module(f"nn.BatchNorm2d({out}, dtype={b.dt})", "batch norm training (running statistics mutated)")
        h = b.add(f"{n}({h.name})", h.shape, grad=True, feature="conv block with BatchNorm2d")
    act = draw(st.sampled_from(["F.silu", "torch.relu", "F.hardswish", "F.relu6"] if not b.half else ["F.silu"]))
    b.add(f"{act}({h.name})", h.shape, grad=True, feature=f"conv block activation {act}")
