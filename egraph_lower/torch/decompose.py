"""PyTorch's Core ATen decompositions, for the forward ops the importer does not map.

    table = decompositions(keep=())        # {aten OpOverload: its decomposition}
    aot_autograd(..., decompositions=table)

The one exception to "the importer never expands": the Core ATen opset (the overloads tagged
`torch.Tag.core`) is PyTorch's own contract with backends, what is left once its decomposition
table (`torch._decomp.core_aten_decompositions()`, the one `torch.export` applies) has run. A
forward op outside it (`stack`, `mv`, `index_add`, `baddbmm`, ...) that the importer has no mapping
for, and that AOTAutograd's own tracing leaves whole, would otherwise run in PyTorch, cutting its
graph (in torch 2.13 tracing already decomposes many of them, `stack`, `mv` and `baddbmm` among them:
docs/benchmarks.md, "OpInfo coverage", measured no OpInfo entry the table moves); decomposed by PyTorch's own table, written
and tested by PyTorch against the real kernel, it reaches the importer as Core ATen ops, which the
format maps or is to map. The table handed to AOTAutograd holds only those ops. Never:

- a **backward op** (`threshold_backward`, `_softmax_backward_data`, `convolution_backward`, ...:
  any op whose name says backward): each is a format op whose expansions are e-graph rules, so a
  backend with a kernel for it keeps it; a decomposition would take that choice away;
- a **Core ATen op**: the format maps those one to one (or lists why not in docs/torch.md's
  coverage table); decomposing one would hide the gap;
- a **mapped op**: the importer's mapping onto the format op of the same meaning wins (the table is
  read from `registry.HANDLERS` when a backend is made, so a new mapping takes an op out of it);
- an op the user asked to **keep in PyTorch** (`backend(keep_in_pytorch=...)`, an overload or every
  overload of a packet);
- an op that **draws random numbers** (`torch.Tag.nondeterministic_seeded`: `bernoulli`, `rrelu`,
  ...): its decomposition draws other numbers from the generator than eager's kernel does, and a
  compiled step is to match eager's under the same seed (as dropout's mask does).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from functools import lru_cache
from typing import Any

import torch

from .mappings import HANDLERS

OpOverload = torch._ops.OpOverload


@lru_cache(maxsize=1)
def _core_table() -> tuple[tuple[OpOverload, Callable[..., Any]], ...]:
    """PyTorch's whole table, read once (it materialises ~950 entries)."""
    from torch._decomp import core_aten_decompositions

    table = core_aten_decompositions()
    return tuple((op, fn) for op, fn in table.items() if isinstance(op, OpOverload))


def is_backward(op: OpOverload) -> bool:
    """Whether `op` computes a gradient (`*_backward`, `*_backward_data`, `*_backward_input`, ...)."""
    return "backward" in op.overloadpacket.__name__


def is_core(op: OpOverload) -> bool:
    return torch.Tag.core in op.tags


def is_kept(op: OpOverload, keep: Collection[str]) -> bool:
    """Whether `keep` names `op` (`aten.native_group_norm.default`) or its packet (`aten.native_group_norm`)."""
    return str(op) in keep or str(op.overloadpacket) in keep


def why_not(op: OpOverload, keep: Collection[str] = ()) -> str | None:
    """Why the table handed to AOTAutograd leaves `op` out (None: it holds it, if PyTorch has one)."""
    if is_backward(op):
        return "a backward op (a format op, so a backend with a kernel keeps it)"
    if is_core(op):
        return "a Core ATen op (mapped one to one, or listed in the coverage table)"
    if str(op) in HANDLERS:
        return "mapped by the importer"
    if is_kept(op, keep):
        return "kept in PyTorch (backend(keep_in_pytorch=...))"
    if torch.Tag.nondeterministic_seeded in op.tags:
        return "draws random numbers (its decomposition would not draw eager's)"
    return None


def decompositions(keep: Collection[str] = ()) -> dict[OpOverload, Callable[..., Any]]:
    """PyTorch's Core ATen decompositions of the forward ops outside Core ATen that the importer
    does not map and `keep` does not name."""
    return {op: fn for op, fn in _core_table() if why_not(op, keep) is None}
