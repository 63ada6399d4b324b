"""aten's addmv and addbmm, each onto one format op of version 3 (opdefs/blas.py):

- `addmv(self, mat, vec, beta, alpha)`: `Addmv{alpha, beta}(self, mat, vec)`;
- `addbmm(self, batch1, batch2, beta, alpha)`: `Addbmm{alpha, beta}(self, batch1, batch2)`;

the inputs cast to the result's dtype. Neither is Core ATen, and PyTorch's Core ATen table leaves both
whole on this path, so they reach the importer (their gradients are primitives in aten's graph).
"""

from __future__ import annotations

from typing import Any

from .context import Context
from .registry import handles


def _scalars(ctx: Context, a: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k in ("alpha", "beta"):
        v = ctx.scalar(a.get(k, 1))
        if isinstance(v, bool):
            v = int(v)
        out[k] = v
    return out


def _product(op: str, names: tuple[str, str, str]) -> Any:
    def handler(ctx: Context, a: dict[str, Any]) -> int:
        dt = ctx.out_dtype()
        ins = tuple(ctx.cast(ctx.t(a[k]), dt) for k in names)
        return ctx.add(op, ins, _scalars(ctx, a))

    return handler


handles("addmv.default")(_product("Addmv", ("self", "mat", "vec")))
handles("addbmm.default")(_product("Addbmm", ("self", "batch1", "batch2")))
