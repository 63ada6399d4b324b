"""The array operations the activation kinds' formulas are written against, over NumPy.

A formula (`kinds.py`) takes an array namespace `xp` and an array; `NUMPY` here
is the float64 reference's namespace, `egraph_lower/torch/kernels.py` has the
same operations over torch tensors (computed in the tensor's dtype). Arithmetic
and comparisons are the arrays' own operators; only what the two libraries spell
differently is a method. Python scalars given to `where`, `maximum`, `minimum`
and `full_like` take the array's dtype in torch (NumPy keeps its own rules, which
the reference's values are pinned to).

erf and erfc are `math.erf`/`math.erfc` element by element: `scipy.special`'s
differ from them in the last bit on about 4% (erf) and 43% (erfc) of 3 million
points (the checker's x domains of every dtype, a dense grid over [-30, 30] and
normal samples; also at -x/sqrt(2), Gelu's argument), and the reference values
are pinned.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..arrays import _F64, _ineg

_erf_obj = np.frompyfunc(math.erf, 1, 1)
_erfc_obj = np.frompyfunc(math.erfc, 1, 1)


class NumPyOps:
    """The array namespace of the NumPy reference (float64, or int64 for the integer forms)."""

    exp = staticmethod(np.exp)
    expm1 = staticmethod(np.expm1)
    log = staticmethod(np.log)
    log1p = staticmethod(np.log1p)
    sqrt = staticmethod(np.sqrt)
    tanh = staticmethod(np.tanh)
    sin = staticmethod(np.sin)
    cos = staticmethod(np.cos)
    tan = staticmethod(np.tan)
    atan = staticmethod(np.arctan)
    abs = staticmethod(np.abs)
    sign = staticmethod(np.sign)
    floor = staticmethod(np.floor)
    ceil = staticmethod(np.ceil)
    rint = staticmethod(np.rint)  # half to even
    isinf = staticmethod(np.isinf)
    isnan = staticmethod(np.isnan)
    where = staticmethod(np.where)
    maximum = staticmethod(np.maximum)
    minimum = staticmethod(np.minimum)
    clip = staticmethod(np.clip)
    # the kinds and Binary ops of version 3 (kinds_math.py, binary_math.py)
    sinh = staticmethod(np.sinh)
    cosh = staticmethod(np.cosh)
    asinh = staticmethod(np.arcsinh)
    acosh = staticmethod(np.arccosh)
    atanh = staticmethod(np.arctanh)
    exp2 = staticmethod(np.exp2)
    trunc = staticmethod(np.trunc)
    log2 = staticmethod(np.log2)
    log10 = staticmethod(np.log10)
    asin = staticmethod(np.arcsin)
    acos = staticmethod(np.arccos)
    fmod = staticmethod(np.fmod)
    atan2 = staticmethod(np.arctan2)
    hypot = staticmethod(np.hypot)
    copysign = staticmethod(np.copysign)
    fmax = staticmethod(np.fmax)
    fmin = staticmethod(np.fmin)
    floor_divide = staticmethod(np.floor_divide)
    bitwise_and = staticmethod(np.bitwise_and)
    bitwise_or = staticmethod(np.bitwise_or)
    bitwise_xor = staticmethod(np.bitwise_xor)
    zeros_like = staticmethod(np.zeros_like)
    ones_like = staticmethod(np.ones_like)

    @staticmethod
    def is_float(x: Any) -> bool:
        return bool(np.asarray(x).dtype.kind == "f")

    @staticmethod
    def neg(x: Any) -> Any:
        """-x; on integers, int64 negation wrapping modulo 2**64."""
        return np.negative(x) if np.asarray(x).dtype.kind == "f" else _ineg(x)

    @staticmethod
    def erf(x: Any) -> Any:
        return np.asarray(_erf_obj(x), dtype=_F64)

    @staticmethod
    def erfc(x: Any) -> Any:
        return np.asarray(_erfc_obj(x), dtype=_F64)

    @staticmethod
    def erfinv(x: Any) -> Any:
        """scipy's (imported here: only a graph with Erfinv needs it; torch's agrees to 4e-16,
        tests/test_math.py)."""
        from scipy.special import erfinv

        return np.asarray(erfinv(x), dtype=_F64)

    @staticmethod
    def full_like(x: Any, v: float) -> Any:
        return np.full(np.shape(x), v)


NUMPY = NumPyOps()
