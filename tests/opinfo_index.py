"""The OpInfo entries of indexing, gather / scatter-add, index_select / index_add and flip, with the aten
backward ops their gradients reach (tests/opinfo_ops.py merges them into OPINFO_BACKWARD)."""

from __future__ import annotations

ENTRIES: dict[tuple[str, str], tuple[str, ...]] = {
    ("__getitem__", ""): ("index_put",),  # x[tensor]: index.Tensor, its gradient index_put(accumulate)
    ("index_put", ""): ("index",),
    ("gather", ""): ("scatter_add",),
    ("scatter_add", ""): ("gather",),
    ("index_select", ""): ("index_add",),
    ("index_add", ""): ("index_select",),
    ("scatter", ""): ("scatter",),  # scatter.value: the gradient of x zeroes the written positions
    ("scatter_reduce", "sum"): ("gather",),
    ("scatter_reduce", "mean"): ("scatter_reduce",),
    ("scatter_reduce", "amax"): ("scatter_reduce",),
    ("scatter_reduce", "amin"): ("scatter_reduce",),
    ("flip", ""): ("flip",),
    ("fliplr", ""): ("flip",),
    ("flipud", ""): ("flip",),
    ("nn.functional.interpolate", "nearest"): (),  # upsample_nearest*_backward, reaching the backend as
    # _unsafe_index_put (its decomposition)
    ("nn.functional.interpolate", "nearest-exact"): (),
}
