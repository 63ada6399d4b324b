"""OpInfos of the convolution, padding, unfold and pooling family (ops-convpool), with the aten backward
ops their gradients reach; `opinfo_ops.OPINFO_BACKWARD` takes them in."""

from __future__ import annotations

ENTRIES: dict[tuple[str, str], tuple[str, ...]] = {
    ("nn.functional.conv_transpose1d", ""): ("convolution_backward",),
    ("nn.functional.conv_transpose2d", ""): ("convolution_backward",),
    ("nn.functional.conv1d", ""): ("convolution_backward",),
    # the 1-D poolings reach aten as the 2-D ones of an unsqueezed input
    ("nn.functional.max_pool1d", ""): ("max_pool2d_with_indices_backward",),
    ("nn.functional.avg_pool1d", ""): ("avg_pool2d_backward",),
    ("nn.functional.adaptive_avg_pool1d", ""): ("_adaptive_avg_pool2d_backward",),
    # 3-D convolutions (issue 20): aten's convolution / convolution_backward with three spatial axes
    ("nn.functional.conv3d", ""): ("convolution_backward",),
    ("nn.functional.conv_transpose3d", ""): ("convolution_backward",),
}
