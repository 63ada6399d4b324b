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
    def register(fn: Handler) -> Handler:
        for n in names:
            HANDLERS[f"aten.{n}"] = fn
        return fn

    return register
