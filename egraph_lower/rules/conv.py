"""Convolution gradients in the primitives a backend may have (opdefs/conv.py has the ops).

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
- conv-im2col: the forward convolution as a batched MatMul: per sample, group and
  output row, the group's filters [Og, Cg*KH*KW] times the unfolded input
  [Cg*KH*KW, OW]; the [N, G, OH, Og, OW] result regrouped to [N, O, OH, OW].
- conv-bwd-weight-im2col: grad_w[g*Og+o, (c,kh,kw)] = sum_n sum_l dy[n, g, o, l] u[n, g, (c,kh,kw), l],
  with u = Im2Col(x) [N, G, Cg*KH*KW, L] and dy flattened per group by an Im2Col
  with a 1x1 kernel ([N, G, Og, L], no arithmetic); the sum over l is a batched
  MatMul, the sum over n a Reduce Sum, and the [G, Og, Cg*KH*KW] result is
  weight_shape's layout row by row (a Reshape).
"""

from __future__ import annotations

from .dsl import Rule, rule

_ONE = "[1,1]"

RULES: tuple[Rule, ...] = (
    rule("conv-bwd-input-transpose", "d conv / dx = conv_transpose(dy, w) with the output shape of x",
         "(Conv2dBackwardInput s p d g ishape dy w)", "(ConvTranspose2d s p d g ishape dy w)", group="backward"),
    rule("conv-bwd-input-conv", "d conv / dx = conv(dilate_pad(dy), flip(w)), stride 1, no padding",
         "(Conv2dBackwardInput s p d g ishape dy w)",
         f"(Conv2d {_ONE} [0,0] d g (Conv2dDilatePad s p d ishape dy w) (Conv2dFlipWeight g w))", group="backward"),
    rule("conv-im2col", "conv(x, w) = merge(w_matrix @ columns(x)), per sample, group and output row",
         "(Conv2d s p d g x w)",
         "(Conv2dMergeGroups (MatMul (Conv2dWeightMatrix g w) (Conv2dColumns s p d g x w)))", group="forward"),
    rule("conv-bwd-weight-im2col", "d conv / dw = sum_n dy_flat(n) im2col(x)(n)^T, per group",
         "(Conv2dBackwardWeight s p d g wshape k x dy)",
         f"(Reshape wshape (Reduce.Sum [0] 0 (MatMul (Im2Col {_ONE} {_ONE} [0,0] {_ONE} g dy) "
         "(Transpose [0,1,3,2] (Im2Col k s p d g x)))))", group="backward"),
)
