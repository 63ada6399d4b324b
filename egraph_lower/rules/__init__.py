"""The rule catalogue: every rewrite, stated once in the notation of `dsl`.

Groups:
- `backward`  a backward op expanded into other ops;
- `relation`  relates two forms of the same gradient (input/output form, ReluBackward);
- `forward`   a forward op in terms of others (for wgpu's missing activations, Softmax).

A rule runs only for targets that lack what it rewrites away (`select`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from . import activations, batchnorm, conv, forward, index, mse, norm, parametrised, pool, slicing, softmax
from . import attention, groupnorm, indexing, scatter
from . import math, math_kinds
from . import loss
from . import reductions
from . import resample
from . import unfold
from . import unpool
from . import padding
from . import sort
from . import order_stats
from . import distance
from . import gating
from . import index_reduce
from . import trilinear
from . import views
from . import strided
from . import blas
from . import fractional_pool
from . import bag
from .dsl import Rule

ALL_RULES: tuple[Rule, ...] = (activations.RULES + batchnorm.RULES + forward.RULES + softmax.RULES + mse.RULES
                               + index.RULES + norm.RULES + parametrised.RULES + slicing.RULES + pool.RULES
                               + conv.RULES + attention.RULES
                               + indexing.RULES + scatter.RULES + groupnorm.RULES + math.RULES
                               + math_kinds.RULES + loss.RULES
                               + reductions.RULES
                               + resample.RULES
                               + unfold.RULES
                               + pool.V3
                               + unpool.RULES
                               + padding.RULES
                               + sort.RULES
                               + order_stats.RULES
                               + distance.RULES
                               + gating.RULES
                               + index_reduce.RULES
                               + trilinear.RULES
                               + conv.RULES3
                               + views.RULES
                               + strided.RULES
                               + blas.RULES
                               + fractional_pool.RULES
                               + bag.RULES)


def _check_unique(rules: Iterable[Rule]) -> None:
    seen: set[str] = set()
    for r in rules:
        if r.name in seen:
            raise ValueError(f"two rules are named {r.name!r}")
        seen.add(r.name)


_check_unique(ALL_RULES)
BY_NAME: dict[str, Rule] = {r.name: r for r in ALL_RULES}


def select(missing: frozenset[str] | None = None, present: Iterable[str] | None = None,
           extra: Sequence[Rule] = ()) -> tuple[Rule, ...]:
    """The rules worth running for targets that lack the ops labelled in `missing`, on a graph whose
    nodes carry the labels in `present` (`Activation.Erf`, `ReluBackward`, ...; None: any graph).

    Capability gating: a rule runs only when some target lacks what it rewrites
    away, so an op a backend runs natively is kept as it is (on `cpu` nothing is
    expanded); among the expansions of what it lacks, extraction picks by cost.
    A rule whose left-hand side can never appear (its op is neither in the graph nor
    built by another selected rule) is left out: it could not fire, and egglog sets up
    every rule it is given. `missing=None` means every rule. `extra`: the targets' own rules (a
    backend file's rules and kernels), wanted whatever the targets lack, selected as the others are.
    """
    wanted = ALL_RULES if missing is None else tuple(r for r in ALL_RULES if _lacks(r.lowers, missing))
    wanted += tuple(extra)
    if present is None:
        return wanted
    labels, chosen = set(present), set()
    grew = True
    while grew:
        grew = False
        for r in wanted:
            if r.name not in chosen and r.lowers in labels:
                chosen.add(r.name)
                labels.update(r.needs)
                grew = True
    return tuple(r for r in wanted if r.name in chosen)


def _lacks(label: str, missing: frozenset[str]) -> bool:
    return label in missing or label.split(".")[0] in missing
