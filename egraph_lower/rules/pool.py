"""The pooling backward ops in primitives and the pooling helpers (`opdefs/pool.py`), for 2-D and
3-D pooling: each form is written once (`_max_forms`, `_avg_forms`) and stated for each rank.

Max pooling (plain and adaptive): dx[n, c, p] = sum over windows o of dy[n, c, o] [indices[n, c, o] = p].
Four forms:
- `maxpool-bwd-onehot`: the one-hot over the whole spatial volume, [prod S, N, C, *O], selects dy
  (broadcast; a select, not a product, so an infinite dy stays where it goes), summed over the
  windows, then laid out as [N, C, *S];
- `maxpool-bwd-separable`: [p = (r, w)] = [p // W = r] [p % W = w] (r = h in 2-D, (d, h) in 3-D),
  so per window row (n, c, oh; or n, c, od, oh) the sum over ow is a MatMul of the row one-hot
  (masking dy) [R, OW] by the column one-hot [OW, W], and the sum over the other window axes a
  Reduce: memory R + W (and R * W per window row) per window instead of R * W.
- `maxpool-bwd-tiled`: when the windows tile the volume (kernel = stride, no padding or dilation,
  every window whole), a position is in one window at most, so there is no sum: each window's dy
  and index repeated over the window (Reshape, Expand, Reshape, zeros past the last window), and dy
  kept where the index names the position (an Iota of the flattened volume); elementwise only;
- `maxpool-bwd-scatter`: the sum is what a scatter-add computes: dy [N, C, prod O] added into
  zeros [N, C, prod S] (an empty slice of dy padded with prod S zeros: the notation has no constant
  tensors) at the positions idx names, then laid out as [N, C, *S]; only for a backend with
  ScatterAdd. Each window's gradient goes to the one element its index names, so ties are
  PyTorch's (the index the forward chose), overlapping windows add up.
Adaptive max pooling's windows vary in size, so it has the one-hot, separable and scatter forms.
Average pooling (plain and adaptive): y = x contracted with W_a along each spatial axis a (2-D:
Wh x Ww^T per plane), so dx = dy contracted with each W_a^T; the contractions in either order
(2-D `...-cols-first`: Wh^T (dy Ww), `...-rows-first`: (Wh^T dy) Ww; 3-D `...-w-first`: W then H
then D, `...-d-first`: D then H then W, the D axis moved next to last for its MatMul and back).
"""

from __future__ import annotations

from .dsl import Rule, rule

_SPATIAL = {2: "[3,4]", 3: "[3,4,5]"}  # the window axes of the one-hot [prod S, N, C, *O]


def _onehot(name: str, lhs: str, nd: int) -> Rule:
    return rule(name, f"dx[p] = sum_o dy[o] [idx[o] = p] (one-hot over the {'H*W plane' if nd == 2 else 'D*H*W volume'})",
                lhs, f"(Reshape ishape (Transpose [1,2,0] (sum {_SPATIAL[nd]}"
                " (where (!= (OneHot.Plane ishape idx dy) 0) dy 0))))", group="backward")


def _separable(name: str, lhs: str, nd: int) -> Rule:
    """dx over (R, W), R the volume without its last axis: per window row (n, c, *o without its last)
    a MatMul of the row one-hot [R, OW] (masking dy) by the column one-hot [OW, W], summed over the
    other window axes."""
    k = nd + 3  # the one-hot's rank: [L, N, C, *O]
    rows = "[" + ",".join(map(str, [*range(1, k - 1), 0, k - 1])) + "]"  # [N, C, *O[:-1], R, OW]
    cols = "[" + ",".join(map(str, [*range(1, k), 0])) + "]"  # [N, C, *O, W]
    axes = "[" + ",".join(map(str, range(2, nd + 1))) + "]"  # the window axes but the last
    body = (f"(sum {axes} (MatMul (Transpose {rows} (where (!= (OneHot.Row ishape idx dy) 0) dy 0))"
            f" (Transpose {cols} (OneHot.Col ishape idx dy))))")
    return rule(name, f"dx[r, w] = sum_o' (sum_ow [idx // W = r] dy [idx % W = w]) (a MatMul over ow; r = "
                f"{'h' if nd == 2 else '(d, h)'})", lhs, body if nd == 2 else f"(Reshape ishape {body})",
                group="backward")


def _scatter(name: str, lhs: str) -> Rule:
    return rule(name, "dx[n, c, p] = sum_o dy[n, c, o] [idx[n, c, o] = p]: a scatter-add of dy at idx", lhs,
                "(Reshape ishape (ScatterAdd 2 (Pad 2 plane 0 (Slice 2 0 0 1 flat)) (Reshape dflat idx) flat))",
                group="backward", lets={"flat": "(Reshape dflat dy)"})


def _over_windows(t: str, nd: int) -> str:
    """`t` ([N, C, *O]) with each window's value repeated over its window, zeros past the last
    window along each axis, the volume flattened: [N, C, prod S]."""
    pads = [f"pad{a}" for a in range(nd)]
    inner = f"(Reshape upn (Expand exp (Reshape up {t})))"
    for a in range(nd):
        inner = f"(Pad {2 + a} 0 {pads[a]} {inner})"
    return f"(Reshape xflat {inner})"


def _max_forms(nd: int) -> tuple[Rule, ...]:
    op, suffix = f"MaxPool{nd}dBackward", "" if nd == 2 else f"{nd}d"
    pads = " ".join(f"pad{a}" for a in range(nd))
    fields = f"k s p d c ishape dflat plane {{}} up exp upn {pads} xflat"
    lhs, tiled = f"({op} {fields.format('tiled')} dy idx)", f"({op} {fields.format('1')} dy idx)"
    forms = [_onehot(f"maxpool{suffix}-bwd-onehot", lhs, nd), _separable(f"maxpool{suffix}-bwd-separable", lhs, nd),
             _scatter(f"maxpool{suffix}-bwd-scatter", lhs)]
    forms.append(rule(
        f"maxpool{suffix}-bwd-tiled", f"dx[p] = dy[p // s] [idx[p // s] = flat p] when the windows tile the"
        f" {'plane' if nd == 2 else 'volume'} (kernel = stride, no padding or dilation): elementwise, each position"
        " in one window at most",
        tiled, "(Reshape ishape (where (== up_idx (Iota.i64 2 up_idx)) up_dy 0))",
        group="backward", lets={"up_idx": _over_windows("idx", nd), "up_dy": _over_windows("dy", nd)}))
    return tuple(forms)


def _adaptive_max_forms(nd: int) -> tuple[Rule, ...]:
    lhs, suffix = f"(AdaptiveMaxPool{nd}dBackward ishape dflat plane dy idx)", "" if nd == 2 else f"{nd}d"
    return (_onehot(f"adaptive-maxpool{suffix}-bwd-onehot", lhs, nd),
            _scatter(f"adaptive-maxpool{suffix}-bwd-scatter", lhs),
            _separable(f"adaptive-maxpool{suffix}-bwd-separable", lhs, nd))


_AVG = "k s p c cip dv ishape"


def _avg_forms(nd: int, adaptive: bool) -> tuple[Rule, ...]:
    """dx = dy contracted with W_a^T along each spatial axis, in two orders."""
    if adaptive:
        lhs, w, name = f"(AdaptiveAvgPool{nd}dBackward ishape dy)", "(AdaptivePoolWeights {} ishape dy)", "adaptive-avgpool"
        what = ", windows [floor(o L/O), ceil((o+1) L/O))"
    else:
        lhs, w, name, what = f"(AvgPool{nd}dBackward {_AVG} dy)", f"(PoolWeights {{}} {_AVG} dy)", "avgpool", ""
    wt = [f"(Transpose [1,0] {w.format(a)})" for a in range(nd)]
    last = w.format(nd - 1)
    if nd == 2:
        return (rule(f"{name}-bwd-cols-first", f"dx = Wh^T (dy Ww){what}", lhs, f"(MatMul {wt[0]} (MatMul dy {last}))",
                     group="backward"),
                rule(f"{name}-bwd-rows-first", f"dx = (Wh^T dy) Ww{what}", lhs, f"(MatMul (MatMul {wt[0]} dy) {last})",
                     group="backward"))
    swap = "(Transpose [0,1,3,2,4] {})"  # D and H exchanged: D next to last, for the MatMul over it
    d_last = swap.format(f"(MatMul {wt[0]} {swap.format('{}')})")  # contract D of a [N, C, OD|D, H|OH, *]
    return (rule(f"{name}3d-bwd-w-first", f"dx = dy contracted with Ww, then Wh^T, then Wd^T{what}", lhs,
                 d_last.format(f"(MatMul {wt[1]} (MatMul dy {last}))"), group="backward"),
            rule(f"{name}3d-bwd-d-first", f"dx = dy contracted with Wd^T, then Wh^T, then Ww{what}", lhs,
                 f"(MatMul (MatMul {wt[1]} {d_last.format('dy')}) {last})", group="backward"))


RULES: tuple[Rule, ...] = _max_forms(2) + _avg_forms(2, False) + _avg_forms(2, True)
# version 3's: adaptive max pooling (2-D and 3-D) and 3-D max, average and adaptive average pooling
V3: tuple[Rule, ...] = (_adaptive_max_forms(2) + _max_forms(3) + _avg_forms(3, False) + _avg_forms(3, True)
                        + _adaptive_max_forms(3))
