"""OpInfos of fractional max pooling (opdefs/fractional_pool.py): each draws its samples with aten's rand
(an Input the exported module draws as eager does, under the seed the runs set) and reaches aten's
fractional_max_pool{2,3}d and its backward (MaxPool{2,3}dBackward); `opinfo_ops.OPINFO_BACKWARD` takes
them in."""

from __future__ import annotations

ENTRIES: dict[tuple[str, str], tuple[str, ...]] = {
    ("nn.functional.fractional_max_pool2d", ""): ("fractional_max_pool2d", "fractional_max_pool2d_backward"),
    ("nn.functional.fractional_max_pool3d", ""): ("fractional_max_pool3d", "fractional_max_pool3d_backward"),
}
