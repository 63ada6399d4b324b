"""The OpInfo entries (bench/opinfo_run.py's names) that no lowering can cover, each with why: what
stays in PyTorch is not an op the backend is handed, or not one the format can state. bench/opinfo.py
tells these from the entries left in PyTorch that have no reason (work still to do); docs/benchmarks.md,
"OpInfo coverage", lists them; tests/test_bench_opinfo.py keeps the names real.
"""

from __future__ import annotations

_BREAK = "dynamo breaks the graph before any backend sees the op (torch.compile's defaults): "
_SIZE = _BREAK + "its output's size depends on the tensor's values (`capture_dynamic_output_shape_ops` is off)"
_ITEM = _BREAK + "the op's own Python code reads a tensor's value into Python ({what}), a value the host needs"
_LINALG = "linear algebra the format has no op for ({what}): an iterative factorisation, not a fixed graph of primitives"

REASONS: dict[str, str] = {
    "combinations": _SIZE + " (it selects with a mask)",
    "masked_select": _SIZE,
    "tensor_split": _ITEM.format(what="the split indices given as a tensor, `.item()`"),
    "corrcoef": _BREAK + "ATen's cov, which corrcoef calls, takes a bool from tensor values (`aten.equal`)",
    "cov": _BREAK + "ATen's cov takes a bool from tensor values (`aten.equal`) before it computes",
    "nn.functional.gaussian_nll_loss": _ITEM.format(what="`torch.any(var < 0)` of its argument check, `.item()`"),
    "to_sparse": _BREAK + "a sparse tensor, which dynamo does not trace",
    "view_as_complex": "a complex result: the format's dtypes are real, integer and bool",
    "norm.nuc": _LINALG.format(what="`_linalg_svd`, the singular values"),
    "triangular_solve": _LINALG.format(what="`triangular_solve`, a substitution with a data-dependent pivot order"),
    "frexp": "a float's mantissa and exponent read off its bits: the format has no bit cast (docs/torch.md)",
    "nextafter": "a step of a float's bit pattern: the format has no bit cast (docs/torch.md)",
    "nn.functional.rrelu": ("in training its forward draws each negative element's slope from eager's generator "
                            "(docs/torch.md, Decisions); its eval forward and its backward are lowered"),
}
