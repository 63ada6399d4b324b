"""OpInfos of the resampling family (interpolation, unfold / fold, grid sampling), with the aten backward
ops their gradients reach; `opinfo_ops.OPINFO_BACKWARD` takes them in."""

from __future__ import annotations

ENTRIES: dict[tuple[str, str], tuple[str, ...]] = {
    ("nn.functional.interpolate", "nearest"): ("upsample_nearest2d_backward",),
    ("nn.functional.interpolate", "nearest-exact"): ("_upsample_nearest_exact2d_backward",),
    ("nn.functional.interpolate", "linear"): ("upsample_linear1d_backward",),
    ("nn.functional.interpolate", "bilinear"): ("upsample_bilinear2d_backward",),
    ("nn.functional.interpolate", "bicubic"): ("upsample_bicubic2d_backward",),
    ("nn.functional.interpolate", "trilinear"): ("upsample_trilinear3d_backward",),
    ("nn.functional.upsample_nearest", ""): ("upsample_nearest2d_backward",),
    ("nn.functional.upsample_bilinear", ""): ("upsample_bilinear2d_backward",),
}
