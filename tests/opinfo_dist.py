"""OpInfos of the BLAS products with a bias and the distances (opdefs/blas.py, opdefs/distance.py): addmv and
addbmm (aten's addmv, addbmm whole; their gradients are primitives), dist (aten's dist whole, its
gradient primitives); `opinfo_ops.OPINFO_BACKWARD` takes
them in."""

from __future__ import annotations

ENTRIES: dict[tuple[str, str], tuple[str, ...]] = {
    ("addmv", ""): ("addmv",),
    ("addbmm", ""): ("addbmm",),
    ("dist", ""): ("dist",),
}
