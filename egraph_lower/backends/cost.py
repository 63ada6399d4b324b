"""The cost of one kernel: launches, bytes moved, arithmetic.

    cost = launch + byte * (bytes read + bytes written) + flop * work

`work` is elements times a weight for the op (a transcendental costs more than
an add). A broadcast scalar operand is one element, so it costs next to nothing;
a fused backward kernel reads x and dy and writes one tensor, so it beats any
chain of elementwise kernels that each read and write a tensor of that size.
Reshape and Expand move no data: a fixed small `view` cost. A convolution (or one of
its gradients) is priced like the MatMul it amounts to: 2 * dy elements * (C/groups) KH KW.
An attention op is priced like the MatMuls it amounts to (2 flops per multiply-add) plus 8 per score
for its softmax (and its backward): `attention_work`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..dtypes import ITEMSIZE

Meta = tuple[tuple[int, ...], "str | None"]

# Work per output element, by op and kind: 1 is an add.
CHEAP_KINDS = frozenset({"Relu", "Neg", "Abs", "Sign", "Round", "Floor", "Ceil"})
TRANSCENDENTAL_KINDS = frozenset({"Exp", "Log", "Sqrt", "Rsqrt", "Recip", "Sigmoid", "Tanh", "Sin", "Cos"})
CONV_OPS = frozenset({"Conv2d", "ConvTranspose2d", "Conv2dBackwardInput", "Conv2dBackwardWeight",
                      "Conv3d", "ConvTranspose3d", "Conv3dBackwardInput", "Conv3dBackwardWeight"})
BINARY_WEIGHT = {"Add": 1.0, "Sub": 1.0, "Mul": 1.0, "Max": 1.0, "Min": 1.0, "Div": 2.0, "Pow": 8.0}


ATTENTION_OPS = frozenset({"Attention", "AttentionLogSumExp", "AttentionBackwardQuery", "AttentionBackwardKey",
                           "AttentionBackwardValue"})


def attention_work(op: str, inputs: Sequence[Meta]) -> float:
    """The arithmetic of one attention op: its MatMuls (q k^T, and P v, dy v^T, dS k or P^T dy) and 8
    per score for the softmax and its backward. q [..., L, E], k [..., S, E]; Ev from v or dy."""
    q, k = inputs[0][0], inputs[1][0]
    if len(q) < 2 or len(k) < 2:
        return float(math.prod(q))
    scores = math.prod(q[:-1]) * k[-2]
    ev_of = inputs[2][0] if op == "Attention" else inputs[-1][0]  # v, or dy
    ev = ev_of[-1] if ev_of else 1
    matmuls = {"Attention": q[-1] + ev, "AttentionLogSumExp": q[-1], "AttentionBackwardValue": q[-1] + ev}
    return 2.0 * scores * matmuls.get(op, 2 * q[-1] + ev) + 8.0 * scores


def activation_weight(kind: str) -> float:
    if kind in CHEAP_KINDS:
        return 1.0
    if kind in TRANSCENDENTAL_KINDS:
        return 4.0
    return 10.0  # composite kinds: Gelu, Erf, Tan, Atan, Softplus, Mish, ...


# A bound on every cost number. A node moves at most 7 tensors of 2**62 elements of 8 bytes
# (2.6e20 bytes) and does at most 2**125 (4e37) units of work (a MatMul's 2*m*n*k): with each
# coefficient and weight at most 1e30, a kernel costs under 1e98 and a graph of 2**31 nodes
# under 1e108, far from a float's overflow (1.8e308).
MAX_COST = 1e30


@dataclass(frozen=True)
class KernelCost:
    """What one output of a kernel of `outputs` outputs costs: see the module docstring."""

    launch: float = 1.0
    bytes: float = 1.0
    work: float = 1.0
    outputs: int = 1
    dtypes: frozenset[str] | None = None
    name: str = ""  # the kernel's (what a cost scale names: `Kernel.<name>`)


def kernel_cost(k: KernelCost, model: Any, inputs: Sequence[tuple[tuple[int, ...], str | None]],
                out: tuple[tuple[int, ...], str | None]) -> float:
    """One output's share of a kernel's cost in `model` (a `CostModel`), inf for a dtype it does not take."""
    out_dtype = out[1] or "f32"
    if k.dtypes is not None and out_dtype not in k.dtypes:
        return math.inf
    read = sum(math.prod(s) * ITEMSIZE[d or out_dtype] for s, d in inputs)
    largest = max([math.prod(s) for s, _ in inputs] + [math.prod(out[0])])
    n = k.outputs
    return (k.launch * model.launch / n + model.byte * k.bytes * (read / n + math.prod(out[0]) * ITEMSIZE[out_dtype])
            + model.flop * k.work * largest / n)


@dataclass(frozen=True)
class CostModel:
    launch: float
    byte: float
    flop: float
    view: float
    weights: Mapping[str, float] = field(default_factory=dict)  # "Activation.Erf" -> work per element
    kernels: Mapping[str, Any] = field(default_factory=dict)  # a kernel output's constructor -> its KernelCost
    scale: Mapping[str, float] = field(default_factory=dict)  # a label (`MatMul`, `Activation.Erf`) -> a factor
    # on its whole cost (explore's what-if `--cost OP=FACTOR`); a kernel's label is `Kernel.<name>`

    def weight(self, op: str, kind: str | None) -> float:
        key = f"{op}.{kind}" if kind else op
        if key in self.weights:
            return self.weights[key]
        if op in self.weights:
            return self.weights[op]
        if op == "Activation":
            return activation_weight(kind or "")
        if op == "ActivationBackward":
            return activation_weight(kind or "") + 2.0
        if op == "Binary":
            return BINARY_WEIGHT.get(kind or "", 1.0)
        if op == "BatchNormInference":
            return 4.0
        if op.startswith("BatchNormInferenceBackward"):
            return 3.0
        return 1.0

    def node_cost(self, op: str, kind: str | None, inputs: Sequence[Meta], out: Meta) -> float:
        """The cost of one node computing `out` from `inputs` (dtype None: a scalar literal), times its
        label's factor in `scale` (else its op's)."""
        cost = self._node_cost(op, kind, inputs, out)
        if self.scale:
            if op == "Kernel":
                k = self.kernels.get(kind or "")
                kind = getattr(k, "name", None)
            factor = self.scale.get(f"{op}.{kind}" if kind else op, self.scale.get(op, 1.0))
            return cost * factor
        return cost

    def _node_cost(self, op: str, kind: str | None, inputs: Sequence[Meta], out: Meta) -> float:
        if op in ("Input", "Param", "Constant"):
            return 0.0
        if op in ("Reshape", "Expand"):
            return self.view
        if op == "Kernel":  # a backend file's fused kernel: its declared cost (backends/kernels.py)
            k = self.kernels.get(kind or "")
            return math.inf if k is None else kernel_cost(k, self, inputs, out)
        out_dtype = out[1] or "f32"
        out_elems = math.prod(out[0])
        moved = out_elems * ITEMSIZE[out_dtype]
        for shape, dtype in inputs:
            moved += math.prod(shape) * ITEMSIZE[dtype or out_dtype]
        if op == "MatMul":
            k = inputs[0][0][-1] if inputs[0][0] else 1
            work = 2.0 * out_elems * k
        elif op == "Reduce":
            work = float(math.prod(inputs[0][0]))
        elif op in CONV_OPS:  # a multiply-add per dy (output) element and weight tap of its group
            weight = op in ("Conv2dBackwardWeight", "Conv3dBackwardWeight")
            dy, w = (inputs[1][0], out[0]) if weight else (inputs[0][0], inputs[1][0])
            if op in ("Conv2d", "Conv3d"):
                dy = out[0]
            work = 2.0 * math.prod(dy) * math.prod(w[1:])
        elif op in ATTENTION_OPS:
            work = attention_work(op, inputs)
        else:
            work = out_elems * self.weight(op, kind)
        return self.launch + self.byte * moved + self.flop * work
