"""The format's dtypes and their NumPy counterparts (bf16 through ml_dtypes)."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

DTYPES: dict[str, np.dtype] = {
    "f32": np.dtype(np.float32),
    "f16": np.dtype(np.float16),
    "bf16": np.dtype(ml_dtypes.bfloat16),
    "f64": np.dtype(np.float64),
    "i32": np.dtype(np.int32),
    "i64": np.dtype(np.int64),
    "bool": np.dtype(np.bool_),
}
FLOAT_DTYPES = frozenset({"f32", "f16", "bf16", "f64"})
INT_DTYPES = frozenset({"i32", "i64"})

_F64, _F32, _U32, _BF16 = np.dtype(np.float64), np.dtype(np.float32), np.dtype(np.uint32), np.dtype(ml_dtypes.bfloat16)

ITEMSIZE: dict[str, int] = {name: dt.itemsize for name, dt in DTYPES.items()}


def to_numpy(dtype: str) -> np.dtype:
    return DTYPES[dtype]


def from_numpy(dtype: np.dtype) -> str:
    for name, dt in DTYPES.items():
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
    return bits.view(_F32).astype(_BF16)


def round_float(x: Any, dtype: str) -> np.ndarray:
    """float64 values rounded once to the float `dtype`."""
    x = np.asarray(x, dtype=_F64)
    if dtype == "f64":
        return x
    if dtype == "bf16":
        return _f64_to_bf16(x)
    return x.astype(to_numpy(dtype))
