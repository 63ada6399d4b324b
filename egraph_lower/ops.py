"""The op table of the graph format (version 1): names, inputs, attributes, kinds.

Everything here is data taken from the format spec; validation, evaluation, the
e-graph language and the backends all read it, so an op is described once.
"""

from __future__ import annotations

from dataclasses import dataclass

ACTIVATION_KINDS: tuple[str, ...] = (
    "Gelu", "GeluApprox", "Silu", "Relu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Rsqrt",
    "Neg", "Abs", "Sin", "Cos", "Tan", "Atan", "Recip", "Round", "Floor", "Ceil", "Sign",
    "Softplus", "Elu", "Erf", "HardSwish", "HardSigmoid", "Mish", "Softsign", "LogSigmoid",
)
# Kinds that `ActivationBackward` may take with `"wrt": "output"` (the input is y = f(x)).
OUTPUT_FORM_KINDS: tuple[str, ...] = ("Sigmoid", "Tanh", "Exp", "Relu", "Sqrt", "Rsqrt", "Recip", "Elu")
# Kinds that make sense on integer tensors too; every other kind needs a float dtype.
INTEGER_KINDS: frozenset[str] = frozenset({"Neg", "Abs", "Sign", "Relu", "Round", "Floor", "Ceil"})

BINARY_OPS: tuple[str, ...] = ("Add", "Sub", "Mul", "Div", "Max", "Min", "Pow")
COMPARE_OPS: tuple[str, ...] = ("Eq", "Ne", "Lt", "Le", "Gt", "Ge")
REDUCE_OPS: tuple[str, ...] = ("Sum", "Mean", "Max", "Min")
WRT: tuple[str, ...] = ("input", "output")


@dataclass(frozen=True)
class OpSpec:
    """One op of the format: its input names (None: any number) and attributes (name -> required)."""

    name: str
    inputs: tuple[str, ...]
    attrs: dict[str, bool]
    backward: bool = False

    @property
    def arity(self) -> int:
        return len(self.inputs)


def _op(name: str, inputs: str, attrs: dict[str, bool] | None = None, backward: bool = False) -> OpSpec:
    return OpSpec(name, tuple(inputs.split()), attrs or {}, backward)


OPS: dict[str, OpSpec] = {
    spec.name: spec
    for spec in (
        _op("Input", "", {"name": True}),
        _op("Param", "", {"name": True}),
        _op("Constant", "", {"value": True}),
        _op("Activation", "x", {"kind": True}),
        _op("Binary", "a b", {"op": True}),
        _op("Compare", "a b", {"op": True}),
        _op("Where", "cond a b"),
        _op("Cast", "x", {"to": True}),
        _op("Expand", "x", {"shape": True}),
        _op("Reshape", "x", {"shape": True}),
        _op("Transpose", "x", {"perm": True}),
        _op("Reduce", "x", {"op": True, "axes": True, "keep_dim": False}),
        _op("MatMul", "a b"),
        _op("BatchNormInference", "x gamma beta mean var", {"eps": True}),
        _op("ReluBackward", "x dy", backward=True),
        _op("ActivationBackward", "x dy", {"kind": True, "wrt": False}, backward=True),
        _op("BatchNormInferenceBackwardInput", "x gamma mean var dy", {"eps": True}, backward=True),
        _op("BatchNormInferenceBackwardGamma", "x mean var dy", {"eps": True}, backward=True),
        _op("BatchNormInferenceBackwardBeta", "dy", backward=True),
    )
}

LEAF_OPS: frozenset[str] = frozenset({"Input", "Param", "Constant"})
FORWARD_OPS: tuple[str, ...] = tuple(name for name, spec in OPS.items() if not spec.backward)
BACKWARD_OPS: tuple[str, ...] = tuple(name for name, spec in OPS.items() if spec.backward)
