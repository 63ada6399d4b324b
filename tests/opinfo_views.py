"""OpInfos of the views written back (opdefs/views.py): slice_scatter, each of its samples one SliceScatter
node, its gradients a Slice of dy and a slice_scatter of zeros into dy; masked_scatter (opdefs/strided.py),
its source's gradient aten's masked_scatter_backward; `opinfo_ops.OPINFO_BACKWARD` takes
them in."""

from __future__ import annotations

ENTRIES: dict[tuple[str, str], tuple[str, ...]] = {
    ("slice_scatter", ""): ("slice_scatter",),
    ("masked_scatter", ""): ("masked_scatter_backward",),  # MaskedScatter, its source's gradient the backward
}
