"""The pooling backward ops in primitives and the pooling helpers (`opdefs/pool.py`).

Max pooling: dx[n, c, p] = sum over windows o of dy[n, c, o] [indices[n, c, o] = p]. Four forms:
- `maxpool-bwd-onehot`: the one-hot over the whole plane, [H*W, N, C, OH, OW], selects dy
  (broadcast; a select, not a product, so an infinite dy stays where it goes), summed over
  the windows, then laid out as [N, C, H, W];
- `maxpool-bwd-separable`: [p = (h, w)] = [p // W = h] [p % W = w], so per (n, c, oh) the sum
  over ow is a MatMul of the row one-hot (masking dy) [H, OW] by the column one-hot [OW, W],
  and the sum over oh a Reduce: memory H + W (and OH * H * W) per window instead of H * W.
- `maxpool-bwd-tiled`: when the windows tile the plane (kernel = stride, no padding or dilation,
  every window whole), a position is in one window at most, so there is no sum: each window's dy
  and index repeated over the window (Reshape, Expand, Reshape, zeros past the last window), and dy
  kept where the index names the position (an Iota of the flattened plane); elementwise only;
- `maxpool-bwd-scatter`: the sum is what a scatter-add computes: dy [N, C, OH*OW] added into
  zeros [N, C, H*W] (an empty slice of dy padded with H*W zeros: the notation has no constant
  tensors) at the positions idx names, then laid out as [N, C, H, W]; only for a backend with
  ScatterAdd. Each window's gradient goes to the one element its index names, so ties are
  PyTorch's (the index the forward chose), overlapping windows add up.
Average pooling (plain and adaptive): y = Wh x Ww^T per plane, so dx = Wh^T dy Ww; the two
MatMuls in either order (`...-cols-first`: Wh^T (dy Ww); `...-rows-first`: (Wh^T dy) Ww).
"""

from __future__ import annotations

from .dsl import Rule, rule

_MAX = "k s p d c ishape dflat plane tiled up6 exp6 up4 padh padw xflat"
_TILED = "k s p d c ishape dflat plane 1 up6 exp6 up4 padh padw xflat"


def _over_windows(t: str) -> str:
    """`t` ([N, C, OH, OW]) with each window's value repeated over its window, zeros past the last
    window, planes flattened: [N, C, H * W]."""
    return f"(Reshape xflat (Pad 3 0 padw (Pad 2 0 padh (Reshape up4 (Expand exp6 (Reshape up6 {t}))))))"


_AVG = "k s p c cip dv ishape"
_WH = f"(PoolWeights 0 {_AVG} dy)"
_WW = f"(PoolWeights 1 {_AVG} dy)"
_AWH = "(AdaptivePoolWeights 0 ishape dy)"
_AWW = "(AdaptivePoolWeights 1 ishape dy)"

RULES: tuple[Rule, ...] = (
    rule("maxpool-bwd-onehot", "dx[p] = sum_o dy[o] [idx[o] = p] (one-hot over the H*W plane)",
         f"(MaxPool2dBackward {_MAX} dy idx)",
         "(Reshape ishape (Transpose [1,2,0] (sum [3,4] (where (!= (OneHot.Plane ishape idx dy) 0) dy 0))))",
         group="backward"),
    rule("maxpool-bwd-separable", "dx[h, w] = sum_oh (sum_ow [idx // W = h] dy [idx % W = w]) (a MatMul over ow)",
         f"(MaxPool2dBackward {_MAX} dy idx)",
         "(sum [2] (MatMul (Transpose [1,2,3,0,4] (where (!= (OneHot.Row ishape idx dy) 0) dy 0))"
         " (Transpose [1,2,3,4,0] (OneHot.Col ishape idx dy))))",
         group="backward"),
    rule("maxpool-bwd-scatter", "dx[n, c, p] = sum_o dy[n, c, o] [idx[n, c, o] = p]: a scatter-add of dy at idx",
         f"(MaxPool2dBackward {_MAX} dy idx)",
         "(Reshape ishape (ScatterAdd 2 (Pad 2 plane 0 (Slice 2 0 0 1 flat)) (Reshape dflat idx) flat))",
         group="backward", lets={"flat": "(Reshape dflat dy)"}),
    rule("maxpool-bwd-tiled", "dx[h, w] = dy[h // s, w // s] [idx[h // s, w // s] = h W + w] when the windows tile"
         " the plane (kernel = stride, no padding or dilation): elementwise, each position in one window at most",
         f"(MaxPool2dBackward {_TILED} dy idx)",
         "(Reshape ishape (where (== up_idx (Iota.i64 2 up_idx)) up_dy 0))",
         group="backward", lets={"up_idx": _over_windows("idx"), "up_dy": _over_windows("dy")}),
    rule("avgpool-bwd-cols-first", "dx = Wh^T (dy Ww)", f"(AvgPool2dBackward {_AVG} dy)",
         f"(MatMul (Transpose [1,0] {_WH}) (MatMul dy {_WW}))", group="backward"),
    rule("avgpool-bwd-rows-first", "dx = (Wh^T dy) Ww", f"(AvgPool2dBackward {_AVG} dy)",
         f"(MatMul (MatMul (Transpose [1,0] {_WH}) dy) {_WW})", group="backward"),
    rule("adaptive-avgpool-bwd-cols-first", "dx = Wh^T (dy Ww), windows [floor(o L/O), ceil((o+1) L/O))",
         "(AdaptiveAvgPool2dBackward ishape dy)", f"(MatMul (Transpose [1,0] {_AWH}) (MatMul dy {_AWW}))",
         group="backward"),
    rule("adaptive-avgpool-bwd-rows-first", "dx = (Wh^T dy) Ww, windows [floor(o L/O), ceil((o+1) L/O))",
         "(AdaptiveAvgPool2dBackward ishape dy)", f"(MatMul (MatMul (Transpose [1,0] {_AWH}) dy) {_AWW})",
         group="backward"),
)
