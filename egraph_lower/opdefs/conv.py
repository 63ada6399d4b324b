"""2-D convolution (NCHW activations, OIHW weights), its gradients, and the primitives they expand into.

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
last four read from x's shape at load time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..arrays import Args, Attrs, _f, _round_float
from ..errors import LowerError
from . import convmath
from .base import I64, STRING, WHOLE, Attr, Ctor, Field, Meta, OpDef, head, integer, ints, ints_text
from .meta import attr_check, check_shape, float_dtype, is_int, is_int_list, show, show_shape

_Pair = tuple[int, int]


def _pair_check(key: str, least: int) -> Attr:
    ok = attr_check(key, lambda v: is_int_list(v) and len(v) == 2 and all(a >= least for a in v),
                    f"a list of two integers >= {least}")
    return Attr(key, ok)


def _shape4(key: str) -> Attr:
    def check(v: Any) -> None:
        check_shape(v, f"attribute {show(key)}")
        if len(v) != 4:
            raise ValueError(f"attribute {show(key)} must have 4 entries (NCHW or OIHW), got {show(v)}")
    return Attr(key, check)


_COMMON = (_pair_check("stride", 1), _pair_check("padding", 0), _pair_check("dilation", 1),
           Attr("groups", attr_check("groups", lambda v: is_int(v) and v >= 1, "an integer >= 1")))


def _params(attrs: Mapping[str, Any]) -> tuple[_Pair, _Pair, _Pair, int]:
    s, p, d = (tuple(attrs[k]) for k in ("stride", "padding", "dilation"))
    return s, p, d, int(attrs["groups"])  # type: ignore[return-value]


def _out_shape(x: Sequence[int], w: Sequence[int], attrs: Mapping[str, Any]) -> tuple[int, ...]:
    """The output shape of Conv2d on shapes x and w; ValueError naming what does not fit."""
    s, p, d, g = _params(attrs)
    if len(x) != 4:
        raise ValueError(f"x must be 4-D [N, C, H, W], got {show_shape(x)}")
    if len(w) != 4:
        raise ValueError(f"w must be 4-D [O, C/groups, KH, KW], got {show_shape(w)}")
    if x[1] % g or w[0] % g:
        raise ValueError(f"channels {x[1]} (in) and {w[0]} (out) must be multiples of groups {g}")
    if w[1] * g != x[1]:
        raise ValueError(f"w {show_shape(w)} needs {w[1] * g} input channels ({w[1]} x groups {g}), x has {x[1]}")
    oh, ow = (convmath.out_size(x[2 + i], w[2 + i], s[i], p[i], d[i]) for i in (0, 1))
    if oh < 1 or ow < 1 or min(w[2:]) < 1:
        raise ValueError(f"the kernel {show_shape(w[2:])} (dilation {list(d)}) does not fit x {show_shape(x)} "
                         f"padded by {list(p)}")
    return (x[0], w[0], oh, ow)


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
    if len(x) != 4:
        raise ValueError(f"x must be 4-D [N, C, H, W], got {show_shape(x)}")
    if x[1] % g:
        raise ValueError(f"channels {x[1]} must be a multiple of groups {g}")
    _, _, oh, ow = _out_shape(x, (g, x[1] // g) + kernel, attrs)
    return (x[0], g, x[1] // g * kernel[0] * kernel[1], oh * ow), float_dtype(ins)


def _flip(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    w, g = ins[0][0], attrs["groups"]
    if len(w) != 4:
        raise ValueError(f"w must be 4-D [O, C/groups, KH, KW], got {show_shape(w)}")
    if w[0] % g:
        raise ValueError(f"output channels {w[0]} must be a multiple of groups {g}")
    return (w[1] * g, w[0] // g, w[2], w[3]), float_dtype(ins)


def _dilate_pad(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    (dy, _), (w, _) = ins
    shape, d = tuple(attrs["input_shape"]), attrs["dilation"]
    g = shape[1] // w[1] if len(w) == 4 and w[1] and shape[1] % w[1] == 0 else 0
    if g < 1:
        raise ValueError(f"w {show_shape(w)} does not fit input_shape {show_shape(shape)}")
    _check_dy(dy, _out_shape(shape, w, {**attrs, "groups": g}))
    return (dy[0], dy[1], shape[2] + d[0] * (w[2] - 1), shape[3] + d[1] * (w[3] - 1)), float_dtype(ins)


def _columns(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    x, w = ins[0][0], ins[1][0]
    n, _, oh, ow = _out_shape(x, w, attrs)
    g = attrs["groups"]
    return (n, g, oh, w[1] * w[2] * w[3], ow), float_dtype(ins)


def _weight_matrix(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    w, g = ins[0][0], attrs["groups"]
    if len(w) != 4 or w[0] % g:
        raise ValueError(f"w must be 4-D [O, C/groups, KH, KW] with O a multiple of groups {g}, got {show_shape(w)}")
    return (g, 1, w[0] // g, w[1] * w[2] * w[3]), ins[0][1]


def _merge_groups(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    t = ins[0][0]
    if len(t) != 5:
        raise ValueError(f"the input must be 5-D [N, G, OH, O/G, OW], got {show_shape(t)}")
    return (t[0], t[1] * t[3], t[2], t[4]), ins[0][1]


def _float(op: str, dtype: str) -> None:
    if dtype not in ("f64", "f32", "f16", "bf16"):
        raise LowerError(f"{op} needs a float dtype, not {dtype}")


def _op_conv(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    _float("Conv2d", dtype)
    return _round_float(convmath.conv(_f(args[0]), _f(args[1]), *_params(attrs)), dtype)


def _input_grad(key: str) -> Any:
    def evaluate(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
        _float("a convolution's input gradient", dtype)
        s, p, d, g = _params(attrs)
        return _round_float(convmath.grad_input(_f(args[0]), _f(args[1]), attrs[key], s, p, d, g), dtype)
    return evaluate


def _op_weight_grad(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    _float("Conv2dBackwardWeight", dtype)
    s, p, d, g = _params(attrs)
    k = tuple(attrs["weight_shape"][2:])
    return _round_float(convmath.grad_weight(_f(args[0]), _f(args[1]), k, s, p, d, g), dtype)  # type: ignore[arg-type]


def _op_im2col(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    s, p, d, g = _params(attrs)
    return _round_float(convmath.im2col(_f(args[0]), tuple(attrs["kernel"]), s, p, d, g), dtype)  # type: ignore[arg-type]


def _op_flip(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    return _round_float(convmath.flip_weight(_f(args[0]), int(attrs["groups"])), dtype)


def _op_dilate_pad(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    s, p, d = (tuple(attrs[k]) for k in ("stride", "padding", "dilation"))
    w = np.shape(args[1])
    return _round_float(convmath.dilate_pad(_f(args[0]), (w[2], w[3]), attrs["input_shape"], s, p, d),  # type: ignore[arg-type]
                        dtype)


def _op_columns(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    w = np.shape(args[1])
    return _round_float(convmath.columns(_f(args[0]), (w[2], w[3]), *_params(attrs)), dtype)


def _op_weight_matrix(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    return _round_float(convmath.weight_matrix(_f(args[0]), int(attrs["groups"])), dtype)


def _op_merge_groups(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    return _round_float(convmath.merge_groups(_f(args[0])), dtype)


def _groups_in_batch(attrs: Mapping[str, Any], x: Sequence[int]) -> tuple[list[int], list[int]]:
    """x [N, C, H, W] split by groups ([N, G, C/G, H, W]) and with the groups folded into its batch
    axis after the channels ([C/G, G*N, H, W]): the input of the weight gradient as a convolution."""
    g = int(attrs["groups"])
    n, c, h, w = x
    return [n, g, c // g, h, w], [c // g, g * n, h, w]


def _dy_matrices(attrs: Mapping[str, Any], x: Sequence[int]) -> str:
    """dy [N, O, OH, OW] as a matrix per sample and group, [N, G, O/G, OH*OW] (the same elements)."""
    s, p, d, g = _params(attrs)
    o, _, kh, kw = attrs["weight_shape"]
    oh, ow = (convmath.out_size(x[2 + i], (kh, kw)[i], s[i], p[i], d[i]) for i in (0, 1))
    return ints_text([x[0], g, o // g, oh * ow])


def _crop(attrs: Mapping[str, Any], x: Sequence[int]) -> str:
    """The axes (2, 3) along which the weight gradient as a convolution comes out longer than the kernel."""
    s, p, d, _ = _params(attrs)
    k = attrs["weight_shape"][2:]
    return ints_text([2 + i for i in (0, 1) if convmath.weight_conv_size(x[2 + i], k[i], s[i], p[i], d[i]) > k[i]])


_FIELDS = (ints("stride"), ints("padding"), ints("dilation"), integer("groups"))
_KERNEL = Field("kernel", STRING, lambda v, rank: ints_text(v[2:]), None, source="weight_shape")
_WEIGHT_CONV = (
    Field("kh", I64, lambda v, rank: int(v[2]), None, source="weight_shape"),
    Field("kw", I64, lambda v, rank: int(v[3]), None, source="weight_shape"),
    Field("xsplit", STRING, lambda a, x: ints_text(_groups_in_batch(a, x)[0]), None, source=WHOLE, shaped=True),
    Field("xfold", STRING, lambda a, x: ints_text(_groups_in_batch(a, x)[1]), None, source=WHOLE, shaped=True),
    Field("crop", STRING, _crop, None, source=WHOLE, shaped=True),
    Field("dymat", STRING, _dy_matrices, None, source=WHOLE, shaped=True),
)
_SAMPLE = {"stride": [2, 1], "padding": [1, 0], "dilation": [1, 2], "groups": 2}
_X, _W, _DY = ((2, 4, 5, 6), "f32"), ((6, 2, 3, 2), "f32"), ((2, 6, 3, 4), "f32")

OPS: tuple[OpDef, ...] = (
    OpDef("Conv2d", ("x", "w"), _COMMON, _conv, _op_conv,
          (Ctor("Conv2d", "Conv2d", _FIELDS, 2, (head("Conv2d"),)),), domain="conv", torch="conv2d",
          sample=(_SAMPLE, (_X, _W))),
    OpDef("ConvTranspose2d", ("dy", "w"), _COMMON + (_shape4("output_shape"),), _backward_input("output_shape"),
          _input_grad("output_shape"),
          (Ctor("ConvT2d", "ConvTranspose2d", _FIELDS + (ints("output_shape"),), 2, (head("ConvTranspose2d"),)),),
          domain="conv", torch="conv_transpose2d", sample=({**_SAMPLE, "output_shape": list(_X[0])}, (_DY, _W))),
    OpDef("Im2Col", ("x",), (Attr("kernel", _pair_check("kernel", 1).check),) + _COMMON, _im2col, _op_im2col,
          (Ctor("Im2Col", "Im2Col", (ints("kernel"),) + _FIELDS, 1, (head("Im2Col"),)),), domain=None,
          torch="im2col", sample=({**_SAMPLE, "kernel": [3, 2]}, (_X,))),
    OpDef("Conv2dFlipWeight", ("w",), _COMMON[3:], _flip, _op_flip,
          (Ctor("Conv2dFlipW", "Conv2dFlipWeight", (integer("groups"),), 1, (head("Conv2dFlipWeight"),)),),
          domain=None, torch="conv2d_flip_weight", sample=({"groups": 2}, (_W,))),
    OpDef("Conv2dDilatePad", ("dy", "w"), _COMMON[:3] + (_shape4("input_shape"),), _dilate_pad, _op_dilate_pad,
          (Ctor("Conv2dDilatePad", "Conv2dDilatePad", _FIELDS[:3] + (ints("input_shape"),), 2,
                (head("Conv2dDilatePad"),)),), domain=None, torch="conv2d_dilate_pad",
          sample=({"stride": [2, 1], "padding": [1, 0], "dilation": [1, 2], "input_shape": list(_X[0])},
                  (_DY, _W))),
    OpDef("Conv2dColumns", ("x", "w"), _COMMON, _columns, _op_columns,
          (Ctor("Conv2dColumns", "Conv2dColumns", _FIELDS, 2, (head("Conv2dColumns"),)),), domain=None,
          torch="conv2d_columns", sample=(_SAMPLE, (_X, _W))),
    OpDef("Conv2dWeightMatrix", ("w",), _COMMON[3:], _weight_matrix, _op_weight_matrix,
          (Ctor("Conv2dWeightMatrix", "Conv2dWeightMatrix", (integer("groups"),), 1, (head("Conv2dWeightMatrix"),)),),
          domain=None, torch="conv2d_weight_matrix", sample=({"groups": 2}, (_W,))),
    OpDef("Conv2dMergeGroups", ("t",), (), _merge_groups, _op_merge_groups,
          (Ctor("Conv2dMergeGroups", "Conv2dMergeGroups", (), 1, (head("Conv2dMergeGroups"),)),), domain=None,
          torch="conv2d_merge_groups", sample=({}, (((2, 2, 3, 3, 4), "f32"),))),
)

BACKWARD: tuple[OpDef, ...] = (
    OpDef("Conv2dBackwardInput", ("dy", "w"), _COMMON + (_shape4("input_shape"),), _backward_input("input_shape"),
          _input_grad("input_shape"),
          (Ctor("Conv2dBwdInput", "Conv2dBackwardInput", _FIELDS + (ints("input_shape"),), 2,
                (head("Conv2dBackwardInput"),)),), domain="conv", torch="conv2d_backward_input", backward=True,
          sample=({**_SAMPLE, "input_shape": list(_X[0])}, (_DY, _W))),
    OpDef("Conv2dBackwardWeight", ("x", "dy"), _COMMON + (_shape4("weight_shape"),), _backward_weight,
          _op_weight_grad,
          (Ctor("Conv2dBwdWeight", "Conv2dBackwardWeight", _FIELDS + (ints("weight_shape"), _KERNEL) + _WEIGHT_CONV, 2,
                (head("Conv2dBackwardWeight"),)),), domain="conv", torch="conv2d_backward_weight", backward=True,
          sample=({**_SAMPLE, "weight_shape": list(_W[0])}, (_X, _DY))),
)
