"""The table of aten handlers: `handles("add.Tensor", ...)` registers a function for those ops.

The handler modules (`aten.py`, `aten_<family>.py`) register into it; `mappings.py` imports them
all, and the importer reads the table through it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .context import Context

Handler = Callable[[Context, dict[str, Any]], Any]
HANDLERS: dict[str, Handler] = {}


def handles(*names: str) -> Callable[[Handler], Handler]:
    """Register `fn` for those ops; an op has one mapping, so a second registration is an error."""
    def register(fn: Handler) -> Handler:
        for n in names:
            had = HANDLERS.setdefault(f"aten.{n}", fn)
            if had is not fn:
                raise RuntimeError(f"aten.{n} is mapped twice: by {had.__module__} and {fn.__module__}")
        return fn

    return register
