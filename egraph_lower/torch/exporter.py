"""A format graph as a runnable `torch.fx.GraphModule`.

    gm = export_graph(graph)                      # arguments: the Input/Param names in graph order
    gm = export_graph(graph, imported.signature)  # the calling convention of an imported FX graph

Each node becomes one call: to the torch function itself where, for the node's
dtypes and shapes (known when exporting), it has the format's semantics (`Binary`,
`MatMul`, `Reduce` on floats, `Reshape`, `Transpose`, `Expand`, `Compare`, ...), else
to the PyTorch function of its op in `kernels` (attributes as keyword arguments).
So the generated code reads like the graph and a step pays no per-call dispatch on
dtypes. Each result the FX graph promised a layout and a storage of its own goes through
`contract.as_layout` (its strides; a copy where the lowered graph computes it as an
argument, a constant or another result). One exception: a MaxPool2d and a MaxPool2dIndices of the same input (3-D and adaptive alike; a training
step's forward takes both) are one `max_pool2d_with_indices` call, as in eager. Constants are buffers of the module (they follow `.to(device)`). The module
returns a tuple (or the single value, as the signature says).
"""

from __future__ import annotations

import json
import keyword
import operator
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
import torch.fx as fx

from ..dtypes import FLOAT_DTYPES
from ..evaluate import apply
from ..graph import Graph, Node
from . import kernels
from .common import FORMAT_TO_TORCH, Signature
from .contract import as_layout
from .kernels_pool import adaptive_max_pool_with_indices, max_pool2d_with_indices


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


def export_graph(graph: Graph, signature: Signature | None = None, boxed: bool = False) -> fx.GraphModule:
    """`graph` as an FX GraphModule that computes it with PyTorch (`boxed`: in AOTAutograd's calling
    convention, `guard.boxed`'s, its code generated once in that form)."""
    sig = signature or Signature.of(graph)
    g = fx.Graph()
    root = torch.nn.Module()
    taken: set[str] = set()
    args = {name: g.placeholder(_safe(name, taken)) for name in sig.inputs}
    # the device the masks are drawn on: the first tensor argument's (a graph specialised from one with
    # symbolic sizes may take a number first, a SymInt placeholder its Inputs never read)
    tensors = {n.attrs["name"] for n in graph.nodes if n.op in ("Input", "Param")}
    first = next((a for name, a in args.items() if name in tensors), next(iter(args.values()), None))
    for m in sig.masks:  # drawn first, in order: the generator is consumed as eager's dropouts and rands consume it
        if m.kind == "bernoulli":
            args[m.name] = g.call_function(kernels.dropout_mask, (first, list(m.shape), m.dtype, m.p))
        else:
            args[m.name] = g.call_function(kernels.random_tensor, (first, list(m.shape), m.dtype, m.kind, m.device))
    env: dict[int, fx.Node] = {}
    roots: dict[int, frozenset[str]] = {}  # the storages each value may live in (contract.py)
    by_id = graph.by_id
    pooled = _pooled_together(graph)
    for node in graph.nodes:
        key = _pool_key(node)
        if key in pooled:  # one max_pool*_with_indices call for the values and the indices of one x
            fn, which = _POOLS[node.op]
            if not isinstance(pooled[key], fx.Node):
                pooled[key] = g.call_function(fn, (env[node.inputs[0]],), dict(node.attrs))
            env[node.id] = g.call_function(operator.getitem, (pooled[key], which))
            roots[node.id] = frozenset((str(node.id),))
            continue
        env[node.id], roots[node.id] = _emit(g, root, node, args, env, roots, by_id)
    results: list[Any] = []
    returned: dict[int, fx.Node] = {}  # slot index -> its result (a value returned twice is one value)
    by_value: dict[tuple[int, tuple[int, ...] | None], fx.Node] = {}  # (value, strides) -> its first result
    # what a result of its own may not share storage with: the arguments, the constants, earlier results
    held: list[frozenset[str]] = [frozenset((f"arg:{a}",)) for a in sig.inputs]  # not the masks it draws
    held += [r for n, r in roots.items() if by_id[n].op == "Constant"]
    for slot in sig.outputs:
        if slot.kind == "output" and slot.index in returned:
            results.append(returned[slot.index])
        elif slot.kind == "output":
            nid = graph.outputs[slot.index]
            earlier = by_value.get((nid, slot.stride))
            if earlier is not None and not slot.private:
                # another FX node of the same value (`h` and `h.detach()`, two `h[0]`): eager returns a
                # tensor of its own on the same storage, never the same object (nor a second copy)
                value = g.call_function(torch.ops.aten.alias.default, (earlier,))
            else:
                value = env[nid]
                if value.op == "placeholder":
                    # an argument as a value the FX graph computes (`detach`, a view that changes nothing):
                    # eager's is a tensor of its own on the argument's storage, never the argument itself,
                    # which the graph may also return (a batch norm's result kept in PyTorch and its
                    # `detach()`: returned as one object, the autograd.Function made both differentiable).
                    # A detach, not an alias: a differentiable view would take its base's requires_grad
                    # once the autograd.Function gives the base its history.
                    value = g.call_function(torch.ops.aten.detach.default, (value,))
                copy = slot.private and any(roots[nid] & r for r in held)
                if slot.stride is not None:
                    value = g.call_function(as_layout, (value, slot.stride, copy))
                by_value.setdefault((nid, slot.stride), value)
                held.append(frozenset((f"out:{slot.index}",)) if copy else roots[nid])
            returned[slot.index] = value
            results.append(value)
        elif slot.kind == "input":
            results.append(args[sig.inputs[slot.index]])
        elif slot.kind == "empty":
            results.append(g.call_function(kernels.empty, (first, list(slot.shape), slot.dtype)))
        else:
            results.append(None)
    g.output(tuple(results) if sig.returns_tuple else results[0])
    if boxed:
        from torch.fx.graph import _BoxedCodeGen

        g.set_codegen(_BoxedCodeGen())
    return fx.GraphModule(root, g, class_name="LoweredGraph")


# the max poolings (plain and adaptive, 2-D and 3-D) whose values and indices are one torch call:
# op -> (that call, which of its results the op is)
_POOLS: dict[str, tuple[Any, int]] = {
    **{f"MaxPool{nd}d{part}": (max_pool2d_with_indices, i) for nd in (2, 3) for i, part in enumerate(("", "Indices"))},
    **{f"AdaptiveMaxPool{nd}d{part}": (adaptive_max_pool_with_indices, i)
       for nd in (2, 3) for i, part in enumerate(("", "Indices"))},
}


def _pool_key(node: Node) -> tuple[int, str, str] | None:
    """What a max pooling's values or indices node computes: its x, its call and attributes (None:
    another op)."""
    if node.op not in _POOLS:
        return None
    return node.inputs[0], node.op.removesuffix("Indices"), json.dumps(node.attrs, sort_keys=True)


def _pooled_together(graph: Graph) -> dict[tuple[int, str, str], fx.Node | None]:
    """The max poolings whose values and indices the graph both takes (the forward of a training step
    saves the indices for the gradient): eager computes them in one call, and so does the export."""
    seen: dict[tuple[int, str, str], set[str]] = {}
    for node in graph.nodes:
        key = _pool_key(node)
        if key is not None:
            seen.setdefault(key, set()).add(node.op)
    return {key: None for key, ops in seen.items() if len(ops) == 2}


def _emit(g: fx.Graph, root: torch.nn.Module, node: Node, args: dict[str, fx.Node], env: dict[int, fx.Node],
          roots: dict[int, frozenset[str]], by_id: dict[int, Node]) -> tuple[fx.Node, frozenset[str]]:
    """The node's call, and the storages its result may live in: its own, or (a view of, or the very
    tensor of) an argument, a constant's buffer or another value."""
    if node.op in ("Input", "Param"):
        name = node.attrs["name"]
        if name not in args:
            raise KeyError(f"node {node.id} ({node.op} {name!r}) is not an argument of the signature")
        return args[name], frozenset((f"arg:{name}",))
    if node.op == "Constant":
        buffer = f"c{node.id}"
        value = _constant_tensor(node)
        root.register_buffer(buffer, value)
        mine = frozenset((f"const:{node.id}",))
        if tuple(value.shape) == node.shape:
            return g.get_attr(buffer), mine
        return g.call_method("expand", (g.get_attr(buffer), node.shape)), mine
    ins = tuple(env[i] for i in node.inputs)
    inputs = [by_id[i] for i in node.inputs]
    own = frozenset((str(node.id),))
    direct = _direct(node, inputs, ins)
    if direct is not None:
        fresh = node.op in _FRESH or (node.op == "Cast" and node.attrs["to"] != inputs[0].dtype)
        return direct(g), own if fresh else own.union(*(roots[i] for i in node.inputs))
    call = g.call_function(kernels.KERNELS[node.op], ins, dict(node.attrs))
    return call, own.union(*(roots[i] for i in node.inputs)) if node.op in kernels.VIEWS else own


Emit = Callable[[fx.Graph], fx.Node]
# the ops whose direct call (below) always makes a new tensor; Reshape, Transpose and Expand give views
_FRESH = frozenset(("Binary", "Activation", "MatMul", "Compare", "Where", "Reduce"))
_BINARY: dict[str, Callable[..., Any]] = {"Add": torch.add, "Sub": torch.sub, "Mul": torch.mul, "Div": torch.div,
           "Max": torch.maximum, "Min": torch.minimum, "Pow": torch.pow,
           # version 3's float ops: torch's own functions have the format's semantics on floats
           "FloorDiv": torch.floor_divide, "Rem": torch.remainder, "Fmod": torch.fmod, "Atan2": torch.atan2,
           "Hypot": torch.hypot, "Copysign": torch.copysign, "Xlogy": torch.xlogy, "FMax": torch.fmax,
           "FMin": torch.fmin}
_COMPARE: dict[str, Callable[..., Any]] = {"Eq": torch.eq, "Ne": torch.ne, "Lt": torch.lt, "Le": torch.le, "Gt": torch.gt, "Ge": torch.ge}
_REDUCE: dict[str, Callable[..., Any]] = {"Sum": torch.sum, "Mean": torch.mean, "Max": torch.amax, "Min": torch.amin}
# Kinds whose torch function computes the format's f(x) on floats (the composite kinds keep the kernels'
# shared formulas, opdefs/kinds.py)
_ACTIVATIONS: dict[str, Callable[..., Any]] = {
    "Relu": torch.relu, "Sigmoid": torch.sigmoid, "Tanh": torch.tanh, "Exp": torch.exp, "Log": torch.log,
    "Sqrt": torch.sqrt, "Rsqrt": torch.rsqrt, "Neg": torch.neg, "Abs": torch.abs, "Sin": torch.sin,
    "Cos": torch.cos, "Tan": torch.tan, "Atan": torch.atan, "Recip": torch.reciprocal, "Floor": torch.floor,
    "Ceil": torch.ceil, "Round": torch.round, "Erf": torch.erf}


def _direct(node: Node, inputs: list[Node], ins: tuple[fx.Node, ...]) -> Emit | None:
    """A call of the torch function itself where it has the kernel's semantics for these dtypes and
    shapes (known here, so the kernel's checks need not run at every step); None: call the kernel."""
    floats = node.dtype in FLOAT_DTYPES and all(i.dtype == node.dtype for i in inputs)
    op, a = node.op, node.attrs
    if op == "Binary" and floats and a["op"] in _BINARY:
        return lambda g: g.call_function(_BINARY[a["op"]], ins)
    if op == "Activation" and floats and a["kind"] in _ACTIVATIONS and len(a) == 1:
        return lambda g: g.call_function(_ACTIVATIONS[a["kind"]], ins)
    if op == "MatMul" and floats:
        return lambda g: g.call_function(torch.matmul, ins)
    if op == "Compare":
        return lambda g: g.call_function(_COMPARE[a["op"]], ins)
    if op == "Where" and inputs[0].dtype == "bool":
        return lambda g: g.call_function(torch.where, ins)
    if op == "Reshape":
        return lambda g: g.call_function(torch.reshape, (ins[0], tuple(a["shape"])))
    if op == "Transpose":
        return lambda g: g.call_function(torch.permute, (ins[0], tuple(a["perm"])))
    if op == "Expand":
        return lambda g: g.call_method("expand", (ins[0], tuple(a["shape"])))
    if op == "Cast" and a["to"] == inputs[0].dtype:
        return lambda g: ins[0]
    if op == "Cast" and a["to"] in FLOAT_DTYPES and inputs[0].dtype in FLOAT_DTYPES:
        return lambda g: g.call_method("to", (ins[0], FORMAT_TO_TORCH[a["to"]]))
    if op == "Reduce" and floats and inputs[0].shape and a["op"] in _REDUCE:
        rank = len(inputs[0].shape)
        dims = tuple(sorted({d % rank for d in a["axes"]}))
        if dims and all(inputs[0].shape[d] > 0 for d in dims):
            fn, keep = _REDUCE[a["op"]], bool(a.get("keep_dim", False))
            return lambda g: g.call_function(fn, (ins[0], dims), {"keepdim": keep})
    return None
