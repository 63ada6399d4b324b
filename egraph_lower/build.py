"""Build graphs in code: each method adds one node, infers its shape and dtype, returns its id.

    b = GraphBuilder("relu_step")
    x = b.input("x", [4, 8])
    dy = b.input("dy", [4, 8])
    g = b.relu_backward(x, dy)
    graph = b.build([g])

Used by the benchmarks, the PyTorch importer and the tests; `build` validates.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .document import validated
from .graph import Graph, Node
from .opdefs import OPDEFS
from .validate import check_attrs, infer


class GraphBuilder:
    def __init__(self, name: str | None = None) -> None:
        self.name = name
        self.nodes: list[Node] = []

    def add(self, op: str, inputs: Sequence[int] = (), attrs: dict[str, Any] | None = None,
            shape: Sequence[int] | None = None, dtype: str | None = None, name: str | None = None) -> int:
        attrs = dict(attrs or {})
        if shape is None or dtype is None:
            metas = [(self.nodes[i].shape, self.nodes[i].dtype) for i in inputs]
            inferred_shape, inferred_dtype = infer(op, attrs, metas)
            shape = inferred_shape if shape is None else shape
            dtype = inferred_dtype if dtype is None else dtype
        nid = len(self.nodes)
        self.nodes.append(Node(nid, op, tuple(inputs), tuple(shape), dtype, attrs, name))  # type: ignore[arg-type]
        return nid

    def op(self, op: str, /, *inputs: int, **attrs: Any) -> int:
        """A node of any declared op, e.g. `b.op("Reduce", x, op="Sum", axes=[-1], keep_dim=True)`:
        its arity and attributes are checked against the op's declaration here."""
        d = OPDEFS.get(op)
        if d is None:
            raise ValueError(f"unknown op {op!r}")
        if not d.takes(len(inputs)):
            raise ValueError(f"{op} takes {d.arity} inputs ({', '.join(d.inputs)}), got {len(inputs)}")
        check_attrs(op, attrs)
        return self.add(op, inputs, attrs)

    def meta(self, node: int) -> tuple[tuple[int, ...], str]:
        n = self.nodes[node]
        return n.shape, n.dtype

    # leaves
    def input(self, name: str, shape: Sequence[int], dtype: str = "f32") -> int:
        return self.add("Input", (), {"name": name}, shape, dtype)

    def param(self, name: str, shape: Sequence[int], dtype: str = "f32") -> int:
        return self.add("Param", (), {"name": name}, shape, dtype)

    def constant(self, value: Any, shape: Sequence[int] = (), dtype: str = "f32") -> int:
        return self.add("Constant", (), {"value": value}, shape, dtype)

    # forward ops
    def act(self, kind: str, x: int) -> int:
        return self.add("Activation", (x,), {"kind": kind})

    def binary(self, op: str, a: int, b: int) -> int:
        return self.add("Binary", (a, b), {"op": op})

    def compare(self, op: str, a: int, b: int) -> int:
        return self.add("Compare", (a, b), {"op": op})

    def where(self, cond: int, a: int, b: int) -> int:
        return self.add("Where", (cond, a, b))

    def cast(self, x: int, to: str) -> int:
        return self.add("Cast", (x,), {"to": to})

    def expand(self, x: int, shape: Sequence[int]) -> int:
        return self.add("Expand", (x,), {"shape": list(shape)})

    def reshape(self, x: int, shape: Sequence[int]) -> int:
        return self.add("Reshape", (x,), {"shape": list(shape)})

    def transpose(self, x: int, perm: Sequence[int]) -> int:
        return self.add("Transpose", (x,), {"perm": list(perm)})

    def reduce(self, op: str, x: int, axes: Sequence[int], keep_dim: bool = False) -> int:
        return self.add("Reduce", (x,), {"op": op, "axes": list(axes), "keep_dim": keep_dim})

    def matmul(self, a: int, b: int) -> int:
        return self.add("MatMul", (a, b))

    def batch_norm(self, x: int, gamma: int, beta: int, mean: int, var: int, eps: float = 1e-5) -> int:
        return self.add("BatchNormInference", (x, gamma, beta, mean, var), {"eps": eps})

    # backward ops
    def relu_backward(self, x: int, dy: int) -> int:
        return self.add("ReluBackward", (x, dy))

    def act_backward(self, kind: str, x: int, dy: int, wrt: str = "input") -> int:
        attrs: dict[str, Any] = {"kind": kind}
        if wrt != "input":
            attrs["wrt"] = wrt
        return self.add("ActivationBackward", (x, dy), attrs)

    def bn_backward_input(self, x: int, gamma: int, mean: int, var: int, dy: int, eps: float = 1e-5) -> int:
        return self.add("BatchNormInferenceBackwardInput", (x, gamma, mean, var, dy), {"eps": eps})

    def bn_backward_gamma(self, x: int, mean: int, var: int, dy: int, eps: float = 1e-5) -> int:
        return self.add("BatchNormInferenceBackwardGamma", (x, mean, var, dy), {"eps": eps})

    def bn_backward_beta(self, dy: int) -> int:
        return self.add("BatchNormInferenceBackwardBeta", (dy,))

    def build(self, outputs: Sequence[int], validate: bool = True) -> Graph:
        graph = Graph(nodes=list(self.nodes), outputs=list(outputs), name=self.name)
        return validated(graph) if validate else graph
