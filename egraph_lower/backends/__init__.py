"""Backends as data: the ops each runs natively and what a kernel costs there.

A backend is a JSON document (the built-in ones sit beside this file):

    {"name": "wgpu", "description": "...",
     "ops": ["Input", "Binary", "Activation", ...],       format ops it runs
     "activation_kinds": "all" | ["Relu", ...],          kinds of Activation it runs
     "backward_kinds": "all" | ["Relu", ...],            kinds of ActivationBackward (if in ops)
     "cost": {"launch": 6.0, "byte": 2e-05, "flop": 3e-06, "view": 0.1,
              "weights": {"Activation.Erf": 12}}}       optional work per element overrides

`load(name_or_path)` takes a built-in name or the path of such a file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import BackendError, LowerError
from ..graph import Node
from ..reading import BACKEND_BYTES, read_text
from ..ops import ACTIVATION_KINDS, OPS
from .cost import CostModel

BUILTIN = ("cpu", "mlx", "metal", "tpu", "wgpu")
_KEYS = {"name", "description", "ops", "activation_kinds", "backward_kinds", "cost"}
_COST_KEYS = {"launch", "byte", "flop", "view", "weights"}


@dataclass(frozen=True)
class Backend:
    name: str
    description: str
    ops: frozenset[str]
    activation_kinds: frozenset[str]
    backward_kinds: frozenset[str]
    cost: CostModel

    def runs(self, op: str, kind: str | None = None) -> bool:
        """Whether a kernel exists for `op` (of `kind`, for the activation ops)."""
        if op not in self.ops:
            return False
        if op == "Activation":
            return kind in self.activation_kinds
        if op == "ActivationBackward":
            return kind in self.backward_kinds
        return True

    def runs_node(self, node: Node) -> bool:
        return self.runs(node.op, node.attrs.get("kind"))

    @cached_property
    def missing(self) -> frozenset[str]:
        """Labels (`Activation.Erf`, `ReluBackward`, ...) of what this backend lacks."""
        out = {op for op in OPS if op not in self.ops}
        for op, kinds in (("Activation", self.activation_kinds), ("ActivationBackward", self.backward_kinds)):
            if op in self.ops:
                out |= {f"{op}.{k}" for k in ACTIVATION_KINDS if k not in kinds}
        return frozenset(out)

    def summary(self) -> str:
        return f"{self.name}: {self.description}"


def _kinds(value: Any, where: str) -> frozenset[str]:
    if value == "all":
        return frozenset(ACTIVATION_KINDS)
    if not isinstance(value, list) or not all(isinstance(k, str) for k in value):
        raise BackendError(f"backend {where}: kinds must be \"all\" or a list of kind names")
    unknown = sorted(set(value) - set(ACTIVATION_KINDS))
    if unknown:
        raise BackendError(f"backend {where}: unknown activation kind {unknown[0]!r}")
    return frozenset(value)


def _number(value: Any, key: str, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 or value != value:
        raise BackendError(f"backend {where}: cost.{key} must be a non-negative number")
    return float(value)


def from_dict(doc: Any, where: str = "file") -> Backend:
    if not isinstance(doc, dict):
        raise BackendError(f"backend {where}: expected a JSON object")
    unknown = sorted(set(doc) - _KEYS)
    if unknown:
        raise BackendError(f"backend {where}: unknown key {unknown[0]!r}")
    for key in ("name", "ops", "cost"):
        if key not in doc:
            raise BackendError(f"backend {where}: missing key {key!r}")
    name = doc["name"]
    if not isinstance(name, str) or not name:
        raise BackendError(f"backend {where}: name must be a non-empty string")
    ops = doc["ops"]
    if not isinstance(ops, list) or not all(isinstance(o, str) for o in ops):
        raise BackendError(f"backend {name}: ops must be a list of op names")
    bad = sorted(set(ops) - set(OPS))
    if bad:
        raise BackendError(f"backend {name}: unknown op {bad[0]!r}")
    for leaf in ("Input", "Param", "Constant"):
        if leaf not in ops:
            raise BackendError(f"backend {name}: every backend must run {leaf}")
    cost = doc["cost"]
    if not isinstance(cost, dict):
        raise BackendError(f"backend {name}: cost must be an object")
    unknown = sorted(set(cost) - _COST_KEYS)
    if unknown:
        raise BackendError(f"backend {name}: unknown cost key {unknown[0]!r}")
    for key in ("launch", "byte", "flop", "view"):
        if key not in cost:
            raise BackendError(f"backend {name}: missing cost.{key}")
    weights = cost.get("weights", {})
    if not isinstance(weights, dict):
        raise BackendError(f"backend {name}: cost.weights must be an object")
    model = CostModel(
        launch=_number(cost["launch"], "launch", name),
        byte=_number(cost["byte"], "byte", name),
        flop=_number(cost["flop"], "flop", name),
        view=_number(cost["view"], "view", name),
        weights={str(k): _number(v, f"weights.{k}", name) for k, v in weights.items()},
    )
    description = doc.get("description", "")
    if not isinstance(description, str):
        raise BackendError(f"backend {name}: description must be a string")
    return Backend(
        name=name,
        description=description,
        ops=frozenset(ops),
        activation_kinds=_kinds(doc.get("activation_kinds", []), name),
        backward_kinds=_kinds(doc.get("backward_kinds", []), name),
        cost=model,
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
        text = read_text(name_or_path, "backend", BACKEND_BYTES)
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise BackendError(f"backend {name_or_path}: malformed JSON at line {e.lineno}: {e.msg}") from None
    except LowerError as e:
        raise BackendError(str(e)) from None
    return from_dict(doc, name_or_path)


def all_builtin() -> list[Backend]:
    return [builtin(n) for n in BUILTIN]
