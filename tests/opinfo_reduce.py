"""The OpInfo entries of reductions and scans (var, std and their _mean forms, max and min with and without
a dim, amax, amin, aminmax, nansum, nanmean, prod, cumsum, cumprod, cummax, cummin, logcumsumexp, and
scatter_reduce's prod), with the aten backward ops their gradients reach (tests/opinfo_ops.py merges them
into OPINFO_BACKWARD). argmax, argmin, any and all have no gradient: tests/test_reductions.py runs
their OpInfo samples forward (FORWARD_ONLY)."""

from __future__ import annotations

ENTRIES: dict[tuple[str, str], tuple[str, ...]] = {
    ("var", ""): (),  # var.correction; its backward is mean, sub, mul in aten
    ("var", "unbiased"): (),
    ("std", ""): (),  # var and sqrt (std.correction decomposed); the backward divides, masked at std == 0
    ("std", "unbiased"): (),
    ("var_mean", ""): (),
    ("var_mean", "unbiased"): (),
    ("std_mean", ""): (),
    ("std_mean", "unbiased"): (),
    ("max", "reduction_with_dim"): ("scatter",),  # max.dim; the gradient scattered to the indices
    ("min", "reduction_with_dim"): ("scatter",),
    ("prod", ""): ("cumprod", "flip"),  # the exclusive products from both sides: exact at zeros
    ("cumsum", ""): ("flip", "cumsum"),  # the reversed cumsum of the gradient
    ("cumprod", ""): ("cumsum", "max", "gather"),  # aten's formula, with its handling of zeros
    ("amax", ""): (),  # Reduce Max; the gradient shared among ties (eq, sum, div)
    ("amin", ""): (),
    ("max", "reduction_no_dim"): (),  # max.default; the gradient shared among ties (and NaNs)
    ("min", "reduction_no_dim"): (),
    ("nansum", ""): (),  # decomposed by PyTorch's table: where(isnan, 0, x) summed
    ("nanmean", ""): (),
    ("aminmax", ""): (),  # decomposed: amin and amax
    ("logcumsumexp", ""): ("logcumsumexp", "flip"),  # of the gradient's terms, flipped
    ("cummax", ""): ("scatter_add",),  # the gradient added at the indices
    ("cummin", ""): ("scatter_add",),
    ("scatter_reduce", "prod"): ("scatter_reduce",),  # ScatterReduce{prod}: a one-hot Reduce{Prod} without the kernel
}

# OpInfo entries without a gradient, run forward only (name, variant)
FORWARD_ONLY: tuple[tuple[str, str], ...] = (("argmax", ""), ("argmin", ""), ("any", ""), ("all", ""))
