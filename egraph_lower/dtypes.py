"""The format's dtypes and their NumPy counterparts (bf16 through ml_dtypes, imported when first needed).

ml_dtypes is imported only by `bf16()`, the first time a bf16 value is made or converted: its
import takes a second on its own in some releases (0.7.0: 1.0 s, 0.6.0: 0.11 s), which a graph
without bf16 should not pay. `is_bf16` answers without importing it (no array can be of its
type before it is imported).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from .signals import held

NAMES = ("f32", "f16", "bf16", "f64", "i32", "i64", "bool")
FLOAT_DTYPES = frozenset({"f32", "f16", "bf16", "f64"})
INT_DTYPES = frozenset({"i32", "i64"})

_NUMPY: dict[str, np.dtype] = {  # all but bf16
    "f32": np.dtype(np.float32), "f16": np.dtype(np.float16), "f64": np.dtype(np.float64),
    "i32": np.dtype(np.int32), "i64": np.dtype(np.int64), "bool": np.dtype(np.bool_),
}
_bf16: np.dtype | None = None

ITEMSIZE: dict[str, int] = {name: 2 if name == "bf16" else _NUMPY[name].itemsize for name in NAMES}
# The largest finite value of each float dtype; bf16's is (2 - 2**-7) * 2**127 (8 bits of
# precision, float32's exponent), as ml_dtypes.finfo says (tests/test_dtypes.py checks).
FLOAT_MAX: dict[str, float] = {"f32": float(np.finfo(np.float32).max), "f16": float(np.finfo(np.float16).max),
                               "bf16": float.fromhex("0x1.fep127"), "f64": float(np.finfo(np.float64).max)}

_F64, _F32, _U32 = np.dtype(np.float64), np.dtype(np.float32), np.dtype(np.uint32)


def bf16() -> np.dtype:
    """NumPy's bfloat16 dtype (ml_dtypes', imported now if it was not yet)."""
    global _bf16
    if _bf16 is None:
        with held():  # an interruption lands after the import, not inside ml_dtypes' (see signals)
            import ml_dtypes
        _bf16 = np.dtype(ml_dtypes.bfloat16)
    return _bf16


def is_bf16(dtype: np.dtype) -> bool:
    """Whether `dtype` is ml_dtypes' bfloat16; nothing is imported to answer."""
    bfloat16 = getattr(sys.modules.get("ml_dtypes"), "bfloat16", None)
    return bfloat16 is not None and dtype == bfloat16


class _Dtypes(Mapping[str, np.dtype]):
    """Each format dtype's NumPy dtype: a mapping whose names, membership and size need no
    import; only looking up "bf16" imports ml_dtypes."""

    def __getitem__(self, name: str) -> np.dtype:
        return bf16() if name == "bf16" else _NUMPY[name]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in ITEMSIZE

    def __iter__(self) -> Iterator[str]:
        return iter(NAMES)

    def __len__(self) -> int:
        return len(NAMES)


DTYPES: Mapping[str, np.dtype] = _Dtypes()


def to_numpy(dtype: str) -> np.dtype:
    return DTYPES[dtype]


def from_numpy(dtype: np.dtype) -> str:
    if is_bf16(dtype):
        return "bf16"
    for name, dt in _NUMPY.items():
        if dt == dtype:
            return name
    raise KeyError(f"no format dtype for numpy dtype {dtype}")


def round_to(value: float, dtype: str) -> float | int | bool:
    """The nearest value of `dtype` to `value`, as a Python number (so JSON holds what the dtype holds)."""
    if dtype == "bool":
        return bool(value)
    if dtype in INT_DTYPES:
        return int(value)
    return float(round_float(value, dtype).astype(np.float64))  # once: ml_dtypes' f64 -> bf16 goes through f32


def _f64_to_bf16(x: np.ndarray) -> np.ndarray:
    """Round float64 to bfloat16, to nearest even, correctly (one rounding).

    Round to float32 by round-to-odd first (truncate, then set the last bit when
    inexact); float32 has 16 more bits than bfloat16 everywhere in its range, so
    the second rounding, float32 -> bfloat16 (nearest even), is then exact.
    """
    x = np.asarray(x, dtype=_F64)
    f = np.asarray(x.astype(_F32))
    back = f.astype(_F64)
    inexact = back != x  # nan too: it stays nan
    toward_zero = inexact & (np.abs(back) > np.abs(x))
    if toward_zero.any():
        f = np.where(toward_zero, np.nextafter(f, np.float32(0)), f)
    bits = np.asarray(f).view(_U32) | inexact.astype(_U32)
    return bits.view(_F32).astype(bf16())


def round_float(x: Any, dtype: str) -> np.ndarray:
    """float64 values rounded once to the float `dtype`."""
    x = np.asarray(x, dtype=_F64)
    if dtype == "f64":
        return x
    if dtype == "bf16":
        return _f64_to_bf16(x)
    return x.astype(to_numpy(dtype))
