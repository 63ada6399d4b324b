"""What keeps a training step running: a lowered module that falls back to PyTorch's graph.

`Guarded(lowered, original, on_failure)` runs `lowered`; if that raises, `on_failure`
is told (it warns and records, or raises under `strict`), and from then on the
`original` module (the FX graph or piece as PyTorch gave it) runs instead, starting
with the call that failed. Both take the same arguments and are pure (the pieces the
backend lowers hold only mappable, functional ops), so running the original again
on the same arguments is safe.

`symbolic_reason(gm, example_inputs)` says why a graph has symbolic sizes (None
when it has none): such a graph runs unlowered until the format has symbolic
dimensions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.fx as fx


class Guarded(torch.nn.Module):
    """`lowered`, replaced by `original` for good after the first exception it raises."""

    def __init__(self, lowered: torch.nn.Module, original: torch.nn.Module,
                 on_failure: Callable[[BaseException], None]) -> None:
        super().__init__()
        self.lowered = lowered
        self.original = original
        self._on_failure = on_failure
        self._failed = False

    def forward(self, *args: Any) -> Any:
        if self._failed:
            return self.original(*args)
        try:
            return self.lowered(*args)
        except Exception as e:
            self._on_failure(e)  # raises under strict
            self._failed = True
            return self.original(*args)


def _symbolic(value: Any) -> bool:
    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return True
    if isinstance(value, torch.Tensor):
        return any(not isinstance(d, int) for d in value.shape)
    return False


def symbolic_reason(gm: fx.GraphModule, example_inputs: Sequence[Any]) -> str | None:
    """Why `gm` has symbolic sizes (a placeholder or an input that is a SymInt, or a symbolic shape)."""
    for node in gm.graph.nodes:
        if node.op != "placeholder":
            continue
        if _symbolic(node.meta.get("val")):
            return f"placeholder {node.name} has symbolic sizes (the format's shapes are concrete)"
    for k, x in enumerate(example_inputs):
        if _symbolic(x):
            return f"input {k} has symbolic sizes (the format's shapes are concrete)"
    return None
