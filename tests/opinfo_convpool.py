"""OpInfos of the convolution, padding, unfold and pooling family (ops-convpool), with the aten backward
ops their gradients reach; `opinfo_ops.OPINFO_BACKWARD` takes them in."""

from __future__ import annotations

ENTRIES: dict[tuple[str, str], tuple[str, ...]] = {
    ("nn.functional.conv_transpose1d", ""): ("convolution_backward",),
    ("nn.functional.conv_transpose2d", ""): ("convolution_backward",),
    ("nn.functional.conv1d", ""): ("convolution_backward",),
}
