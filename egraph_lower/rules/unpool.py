"""Max unpooling (`opdefs/unpool.py`) in primitives: y[n, c, p] = x[n, c, o] for the last o (in
row-major order) whose index names p, else 0. Two forms, each for 2-D and 3-D:

- `maxunpool-scatter`: what a Scatter into zeros computes (its last writer wins, as the op's): x and
  the indices flattened to [N, C, M], scattered along axis 2 into zeros [N, C, P] (an empty slice of x
  padded with P zeros: the notation has no constant tensors), laid out as [N, C, *output_size]; for a
  backend with Scatter (and Scatter's own expansions follow elsewhere);
- `maxunpool-onehot`: per plane, the one-hot of the indices over the output's volume, [P, N, C, M]
  (`MaxPool2dOneHot` Plane), the last window m writing p (the max of where(one-hot, m, -1): -1 where
  none does, so p stays 0), and y the sum of the one x selected there (one term: exact, an infinite
  or NaN x goes where it is written and nowhere else); memory P per window, not the N C P of a
  Scatter's generic one-hot.
"""

from __future__ import annotations

from .dsl import Rule, rule

_FIELDS = "size yshape xflat plane sflat sshape snshape iflat"
_XF = "(Reshape xflat x)"
_SCATTER_FIELDS = "2 sflat sshape snshape [0,1,2] [1,2,3] 0 iflat xflat"


def _forms(nd: int) -> tuple[Rule, ...]:
    lhs, suffix = f"(MaxUnpool{nd}d {_FIELDS} x idx)", "" if nd == 2 else f"{nd}d"
    return (
        rule(f"maxunpool{suffix}-scatter", "y = scatter(zeros, idx, x) along the flattened volume (the last write wins)",
             lhs, f"(Reshape yshape (Scatter {_SCATTER_FIELDS} (Pad 2 plane 0 (Slice 2 0 0 1 xf)) (Reshape xflat idx) xf))",
             group="forward", lets={"xf": _XF}),
        rule(f"maxunpool{suffix}-onehot", "y_p = x at the last window m with idx_m = p (max of where(onehot, m, -1)),"
             " else 0", lhs, "(Reshape yshape (Transpose [1,2,0] (sum [3] (where sel xf 0))))", group="forward",
             lets={"xf": _XF, "hot": "(!= (OneHot.Plane yshape (Reshape xflat idx) xf) 0)",
                   "q": "(Iota.i64 3 hot)", "last": "(Reduce.Max [3] 1 (where hot q -1))",
                   "sel": "(== (where hot q -2) last)"}),
    )


RULES: tuple[Rule, ...] = _forms(2) + _forms(3)
