"""Group normalization (opdefs/groupnorm.py) in primitives.

Every form works on x reshaped to [N, groups, K] (`gshape`), where a group is the last axis, so the
statistics are layer norm's ops over axis 2: `(Reduce.Mean [2] 0 xg)` and `(InvStd [2] eps 0 xg)`
are the very e-nodes aten's saved mean and rstd import to (torch/aten_groupnorm.py), shared between
the forward, the saved statistics and the backward. [N, groups] statistics broadcast over a group as
`(Reshape gstat s)` ([N, groups, 1]); the per-channel weight as `(Reshape cshape w)` ([C, 1, ...]).

The centred value is d - mean(d), d = x - mean(x) (the corrected two-pass form of rules/norm.py:
the mean rounded to the dtype is off by up to 0.5 eps |mean|, the whole spread of a group 1e4 + 1e-3
in f32; subtracting mean(d), which d's exactness makes accurate, removes that error).

Forms kept out on purpose (as for layer and batch norm, rules/norm.py):
- var = mean(x^2) - mean(x)^2, which cancels for a group with a large mean;
- the weight gradient as sum(dy (x - mean)) rstd (the scale outside the sum), whose unnormalised
  products overflow f16 where the result does not;
- the per-(n, c) form of PyTorch's CPU kernel (sums of dy x and dy per channel, combined per group
  with w): it needs x's mean times a sum of dy subtracted from a sum of dy x, which cancels for a
  large mean exactly as the one-pass variance does.
"""

from __future__ import annotations

from .dsl import Rule, rule

_XG = "(Reshape gshape x)"
_R = "(Reshape gstat rstd)"
_XHAT = f"(* (- {_XG} (Reshape gstat mean)) {_R})"  # xhat in the grouped shape, from the saved statistics

RULES: tuple[Rule, ...] = (
    rule("gn-lower", "group_norm(x) = xhat w + b, xhat = (d - mean d) invstd over each group, d = x - mean x",
         "(GroupNorm groups eps gshape gstat xshape cshape x w b)",
         "(+ (* (Reshape xshape (* (- d (Reduce.Mean [2] 1 d)) (Reshape gstat (InvStd [2] eps 0 xg))))"
         " (Reshape cshape w)) (Reshape cshape b))",
         group="forward", lets={"xg": _XG, "d": "(- xg (Reshape gstat (Reduce.Mean [2] 0 xg)))"}),
    rule("gn-bwd-input", "dx = rstd (g - mean_g(g) - xhat mean_g(g xhat)), g = dy w, xhat = (x - mean) rstd",
         "(GnBwdInput groups gshape gstat xshape cshape x w mean rstd dy)",
         f"(Reshape xshape (* {_R} (- (- g (Reduce.Mean [2] 1 g)) (* xhat (Reduce.Mean [2] 1 (* g xhat))))))",
         group="backward", lets={"g": "(Reshape gshape (* dy (Reshape cshape w)))", "xhat": _XHAT}),
    rule("gn-bwd-weight", "dw = sum over N and the spatial axes of dy xhat, xhat = (x - mean) rstd",
         "(GnBwdWeight groups gshape gstat xshape others x mean rstd dy)",
         f"(sum others (* dy (Reshape xshape {_XHAT})))", group="backward"),
)
