"""The numerical checker's sampling domains, and the precision of each dtype it checks in.

An op's declaration names its domain (`OpDef.domain`, a key of `DOMAINS`); a domain gives the
environment (variable -> array of the dtype, or a primitive) that a rule whose lhs is that op is
checked on, or a list of them where it needs arrays of different shapes. One module per op family
holds its domains and says which awkward points they sample; `base` holds what they share.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...egraph import language
from ...opdefs import OPDEFS
from ..dsl import Rule
from .activations import PARAM_SAMPLES, activation_domain, param_activation_domain, relu_domain
from .attention import ATTENTION_SCALES, attention_domain
from .base import (BN_EPS, DTYPES, EPS, FLOOR, MAX, TINY, UNDERFLOW_X, Env, lhs_ctor, lhs_kind, round_to,
                   x_domain)
from .conv import conv_domain
from .index import dropout_domain, embedding_domain, nll_domain, slice_domain
from .indexing import indexing_domain
from .normalization import NORM_SCALES, bn_domain, bntrain_domain, layernorm_domain
from .pool import pool_domain
from .softmax_loss import mse_domain, softmax_domain
from .groupnorm import GROUP_SCALES, groupnorm_domain
from .binary import binary_domain
from .loss import loss_domain
from .reductions import reductions_domain
from .resample import RESAMPLE_SCALES, resample_domain, unfold_domain
from .pool import unpool_domain
from .padding import padding_domain
from .sort import sort_domain
from .distance import CDIST_SCALES, distance_domain
from .gating import GATING_SCALES, gating_domain
from .index_reduce import index_reduce_domain
from .trilinear import TRILINEAR_SCALES, trilinear_domain
from .views import views_domain
from .strided import strided_domain
from .blas import BLAS_SCALES, blas_domain
from .fractional import fractional_domain
from .bag import bag_domain

__all__ = ["BN_EPS", "DOMAINS", "DTYPES", "EPS", "FLOOR", "MAX", "PARAM_SAMPLES", "SCALES", "TINY", "UNDERFLOW_X",
           "Env", "domain", "lhs_ctor", "lhs_kind", "round_to", "x_domain"]
__all__ += ["GROUP_SCALES"]

# the sampling domains an op's declaration may name (`OpDef.domain`)
DOMAINS: dict[str, Callable[[Rule, str], Env | list[Env]]] = {
    "activation": activation_domain,
    "relu": relu_domain,
    "batchnorm": bn_domain,
    "softmax": softmax_domain,
    "mse": mse_domain,
    "nll": nll_domain,
    "dropout": dropout_domain,
    "embedding": embedding_domain,
    "layernorm": layernorm_domain,
    "bntrain": bntrain_domain,
    "maxpool": pool_domain,
    "avgpool": pool_domain,
    "conv": conv_domain,
    "activation_params": param_activation_domain,
    "slice": slice_domain,
    "attention": attention_domain,
    "groupnorm": groupnorm_domain,
    "indexing": indexing_domain,
    "binary": binary_domain,
    "loss": loss_domain,
    "reductions": reductions_domain,
    "resample": resample_domain,
    "unfold": unfold_domain,
    "unpool": unpool_domain,
    "padding": padding_domain,
    "sort": sort_domain,
    "distance": distance_domain,
    "gating": gating_domain,
    "index_reduce": index_reduce_domain,
    "trilinear": trilinear_domain,
    "views": views_domain,
    "strided": strided_domain,
    "blas": blas_domain,
    "fractional": fractional_domain,
    "bag": bag_domain,
}

# The error scale of a rule by its lhs constructor, where an error relative to |result| alone would be
# unbounded (the result is summed or cancelled from larger terms).
SCALES: dict[str, Callable[[dict[str, np.ndarray]], np.ndarray]] = {**NORM_SCALES, **ATTENTION_SCALES,
                                                                   **RESAMPLE_SCALES}
SCALES.update(GATING_SCALES)
SCALES.update(TRILINEAR_SCALES)
SCALES.update(BLAS_SCALES)
SCALES.update(CDIST_SCALES)


def domain(rule: Rule, dtype: str) -> Env | list[Env]:
    """The environment (variable -> array of dtype, or primitive) the rule is checked on: the domain
    its lhs op declares (`OpDef.domain`, one of `DOMAINS`); a list of them where the domain needs
    arrays of different shapes."""
    ctor = language.CTORS[lhs_ctor(rule)]
    if dict(ctor.implies).get("kind") in PARAM_SAMPLES:  # a parametrised kind's constructor
        return param_activation_domain(rule, dtype)
    op = ctor.op
    name = OPDEFS[op].domain
    if name is None:
        raise ValueError(f"rule {rule.name}: {op} declares no checker domain (OpDef.domain)")
    return DOMAINS[name](rule, dtype)
