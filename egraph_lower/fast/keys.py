"""Hashable keys of attribute dicts, for memo tables and caches keyed by a node's attributes."""

from __future__ import annotations

from typing import Any

_INT = frozenset({int})


def attrs_key(attrs: dict[str, Any], floats: bool = True) -> tuple[Any, ...] | None:
    """A hashable key equal only for attributes that are alike value and type (1, 1.0 and true are
    equal in Python, not to the format), or None where there is none: string keys, and values that
    are strings, ints, bools, lists of ints and (with `floats`) floats. JSON caching passes
    floats=False: 0.0 and -0.0 are equal but written apart."""
    key: list[Any] = []
    for k, v in attrs.items():
        t = type(v)
        if type(k) is not str:
            return None
        if t is str:
            key.append((k, v))
        elif t is int or t is bool or (floats and t is float):
            key.append((k, t, v))
        elif t is list and set(map(type, v)) <= _INT:
            key.append((k, list, tuple(v)))
        else:
            return None
    return tuple(key)
