"""The OpInfo entries of the sort-like ops (sort, msort, topk, kthvalue, median, nanmedian, mode), with the aten backward ops their gradients
reach (tests/opinfo_ops.py merges them into OPINFO_BACKWARD). argsort has no gradient: tests/test_sort.py
runs its OpInfo samples forward (FORWARD_ONLY)."""

from __future__ import annotations

ENTRIES: dict[tuple[str, str], tuple[str, ...]] = {
    ("sort", ""): ("scatter",),  # Sort and ArgSort; the gradient scattered to the indices
    ("msort", ""): ("scatter",),  # sort along dim 0 (PyTorch's table)
    ("topk", ""): ("scatter",),  # TopK and ArgTopK
    ("kthvalue", ""): ("scatter",),  # KthValue and ArgKthValue; the gradient scattered to the index
    ("median", ""): ("scatter",),  # Median and ArgMedian with a dim; without one the gradient shared among ties
    ("nanmedian", ""): ("scatter",),  # Median{ignore_nan}
    ("mode", ""): ("scatter",),  # Mode and ArgMode
}

# OpInfo entries without a gradient, run forward only (name, variant)
FORWARD_ONLY: tuple[tuple[str, str], ...] = (("argsort", ""),)
