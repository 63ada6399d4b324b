"""Backends as data: the ops each runs natively and what a kernel costs there.

A backend is a JSON document (the built-in ones sit beside this file):

    {"name": "wgpu", "description": "...",
     "ops": ["Input", "Binary", "Activation", ...],       format ops it runs
     "activation_kinds": "all" | ["Relu", ...],          kinds of Activation it runs
     "backward_kinds": "all" | ["Relu", ...],            kinds of ActivationBackward (if in ops)
     "binary_ops": "all" | ["Add", "FloorDiv", ...],     ops of Binary it runs (if in ops; default:
                                                         version 1's seven, Add Sub Mul Div Max Min Pow)
     "half_precision_math": "float32" | "native",        optional, default "float32": whether an
                                                         f16/bf16 expansion computes in float32 and
                                                         rounds once (as PyTorch) or in the low dtype
     "cost": {"launch": 6.0, "byte": 2e-05, "flop": 3e-06, "view": 0.1,
              "weights": {"Activation.Erf": 12}},       optional work per element overrides
     "kernels": [...], "rules": [...]}                   optional: its own fused kernels and rewrite
                                                         rules (`backends/kernels.py`)

`load(name_or_path)` takes a built-in name or the path of such a file. A file is read with a
bound (`reading.BACKEND_BYTES`), parsed strictly (no duplicate keys, no NaN or Infinity tokens,
nesting bounded) and checked by `from_dict`: every key known (a weight's key is a label the
cost model asks for: an op, `Activation.<kind>`, `ActivationBackward.<kind>` or
`Binary.<op>`), every cost a finite number in [0, MAX_COST], names and lists of bounded
length. Any failure is one line naming the file and the key.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from importlib import resources
from pathlib import Path
from collections.abc import Collection
from typing import Any

from ..errors import BackendError, LowerError
from ..graph import Node, parse_json
from ..opdefs import OPDEFS
from ..opdefs.elementwise import BASE_BINARY_OPS
from ..ops import ACTIVATION_KINDS, BINARY_OPS, OPS
from ..reading import BACKEND_BYTES, read_text
from ..egraph.language import KERNEL, kernel_key
from ..rules.dsl import Rule
from . import kernels as kernels_mod
from .cost import MAX_COST, CostModel
from .kernels import KernelDecl

BUILTIN = ("cpu", "mlx", "metal", "tpu", "wgpu")
_KEYS = {"name", "description", "ops", "activation_kinds", "backward_kinds", "binary_ops", "cost",
         "half_precision_math", "kernels", "rules"}
HALF_PRECISION_MATH = ("float32", "native")
_COST_KEYS = {"launch", "byte", "flop", "view", "weights"}
_KINDED = tuple(name for name, d in OPDEFS.items() if d.kinded)  # Activation, ActivationBackward
MAX_NAME = 200  # characters of a name
# characters of a description: it says what the real backend runs of each op family, and grows with them
MAX_DESCRIPTION = 8000
WEIGHT_LABELS = frozenset(
    [*OPS, *(f"{op}.{k}" for op in _KINDED for k in ACTIVATION_KINDS),
     *(f"Binary.{b}" for b in BINARY_OPS)])


@dataclass(frozen=True)
class Backend:
    name: str
    description: str
    ops: frozenset[str]
    activation_kinds: frozenset[str]
    backward_kinds: frozenset[str]
    cost: CostModel
    half_precision_math: str = "float32"  # one of HALF_PRECISION_MATH
    binary_ops: frozenset[str] = frozenset(BASE_BINARY_OPS)
    kernels: tuple[KernelDecl, ...] = ()  # its own fused kernels (`backends/kernels.py`)
    rules: tuple[Rule, ...] = ()  # its own rewrite rules, applied only when lowering for it

    @cached_property
    def kernel_ctors(self) -> dict[str, KernelDecl]:
        """Each output's constructor (a `Kernel` node's kind) -> its kernel."""
        return {c: k for k in self.kernels for c in k.ctors}

    @cached_property
    def own_rules(self) -> tuple[Rule, ...]:
        """The rules lowering for it adds to the built-in ones: its rules, and one per kernel."""
        return self.rules + tuple(r for k in self.kernels for r in k.rules)

    def runs(self, op: str, kind: str | None = None) -> bool:
        """Whether a kernel exists for `op` (of `kind`, for the ops whose kinds backends list; for
        `Binary`, `kind` is its `op` attribute: `node_kind`; for `Kernel`, its constructor)."""
        if op == KERNEL:
            return kind in self.kernel_ctors
        if op not in self.ops:
            return False
        if op in _KINDED:
            return kind in self._kinds(op)
        if op == "Binary":
            return kind in self.binary_ops
        return True

    def _kinds(self, op: str) -> frozenset[str]:
        """The kinds of a kinded op it runs: `backward_kinds` for a backward op, else `activation_kinds`."""
        return self.backward_kinds if OPDEFS[op].backward else self.activation_kinds

    def runs_node(self, node: Any) -> bool:
        """Whether it runs a node (anything with `op` and `attrs`: a Node, or a Combo of columns; a
        `Kernel` node of a dtype its kernel takes)."""
        kind = node_kind(node.op, node.attrs)
        if node.op == KERNEL and kind in self.kernel_ctors:
            taken = self.kernel_ctors[kind].cost.dtypes
            return taken is None or node.dtype in taken
        return self.runs(node.op, kind)

    @cached_property
    def missing(self) -> frozenset[str]:
        """Labels (`Activation.Erf`, `Binary.FloorDiv`, `ReluBackward`, ...) of what this backend lacks."""
        out = {op for op in OPS if op not in self.ops and op != KERNEL}
        for op in _KINDED:
            if op in self.ops:
                out |= {f"{op}.{k}" for k in ACTIVATION_KINDS if k not in self._kinds(op)}
        if "Binary" in self.ops:
            out |= {f"Binary.{b}" for b in BINARY_OPS if b not in self.binary_ops}
        return frozenset(out)

    def summary(self) -> str:
        return f"{self.name}: {self.description}"


def node_kind(op: str, attrs: Any) -> str | None:
    """What `Backend.runs` is asked about beside the op: an activation kind, a Binary's op, or a
    Kernel's constructor (`language.kernel_key`)."""
    if op == KERNEL:
        return kernel_key(attrs)
    return attrs.get("op") if op == "Binary" else attrs.get("kind")


# what `_names` checks a file's list against, and how its errors name them
_KIND_NAMES = (ACTIVATION_KINDS, "kinds", "kind names", "activation kind")
_BINARY_NAMES = (BINARY_OPS, "binary_ops", "Binary ops", "Binary op")


def _names(value: Any, where: str, known: Collection[str], key: str, listing: str, what: str) -> frozenset[str]:
    """A backend file's `key`: "all" of `known`, or a list of them (`listing`, `what`: their names in errors)."""
    if value == "all":
        return frozenset(known)
    if not isinstance(value, list) or not all(isinstance(k, str) for k in value):
        raise BackendError(f"backend {where}: {key} must be \"all\" or a list of {listing}")
    unknown = sorted(set(value) - set(known))
    if unknown:
        raise BackendError(f"backend {where}: unknown {what} {_short(unknown[0])}")
    return frozenset(value)


def _number(value: Any, key: str, where: str) -> float:
    # (0 <= value <= MAX_COST is False for NaN, and compares ints of any size exactly)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= MAX_COST:
        raise BackendError(f"backend {where}: cost.{key} must be a number from 0 to {MAX_COST:g}, not {_short(value)}")
    return float(value)


def _short(value: Any) -> str:
    text = repr(value) if not isinstance(value, int) or value.bit_length() < 128 else f"an integer of {len(str(value))} digits"
    return text if len(text) <= 60 else text[:57] + "..."


def _string(doc: dict[str, Any], key: str, where: str, longest: int, empty: bool) -> str:
    value = doc.get(key, "")
    if not isinstance(value, str) or (not value and not empty) or len(value) > longest:
        raise BackendError(f"backend {where}: {key} must be a {'' if empty else 'non-empty '}string of at most"
                           f" {longest} characters")
    return value


def from_dict(doc: Any, where: str = "file") -> Backend:
    if not isinstance(doc, dict):
        raise BackendError(f"backend {where}: expected a JSON object")
    unknown = sorted(set(doc) - _KEYS)
    if unknown:
        raise BackendError(f"backend {where}: unknown key {_short(unknown[0])}")
    for key in ("name", "ops", "cost"):
        if key not in doc:
            raise BackendError(f"backend {where}: missing key {key!r}")
    name = _string(doc, "name", where, MAX_NAME, empty=False)
    ops = doc["ops"]
    if not isinstance(ops, list) or not all(isinstance(o, str) for o in ops):
        raise BackendError(f"backend {name}: ops must be a list of op names")
    bad = sorted(set(ops) - set(OPS))
    if bad:
        raise BackendError(f"backend {name}: unknown op {_short(bad[0])}")
    if KERNEL in ops:
        raise BackendError(f"backend {name}: {KERNEL} is not an op to list: declare the kernels under \"kernels\"")
    for leaf in ("Input", "Param", "Constant"):
        if leaf not in ops:
            raise BackendError(f"backend {name}: every backend must run {leaf}")
    cost = doc["cost"]
    if not isinstance(cost, dict):
        raise BackendError(f"backend {name}: cost must be an object")
    unknown = sorted(set(cost) - _COST_KEYS)
    if unknown:
        raise BackendError(f"backend {name}: unknown cost key {_short(unknown[0])}")
    for key in ("launch", "byte", "flop", "view"):
        if key not in cost:
            raise BackendError(f"backend {name}: missing cost.{key}")
    weights = cost.get("weights", {})
    if not isinstance(weights, dict):
        raise BackendError(f"backend {name}: cost.weights must be an object")
    unknown = sorted(set(weights) - WEIGHT_LABELS)
    if unknown:
        raise BackendError(f"backend {name}: unknown label {_short(unknown[0])} in cost.weights: use an op,"
                           " Activation.<kind>, ActivationBackward.<kind> or Binary.<op>")
    own_kernels = kernels_mod.kernels(doc.get("kernels", []), name)
    model = CostModel(
        kernels={c: k.cost for k in own_kernels for c in k.ctors},
        launch=_number(cost["launch"], "launch", name),
        byte=_number(cost["byte"], "byte", name),
        flop=_number(cost["flop"], "flop", name),
        view=_number(cost["view"], "view", name),
        weights={str(k): _number(v, f"weights.{k}", name) for k, v in weights.items()},
    )
    description = _string(doc, "description", name, MAX_DESCRIPTION, empty=True)
    half_math = doc.get("half_precision_math", "float32")
    if half_math not in HALF_PRECISION_MATH:
        raise BackendError(f"backend {name}: half_precision_math must be \"float32\" or \"native\","
                           f" not {_short(half_math)}")
    return Backend(
        name=name,
        description=description,
        ops=frozenset(ops),
        activation_kinds=_names(doc.get("activation_kinds", []), name, *_KIND_NAMES),
        backward_kinds=_names(doc.get("backward_kinds", []), name, *_KIND_NAMES),
        cost=model,
        half_precision_math=half_math,
        binary_ops=_names(doc.get("binary_ops", list(BASE_BINARY_OPS)), name, *_BINARY_NAMES),
        kernels=own_kernels,
        rules=kernels_mod.rules(doc.get("rules", []), name),
    )


def builtin(name: str) -> Backend:
    text = resources.files(__package__).joinpath(f"{name}.json").read_text()
    return from_dict(json.loads(text), name)


def load(name_or_path: str | Backend) -> Backend:
    """A built-in backend by name, or a backend file by path."""
    if isinstance(name_or_path, Backend):
        return name_or_path
    if name_or_path in BUILTIN:
        return builtin(name_or_path)
    looks_like_path = name_or_path.endswith(".json") or "/" in name_or_path or Path(name_or_path).exists()
    if not looks_like_path:
        raise BackendError(
            f"unknown backend {name_or_path!r}: use one of {', '.join(BUILTIN)} or the path of a backend file"
        )
    try:
        doc = parse_json(read_text(name_or_path, "backend", BACKEND_BYTES))
    except LowerError as e:
        raise BackendError(f"backend {name_or_path}: {e}" if not str(e).startswith("cannot read") else str(e)) from None
    return from_dict(doc, name_or_path)


def all_builtin() -> list[Backend]:
    return [builtin(n) for n in BUILTIN]
