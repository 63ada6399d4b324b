"""A format graph as a runnable `torch.fx.GraphModule`.

    gm = export_graph(graph)                      # arguments: the Input/Param names in graph order
    gm = export_graph(graph, imported.signature)  # the calling convention of an imported FX graph

Each node becomes one call to the PyTorch function of its op in `kernels` (attributes
as keyword arguments), so the generated code reads like the graph. Constants are
buffers of the module (they follow `.to(device)`). The module returns a tuple (or
the single value, as the signature says).
"""

from __future__ import annotations

import keyword
import re
from typing import Any

import numpy as np
import torch
import torch.fx as fx

from ..evaluate import apply

from ..graph import Graph, Node
from . import kernels
from .common import Signature


def _constant_tensor(node: Node) -> torch.Tensor:
    """A real tensor, even when called under a compiler's FakeTensorMode (AOTAutograd compiles under one)."""
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    with unset_fake_temporarily():
        return _real_constant(node)


def _real_constant(node: Node) -> torch.Tensor:
    """The value as the reference evaluator reads it (rounded once to the dtype; bf16 correctly)."""
    value = node.attrs["value"]
    shape = None if isinstance(value, list) else ()
    arr = np.array(apply("Constant", {"value": value}, [], node.dtype, shape), order="C")
    if node.dtype == "bf16":  # torch reads no ml_dtypes array: carry the bits
        return torch.from_numpy(arr.view(np.int16).copy()).view(torch.bfloat16)
    return torch.from_numpy(arr.copy())


def _safe(name: str, taken: set[str]) -> str:
    base = re.sub(r"\W", "_", name) or "x"
    if base[0].isdigit() or keyword.iskeyword(base):
        base = f"_{base}"
    out, i = base, 1
    while out in taken:
        out, i = f"{base}_{i}", i + 1
    taken.add(out)
    return out


def export_graph(graph: Graph, signature: Signature | None = None) -> fx.GraphModule:
    """`graph` as an FX GraphModule that computes it with PyTorch."""
    sig = signature or Signature.of(graph)
    g = fx.Graph()
    root = torch.nn.Module()
    taken: set[str] = set()
    args = {name: g.placeholder(_safe(name, taken)) for name in sig.inputs}
    first = next(iter(args.values()), None)
    for m in sig.masks:  # drawn first, in order: the generator is consumed as eager's dropouts consume it
        args[m.name] = g.call_function(kernels.dropout_mask, (first, list(m.shape), m.dtype, m.p))
    env: dict[int, fx.Node] = {}
    for node in graph.nodes:
        env[node.id] = _emit(g, root, node, args, env)
    results: list[Any] = []
    for slot in sig.outputs:
        if slot.kind == "output":
            results.append(env[graph.outputs[slot.index]])
        elif slot.kind == "input":
            results.append(args[sig.inputs[slot.index]])
        elif slot.kind == "empty":
            results.append(g.call_function(kernels.empty, (first, list(slot.shape), slot.dtype)))
        else:
            results.append(None)
    g.output(tuple(results) if sig.returns_tuple else results[0])
    return fx.GraphModule(root, g, class_name="LoweredGraph")


def _emit(g: fx.Graph, root: torch.nn.Module, node: Node, args: dict[str, fx.Node],
          env: dict[int, fx.Node]) -> fx.Node:
    if node.op in ("Input", "Param"):
        name = node.attrs["name"]
        if name not in args:
            raise KeyError(f"node {node.id} ({node.op} {name!r}) is not an argument of the signature")
        return args[name]
    if node.op == "Constant":
        buffer = f"c{node.id}"
        root.register_buffer(buffer, _constant_tensor(node))
        return g.call_function(kernels.constant, (g.get_attr(buffer), list(node.shape)))
    ins = tuple(env[i] for i in node.inputs)
    return g.call_function(kernels.KERNELS[node.op], ins, dict(node.attrs))
