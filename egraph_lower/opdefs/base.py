"""What a declaration of one op of the format holds (data only; `opdefs/__init__` collects them).

An `OpDef` states, once, everything the stages need to know about an op:

- `inputs`, `attrs` (each with its check and whether it is required), `backward`;
- `infer`: its shape and dtype from its inputs' (None for a leaf: declared);
- `evaluate`: its NumPy reference semantics (see evaluate.py's module docstring);
- `ctors`: how it becomes an e-node (one or more egglog constructors, each with its
  primitive `Field`s, how an attribute encodes into a field and decodes back, and
  the rule-notation `Head`s that spell it);
- `domain`: the name of the numerical checker's sampling domain for rules that
  rewrite it away (`rules/domains/` `DOMAINS`; None: no rule may have it as lhs);
- `torch`: the name of its function in `egraph_lower/torch/kernels.py`;
- `check`: a check of the attributes together (each has its own first);
- `sample`: the attributes and input shapes/dtypes of one valid node, on which the
  completeness test (tests/test_opdefs.py) runs every part against the others.

Nothing here imports torch or egglog.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

Meta = tuple[tuple[int, ...], str | None]
Infer = Callable[[Mapping[str, Any], Sequence[Meta]], Meta]
Evaluate = Callable[[Mapping[str, Any], Sequence[np.ndarray], str, Sequence[int] | None], np.ndarray]
Check = Callable[[Any], None]
Sample = tuple[Mapping[str, Any], tuple[Meta, ...]]

STRING, F64, I64 = "String", "f64", "i64"  # the egglog sorts of primitive fields
WHOLE = "*"  # a derived Field's `source` that means: encode from all the node's attributes (a mapping)
INPUTS = "inputs"  # a Field's `shaped` that means: encode from every input's shape (a tuple of shapes)


@dataclass(frozen=True)
class Attr:
    """One attribute of an op: its name, its check (raises ValueError) and whether it is required."""

    name: str
    check: Check
    required: bool = True


@dataclass(frozen=True)
class Field:
    """One primitive field of an e-graph constructor.

    `encode(value, rank)` gives the field from the value of attribute `source` (the field's own
    name when None; `default` when the node omits it) and the rank of the op's first input (its
    shape instead, for a field with `shaped=True`: batch norm's [C, 1, ..., 1]);
    `decode` gives the attribute back. A field with `decode=None` is derived (batch norm's
    reduction axes, softmax's axes from its axis): it is no attribute.
    """

    name: str
    sort: str
    encode: Callable[[Any, Any], Any]  # (value, rank), or (value, shape) when `shaped`
    decode: Callable[[Any], Any] | None
    default: Any = None
    source: str | None = None
    shaped: bool | str = False  # INPUTS: the op's shaped fields get every input's shape, not the first's

    @property
    def attr(self) -> str:
        """The attribute the field is encoded from."""
        return self.source or self.name

    @property
    def derived(self) -> bool:
        return self.decode is None


@dataclass(frozen=True)
class Head:
    """A spelling of a constructor in the rule notation (`rules/dsl.py`).

    `fixed` gives the values the head itself fixes for some fields (`+` fixes `op` to Add,
    `Backward.Gelu` fixes `kind`); the other fields are written as the first arguments, in
    field order (a primitive variable or a literal), then the children."""

    spelling: str
    fixed: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True)
class Ctor:
    """An egglog constructor of an op: its primitive fields, then `arity` child expressions.

    `implies` are attribute values the constructor stands for (ActivationBackward's
    output form: wrt output); a node encodes to the constructor whose `implies` it matches
    with the most entries, among those whose `accepts` (if any) takes the node's attributes
    (a parametrised Elu: only when some parameter is not its default)."""

    name: str
    op: str
    fields: tuple[Field, ...]
    arity: int
    heads: tuple[Head, ...] = ()
    implies: tuple[tuple[str, Any], ...] = ()
    accepts: Callable[[Mapping[str, Any]], bool] | None = None

    @property
    def sorts(self) -> tuple[str, ...]:
        return tuple(f.sort for f in self.fields) + ("Expr",) * self.arity


@dataclass(frozen=True)
class OpDef:
    name: str
    inputs: tuple[str, ...]
    attrs: tuple[Attr, ...]
    infer: Infer | None
    evaluate: Evaluate
    ctors: tuple[Ctor, ...]
    domain: str | None
    torch: str | None
    backward: bool = False
    kinded: bool = False  # its `kind` attribute names an activation kind, which backends list one by one
    check: Callable[[Mapping[str, Any]], None] | None = None  # attributes checked together, after each alone
    sample: Sample | None = None  # attributes and input metas of one valid node (None: a leaf)
    max_inputs: int | None = None  # variadic (`Kernel`): 1 to this many inputs, `inputs` names them as one

    @property
    def arity(self) -> int:
        return len(self.inputs)

    def takes(self, n: int) -> bool:
        """Whether a node of the op may have `n` inputs."""
        return 1 <= n <= self.max_inputs if self.max_inputs is not None else n == len(self.inputs)

    @property
    def leaf(self) -> bool:
        return self.infer is None

    def attr(self, name: str) -> Attr:
        return next(a for a in self.attrs if a.name == name)


# ---- fields ----------------------------------------------------------------------------------------

def same(value: Any, rank: int) -> Any:
    return value


def ints_text(values: Any) -> str:
    """A list of ints as compact JSON: the String field for shapes, perms and axes."""
    import json

    return json.dumps([int(v) for v in values], separators=(",", ":"))


def _ints(value: Any) -> Any:
    import json

    return json.loads(value)


def string(name: str) -> Field:
    """A string attribute kept as it is (a kind, an op name, a dtype)."""
    return Field(name, STRING, same, lambda v: v)


def ints(name: str) -> Field:
    """A list-of-ints attribute (a shape, a perm) as compact JSON text."""
    return Field(name, STRING, lambda v, rank: ints_text(v), _ints)


def number(name: str) -> Field:
    """A number attribute as an f64."""
    return Field(name, F64, lambda v, rank: float(v), lambda v: v)


def derived(name: str, sort: str, fn: Callable[[int], Any]) -> Field:
    """A field computed from the rank of the first input, not an attribute of the format."""
    return Field(name, sort, lambda v, rank: fn(rank), None)


def integer(name: str) -> Field:
    """An integer attribute as an i64."""
    return Field(name, I64, lambda v, rank: int(v), int)


def all_but_last(rank: int) -> str:
    return ints_text(range(rank - 1))


def head(spelling: str, **fixed: Any) -> Head:
    return Head(spelling, tuple(fixed.items()))
