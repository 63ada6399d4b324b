"""2-D and 3-D convolution (NCHW / NCDHW activations, OIHW / OIDHW weights), their gradients, and the
primitives they expand into, declared once by the number of spatial axes (`_ops(nd)`).

    Conv2d{stride, padding, dilation, groups}(x, w)                  y = conv(x, w)   [N, O, OH, OW]
    Conv2dBackwardInput{..., input_shape}(dy, w)                     d<conv(x, w), dy>/dx, x of input_shape
    Conv2dBackwardWeight{..., weight_shape}(x, dy)                   d<conv(x, w), dy>/dw, w of weight_shape
    ConvTranspose2d{..., output_shape}(dy, w)                        the transposed convolution: the adjoint
                                                                     of Conv2d in x, with output output_shape
    Im2Col{kernel, stride, padding, dilation, groups}(x)             the unfold [N, G, (C/G)*KH*KW, OH*OW]
    Conv2dFlipWeight{groups}(w)                                      [C, O/G, KH, KW]: per group the channel
                                                                     axes swapped, the kernel turned 180 deg
    Conv2dDilatePad{stride, padding, dilation, input_shape}(dy, w)   dy spread out by the stride and padded
                                                                     to [N, O, H + d(KH-1), W + d(KW-1)]
    Conv2dColumns{stride, padding, dilation, groups}(x, w)           the unfold as [N, G, OH, Cg*KH*KW, OW]
    Conv2dWeightMatrix{groups}(w)                                    w as [G, 1, O/G, Cg*KH*KW]
    Conv2dMergeGroups(t)                                             [N, G, OH, Og, OW] -> [N, G*Og, OH, OW]

x is [N, C, H, W], w is [O, C/groups, KH, KW], and O and C are multiples of groups;
stride, padding and dilation are [along H, along W] (padding symmetric, zeros).
OH = floor((H + 2 padding - dilation (KH - 1) - 1) / stride) + 1, likewise OW.
The bias is no part of the op: it is a broadcast Add, and its gradient a Reduce Sum
over N, H, W. `convmath.py` has the arithmetic (with its definitions); docs/format.md
the conventions.

ConvTranspose2d computes the same values as Conv2dBackwardInput (torch's
conv_transpose2d with the output_padding that makes its output `output_shape`):
it is the forward primitive a backend with a transposed-convolution kernel runs.
Conv2dFlipWeight and Conv2dDilatePad are the two data movements that turn the
input gradient into a plain Conv2d (rules/conv.py); Conv2dDilatePad reads only the
shape of its `w` (the kernel size sets the padding), not its values, and so does
Conv2dColumns. The last three are the forward convolution as a batched MatMul, for
a backend without a convolution kernel.
Conv2dBackwardWeight's constructor also carries fields that are no attributes, for its
rules: `kernel`, weight_shape's last two entries (for Im2Col), and `kh`, `kw` (the same as
integers), `xsplit` [N, G, C/G, H, W] and `xfold` [C/G, G*N, H, W] (x's shape regrouped) and
`crop` (the axes, of 2 and 3, along which the gradient as a convolution comes out longer than
the kernel: `convmath.weight_conv_size`) and `dymat` (dy's shape as [N, G, O/G, OH*OW]), the
last four read from x's shape at load time; `xmat` (x as [N, G, C/G, H*W]) and `pointwise` (1 for a
1 x 1 kernel with stride 1 and no padding, where Im2Col(x) is x regrouped as `xmat`).
Conv2dBackwardInput's constructor carries, read from dy's shape: `unit` (1 where the stride is 1 and
d(k-1) - p is nowhere negative) and `tpad` (that padding, H + p - OH along each axis: the input gradient
as a convolution of dy itself), `pointwise` (stride 1, no padding, dy of x's spatial size: a 1 x 1
kernel), `dymat` (dy as [N, G, O/G, OH*OW]) and `wmat` ([G, O/G, C/G], a pointwise w as matrices).

The 3-D ops are the same over three spatial axes [D, H, W] (D first in every list): `Conv3d`,
`ConvTranspose3d`, `Conv3dBackwardInput`, `Conv3dBackwardWeight`, `Im2Col3d` ([N, G, Cg*KD*KH*KW,
OD*OH*OW]), `Conv3dFlipWeight`, `Conv3dDilatePad`, `Conv3dColumns` ([N, G, OD, OH, Cg*KD*KH*KW, OW]),
`Conv3dWeightMatrix` ([G, 1, 1, Og, Cg*KD*KH*KW]) and `Conv3dMergeGroups` ([N, G, OD, OH, Og, OW] ->
[N, O, OD, OH, OW]); Conv3dBackwardWeight's kernel-size fields are `kd`, `kh`, `kw`, its `crop` axes
of 2, 3 and 4.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..arrays import Args, Attrs, _f, _round_float
from ..errors import LowerError
from . import convmath
from .base import I64, STRING, WHOLE, Attr, Ctor, Field, Meta, OpDef, head, integer, ints, ints_text
from .meta import attr_check, check_shape, float_dtype, is_int, is_int_list, show, show_shape

_Ints = tuple[int, ...]
_COUNT = {2: "two", 3: "three"}
_X_LAYOUT = {2: "[N, C, H, W]", 3: "[N, C, D, H, W]"}
_W_LAYOUT = {2: "[O, C/groups, KH, KW]", 3: "[O, C/groups, KD, KH, KW]"}
_NAMES = {2: ("NCHW", "OIHW"), 3: ("NCDHW", "OIDHW")}
_KLETTERS = {2: ("h", "w"), 3: ("d", "h", "w")}  # the spatial axes' letters: fields kh, kw (kd)

# format op -> its number of spatial axes (the rules and their domain build the ops of each rank)
NDIM: dict[str, int] = {}


def _list_check(key: str, least: int, nd: int) -> Attr:
    ok = attr_check(key, lambda v: is_int_list(v) and len(v) == nd and all(a >= least for a in v),
                    f"a list of {_COUNT[nd]} integers >= {least}")
    return Attr(key, ok)


def _shape_attr(key: str, nd: int) -> Attr:
    def check(v: Any) -> None:
        check_shape(v, f"attribute {show(key)}")
        if len(v) != nd + 2:
            raise ValueError(f"attribute {show(key)} must have {nd + 2} entries ({' or '.join(_NAMES[nd])}), "
                             f"got {show(v)}")
    return Attr(key, check)


def _common(nd: int) -> tuple[Attr, ...]:
    return (_list_check("stride", 1, nd), _list_check("padding", 0, nd), _list_check("dilation", 1, nd),
            Attr("groups", attr_check("groups", lambda v: is_int(v) and v >= 1, "an integer >= 1")))


def _params(attrs: Mapping[str, Any]) -> tuple[_Ints, _Ints, _Ints, int]:
    s, p, d = (tuple(attrs[k]) for k in ("stride", "padding", "dilation"))
    return s, p, d, int(attrs["groups"])


def _check_x(x: Sequence[int], nd: int) -> None:
    if len(x) != nd + 2:
        raise ValueError(f"x must be {nd + 2}-D {_X_LAYOUT[nd]}, got {show_shape(x)}")


def _check_w(w: Sequence[int], nd: int) -> None:
    if len(w) != nd + 2:
        raise ValueError(f"w must be {nd + 2}-D {_W_LAYOUT[nd]}, got {show_shape(w)}")


def _out_shape(x: Sequence[int], w: Sequence[int], attrs: Mapping[str, Any]) -> tuple[int, ...]:
    """The output shape of the convolution on shapes x and w; ValueError naming what does not fit."""
    s, p, d, g = _params(attrs)
    nd = len(s)
    _check_x(x, nd)
    _check_w(w, nd)
    if x[1] % g or w[0] % g:
        raise ValueError(f"channels {x[1]} (in) and {w[0]} (out) must be multiples of groups {g}")
    if w[1] * g != x[1]:
        raise ValueError(f"w {show_shape(w)} needs {w[1] * g} input channels ({w[1]} x groups {g}), x has {x[1]}")
    outs = tuple(convmath.out_size(x[2 + i], w[2 + i], s[i], p[i], d[i]) for i in range(nd))
    if min(outs) < 1 or min(w[2:]) < 1:
        raise ValueError(f"the kernel {show_shape(w[2:])} (dilation {list(d)}) does not fit x {show_shape(x)} "
                         f"padded by {list(p)}")
    return (x[0], w[0]) + outs


def _conv(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    return _out_shape(ins[0][0], ins[1][0], attrs), float_dtype(ins)


def _check_dy(dy: Sequence[int], want: tuple[int, ...]) -> None:
    if tuple(dy) != want:
        raise ValueError(f"dy has shape {show_shape(dy)} but the convolution's output has shape {show_shape(want)}")


def _backward_input(key: str) -> Any:
    def infer(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
        shape = tuple(attrs[key])
        _check_dy(ins[0][0], _out_shape(shape, ins[1][0], attrs))
        return shape, float_dtype(ins)
    return infer


def _backward_weight(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    shape = tuple(attrs["weight_shape"])
    _check_dy(ins[1][0], _out_shape(ins[0][0], shape, attrs))
    return shape, float_dtype(ins)


def _im2col(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    x, g = ins[0][0], attrs["groups"]
    kernel = tuple(attrs["kernel"])
    _check_x(x, len(kernel))
    if x[1] % g:
        raise ValueError(f"channels {x[1]} must be a multiple of groups {g}")
    outs = _out_shape(x, (g, x[1] // g) + kernel, attrs)[2:]
    return (x[0], g, x[1] // g * math.prod(kernel), math.prod(outs)), float_dtype(ins)


def _flip(nd: int) -> Any:
    def infer(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
        w, g = ins[0][0], attrs["groups"]
        _check_w(w, nd)
        if w[0] % g:
            raise ValueError(f"output channels {w[0]} must be a multiple of groups {g}")
        return (w[1] * g, w[0] // g) + tuple(w[2:]), float_dtype(ins)
    return infer


def _dilate_pad(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    (dy, _), (w, _) = ins
    shape, d = tuple(attrs["input_shape"]), attrs["dilation"]
    g = shape[1] // w[1] if len(w) == len(shape) and w[1] and shape[1] % w[1] == 0 else 0
    if g < 1:
        raise ValueError(f"w {show_shape(w)} does not fit input_shape {show_shape(shape)}")
    _check_dy(dy, _out_shape(shape, w, {**attrs, "groups": g}))
    return tuple(dy[:2]) + tuple(shape[2 + i] + d[i] * (w[2 + i] - 1) for i in range(len(d))), float_dtype(ins)


def _columns(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    x, w = ins[0][0], ins[1][0]
    out = _out_shape(x, w, attrs)
    g = attrs["groups"]
    return (out[0], g) + tuple(out[2:-1]) + (math.prod(w[1:]), out[-1]), float_dtype(ins)


def _weight_matrix(nd: int) -> Any:
    def infer(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
        w, g = ins[0][0], attrs["groups"]
        if len(w) != nd + 2 or w[0] % g:
            raise ValueError(f"w must be {nd + 2}-D {_W_LAYOUT[nd]} with O a multiple of groups {g}, "
                             f"got {show_shape(w)}")
        return (g,) + (1,) * (nd - 1) + (w[0] // g, math.prod(w[1:])), ins[0][1]
    return infer


def _merge_groups(nd: int) -> Any:
    layout = "[N, G, OH, O/G, OW]" if nd == 2 else "[N, G, OD, OH, O/G, OW]"

    def infer(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
        t = ins[0][0]
        if len(t) != nd + 3:
            raise ValueError(f"the input must be {nd + 3}-D {layout}, got {show_shape(t)}")
        return (t[0], t[1] * t[-2]) + tuple(t[2:-2]) + (t[-1],), ins[0][1]
    return infer


def _float(op: str, dtype: str) -> None:
    if dtype not in ("f64", "f32", "f16", "bf16"):
        raise LowerError(f"{op} needs a float dtype, not {dtype}")


def _op_conv(name: str) -> Any:
    def evaluate(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
        _float(name, dtype)
        return _round_float(convmath.conv(_f(args[0]), _f(args[1]), *_params(attrs)), dtype)
    return evaluate


def _input_grad(key: str) -> Any:
    def evaluate(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
        _float("a convolution's input gradient", dtype)
        s, p, d, g = _params(attrs)
        return _round_float(convmath.grad_input(_f(args[0]), _f(args[1]), attrs[key], s, p, d, g), dtype)
    return evaluate


def _op_weight_grad(name: str) -> Any:
    def evaluate(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
        _float(name, dtype)
        s, p, d, g = _params(attrs)
        k = tuple(attrs["weight_shape"][2:])
        return _round_float(convmath.grad_weight(_f(args[0]), _f(args[1]), k, s, p, d, g), dtype)
    return evaluate


def _op_im2col(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    s, p, d, g = _params(attrs)
    return _round_float(convmath.im2col(_f(args[0]), tuple(attrs["kernel"]), s, p, d, g), dtype)


def _op_flip(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    return _round_float(convmath.flip_weight(_f(args[0]), int(attrs["groups"])), dtype)


def _op_dilate_pad(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    s, p, d = (tuple(attrs[k]) for k in ("stride", "padding", "dilation"))
    w = np.shape(args[1])
    return _round_float(convmath.dilate_pad(_f(args[0]), w[2:], attrs["input_shape"], s, p, d), dtype)


def _op_columns(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    w = np.shape(args[1])
    return _round_float(convmath.columns(_f(args[0]), w[2:], *_params(attrs)), dtype)


def _op_weight_matrix(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    return _round_float(convmath.weight_matrix(_f(args[0]), int(attrs["groups"])), dtype)


def _op_merge_groups(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    return _round_float(convmath.merge_groups(_f(args[0])), dtype)


def _groups_in_batch(attrs: Mapping[str, Any], x: Sequence[int]) -> tuple[list[int], list[int]]:
    """x [N, C, *S] split by groups ([N, G, C/G, *S]) and with the groups folded into its batch
    axis after the channels ([C/G, G*N, *S]): the input of the weight gradient as a convolution."""
    g = int(attrs["groups"])
    n, c = x[0], x[1]
    return [n, g, c // g, *x[2:]], [c // g, g * n, *x[2:]]


def _dy_matrices(attrs: Mapping[str, Any], x: Sequence[int]) -> str:
    """dy [N, O, *O'] as a matrix per sample and group, [N, G, O/G, prod(O')] (the same elements)."""
    s, p, d, g = _params(attrs)
    o, k = attrs["weight_shape"][0], attrs["weight_shape"][2:]
    outs = [convmath.out_size(x[2 + i], k[i], s[i], p[i], d[i]) for i in range(len(s))]
    return ints_text([x[0], g, o // g, math.prod(outs)])


def _crop(attrs: Mapping[str, Any], x: Sequence[int]) -> str:
    """The spatial axes (2, 3[, 4]) along which the weight gradient as a convolution comes out longer
    than the kernel."""
    s, p, d, _ = _params(attrs)
    k = attrs["weight_shape"][2:]
    return ints_text([2 + i for i in range(len(s))
                      if convmath.weight_conv_size(x[2 + i], k[i], s[i], p[i], d[i]) > k[i]])


def _x_matrices(attrs: Mapping[str, Any], x: Sequence[int]) -> str:
    """x [N, C, *S] as a matrix per sample and group, [N, G, C/G, prod(S)] (the same elements): the
    unfolded input of a pointwise convolution."""
    g = int(attrs["groups"])
    return ints_text([x[0], g, x[1] // g, math.prod(x[2:])])


def _weight_pointwise(attrs: Mapping[str, Any], x: Sequence[int]) -> int:
    """1 where the convolution is pointwise (a 1 x 1 kernel, stride 1, no padding): its unfolded input
    is x itself, regrouped (`xmat`)."""
    s, p, _, _ = _params(attrs)
    return int(all(k == 1 for k in attrs["weight_shape"][2:]) and all(v == 1 for v in s) and not any(p))


def _input_pointwise(attrs: Mapping[str, Any], dy: Sequence[int]) -> int:
    """1 where the convolution whose input gradient this is is pointwise: stride 1, no padding and dy of
    the input's spatial size (so the kernel is 1 along every axis, whatever the dilation)."""
    s, p, _, _ = _params(attrs)
    return int(all(v == 1 for v in s) and not any(p) and tuple(dy[2:]) == tuple(attrs["input_shape"][2:]))


def _input_dy_matrices(attrs: Mapping[str, Any], dy: Sequence[int]) -> str:
    """dy [N, O, *O'] as [N, G, O/G, prod(O')] (the same elements)."""
    g = int(attrs["groups"])
    return ints_text([dy[0], g, dy[1] // g, math.prod(dy[2:])])


def _input_w_matrices(attrs: Mapping[str, Any], dy: Sequence[int]) -> str:
    """A pointwise convolution's w [O, C/G, 1, ...] as [G, O/G, C/G] (the same elements)."""
    g = int(attrs["groups"])
    return ints_text([g, dy[1] // g, attrs["input_shape"][1] // g])


def _transposed_padding(attrs: Mapping[str, Any], dy: Sequence[int]) -> list[int]:
    """With stride 1, the padding d(k-1) - p of the input gradient as a plain convolution of dy: from
    OH = H + 2p - d(k-1), it is H + p - OH along each axis."""
    _, p, _, _ = _params(attrs)
    return [attrs["input_shape"][2 + i] + p[i] - dy[2 + i] for i in range(len(p))]


def _input_unit_stride(attrs: Mapping[str, Any], dy: Sequence[int]) -> int:
    """1 where the stride is 1 and the padding d(k-1) - p is nowhere negative: the input gradient is then
    a convolution of dy itself, padded, with no spread-out copy of dy (Conv2dDilatePad)."""
    s, _, _, _ = _params(attrs)
    return int(all(v == 1 for v in s) and min(_transposed_padding(attrs, dy)) >= 0)


def _input_conv(nd: int) -> tuple[Field, ...]:
    """Conv{2,3}dBackwardInput's derived fields, read from dy's shape at load time: `unit` and `tpad`
    (the stride-1 form), `pointwise`, `dymat` and `wmat` (the pointwise form as a MatMul)."""
    return (
        Field("unit", I64, _input_unit_stride, None, source=WHOLE, shaped=True),
        Field("tpad", STRING, lambda a, dy: ints_text(_transposed_padding(a, dy)), None, source=WHOLE, shaped=True),
        Field("pointwise", I64, _input_pointwise, None, source=WHOLE, shaped=True),
        Field("dymat", STRING, _input_dy_matrices, None, source=WHOLE, shaped=True),
        Field("wmat", STRING, _input_w_matrices, None, source=WHOLE, shaped=True),
    )


def _kernel_size(i: int) -> Any:
    return lambda v, rank: int(v[2 + i])


_FIELDS = (ints("stride"), ints("padding"), ints("dilation"), integer("groups"))
_KERNEL = Field("kernel", STRING, lambda v, rank: ints_text(v[2:]), None, source="weight_shape")


def _weight_conv(nd: int) -> tuple[Field, ...]:
    return tuple(Field(f"k{a}", I64, _kernel_size(i), None, source="weight_shape")
                 for i, a in enumerate(_KLETTERS[nd])) + (
        Field("xsplit", STRING, lambda a, x: ints_text(_groups_in_batch(a, x)[0]), None, source=WHOLE, shaped=True),
        Field("xfold", STRING, lambda a, x: ints_text(_groups_in_batch(a, x)[1]), None, source=WHOLE, shaped=True),
        Field("crop", STRING, _crop, None, source=WHOLE, shaped=True),
        Field("dymat", STRING, _dy_matrices, None, source=WHOLE, shaped=True),
        Field("xmat", STRING, _x_matrices, None, source=WHOLE, shaped=True),
        Field("pointwise", I64, _weight_pointwise, None, source=WHOLE, shaped=True),
    )


def names(nd: int) -> dict[str, str]:
    """The format ops of the convolution of `nd` spatial axes, by role."""
    c = f"Conv{nd}d"
    return {"conv": c, "transpose": f"ConvTranspose{nd}d", "im2col": "Im2Col" if nd == 2 else f"Im2Col{nd}d",
            "flip": f"{c}FlipWeight", "dilate_pad": f"{c}DilatePad", "columns": f"{c}Columns",
            "weight_matrix": f"{c}WeightMatrix", "merge_groups": f"{c}MergeGroups",
            "bwd_input": f"{c}BackwardInput", "bwd_weight": f"{c}BackwardWeight"}


_SAMPLES = {  # (attributes, x, w, dy) of each rank's sample nodes
    2: ({"stride": [2, 1], "padding": [1, 0], "dilation": [1, 2], "groups": 2},
        ((2, 4, 5, 6), "f32"), ((6, 2, 3, 2), "f32"), ((2, 6, 3, 4), "f32")),
    3: ({"stride": [2, 1, 3], "padding": [1, 0, 1], "dilation": [1, 2, 1], "groups": 2},
        ((1, 4, 4, 5, 6), "f32"), ((6, 2, 2, 2, 2), "f32"), ((1, 6, 3, 3, 3), "f32")),
}


def _ops(nd: int) -> tuple[tuple[OpDef, ...], tuple[OpDef, ...]]:
    """The forward ops and the two gradients of the convolution of `nd` spatial axes."""
    n = names(nd)
    common = _common(nd)
    sample, x, w, dy = _SAMPLES[nd]
    t = "" if nd == 2 else f"{nd}d"  # the torch kernels' names: conv2d..., conv3d...
    k = f"conv{nd}d"
    ctor = {role: op.replace("ConvTranspose", "ConvT").replace("BackwardInput", "BwdInput")
            .replace("BackwardWeight", "BwdWeight").replace("FlipWeight", "FlipW") for role, op in n.items()}
    merge_in = (2, 2) + tuple(x[0][2:-1]) + (3, 4)
    fwd = (
        OpDef(n["conv"], ("x", "w"), common, _conv, _op_conv(n["conv"]),
              (Ctor(ctor["conv"], n["conv"], _FIELDS, 2, (head(n["conv"]),)),), domain="conv", torch=k,
              sample=(sample, (x, w))),
        OpDef(n["transpose"], ("dy", "w"), common + (_shape_attr("output_shape", nd),),
              _backward_input("output_shape"), _input_grad("output_shape"),
              (Ctor(ctor["transpose"], n["transpose"], _FIELDS + (ints("output_shape"),), 2,
                    (head(n["transpose"]),)),),
              domain="conv", torch=f"conv_transpose{nd}d", sample=({**sample, "output_shape": list(x[0])}, (dy, w))),
        OpDef(n["im2col"], ("x",), (Attr("kernel", _list_check("kernel", 1, nd).check),) + common, _im2col,
              _op_im2col, (Ctor(ctor["im2col"], n["im2col"], (ints("kernel"),) + _FIELDS, 1, (head(n["im2col"]),)),),
              domain=None, torch=f"im2col{t}", sample=({**sample, "kernel": list(w[0][2:])}, (x,))),
        OpDef(n["flip"], ("w",), common[3:], _flip(nd), _op_flip,
              (Ctor(ctor["flip"], n["flip"], (integer("groups"),), 1, (head(n["flip"]),)),),
              domain=None, torch=f"{k}_flip_weight", sample=({"groups": 2}, (w,))),
        OpDef(n["dilate_pad"], ("dy", "w"), common[:3] + (_shape_attr("input_shape", nd),), _dilate_pad,
              _op_dilate_pad,
              (Ctor(ctor["dilate_pad"], n["dilate_pad"], _FIELDS[:3] + (ints("input_shape"),), 2,
                    (head(n["dilate_pad"]),)),), domain=None, torch=f"{k}_dilate_pad",
              sample=({**{a: sample[a] for a in ("stride", "padding", "dilation")}, "input_shape": list(x[0])},
                      (dy, w))),
        OpDef(n["columns"], ("x", "w"), common, _columns, _op_columns,
              (Ctor(ctor["columns"], n["columns"], _FIELDS, 2, (head(n["columns"]),)),), domain=None,
              torch=f"{k}_columns", sample=(sample, (x, w))),
        OpDef(n["weight_matrix"], ("w",), common[3:], _weight_matrix(nd), _op_weight_matrix,
              (Ctor(ctor["weight_matrix"], n["weight_matrix"], (integer("groups"),), 1, (head(n["weight_matrix"]),)),),
              domain=None, torch=f"{k}_weight_matrix", sample=({"groups": 2}, (w,))),
        OpDef(n["merge_groups"], ("t",), (), _merge_groups(nd), _op_merge_groups,
              (Ctor(ctor["merge_groups"], n["merge_groups"], (), 1, (head(n["merge_groups"]),)),), domain=None,
              torch=f"{k}_merge_groups", sample=({}, ((merge_in, "f32"),))),
    )
    bwd = (
        OpDef(n["bwd_input"], ("dy", "w"), common + (_shape_attr("input_shape", nd),),
              _backward_input("input_shape"), _input_grad("input_shape"),
              (Ctor(ctor["bwd_input"], n["bwd_input"], _FIELDS + (ints("input_shape"),) + _input_conv(nd), 2,
                    (head(n["bwd_input"]),)),), domain="conv", torch=f"{k}_backward_input", backward=True,
              sample=({**sample, "input_shape": list(x[0])}, (dy, w))),
        OpDef(n["bwd_weight"], ("x", "dy"), common + (_shape_attr("weight_shape", nd),), _backward_weight,
              _op_weight_grad(n["bwd_weight"]),
              (Ctor(ctor["bwd_weight"], n["bwd_weight"],
                    _FIELDS + (ints("weight_shape"), _KERNEL) + _weight_conv(nd), 2,
                    (head(n["bwd_weight"]),)),), domain="conv", torch=f"{k}_backward_weight", backward=True,
              sample=({**sample, "weight_shape": list(w[0])}, (x, dy))),
    )
    NDIM.update({op: nd for op in n.values()})
    return fwd, bwd


_OPS2, _BACKWARD2 = _ops(2)
_OPS3, _BACKWARD3 = _ops(3)
OPS: tuple[OpDef, ...] = _OPS2
BACKWARD: tuple[OpDef, ...] = _BACKWARD2
# the 3-D convolution (format version 3), registered after the families of version 2
OPS3: tuple[OpDef, ...] = _OPS3 + _BACKWARD3
