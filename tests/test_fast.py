"""The helpers of egraph_lower.fast that are not checked through graph.py and validate.py."""

from __future__ import annotations

import gc
from dataclasses import dataclass

import pytest

from egraph_lower.fast.collector import gc_paused
from egraph_lower.fast.nodes import without_init


def test_gc_paused_restores_the_collector() -> None:
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(KeyError), gc_paused():
        raise KeyError
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused(long_lived=True):
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_without_init_refuses_other_fields() -> None:
    @dataclass(frozen=True, slots=True)
    class Other:
        id: int
        op: str

    with pytest.raises(TypeError, match="fields"):
        without_init(Other)
