"""SliceBackward in primitives: dy put back where the slice took it, zeros elsewhere.

The e-node's fields (`opdefs/slicing.py`) are computed from the attributes, Python's
clamping included, and from dy's shape [.., n, ..] (n values on `axis`):

- `slice-bwd-pad` (step 1): the slice took n consecutive positions, so its gradient is dy
  with `before` zeros ahead and `after` behind.
- `slice-bwd-interleave*` (step k > 1): dy reshaped to [.., n, 1, ..] and padded with k - 1
  zeros after each value ([.., n, k, ..]), reshaped to [.., n k, ..], is dy's values at 0, k,
  2k, ...; of that run `keep` = min(n k, size - before) fit after the first position (the
  `cut` = n k - keep trailing zeros that do not are sliced off), then `before` zeros ahead and
  `after` behind. Four rules, one per case, so that none does a copy that changes nothing:
  no cut and no zeros to add (x[::2] of an even size), no cut, a cut and no zeros to add, a
  cut (then there is nothing after it).
- `slice-bwd-scatter` (step > 1): dy scatter-added into zeros of the input's shape at the
  positions the slice took, which are the slice of the positions Iota(axis); only for a backend
  with ScatterAdd. Not for step 1, where one Pad moves the same bytes in one kernel (the many
  step-1 gradients of a transformer's selects and splits would each grow the e-graph by five
  e-nodes for a form that never wins).

Zeros of dy's dtype are an empty slice of dy padded with zeros (the notation has no constant
tensors).
"""

from __future__ import annotations

from .dsl import Rule, rule

def _lhs(step: object = "step", before: object = "before", after: object = "after", cut: object = "cut",
         strided: object = "strided") -> str:
    """SliceBackward's pattern with some fields fixed to literals (the case a rule is for)."""
    return f"(SliceBackward axis start end {step} size {before} {after} keep {cut} {strided} inner gap col spread g)"



_INTERLEAVE = {"run": "(Reshape spread (Pad inner 0 gap (Reshape col g)))"}
_ZEROS = {"zeros": "(Pad axis size 0 (Slice axis 0 0 1 g))"}


def _interleave(suffix: str, cut: bool, placed: bool, identity: str) -> Rule:
    lhs = _lhs(before="before" if placed else 0, after="after" if placed and not cut else 0, cut="cut" if cut else 0,
               strided=1)
    rhs = "(Slice axis 0 keep 1 run)" if cut else "run"
    if placed:
        rhs = f"(Pad axis before {'0' if cut else 'after'} {rhs})"
    return rule(f"slice-bwd-interleave{suffix}", identity, lhs, rhs, group="backward", lets=_INTERLEAVE)


RULES: tuple[Rule, ...] = (
    rule("slice-bwd-pad", "slice_bwd(g) (step 1) = pad(g, before, after) along the axis",
         _lhs(step=1), "(Pad axis before after g)",
         group="backward"),
    _interleave("", False, False, "slice_bwd(g) = g with step - 1 zeros after each value, when that run is the axis"),
    _interleave("-pad", False, True, "slice_bwd(g) = pad(g with step - 1 zeros after each value, before, after)"),
    _interleave("-cut", True, False, "slice_bwd(g) = (g with step - 1 zeros after each value)[:keep], when that "
                "fills the axis"),
    _interleave("-cut-pad", True, True, "slice_bwd(g) = pad((g with step - 1 zeros after each value)[:keep], "
                "before, 0)"),
    rule("slice-bwd-scatter", "slice_bwd(g) = scatter_add(zeros, iota[start:end:step], g) along the axis",
         _lhs(strided=1),
         "(ScatterAdd axis zeros (Slice axis start end step (Iota.i64 axis zeros)) g)", group="backward", lets=_ZEROS),
)
