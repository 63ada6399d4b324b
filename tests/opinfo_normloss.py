"""The OpInfo entries of the norms and losses (ops-normloss): (name, variant) -> the aten backward ops
their samples reach (an empty tuple where the backward is made of ordinary ops)."""

from __future__ import annotations

ENTRIES: dict[tuple[str, str], tuple[str, ...]] = {
    ("nn.functional.group_norm", ""): ("native_group_norm_backward",),
}
