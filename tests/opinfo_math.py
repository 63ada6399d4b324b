"""The OpInfo entries of elementwise math (clamping, logical and bitwise ops, division modes, the
unary kinds of format version 3), with the aten backward ops their gradients reach
(tests/opinfo_ops.py merges them into OPINFO_BACKWARD)."""

from __future__ import annotations

ENTRIES: dict[tuple[str, str], tuple[str, ...]] = {
    ("clamp", ""): ("logical_and",),  # clamp.Tensor and clamp.default; the gradient masks where lo <= x <= hi
    ("clamp_min", ""): (),
    ("clamp_max", ""): (),
}
