"""Convolution gradients in the primitives a backend may have (opdefs/conv.py has the ops), for
2-D and 3-D convolutions: each form is written once (`_rules(nd)`) and stated for each rank, the 3-D
rules named `conv3d-...` (the 2-D ones `conv-...`), with Conv3d, ConvTranspose3d, Im2Col3d and the
Conv3d helpers in place of the 2-D ops and every permutation over one more spatial axis.

The fields `s p d g` are stride, padding, dilation and groups; `ishape` is the input
gradient's shape, `wshape` the weight gradient's and `k` its kernel size (wshape's
last two entries). Groups are kept apart by Im2Col's group axis: column block g of
x is multiplied only with the output channels of group g.

- conv-bwd-input-transpose: the input gradient of a convolution is, by definition,
  the transposed convolution with the same stride, padding, dilation and groups,
  whose output has the input's shape (ConvTranspose2d; no arithmetic changes).
- conv-bwd-input-conv: the same gradient as a plain convolution (stride 1, no
  padding, the same dilation and groups) of dy spread out by the stride (s-1
  zeros between neighbours) and padded by d(k-1)-p on the leading side (a
  negative amount crops) up to H + d(k-1), with the weight turned by 180 degrees
  and its channel axes swapped within each group:
  dx[c, h] = sum_{o, a} w[o, c, a] dy[o, (h + p - a d)/s]  (where s divides it)
           = sum_{o, a'} w[o, c, k-1-a'] z[o, h + a' d],  z[t] = dy[(t - d(k-1) + p)/s].
- conv-transpose-conv: the transposed convolution (a model's ConvTranspose2d, the adjoint in x
  of Conv2d from its output shape) computes the values of the input gradient above, and is the
  same plain convolution of x spread out by the stride and padded, with the flipped weight
  (a backend without a transposed-convolution kernel; Conv2d then lowers on its own).
- conv-im2col: the forward convolution as a batched MatMul: per sample, group and
  output row, the group's filters [Og, Cg*KH*KW] times the unfolded input
  [Cg*KH*KW, OW]; the [N, G, OH, Og, OW] result regrouped to [N, O, OH, OW].
- conv-bwd-weight-conv (and -crop-h, -crop-w, -crop-hw): the weight gradient as a
  convolution with the batch and channel axes exchanged. With Cg = C/G,
  grad_w[g*Og+o, c, a, b] = sum_n sum_{i,j} dy[n, g*Og+o, i, j] x_pad[n, g*Cg+c, i s0 + a d0, j s1 + b d1],
  which is Conv2d(x', dy') with stride d, dilation s, padding p and G groups, where
  dy' = dy with N and O exchanged ([O, N, OH, OW]: output channel g*Og+o of group g, a
  kernel of OH x OW taps) and x' = x split by groups and folded into the batch axis
  ([Cg, G*N, H, W]: x'[c, g*N+n] = x[n, g*Cg+c], so group g's input channels are the N
  samples of x's channel block g); its output is [Cg, O, KH', KW'], exchanged back to
  [O, Cg, KH, KW]. KH' = out_size(H, OH, d, p, s) is at least KH and exceeds it by
  floor(r/d), r = (H + 2p - d(KH-1) - 1) mod s (input rows no tap reads): there the
  result is cropped to the kernel (a Slice). The node's `crop` field (computed from x's
  shape at load time) says along which axes: one rule per case, so that no rule
  emits a Slice that takes everything (3-D: a rule per subset of D, H, W, `-crop-d` ... `-crop-dhw`).
- conv-bwd-weight-im2col: grad_w[g*Og+o, (c,kh,kw)] = sum_n sum_l dy[n, g, o, l] u[n, g, (c,kh,kw), l],
  with u = Im2Col(x) [N, G, Cg*KH*KW, L] and dy viewed per group as [N, G, Og, L] (a
  Reshape: `dymat`, the same elements in the same order); the sum over l is a batched
  MatMul, the sum over n a Reduce Sum, and the [G, Og, Cg*KH*KW] result is
  weight_shape's layout row by row (a Reshape).
- conv-bwd-weight-im2col-t: the same sum as the transposed product,
  grad_w^T = sum_n u(n) dy_flat(n)^T ([G, Cg*KH*KW, Og]), transposed back after the sum
  over n: it transposes dy and the weight-sized result instead of the unfolded input,
  which is KH*KW times larger than x (cheaper unless the kernels' launches dominate).
"""

from __future__ import annotations

import itertools

from ..opdefs.conv import names
from .dsl import Rule, rule

_LETTERS = {2: "hw", 3: "dhw"}  # the spatial axes (2, 3[, 4]) as the crop rules' suffixes name them


def _ints(v: object) -> str:
    return "[" + ",".join(map(str, v)) + "]"  # type: ignore[call-overload]


def _rules(nd: int) -> tuple[Rule, ...]:
    n = names(nd)
    pre = "conv" if nd == 2 else f"conv{nd}d"
    one, zero = _ints([1] * nd), _ints([0] * nd)
    rest = list(range(2, nd + 2))  # the spatial axes
    swap01 = _ints([1, 0] + rest)  # N and C (O) exchanged
    kfields = " ".join(f"k{a}" for a in _LETTERS[nd])
    w_lhs = f"({n['bwd_weight']} s p d g wshape k {kfields} xsplit xfold {{crop}} dymat xmat {{pw}} x dy)"
    x_lhs = f"({n['bwd_input']} s p d g ishape {{unit}} tpad {{pw}} dymat wmat dy w)"
    w_conv = (f"({n['conv']} d p s g (Reshape xfold (Transpose {_ints([2, 1, 0] + [a + 1 for a in rest])} "
              f"(Reshape xsplit x))) (Transpose {swap01} dy))")
    # crop field -> (rule name suffix, the Slices that crop the convolution's output `c` to the kernel)
    crops = []
    for r in range(nd + 1):
        for axes in itertools.combinations(rest, r):
            cropped = "c"
            for a in axes:
                cropped = f"(Slice {a} 0 k{_LETTERS[nd][a - 2]} 1 {cropped})"
            suffix = "-crop-" + "".join(_LETTERS[nd][a - 2] for a in axes) if axes else ""
            crops.append((_ints(axes), suffix, cropped))
    lower_x = f"({n['conv']} {one} {zero} d g ({n['dilate_pad']} s p d {{shape}} {{x}} w) ({n['flip']} g w))"
    return (
        rule(f"{pre}-bwd-input-transpose", "d conv / dx = conv_transpose(dy, w) with the output shape of x",
             x_lhs.format(unit="unit", pw="pw"), f"({n['transpose']} s p d g ishape dy w)", group="backward"),
        rule(f"{pre}-bwd-input-conv", "d conv / dx = conv(dilate_pad(dy), flip(w)), stride 1, no padding",
             x_lhs.format(unit="unit", pw="pw"), lower_x.format(shape="ishape", x="dy"), group="backward"),
        rule(f"{pre}-transpose-conv", "conv_transpose(x, w) = conv(dilate_pad(x), flip(w)), stride 1, no padding",
             f"({n['transpose']} s p d g oshape x w)", lower_x.format(shape="oshape", x="x"), group="forward"),
        rule(f"{pre}-im2col", "conv(x, w) = merge(w_matrix @ columns(x)), per sample, group and output row",
             f"({n['conv']} s p d g x w)",
             f"({n['merge_groups']} (MatMul ({n['weight_matrix']} g w) ({n['columns']} s p d g x w)))",
             group="forward"),
        *(rule(f"{pre}-bwd-weight-conv{suffix}",
               "d conv / dw = conv(x with N, C exchanged (groups in N), dy with N, O exchanged), stride d,"
               " dilation s, padding p, result's first two axes exchanged"
               + (f", cropped to the kernel along axes {crop}" if suffix else ""),
               w_lhs.format(crop=crop, pw="pw"), f"(Transpose {swap01} {cropped})", group="backward", lets={"c": w_conv})
          for crop, suffix, cropped in crops),
        rule(f"{pre}-bwd-weight-im2col", "d conv / dw = sum_n dy_flat(n) im2col(x)(n)^T, per group",
             w_lhs.format(crop="crop", pw="pw"),
             f"(Reshape wshape (Reduce.Sum [0] 0 (MatMul (Reshape dymat dy) "
             f"(Transpose [0,1,3,2] ({n['im2col']} k s p d g x)))))", group="backward"),
        rule(f"{pre}-bwd-weight-im2col-t", "d conv / dw = (sum_n im2col(x)(n) dy_flat(n)^T)^T, per group",
             w_lhs.format(crop="crop", pw="pw"),
             f"(Reshape wshape (Transpose [0,2,1] (Reduce.Sum [0] 0 (MatMul ({n['im2col']} k s p d g x) "
             f"(Transpose [0,1,3,2] (Reshape dymat dy))))))", group="backward"),
        # the rules after these are issue 22's: forms with fewer kernels and less traffic where the
        # backend has no convolution kernel
        rule(f"{pre}-bwd-input-conv-s1", "d conv / dx = conv(dy, flip(w)), stride 1, padding d(k-1) - p"
             " (stride 1: no spread-out copy of dy)",
             x_lhs.format(unit="1", pw="pw"), f"({n['conv']} {one} tpad d g dy ({n['flip']} g w))", group="backward"),
        rule(f"{pre}-bwd-input-pointwise", "d conv / dx = w_g^T dy_g per sample and group (1 x 1 kernel,"
             " stride 1, no padding)",
             x_lhs.format(unit="unit", pw="1"),
             "(Reshape ishape (MatMul (Transpose [0,2,1] (Reshape wmat w)) (Reshape dymat dy)))", group="backward"),
        rule(f"{pre}-bwd-weight-pointwise", "d conv / dw = sum_n dy_g(n) x_g(n)^T (1 x 1 kernel, stride 1,"
             " no padding: im2col(x) is x)",
             w_lhs.format(crop="crop", pw="1"),
             "(Reshape wshape (Reduce.Sum [0] 0 (MatMul (Reshape dymat dy) (Transpose [0,1,3,2] (Reshape xmat x)))))",
             group="backward"),
        rule(f"{pre}-bwd-weight-pointwise-t", "d conv / dw = (sum_n x_g(n) dy_g(n)^T)^T (1 x 1 kernel,"
             " stride 1, no padding)",
             w_lhs.format(crop="crop", pw="1"),
             "(Reshape wshape (Transpose [0,2,1] (Reduce.Sum [0] 0 (MatMul (Reshape xmat x) "
             "(Transpose [0,1,3,2] (Reshape dymat dy))))))", group="backward"),
    )


RULES: tuple[Rule, ...] = _rules(2)
# the 3-D convolution's rules (format version 3), registered after those of version 2
RULES3: tuple[Rule, ...] = _rules(3)
