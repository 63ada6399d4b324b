"""OpInfos of the BLAS products with a bias and the distances (opdefs/blas.py, opdefs/distance.py): addmv and
addbmm (aten's addmv, addbmm whole; their gradients are primitives), dist (aten's dist whole, its
gradient primitives), cdist (aten's _cdist_forward and _cdist_backward; its samples' p = 2 cases with
use_mm_for_euclid_dist go through _euclidean_dist's primitives instead), pdist (aten's _pdist_forward and
_pdist_backward); `opinfo_ops.OPINFO_BACKWARD` takes
them in."""

from __future__ import annotations

ENTRIES: dict[tuple[str, str], tuple[str, ...]] = {
    ("addmv", ""): ("addmv",),
    ("addbmm", ""): ("addbmm",),
    ("dist", ""): ("dist",),
    ("cdist", ""): ("_cdist_forward", "_cdist_backward"),
    ("nn.functional.pdist", ""): ("_pdist_forward", "_pdist_backward"),
}
