"""Trilinear (aten's `_trilinear`: bilinear's forward and its gradients) in primitives.

Each input reshaped to its shape with the expand axes inserted (`s1`, `s2`, `s3`: a Reshape, since
an inserted axis has size 1), the three multiplied with broadcasting and summed over `axes` (sumdim,
sorted). Which two are multiplied first is left to extraction (the products of different pairs
broadcast to different sizes). A MatMul form (the summed axes gathered into one contraction, as
einsum does) would spare the elementwise product of all three; not stated yet.
"""

from __future__ import annotations

from .dsl import Rule, rule

_LHS = "(Trilinear expand1 expand2 expand3 sumdim axes s1 s2 s3 a b c)"
_A, _B, _C = "(Reshape s1 a)", "(Reshape s2 b)", "(Reshape s3 c)"

RULES: tuple[Rule, ...] = (
    rule("trilinear-lower", "trilinear(a, b, c) = sum_sumdim((a' b') c'), each with its expand axes inserted",
         _LHS, f"(Reduce.Sum axes 0 (* (* {_A} {_B}) {_C}))", group="forward"),
    rule("trilinear-lower-bc", "trilinear(a, b, c) = sum_sumdim(a' (b' c')), each with its expand axes inserted",
         _LHS, f"(Reduce.Sum axes 0 (* {_A} (* {_B} {_C})))", group="forward"),
)
