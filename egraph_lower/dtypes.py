"""The format's dtypes and their NumPy counterparts (bf16 through ml_dtypes)."""

from __future__ import annotations

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
    from .arrays import _round_float  # rounds once: ml_dtypes' float64 -> bf16 goes through f32

    return float(_round_float(value, dtype).astype(np.float64))
