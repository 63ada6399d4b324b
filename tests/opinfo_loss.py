"""The OpInfo entries of the elementwise losses (ops-loss): (name, variant) -> the aten backward ops
their samples reach (an empty tuple where the backward is made of ordinary ops: BCE with logits
reaches the importer decomposed, its backward mul and div)."""

from __future__ import annotations

ENTRIES: dict[tuple[str, str], tuple[str, ...]] = {
    ("nn.functional.smooth_l1_loss", ""): ("smooth_l1_loss_backward",),
    ("nn.functional.huber_loss", ""): ("huber_loss_backward",),
    ("nn.functional.binary_cross_entropy", ""): ("binary_cross_entropy_backward",),
    ("nn.functional.binary_cross_entropy_with_logits", ""): (),
    ("nn.functional.soft_margin_loss", ""): ("soft_margin_loss_backward",),
}
