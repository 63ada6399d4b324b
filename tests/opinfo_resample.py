"""OpInfos of the resampling family (interpolation, unfold / fold, grid sampling), with the aten backward
ops their gradients reach; `opinfo_ops.OPINFO_BACKWARD` takes them in."""

from __future__ import annotations

ENTRIES: dict[tuple[str, str], tuple[str, ...]] = {
    # ("nn.functional.interpolate", "nearest") and "nearest-exact" are tests/opinfo_index.py's entries
    ("nn.functional.interpolate", "linear"): ("upsample_linear1d_backward",),
    ("nn.functional.interpolate", "bilinear"): ("upsample_bilinear2d_backward",),
    ("nn.functional.interpolate", "bicubic"): ("upsample_bicubic2d_backward",),
    ("nn.functional.interpolate", "trilinear"): ("upsample_trilinear3d_backward",),
    # "area" is adaptive average pooling: its 3-D samples need _adaptive_avg_pool3d (the pooling family's)
    ("nn.functional.upsample_nearest", ""): ("upsample_nearest2d_backward",),
    ("nn.functional.upsample_bilinear", ""): ("upsample_bilinear2d_backward",),
    ("nn.functional.unfold", ""): ("col2im",),
    # Tensor.unfold's own entry returns a view of its input: AOTAutograd replays an output that aliases an
    # input outside the compiled graph, so no backward graph reaches a backend (its samples compile to an
    # inference graph with nothing left in PyTorch); unfold_copy's, the same op as a copy, does, and
    # tests/test_torch_resample.py trains a patch model whose unfold is inside the graph
    ("unfold_copy", ""): ("unfold_backward",),
}
