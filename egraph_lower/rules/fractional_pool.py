"""Fractional max pooling (opdefs/fractional_pool.py) in primitives, for backends without its kernel.

`FractionalPoolIndex` (which every backend runs: it reads only the samples) gives the positions each
window reads along one axis, [N, C, O_a, K_a], computed from the samples in their dtype as aten does.
Then per spatial axis a Gather of those positions (flattened to O_a K_a, expanded over the other axes)
picks the windows' rows, columns (and depths) out of x: [N, C, O_0 K_0, O_1 K_1, ..], laid out as
[N, C, *O, prod K] with each window's elements in row-major order (a Reshape, a Transpose, a Reshape).
- `fractional-maxpool{,3d}-gather`: the values, Reduce Max over the window (NaN where the window holds
  one, as aten's scan, whose NaN wins; -inf for a window of -inf);
- `fractional-maxpool{,3d}-indices-gather`: the flat positions P = sum_a pos_a * stride_a laid out the
  same way (they increase along a window's row-major order), and the index is the largest P holding a
  NaN (aten's last NaN) where there is one, else the smallest P holding the maximum (the first maximum;
  every position for a window of -inf, so its first).
Every value is x's own (a gather, a max): exact in every dtype. The ops are computed in their dtype, not
in float32 (`ARITHMETIC_IN_DTYPE`): the windows of f16/bf16 samples are the low dtype's.
"""

from __future__ import annotations

from .dsl import Rule, rule

_COLUMN = {2: (1, 0), 3: (0, 1, 2)}  # opdefs/fractional_pool.py: the sample column of each spatial axis


def _lhs(op: str, nd: int) -> str:
    axes = " ".join(f"l{a} k{a} o{a} st{a} ir{a} ie{a} pr{a}" for a in range(nd))
    return f"({op} kk oo {axes} win wins pexp plane x s)"


def _pos(a: int, nd: int) -> str:
    return f"(FractionalPoolIndex {_COLUMN[nd][a]} l{a} k{a} o{a} s)"


def _windows(nd: int) -> str:
    """x's windows as [N, C, *O, prod K], each in row-major order."""
    t = "x"
    for a in range(nd):
        t = f"(Gather {2 + a} {t} (Expand ie{a} (Reshape ir{a} {_pos(a, nd)})))"
    perm = [0, 1, *(2 + 2 * a for a in range(nd)), *(3 + 2 * a for a in range(nd))]
    return f"(Reshape wins (Transpose [{','.join(map(str, perm))}] (Reshape win {t})))"


def _flat(nd: int) -> str:
    """The flat position of each window element, [N, C, *O, prod K], laid out as `_windows`."""
    terms = [f"(Expand pexp (Reshape pr{a} {_pos(a, nd)}))" for a in range(nd)]
    total = terms[-1]
    for a in reversed(range(nd - 1)):
        total = f"(+ (* {terms[a]} (lit st{a})) {total})"
    return f"(Reshape wins {total})"


def _forms(nd: int) -> tuple[Rule, ...]:
    suffix, last = "" if nd == 2 else "3d", f"[{nd + 2}]"
    v = "v"
    return (
        rule(f"fractional-maxpool{suffix}-gather", "y = max over each window of x, the windows gathered per axis at the"
             " positions FractionalPoolIndex gives", _lhs(f"FractionalMaxPool{nd}d", nd),
             f"(Reduce.Max {last} 0 {v})", group="forward", lets={"v": _windows(nd)}),
        rule(f"fractional-maxpool{suffix}-indices-gather", "index = the last flat position holding a NaN in the"
             " window, else the first holding its max (positions increase along the window's row-major order)",
             _lhs(f"FractionalMaxPool{nd}dIndices", nd), "(where (>= nan 0) nan first)", group="forward",
             lets={"v": _windows(nd), "p": _flat(nd),
                   "nan": f"(Reduce.Max {last} 0 (where (!= v v) p -1))",
                   "first": f"(Reduce.Min {last} 0 (where (== v (Reduce.Max {last} 1 v)) p (lit plane)))"}),
    )


RULES: tuple[Rule, ...] = _forms(2) + _forms(3)
