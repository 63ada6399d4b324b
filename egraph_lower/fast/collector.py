"""Pausing CPython's cyclic garbage collector around bursts of allocation that make no cycles."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused(long_lived: bool = False) -> Iterator[None]:
    """The cyclic garbage collector off for a burst of allocation that makes no cycles.

    Reading a million-node graph allocates millions of lists, dicts and tuples; CPython's collector
    would rescan the growing heap over and over (parsing and validating took 3 to 5 times as long).
    With `long_lived` (what was made is a graph, kept), the young generations are then moved into
    the oldest, as surviving two collections would move them, without the two scans of every node
    those collections cost (the first took 0.5 s at a million nodes). Not when the program froze
    objects itself: unfreezing would undo that. A collector that was off stays off."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        if long_lived and not gc.get_freeze_count():
            gc.freeze()  # everything tracked into the permanent generation,
            gc.unfreeze()  # and back, into the oldest
        gc.enable()
