"""Every op of the format, declared once; the tables the stages use are derived from here.

One module per op family (`leaves`, `activation`, `elementwise`, `layout`,
`reduce`, `batchnorm`, `softmax`) declares its ops as `OpDef`s (`base.py` says what one
holds). `register` collects them in the order of `FAMILIES` (the format's op
table; a new family goes at the end, so the egglog program of the existing ops,
and with it every lowering, stays as it was), and refuses a duplicate op,
constructor or rule-notation head. ops.py's tables, validate's `infer`/`check_attrs`, evaluate's `apply`, the
e-graph constructors (`egraph/language.py`), the rule notation's heads
(`rules/dsl.py`), the checker's domains, `backends.Backend.missing`,
`build.GraphBuilder.op` and the torch kernel table all read `OPDEFS`.
`docs/extending.md` shows what adding an op takes.
"""

from __future__ import annotations

from collections.abc import Iterable

from . import (activation, batchnorm, conv, elementwise, index, layout, leaves, log_softmax, mse, nll, norm, pool,
               reduce, slicing, softmax)
from . import attention, groupnorm, indexing, scatter
from . import loss
from . import reductions
from . import resample
from . import unfold
from . import unpool
from . import padding
from . import sort
from . import order_stats
from . import kernel
from . import distance
from . import gating
from . import index_reduce
from . import trilinear
from . import views
from . import strided
from . import blas
from . import fractional_pool
from . import bag
from .base import Ctor, Head, OpDef


def register(defs: Iterable[OpDef]) -> dict[str, OpDef]:
    """The declarations by name, in the order given."""
    defs = list(defs)
    out: dict[str, OpDef] = {}
    ctors: set[str] = set()
    heads: set[str] = set()
    for d in defs:
        if d.name in out:
            raise ValueError(f"op {d.name!r} is declared twice")
        for c in d.ctors:
            if c.name in ctors:
                raise ValueError(f"{d.name}: constructor {c.name!r} is declared twice")
            ctors.add(c.name)
            for h in c.heads:
                if h.spelling in heads:
                    raise ValueError(f"{d.name}: rule-notation head {h.spelling!r} is declared twice")
                heads.add(h.spelling)
        out[d.name] = d
    return out


FAMILIES = (leaves.OPS, (activation.ACTIVATION,), elementwise.OPS, layout.OPS, reduce.OPS, (batchnorm.FORWARD,),
            activation.BACKWARD, batchnorm.BACKWARD, softmax.OPS, log_softmax.OPS, mse.OPS, index.OPS, nll.OPS,
            norm.OPS, slicing.OPS, pool.OPS + pool.BACKWARD, conv.OPS, conv.BACKWARD, attention.OPS,
            indexing.OPS, scatter.OPS, groupnorm.OPS, loss.OPS,
            reductions.OPS,
            resample.OPS,
            unfold.OPS,
            pool.V3,
            unpool.OPS,
            padding.OPS,
            sort.OPS,
            order_stats.OPS,
            kernel.OPS,
            distance.OPS,
            gating.OPS,
            index_reduce.OPS,
            trilinear.OPS,
            conv.OPS3,
            views.OPS,
            strided.OPS,
            blas.OPS,
            distance.DIST_OPS,
            fractional_pool.OPS,
            bag.OPS)
OPDEFS: dict[str, OpDef] = register(d for family in FAMILIES for d in family)
CTORS: dict[str, Ctor] = {c.name: c for d in OPDEFS.values() for c in d.ctors}
HEADS: dict[str, tuple[Ctor, Head]] = {h.spelling: (c, h) for c in CTORS.values() for h in c.heads}

__all__ = ["OPDEFS", "CTORS", "HEADS", "OpDef", "Ctor", "Head", "register"]
