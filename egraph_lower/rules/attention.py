"""Scaled dot-product attention (opdefs/attention.py) in MatMul, Softmax(Backward) and primitives.

The constructors carry derived fields: `axes` (the scores' last axis), `perm` (swaps the last two
axes: k^T), `lshape` (q's shape without its last axis: lse's) and `lkeep` (with it as 1). With
t = (q k^T) scale + mask (scaled after the product, in aten's CPU kernels' order), the probabilities
P have three forms, and every op that needs P is stated with each (extraction chooses):

    explicit  P = e / max(z, 1), e = exp(u - m'), z = sum(e), m = max(u), m' = m where finite else 0;
              causal: u = where(keep, t, min(t)) (the kept maximum without an infinite literal, which
              the format cannot hold), e = where(keep, exp(u - m'), 0); keep = iota_col <= iota_row
    softmax   P = where(m finite, Softmax(t), 0)   (not causal: Softmax sees every column)
    lse       P = e / sum(e), e = exp(t - lse), causal: where(keep, exp(t - lse), 0), lse the saved
              log-sum-exp (a row of e sums to 1 but for lse's rounding, which the division removes)

A row with no finite kept t has z = 0, so P = 0 and lse = m' + log(max(z, 1)) = 0 (torch's CPU kernel
gives the same); where some t is finite, the maximum's own term is exp(0) = 1, so max(z, 1) = z.

The backward ops, with dP = dy v^T: dv = P^T dy; dS = SoftmaxBackward(P, dP) (so it composes with the
softmax rules); dq = (dS k) scale, dk = (dS^T q) scale.

Forms kept out on purpose:
- P = exp(t - lse) alone: lse rounded to float32 is off by up to half an ulp of |lse| (8e-6 at 200),
  which scales the row's P by as much; rowsum(P dP) then no longer cancels dP's mean, and dq, dk of
  OpInfo's sample with logits near 200 were 7.8e-5 and 9.3e-5 from float64 where eager's are 3e-5
  (eager's flash kernel takes that D from `out`). Dividing by the row's sum costs one reduction.
- exp(t) / sum(exp(t)) without the maximum: overflows for logits past log(MAX).
- dS = P (dP - rowsum(dy out)) (rowsum(P dP) = rowsum(dy out), as out = P v, flash attention's
  form): in f16/bf16 `out` is rounded to d, and rules --check measured the result computed in f32
  from it worse than the op rounded once (0.395 against 0.295 eps(bf16)). So no rule reads the
  backward ops' `out`: it is there for a fused kernel (torch's reads it for that D).
"""

from __future__ import annotations

from .dsl import Rule, rule

_BASE = {"t0": "(* (MatMul q (Transpose perm k)) (lit scale))", "t": "(+ t0 mask)",
         "keep": "(<= (Iota.i64 -1 t0) (Iota.i64 -2 t0))"}
_U = {0: "t", 1: "(where keep t (Reduce.Min axes 1 t))"}
_E = {0: "(Exp (- u ms))", 1: "(where keep (Exp (- u ms)) 0)"}
_LSE_E = {0: "(Exp (- t (Reshape lkeep lse)))", 1: "(where keep (Exp (- t (Reshape lkeep lse))) 0)"}


def _lse_p(causal: int) -> dict[str, str]:
    """P = e / sum(e), e = exp(t - lse): lse's rounding (half an ulp of |lse|) scales a whole row of e,
    which the division takes out again (a row whose e are all 0: 0)."""
    return dict(_BASE, el=_LSE_E[causal], zl="(Reduce.Sum axes 1 el)", p="(/ el (where (== zl 0) 1 zl))")


def _stats(causal: int) -> dict[str, str]:
    return dict(_BASE, u=_U[causal], m="(Reduce.Max axes 1 u)", ms="(where (== (- m m) 0) m 0)", e=_E[causal],
                z="(Reduce.Sum axes 1 e)")


def _p_forms(causal: int) -> dict[str, dict[str, str]]:
    """The forms of P for `causal` (each a lets dict defining `p`)."""
    forms = {"": dict(_stats(causal), p="(/ e (max z 1))")}
    if not causal:
        forms["-softmax"] = dict(_stats(0), p="(where (== (- m m) 0) (Softmax -1 axes t) 0)")
    return forms


_IDS = {"": "P explicit", "-softmax": "P = Softmax(t) where a kept t is finite",
        "-lse": "P = e / sum(e), e = exp(t - lse)"}
_DS = "(SoftmaxBackward -1 axes p dp)"
_GRADS = {
    "query": ("AttnBwdQuery", "q k v mask out lse dy", "(* (MatMul ds k) (lit scale))", "dq = (dS k) scale"),
    "key": ("AttnBwdKey", "q k v mask out lse dy", "(* (MatMul (Transpose perm ds) q) (lit scale))", "dk = (dS^T q) scale"),
}
_FIELDS = "scale {c} axes perm lshape lkeep"


def _suffix(causal: int) -> str:
    return "-causal" if causal else ""


def _forward() -> tuple[Rule, ...]:
    out = []
    for c in (0, 1):
        lhs = f"(Attention {_FIELDS.format(c=c)} q k v mask)"
        for tag, lets in _p_forms(c).items():
            out.append(rule(f"attn-lower{_suffix(c)}{tag}", f"attention = P v, {_IDS[tag]}", lhs, "(MatMul p v)",
                            group="forward", lets=lets))
        out.append(rule(f"attn-lse{_suffix(c)}", "lse = m' + log(max(z, 1)) (0 on a row with no finite kept t)",
                        f"(AttnLse {_FIELDS.format(c=c)} q k mask)", "(Reshape lshape (+ ms (Log (max z 1))))",
                        group="forward", lets=_stats(c)))
    return tuple(out)


def _backward() -> tuple[Rule, ...]:
    out = []
    for c in (0, 1):
        forms = dict(_p_forms(c), **{"-lse": _lse_p(c)})
        for tag, lets in forms.items():
            out.append(rule(f"attn-bwd-value{_suffix(c)}{tag}", f"dv = P^T dy, {_IDS[tag]}",
                            f"(AttnBwdValue {_FIELDS.format(c=c)} q k mask lse dy)", "(MatMul (Transpose perm p) dy)",
                            group="backward", lets=lets))
            for name, (ctor, kids, rhs, ident) in _GRADS.items():
                out.append(rule(f"attn-bwd-{name}{_suffix(c)}{tag}",
                                f"{ident}, dS = SoftmaxBackward(P, dP), dP = dy v^T, {_IDS[tag]}",
                                f"({ctor} {_FIELDS.format(c=c)} {kids})", rhs, group="backward",
                                lets=dict(lets, dp="(MatMul dy (Transpose perm v))", ds=_DS)))
    return tuple(out)


RULES: tuple[Rule, ...] = _forward() + _backward()

# SafeSoftmax: softmax, but 0 on a slice that is all -inf (its maximum is -inf: the only value below 0
# whose difference with itself is not 0; no infinite literal is needed)
RULES += (
    rule("safe-softmax-lower", "safe_softmax(x) = 0 where max(x) = -inf, else softmax(x)",
         "(SafeSoftmax axis axes x)", "(where (< m 0) (where (!= (- m m) 0) 0 s) s)", group="forward",
         lets={"m": "(Reduce.Max axes 1 x)", "s": "(Softmax axis axes x)"}),
)
