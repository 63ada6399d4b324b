"""Versions of the graph format: which version a graph needs.

Every released version is frozen: its ops, the attributes each takes, the values
its enumerated attributes take (activation kinds, `Binary`/`Compare`/`Reduce` ops)
and its dtypes are listed here once and never change. The newest version
(`LATEST`) is whatever the op declarations (`opdefs/`) hold beyond the last frozen
one. A document says its version; a reader refuses a document that uses something
newer than it says, and a writer writes the lowest version that covers what the
graph uses, so a graph of version-1 ops stays a version-1 document and a graph of
version-2 ops a version-2 one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol


def _table(rows: Mapping[str, str]) -> dict[str, frozenset[str]]:
    return {op: frozenset(attrs.split()) for op, attrs in rows.items()}


_BINARY = "Add Sub Mul Div Max Min Pow"
_COMPARE = "Eq Ne Lt Le Gt Ge"
_REDUCE = "Sum Mean Max Min"
_V1_KINDS = ("Gelu GeluApprox Silu Relu Sigmoid Tanh Exp Log Sqrt Rsqrt Neg Abs Sin Cos Tan Atan Recip Round "
             "Floor Ceil Sign Softplus Elu Erf HardSwish HardSigmoid Mish Softsign LogSigmoid")
_DTYPES = "f32 f16 bf16 f64 i32 i64 bool"

# Version 1's ops and the attributes each takes.
V1_OPS: dict[str, frozenset[str]] = _table({
    "Input": "name", "Param": "name", "Constant": "value", "Activation": "kind", "Binary": "op",
    "Compare": "op", "Where": "", "Cast": "to", "Expand": "shape", "Reshape": "shape", "Transpose": "perm",
    "Reduce": "op axes keep_dim", "MatMul": "", "BatchNormInference": "eps", "ReluBackward": "",
    "ActivationBackward": "kind wrt", "BatchNormInferenceBackwardInput": "eps",
    "BatchNormInferenceBackwardGamma": "eps", "BatchNormInferenceBackwardBeta": "",
})
V1_KINDS: frozenset[str] = frozenset(_V1_KINDS.split())

# Version 2: what real training graphs of the first models needed (docs/format.md, "Ops of version 2").
V2_OPS: dict[str, frozenset[str]] = _table({
    "Input": "name", "Param": "name", "Constant": "value",
    "Activation": "kind beta threshold alpha scale input_scale min max", "Binary": "op", "Compare": "op",
    "Where": "", "Cast": "to", "Expand": "shape", "Reshape": "shape", "Transpose": "perm",
    "Reduce": "op axes keep_dim", "MatMul": "", "BatchNormInference": "eps axis", "ReluBackward": "",
    "ActivationBackward": "kind wrt beta threshold alpha scale input_scale min max",
    "BatchNormInferenceBackwardInput": "eps axis", "BatchNormInferenceBackwardGamma": "eps axis",
    "BatchNormInferenceBackwardBeta": "axis", "Softmax": "axis", "SoftmaxBackward": "axis",
    "LogSoftmax": "axis", "LogSoftmaxBackward": "axis", "MseLoss": "reduction", "MseLossBackward": "reduction",
    "Dropout": "scale", "DropoutBackward": "scale", "Iota": "axis dtype", "Gather": "axis",
    "ScatterAdd": "axis", "Take": "axis", "Embedding": "", "EmbeddingBackward": "num_weights padding_idx",
    "NllLoss": "reduction ignore_index", "NllLossTotalWeight": "ignore_index",
    "NllLossBackward": "reduction ignore_index", "InvStd": "axes eps keep_dim", "InvRms": "axes eps keep_dim",
    "LayerNorm": "axis eps", "LayerNormBackwardInput": "axis", "LayerNormBackwardWeight": "axis",
    "LayerNormBackwardBias": "axis", "RmsNorm": "axis eps", "RmsNormBackwardInput": "axis",
    "RmsNormBackwardWeight": "axis", "BatchNormTraining": "axis eps", "BatchNormTrainingBackwardInput": "axis",
    "BatchNormTrainingBackwardGamma": "axis", "BatchNormTrainingBackwardBeta": "axis",
    "Slice": "axis start end step", "Pad": "axis before after", "Concat": "axis",
    "SliceBackward": "axis start end step size", "MaxPool2d": "kernel stride padding dilation ceil_mode",
    "MaxPool2dIndices": "kernel stride padding dilation ceil_mode",
    "AvgPool2d": "kernel stride padding ceil_mode count_include_pad divisor_override",
    "AdaptiveAvgPool2d": "output_size", "MaxPool2dOneHot": "part input_shape",
    "PoolWeights": "axis kernel stride padding ceil_mode count_include_pad divisor_override input_shape",
    "AdaptivePoolWeights": "axis input_shape",
    "MaxPool2dBackward": "kernel stride padding dilation ceil_mode input_shape",
    "AvgPool2dBackward": "kernel stride padding ceil_mode count_include_pad divisor_override input_shape",
    "AdaptiveAvgPool2dBackward": "input_shape", "Conv2d": "stride padding dilation groups",
    "ConvTranspose2d": "stride padding dilation groups output_shape",
    "Im2Col": "kernel stride padding dilation groups", "Conv2dFlipWeight": "groups",
    "Conv2dDilatePad": "stride padding dilation input_shape", "Conv2dColumns": "stride padding dilation groups",
    "Conv2dWeightMatrix": "groups", "Conv2dMergeGroups": "",
    "Conv2dBackwardInput": "stride padding dilation groups input_shape",
    "Conv2dBackwardWeight": "stride padding dilation groups weight_shape", "Attention": "scale causal",
    "AttentionLogSumExp": "scale causal", "AttentionBackwardQuery": "scale causal",
    "AttentionBackwardKey": "scale causal", "AttentionBackwardValue": "scale causal", "SafeSoftmax": "axis",
})
V2_KINDS: frozenset[str] = V1_KINDS | {"LeakyRelu", "Hardtanh"}


@dataclass(frozen=True)
class Frozen:
    """What one released version holds."""

    number: int
    ops: Mapping[str, frozenset[str]]  # op -> the attributes it takes
    values: Mapping[str, frozenset[str]]  # "kind", "Binary", "Compare", "Reduce" -> the values they take
    dtypes: frozenset[str]


def _values(kinds: frozenset[str]) -> dict[str, frozenset[str]]:
    return {"kind": kinds, "Binary": frozenset(_BINARY.split()), "Compare": frozenset(_COMPARE.split()),
            "Reduce": frozenset(_REDUCE.split())}


FROZEN: tuple[Frozen, ...] = (
    Frozen(1, V1_OPS, _values(V1_KINDS), frozenset(_DTYPES.split())),
    Frozen(2, V2_OPS, _values(V2_KINDS), frozenset(_DTYPES.split())),
)
LATEST = FROZEN[-1].number + 1
VERSIONS: tuple[int, ...] = tuple(f.number for f in FROZEN) + (LATEST,)


class _Node(Protocol):
    @property
    def id(self) -> int: ...
    @property
    def op(self) -> str: ...
    @property
    def attrs(self) -> Mapping[str, Any]: ...
    @property
    def dtype(self) -> str: ...


def _value_key(op: str, key: str) -> str | None:
    """Which enumerated value set attribute `key` of `op` draws from (None: not an enumerated one)."""
    if key == "kind" and op in ("Activation", "ActivationBackward"):
        return "kind"
    if key == "op" and op in ("Binary", "Compare", "Reduce"):
        return op
    return None


# The pooling helpers of version 2 are of 2-D pooling (input_shape of rank 4); version 3 also
# declares them of 3-D pooling (rank 5), which a version-2 document cannot hold.
_PLANAR = frozenset({"MaxPool2dOneHot", "PoolWeights", "AdaptivePoolWeights"})


def _beyond(frozen: Frozen, op: str, attrs: Mapping[str, Any]) -> str | None:
    """What of a node's attribute values (not names) `frozen` cannot hold (None: it holds them)."""
    if op in _PLANAR and frozen.number <= 2 and len(attrs.get("input_shape", ())) != 4:
        return f"{op} of 3-D pooling (input_shape of rank {len(attrs.get('input_shape', ()))})"
    return None


def newer_than(frozen: Frozen, op: str, attrs: Mapping[str, Any], dtype: str) -> str | None:
    """What of a node `frozen` cannot hold, in words (None: it holds all of it)."""
    takes = frozen.ops.get(op)
    if takes is None:
        return f"op {op}"
    beyond = _beyond(frozen, op, attrs)
    if beyond is not None:
        return beyond
    for key, value in attrs.items():
        if key not in takes:
            return f"attribute {key!r} of {op}"
        which = _value_key(op, key)
        if which is not None and value not in frozen.values[which]:
            return f"{'activation kind' if which == 'kind' else f'{op} op'} {value!r}"
    if dtype not in frozen.dtypes:
        return f"dtype {dtype}"
    return None


def newer_than_v1(op: str, attrs: Mapping[str, Any]) -> bool:
    """Whether a node of `op` with `attrs` needs a version after 1: a newer op, attribute or kind."""
    return newer_than(FROZEN[0], op, attrs, "f32") is not None


def needed(op: str, attrs: Mapping[str, Any], dtype: str) -> int:
    """The lowest version that holds a node of `op` with `attrs` and `dtype`."""
    return next((f.number for f in FROZEN if newer_than(f, op, attrs, dtype) is None), LATEST)


def first_newer(nodes: Iterable[_Node], version: int) -> tuple[_Node, str, int] | None:
    """The first node that a document of `version` cannot hold, with what of it is newer and the
    version that brought it; None when every node fits."""
    frozen = next((f for f in FROZEN if f.number == version), None)
    if frozen is None:
        return None  # the latest version holds everything declared
    for n in nodes:
        what = newer_than(frozen, n.op, n.attrs, n.dtype)
        if what is not None:
            return n, what, needed(n.op, n.attrs, n.dtype)
    return None


def _fits(frozen: Frozen, op: str, attrs: Mapping[str, Any], dtype: str) -> bool:
    """`newer_than(...) is None`, without wording what is newer (the writer asks it of every node)."""
    takes = frozen.ops.get(op)
    if takes is None or dtype not in frozen.dtypes or _beyond(frozen, op, attrs) is not None:
        return False
    for key, value in attrs.items():
        if key not in takes:
            return False
        which = _value_key(op, key)
        if which is not None and value not in frozen.values[which]:
            return False
    return True


def required_version(nodes: Iterable[_Node]) -> int:
    """The lowest version that covers every node."""
    version = 1
    for n in nodes:
        while version < LATEST and not _fits(FROZEN[version - 1], n.op, n.attrs, n.dtype):
            version += 1
        if version == LATEST:
            break
    return version
