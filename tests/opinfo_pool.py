"""OpInfos of the pooling family (ops-pool): 3-D max, average and adaptive average pooling and
adaptive max pooling (1-D to 3-D), with the aten backward ops their gradients reach;
`opinfo_ops.OPINFO_BACKWARD` takes them in. (The 1-D max, average and adaptive average poolings
are in opinfo_convpool.py.)"""

from __future__ import annotations

ENTRIES: dict[tuple[str, str], tuple[str, ...]] = {
    ("nn.functional.max_pool3d", ""): ("max_pool3d_with_indices_backward",),
    ("nn.functional.avg_pool3d", ""): ("avg_pool3d_backward",),
    ("nn.functional.adaptive_avg_pool3d", ""): ("_adaptive_avg_pool3d_backward",),
    # 1-D adaptive max pooling reaches aten as the 2-D one of an unsqueezed input
    ("nn.functional.adaptive_max_pool1d", ""): ("adaptive_max_pool2d_backward",),
    ("nn.functional.adaptive_max_pool2d", ""): ("adaptive_max_pool2d_backward",),
    ("nn.functional.adaptive_max_pool3d", ""): ("adaptive_max_pool3d_backward",),
}
