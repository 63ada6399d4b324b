"""The OpInfo entries of issue 19's remaining elementwise math: the unary kinds Log2, Log10, Asin,
Acos, Erfinv and Erfc, isinf (logaddexp2's backward tests it), and the composite ops that reach the importer already
decomposed by PyTorch's Core ATen table (`torch/decompose.py`: logaddexp, xlog1py, addcmul, addcdiv,
the shrinks), with the aten backward ops their gradients reach (tests/opinfo_ops.py merges them into
OPINFO_BACKWARD)."""

from __future__ import annotations

ENTRIES: dict[tuple[str, str], tuple[str, ...]] = {
    ("log2", ""): (),
    ("log10", ""): (),
    ("asin", ""): (),
    ("acos", ""): (),
    ("erfinv", ""): (),
    ("erfc", ""): (),
    ("logaddexp", ""): (),
    ("logaddexp2", ""): (),  # its Core ATen decomposition tests isinf
    ("special.xlog1py", ""): (),
    ("addcmul", ""): (),
    ("addcdiv", ""): (),
    ("nn.functional.hardshrink", ""): (),
    ("nn.functional.softshrink", ""): (),
    ("nn.functional.tanhshrink", ""): (),
    ("pow", ""): (),  # f16: a known gap (tests/test_torch_opinfo.py KNOWN_GAPS): eager and lowered both NaN
}
