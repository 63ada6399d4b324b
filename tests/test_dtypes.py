"""Rounding a literal to a dtype, as constants in lowered graphs are written."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from egraph_lower.dtypes import round_to


def test_bf16_rounds_once_from_float64() -> None:
    # 1 + 2^-8 + 2^-30 is just above the midpoint of 1 and 1 + 2^-7: rounding through f32
    # first drops the 2^-30 and ties to even (1.0); rounding once gives 1 + 2^-7.
    v = 1 + 2.0**-8 + 2.0**-30
    assert float(np.float64(v).astype(np.float32).astype(ml_dtypes.bfloat16)) == 1.0
    assert round_to(v, "bf16") == 1 + 2.0**-7


def test_other_dtypes() -> None:
    assert round_to(0.1, "f16") == float(np.float16(0.1))
    assert round_to(0.1, "f32") == float(np.float32(0.1))
    assert round_to(0.1, "f64") == 0.1
    assert round_to(3.0, "i32") == 3 and isinstance(round_to(3.0, "i32"), int)
    assert round_to(1.0, "bool") is True


def test_the_largest_values_are_the_dtypes_own() -> None:
    from egraph_lower.dtypes import FLOAT_MAX, to_numpy

    for name, top in FLOAT_MAX.items():
        assert top == float(ml_dtypes.finfo(to_numpy(name)).max), name
