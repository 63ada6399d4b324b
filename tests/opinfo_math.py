"""The OpInfo entries of elementwise math (clamping, logical and bitwise ops, division modes, the
unary kinds of format version 3), with the aten backward ops their gradients reach
(tests/opinfo_ops.py merges them into OPINFO_BACKWARD)."""

from __future__ import annotations

ENTRIES: dict[tuple[str, str], tuple[str, ...]] = {
    ("clamp", ""): ("logical_and",),  # clamp.Tensor and clamp.default; the gradient masks where lo <= x <= hi
    ("clamp_min", ""): (),
    ("clamp_max", ""): (),
    ("div", "floor_rounding"): (),  # FloorDiv (its gradient is 0)
    ("div", "trunc_rounding"): (),  # Trunc of Div
    ("remainder", ""): ("remainder",),  # its gradient wrt other: -floor_divide(a, b) * grad, via div(floor)
    ("fmod", ""): (),
    ("atan2", ""): (),
    ("hypot", ""): (),
    ("copysign", ""): (),
    ("xlogy", ""): (),
    ("fmax", ""): ("isnan",),
    ("fmin", ""): ("isnan",),
    ("nn.functional.kl_div", ""): (),  # xlogy in the forward (log_target=False)
    ("sinh", ""): ("cosh",),
    ("cosh", ""): ("sinh",),
    ("asinh", ""): (),
    ("acosh", ""): (),
    ("atanh", ""): (),
    ("exp2", ""): (),
    ("expm1", ""): (),
    ("log1p", ""): (),
    ("trunc", ""): (),
    ("logit", ""): ("logit_backward",),
    ("lerp", ""): (),
    ("frac", ""): (),
    ("nan_to_num", ""): (),
    ("nn.functional.hinge_embedding_loss", ""): (),  # clamp_min, empty_like and fill in its graphs
    ("round", "decimals_3"): (),
    ("round", "decimals_neg_3"): (),
}
