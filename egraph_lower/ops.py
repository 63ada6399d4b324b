"""The op table of the graph format (version 1): names, inputs, attributes, kinds.

Derived from the declarations in `opdefs/` (each op is declared once there); these
are the read-only views the rest of the package and the tests use.
"""

from __future__ import annotations

from dataclasses import dataclass

from .opdefs import OPDEFS
from .opdefs.activation import ACTIVATION_KINDS, INTEGER_KINDS, OUTPUT_FORM_KINDS, WRT
from .opdefs.elementwise import BINARY_OPS, COMPARE_OPS
from .opdefs.reduce import REDUCE_OPS

__all__ = ["ACTIVATION_KINDS", "OUTPUT_FORM_KINDS", "INTEGER_KINDS", "BINARY_OPS", "COMPARE_OPS", "REDUCE_OPS", "WRT",
           "OpSpec", "OPS", "LEAF_OPS", "FORWARD_OPS", "BACKWARD_OPS"]


@dataclass(frozen=True)
class OpSpec:
    """One op of the format: its input names and attributes (name -> required)."""

    name: str
    inputs: tuple[str, ...]
    attrs: dict[str, bool]
    backward: bool = False
    max_inputs: int | None = None  # variadic (`Kernel`): 1 to this many inputs

    @property
    def arity(self) -> int:
        return len(self.inputs)

    def takes(self, n: int) -> bool:
        """Whether a node of the op may have `n` inputs."""
        return 1 <= n <= self.max_inputs if self.max_inputs is not None else n == len(self.inputs)


OPS: dict[str, OpSpec] = {
    d.name: OpSpec(d.name, d.inputs, {a.name: a.required for a in d.attrs}, d.backward, d.max_inputs) for d in OPDEFS.values()
}
LEAF_OPS: frozenset[str] = frozenset(d.name for d in OPDEFS.values() if d.leaf)
FORWARD_OPS: tuple[str, ...] = tuple(name for name, spec in OPS.items() if not spec.backward)
BACKWARD_OPS: tuple[str, ...] = tuple(name for name, spec in OPS.items() if spec.backward)
