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
