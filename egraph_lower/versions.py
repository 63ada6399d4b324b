"""Versions of the graph format: which version a graph needs.

Version 1 is frozen: its ops, their attributes and the activation kinds are listed
here once and never change. Everything else the op declarations (`opdefs/`) hold
came with version 2. A document says its version; a reader refuses a version-1
document that uses something newer, and a writer writes the lowest version that
covers what the graph uses, so a graph of version-1 ops stays a version-1 document.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

VERSIONS: tuple[int, ...] = (1, 2)
LATEST = VERSIONS[-1]

# Version 1's ops and the attributes each takes.
V1_OPS: dict[str, frozenset[str]] = {
    op: frozenset(attrs.split())
    for op, attrs in {
        "Input": "name", "Param": "name", "Constant": "value", "Activation": "kind", "Binary": "op",
        "Compare": "op", "Where": "", "Cast": "to", "Expand": "shape", "Reshape": "shape", "Transpose": "perm",
        "Reduce": "op axes keep_dim", "MatMul": "", "BatchNormInference": "eps", "ReluBackward": "",
        "ActivationBackward": "kind wrt", "BatchNormInferenceBackwardInput": "eps",
        "BatchNormInferenceBackwardGamma": "eps", "BatchNormInferenceBackwardBeta": "",
    }.items()
}
V1_KINDS: frozenset[str] = frozenset(
    "Gelu GeluApprox Silu Relu Sigmoid Tanh Exp Log Sqrt Rsqrt Neg Abs Sin Cos Tan Atan Recip Round Floor Ceil "
    "Sign Softplus Elu Erf HardSwish HardSigmoid Mish Softsign LogSigmoid".split()
)


class _Node(Protocol):
    @property
    def id(self) -> int: ...
    @property
    def op(self) -> str: ...
    @property
    def attrs(self) -> Mapping[str, Any]: ...


def newer_than_v1(op: str, attrs: Mapping[str, Any]) -> bool:
    """Whether a node of `op` with `attrs` needs version 2: a newer op, attribute or kind."""
    takes = V1_OPS.get(op)
    if takes is None:
        return True
    for key in attrs:
        if key not in takes:
            return True
    kind = attrs.get("kind") if "kind" in takes else None
    return kind is not None and kind not in V1_KINDS


def what_is_newer(op: str, attrs: Mapping[str, Any]) -> str:
    """What of a node needs version 2, in words (for a node `newer_than_v1` holds for)."""
    takes = V1_OPS.get(op)
    if takes is None:
        return f"op {op}"
    extra = [key for key in attrs if key not in takes]
    if extra:
        return f"attribute {extra[0]!r} of {op}"
    return f"activation kind {attrs.get('kind')!r}"


def first_newer(nodes: Iterable[_Node], version: int) -> _Node | None:
    """The first node that a document of `version` cannot hold, or None."""
    if version >= LATEST:
        return None
    for n in nodes:
        if newer_than_v1(n.op, n.attrs):
            return n
    return None


def required_version(nodes: Iterable[_Node]) -> int:
    """The lowest version that covers every node."""
    return 1 if first_newer(nodes, 1) is None else LATEST
