"""Every aten mapping, registered: importing this module fills `registry.HANDLERS` with the handlers
of `aten.py` and of each family's module (softmax and MSE, index ops and losses, normalization,
parametrised activations and slicing, pooling, convolution, attention, masks and ranges)."""

from __future__ import annotations

from types import ModuleType

from . import aten, aten_acts, aten_attention, aten_conv, aten_index, aten_masks, aten_norm, aten_pool, aten_softmax
from . import aten_groupnorm
from . import aten_indexing
from .registry import HANDLERS

get_attr = aten.get_attr

__all__ = ["HANDLERS", "get_attr"]
FAMILIES: tuple[ModuleType, ...] = (aten_acts, aten_attention, aten_conv, aten_index, aten_masks, aten_norm, aten_pool,
            aten_softmax,
            aten_indexing)  # registered by importing them
FAMILIES += (aten_groupnorm,)
