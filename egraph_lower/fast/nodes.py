"""Building many `Node`s without the frozen dataclass's `__init__`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields
from typing import Any, TypeVar

N = TypeVar("N")
NodeMaker = Callable[[int, str, tuple[int, ...], tuple[int, ...], str, dict[str, Any], "str | None"], N]
_FIELDS = ("id", "op", "inputs", "shape", "dtype", "attrs", "name")


def without_init(node_class: type[N]) -> NodeMaker[N]:
    """`node_class(...)` for hot loops: the same object, made by `object.__new__` with each field
    set through its slot (a frozen dataclass's `__init__` makes seven `object.__setattr__` calls
    looked up by name). For the seven fields of `graph.Node`, in their order."""
    names = tuple(f.name for f in fields(node_class))  # type: ignore[arg-type]
    if names != _FIELDS:
        raise TypeError(f"{node_class.__name__} has fields {names}, expected {_FIELDS}")
    new = object.__new__
    set_id, set_op, set_inputs, set_shape, set_dtype, set_attrs, set_name = (
        getattr(node_class, name).__set__ for name in names)

    def make(nid: int, op: str, inputs: tuple[int, ...], shape: tuple[int, ...], dtype: str,
             attrs: dict[str, Any], name: str | None) -> N:
        n = new(node_class)
        set_id(n, nid)
        set_op(n, op)
        set_inputs(n, inputs)
        set_shape(n, shape)
        set_dtype(n, dtype)
        set_attrs(n, attrs)
        set_name(n, name)
        return n

    return make
