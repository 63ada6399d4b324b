"""OpInfos of issues 19/20's aa batch: ldexp, and antialiased interpolation (PyTorch's `_upsample_bilinear2d_aa` entry;
F.interpolate's own entries sample no antialias, and no entry samples the bicubic one, which
tests/test_torch_resample.py checks against aten), with the aten backward ops their gradients reach;
`opinfo_ops.OPINFO_BACKWARD` takes them in. The OpInfo runs f32 and f64 only: aten has no f16/bf16
antialiased kernel on CPU."""

from __future__ import annotations

ENTRIES: dict[tuple[str, str], tuple[str, ...]] = {
    ("_upsample_bilinear2d_aa", ""): ("_upsample_bilinear2d_aa_backward",),
    ("ldexp", ""): ("pow",),  # x * Pow(2, e) forward; its gradient arrives as pow(2, e) and mul
}
