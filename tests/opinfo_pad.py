"""OpInfos of padding (ops-pad: F.pad's reflect, replicate, circular and constant variants), with the aten
backward ops their gradients reach; `opinfo_ops.OPINFO_BACKWARD` takes them in. Circular padding has no
backward op of its own: aten's composite `_pad_circular` writes its bands with slices, and its gradient
is `slice_backward`s and adds."""

from __future__ import annotations

ENTRIES: dict[tuple[str, str], tuple[str, ...]] = {
    # the samples the test takes pad 1-D and 3-D (2-D: replicate_negative's, and tests/test_pad.py)
    ("nn.functional.pad", "reflect"): ("reflection_pad1d_backward", "reflection_pad3d_backward"),
    ("nn.functional.pad", "replicate"): ("replication_pad1d_backward", "replication_pad3d_backward"),
    ("nn.functional.pad", "replicate_negative"): ("replication_pad2d_backward",),
    ("nn.functional.pad", "circular"): ("slice_backward",),
    # constant padding's gradient is constant_pad_nd with the pads negated (a crop)
    ("nn.functional.pad", "constant"): ("constant_pad_nd",),
    ("constant_pad_nd", ""): ("constant_pad_nd",),
}
