"""Every aten mapping, registered: importing this module fills `registry.HANDLERS` with the handlers
of `aten.py` and of each family's module (softmax and MSE, index ops and losses, normalization,
parametrised activations and slicing, pooling, convolution, attention, masks and ranges, elementwise
math, reductions and scans, mode padding, fractional max pooling)."""

from __future__ import annotations

from . import aten, aten_acts, aten_attention, aten_conv, aten_index, aten_masks, aten_norm, aten_pool, aten_softmax
from . import aten_groupnorm, aten_indexing
from . import aten_math
from . import aten_loss
from . import aten_reduce
from . import aten_resample
from . import aten_pad
from . import aten_sort
from . import aten_distance
from . import aten_gating
from . import aten_misc
from . import aten_trilinear
from . import aten_views
from . import aten_strided
from . import aten_blas
from . import aten_fractional
from . import aten_bag
from .registry import HANDLERS

get_attr = aten.get_attr

__all__ = ["HANDLERS", "get_attr"]
FAMILIES = (aten_acts, aten_attention, aten_conv, aten_index, aten_masks, aten_norm, aten_pool,
            aten_softmax, aten_indexing, aten_groupnorm, aten_math, aten_loss,
            aten_reduce,
            aten_resample,
            aten_pad,
            aten_sort,
            aten_distance,
            aten_gating,
            aten_misc,
            aten_trilinear,
            aten_views,
            aten_strided,
            aten_blas,
            aten_fractional,
            aten_bag)  # registered by importing them
