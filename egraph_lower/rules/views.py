"""SliceScatter in copies (Slice, Concat, Pad, Reshape) and a Where, for backends without its kernel.

The e-node's fields (`opdefs/views.py`) are computed from the attributes, Python's clamping included,
and x's shape [.., n, ..]; src has m positions on the axis:

- `slice-scatter-concat` (step 1): x[:lo], src, x[hi:] concatenated along the axis (lo, hi the clamped
  bounds, hi >= lo; an empty slice is x[:lo] ++ x[lo:], x itself).
- `slice-scatter-where` (any step): src spread into the axis as SliceBackward's interleave puts a gradient
  (reshaped to [.., m, 1, ..], step - 1 zeros after each value, reshaped to [.., m step, ..], its first
  `keep` positions placed after `before` positions and ahead of `after`), and x kept where the same
  spread of Iota + 1 (>= 1 exactly at the slice's positions) is 0: where(spread(iota + 1) > 0,
  spread(src), x), exact in every dtype, NaN and infinities of x or src included.
"""

from __future__ import annotations

from .dsl import Rule, rule

_SS = "axis start end {step} lo hi n inner gap col spread keep before after x src"


def _spread(e: str) -> str:
    return f"(Pad axis before after (Slice axis 0 keep 1 (Reshape spread (Pad inner 0 gap (Reshape col {e})))))"


RULES: tuple[Rule, ...] = (
    rule("slice-scatter-concat", "slice_scatter(x, src) (step 1) = [x[:lo], src, x[hi:]] along the axis",
         f"(SliceScatter {_SS.format(step=1)})", "(Concat axis (Concat axis (Slice axis 0 lo 1 x) src) (Slice axis hi n 1 x))",
         group="forward"),
    rule("slice-scatter-where", "slice_scatter(x, src) = where(spread(iota + 1) > 0, spread(src), x), spread: src "
         "with step - 1 zeros after each value, placed at the slice's first position",
         f"(SliceScatter {_SS.format(step='step')})", f"(where (> {_spread('(+ (Iota.i64 axis src) 1)')} 0) "
         f"{_spread('src')} x)", group="forward"),
)

# Diagonal, DiagonalScatter, DiagonalBackward (opdefs/views.py, `diagonal_geometry`): x transposed to
# [.., n1, n2] (the other axes in order, then dim1, dim2) and reshaped to [.., n1 n2] holds the diagonal
# (i, i + offset) at positions start + i (n2 + 1) of its last axis, a Slice with step n2 + 1.
_DIAG = "offset dim1 dim2"
_FLAT = "(Reshape fshape (Transpose perm x))"
_GEO = "lo hi n inner gap col spread keep before after"

RULES += (
    rule("diagonal-slice", "diagonal(x, offset, dim1, dim2) = reshape(transpose(x) to [.., n1, n2], [.., n1 n2])"
         "[.., start::n2 + 1]", f"(Diagonal {_DIAG} perm fshape last start end step x)",
         f"(Slice last start end step {_FLAT})", group="forward"),
    rule("diagonal-scatter-slice", "diagonal_scatter(x, src) = the slice_scatter of src into x transposed to "
         "[.., n1, n2] and flattened to [.., n1 n2], with step n2 + 1, reshaped and transposed back",
         f"(DiagonalScatter {_DIAG} perm iperm tshape fshape last start end step {_GEO} x src)",
         f"(Transpose iperm (Reshape tshape (SliceScatter last start end step {_GEO} {_FLAT} src)))", group="forward"),
    rule("diagonal-bwd-spread", "d diagonal: dx = g (dy) with n2 zeros after each value, placed at the diagonal's first "
         "position of x flattened to [.., n1 n2], reshaped to [.., n1, n2] and transposed back",
         "(DiagonalBackward shape offset dim1 dim2 iperm tshape last inner gap col spread keep before after g)",
         "(Transpose iperm (Reshape tshape (Pad last before after (Slice last 0 keep 1 (Reshape spread "
         "(Pad inner 0 gap (Reshape col g)))))))", group="backward"),
)

RULES += (
    rule("select-scatter-concat", "select_scatter(x, src, axis, index) = [x[:i], unsqueeze(src), x[i + 1:]] along "
         "the axis (i the index from 0)", "(SelectScatter axis index lo hi n col x src)",
         "(Concat axis (Concat axis (Slice axis 0 lo 1 x) (Reshape col src)) (Slice axis hi n 1 x))", group="forward"),
    rule("repeat-expand", "repeat(x, reps) = reshape(expand(reshape(x, [1, s0, 1, s1, ..]), [r0, s0, r1, s1, ..]), "
         "[r0 s0, r1 s1, ..])", "(Repeat reps ishape eshape oshape x)",
         "(Reshape oshape (Expand eshape (Reshape ishape x)))", group="forward"),
)
