"""Interpolation and its backward op in primitives (`opdefs/resample.py`).

Interpolating spatial axis j is a product with its matrix W_j [O_j, L_j] (`InterpolateWeights`, which
every backend runs), so the forward applies each W_j along its axis and the backward each W_j^T:
- `interpolate-matmul-<k>d` / `interpolate-bwd-matmul-<k>d`: the products as MatMuls, the last axis
  from the right (x W^T, dy W), the one before from the left (W x, W^T dy); with three axes the last
  two are folded into one (a Reshape) for the first axis's product. Every mode, antialiased (`aa`) or
  not (its matrices are InterpolateWeights' too); the matrices are O_j x L_j, small beside the data;
- `interpolate-take-<k>d` / `interpolate-bwd-scatter-<k>d`: nearest's W_j has one 1 a row, at
  `InterpolateIndex`: a Take (gather) per axis, no arithmetic, and backward a ScatterAdd per axis of dy
  into zeros at those indices (the zeros an empty Slice of dy padded: the notation has no constants);
- `interpolate-repeat` / `interpolate-bwd-repeat`: where nearest interpolation repeats each input r_j
  times on every axis (index o // r_j: whole-number factors), the forward is a Reshape to
  [N, C, L1, 1, L2, 1, ..], an Expand to [N, C, L1, r1, L2, r2, ..] and a Reshape to the result, and
  the backward dy's Reshape to [N, C, L1, r1, ..] summed over the r axes: no index at all.
The MatMul forms multiply every input along an axis by its weight, 0 included: an infinite or NaN
input reaches the outputs of its whole row or column as NaN (the kernels touch only the taps).
"""

from __future__ import annotations

from .dsl import Rule, rule


def _lhs(op: str, k: str, child: str, near: str = "near", rep: str = "rep") -> str:
    return (f"({op} mode ac aa shape sc {k} i0 o0 s0 i1 o1 s1 i2 o2 s2 {near} {rep} up exp out sumax fold unfold"
            f" r0 x0 r1 x1 r2 x2 {child})")


def _scatter(j: int, t: str) -> str:
    """t's gradient scattered back along spatial axis j (axis 2 + j): each dy added at its source index."""
    a = 2 + j
    zeros = f"(Pad {a} i{j} 0 (Slice {a} 0 0 1 {t}))"  # t's shape with the axis of length L_j, zeros
    return f"(ScatterAdd {a} {zeros} (Expand x{j} (Reshape r{j} (InterpolateIndex mode i{j} o{j} s{j} dy))) {t})"


def _scatters(k: int) -> str:
    t = "dy"
    for j in reversed(range(k)):
        t = _scatter(j, t)
    return t


def _w(j: int, like: str) -> str:
    return f"(InterpolateWeights mode ac aa i{j} o{j} s{j} {like})"


def _wt(j: int, like: str) -> str:
    return f"(Transpose [1,0] {_w(j, like)})"


def _index(j: int) -> str:
    return f"(InterpolateIndex mode i{j} o{j} s{j} x)"


_FORWARD = {
    1: f"(MatMul x {_wt(0, 'x')})",
    2: f"(MatMul (MatMul {_w(0, 'x')} x) {_wt(1, 'x')})",
    3: f"(MatMul (MatMul {_w(1, 'x')} (Reshape unfold (MatMul {_w(0, 'x')} (Reshape fold x)))) {_wt(2, 'x')})",
}
_BACKWARD = {
    1: f"(MatMul dy {_w(0, 'dy')})",
    2: f"(MatMul (MatMul {_wt(0, 'dy')} dy) {_w(1, 'dy')})",
    3: f"(Reshape unfold (MatMul {_wt(0, 'dy')} (Reshape fold (MatMul (MatMul {_wt(1, 'dy')} dy) {_w(2, 'dy')}))))",
}
_TAKE = {1: f"(Take 2 x {_index(0)})", 2: f"(Take 3 (Take 2 x {_index(0)}) {_index(1)})",
         3: f"(Take 4 (Take 3 (Take 2 x {_index(0)}) {_index(1)}) {_index(2)})"}
_AXES = {1: "W0", 2: "W0 x W1^T", 3: "W0, W1, W2 along D, H, W"}

RULES: tuple[Rule, ...] = (
    *(rule(f"interpolate-matmul-{k}d", f"y = {_AXES[k]}: each axis's interpolation matrix as a MatMul",
           _lhs("Interpolate", str(k), "x"), _FORWARD[k], group="forward") for k in (1, 2, 3)),
    *(rule(f"interpolate-take-{k}d", "nearest: y = x at the source index of each axis (a Take per axis)",
           _lhs("Interpolate", str(k), "x", near="1"), _TAKE[k], group="forward") for k in (1, 2, 3)),
    rule("interpolate-repeat", "nearest by whole factors r: y[o] = x[o // r], a Reshape, an Expand and a Reshape",
         _lhs("Interpolate", "k", "x", rep="1"), "(Reshape out (Expand exp (Reshape up x)))", group="forward"),
    *(rule(f"interpolate-bwd-matmul-{k}d", "dx = dy with W^T applied along each axis (MatMuls)",
           _lhs("InterpolateBackward", str(k), "dy"), _BACKWARD[k], group="backward") for k in (1, 2, 3)),
    *(rule(f"interpolate-bwd-scatter-{k}d", "nearest: dx = dy added at the source index of each axis (a ScatterAdd"
           " per axis, the last first)", _lhs("InterpolateBackward", str(k), "dy", near="1"), _scatters(k),
           group="backward") for k in (1, 2, 3)),
    rule("interpolate-bwd-repeat", "nearest by whole factors r: dx[l] = sum of dy[l r .. l r + r - 1], a Reshape"
         " and a Reduce Sum", _lhs("InterpolateBackward", "k", "dy", rep="1"), "(sum sumax (Reshape exp dy))",
         group="backward"),
)
