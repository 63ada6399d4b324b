"""Addmv and Addbmm (opdefs/blas.py) in primitives, for backends without their kernels: one rule per
op and bias form, the head fixing the form.

- `addmv-scaled`: beta c + alpha (mat @ vec) (c broadcast by the Binary Add);
- `addmv-ignored`: alpha (mat @ vec), where beta is 0: c is not read, so a NaN or inf in it does not
  propagate (aten's beta == 0);
- `addbmm-scaled`, `addbmm-ignored`: the same with sum over axis 0 of the batched MatMul.

The products and sums round as a MatMul of the dtype does; the scalars alpha, beta take the dtype
(integers for an integer dtype: the op refuses others).
"""

from __future__ import annotations

from .dsl import Rule, rule

_MV = "(MatMul mat vec)"
_BMM = "(sum [0] (MatMul b1 b2))"

RULES: tuple[Rule, ...] = (
    rule("addmv-scaled", "addmv(c, mat, vec) = beta c + alpha (mat @ vec)", "(Addmv.Scaled alpha beta c mat vec)",
         f"(+ (* (lit beta) c) (* (lit alpha) {_MV}))", group="forward"),
    rule("addmv-ignored", "addmv(c, mat, vec) = alpha (mat @ vec) where beta = 0 (c not read)",
         "(Addmv.Ignored alpha beta c mat vec)", f"(* (lit alpha) {_MV})", group="forward"),
    rule("addbmm-scaled", "addbmm(c, b1, b2) = beta c + alpha sum_b(b1[b] @ b2[b])",
         "(Addbmm.Scaled alpha beta c b1 b2)", f"(+ (* (lit beta) c) (* (lit alpha) {_BMM}))", group="forward"),
    rule("addbmm-ignored", "addbmm(c, b1, b2) = alpha sum_b(b1[b] @ b2[b]) where beta = 0 (c not read)",
         "(Addbmm.Ignored alpha beta c b1 b2)", f"(* (lit alpha) {_BMM})", group="forward"),
)
