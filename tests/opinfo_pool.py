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
    # max unpooling's gradient is a gather of dy at the indices. The "grad" variants' samples: of
    # non-overlapping windows. The plain ones name positions twice, where eager's max_unpool lets
    # its threads race (its winner changes with torch.get_num_threads()): no eager value to compare
    # with, so they are not listed; the format's MaxUnpool says the last window wins (opdefs/unpool.py)
    ("nn.functional.max_unpool1d", "grad"): ("gather",),
    ("nn.functional.max_unpool2d", "grad"): ("gather",),
    ("nn.functional.max_unpool3d", "grad"): ("gather",),
}
