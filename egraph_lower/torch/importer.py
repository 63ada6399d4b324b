"""An aten-level `torch.fx.GraphModule` (what AOTAutograd hands a compiler) as a format graph.

    imported = import_graph(gm)            # .graph (egraph_lower Graph), .signature
    imported.graph.to_json()

Placeholders become `Input` nodes named by the placeholder; each `torch.ops.aten.*`
call becomes the format ops with the same meaning (the table is `aten.HANDLERS`, the
decisions are in `aten.py`'s docstring); `operator.getitem` picks from multi-result
ops. Shapes and dtypes come from `node.meta['val']` (a FakeTensor); a graph without
them can be given `example_inputs` to propagate them. An op with no mapping raises
`UnsupportedOp` naming it.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any

import torch
import torch.fx as fx

from ..build import GraphBuilder
from ..dtypes import INT_DTYPES, round_to
from ..errors import GraphError
from ..document import validated
from ..graph import Graph
from .common import Imported, Mask, Signature, Slot, UnsupportedOp, format_dtype

MAX_CONSTANT_ELEMENTS = 1 << 16  # a get_attr tensor larger than this is refused (it would bloat the JSON)


class Empty:
    """A value the importer does not compute: a fresh empty tensor (eval-mode batch norm's statistics)."""

    def __init__(self, shape: tuple[int, ...], dtype: str) -> None:
        self.shape = shape
        self.dtype = dtype


Value = Any  # int (a node id) | Empty | tuple[Value, ...] | None


def op_name(node: fx.Node) -> str:
    """`aten.add.Tensor`, `operator.getitem`, `call_module fc` ...: how errors and summaries name a node."""
    if node.op == "call_function":
        t = node.target
        if isinstance(t, torch._ops.OpOverload):
            return str(t)
        return f"{getattr(t, '__module__', '') or ''}.{getattr(t, '__name__', repr(t))}".lstrip(".")
    return f"{node.op} {node.target}"


class Context:
    """The state of one import; handlers in `aten.py` build nodes through it."""

    def __init__(self, name: str | None) -> None:
        self.b = GraphBuilder(name)
        self.env: dict[fx.Node, Value] = {}
        self.node: fx.Node | None = None  # the FX node being mapped
        self.masks: list[Mask] = []  # dropout masks the exported module draws, in graph order

    # ---- errors
    def refuse(self, reason: str) -> UnsupportedOp:
        node = self.node
        return UnsupportedOp(op_name(node) if node is not None else "?", reason, node.name if node else None)

    # ---- metadata
    def val(self, arg: Any) -> Any:
        """The FakeTensor (or Python value) an argument stands for."""
        if isinstance(arg, fx.Node):
            if "val" not in arg.meta:
                raise self.refuse(f"node {arg.name} has no meta['val'] (pass example_inputs to import_graph)")
            return arg.meta["val"]
        return arg

    def meta_of(self, value: Any) -> tuple[tuple[int, ...], str]:
        if not isinstance(value, torch.Tensor):
            raise self.refuse(f"expected a tensor, got {type(value).__name__}")
        shape = tuple(value.shape)
        if not all(isinstance(d, int) for d in shape):
            raise self.refuse(f"symbolic shape {list(value.shape)} (compile with dynamic=False)")
        return shape, format_dtype(value.dtype, op_name(self.node) if self.node else "dtype",
                                   self.node.name if self.node else None)

    def out(self, index: int | None = None) -> tuple[tuple[int, ...], str]:
        """Shape and format dtype of the current node's result (or of its `index`-th result)."""
        assert self.node is not None
        v = self.val(self.node)
        return self.meta_of(v if index is None else v[index])

    def out_dtype(self) -> str:
        return self.out()[1]

    # ---- values
    def t(self, arg: Any) -> int:
        """The node id of a tensor argument."""
        if not isinstance(arg, fx.Node):
            raise self.refuse(f"expected a tensor argument, got {arg!r}")
        v = self.env.get(arg)
        if isinstance(v, bool) or not isinstance(v, int):
            raise self.refuse(f"argument {arg.name} is not a tensor the graph computes")
        return v

    def shape(self, nid: int) -> tuple[int, ...]:
        return self.b.nodes[nid].shape

    def dtype(self, nid: int) -> str:
        return self.b.nodes[nid].dtype

    def scalar(self, value: Any) -> int | float | bool:
        if isinstance(value, (bool, int, float)):
            return value
        raise self.refuse(f"expected a Python number, got {type(value).__name__}")

    def const(self, value: Any, dtype: str, shape: Sequence[int] = ()) -> int:
        """A Constant of `dtype` (a Python scalar is rounded to the dtype first, as torch does)."""
        v = self.scalar(value)
        if isinstance(v, float) and not math.isfinite(v):
            raise self.refuse(f"constant {v} is not finite (the format's JSON holds finite numbers only)")
        if dtype in INT_DTYPES and isinstance(v, float) and v != int(v):
            raise self.refuse(f"constant {v} is not an integer ({dtype})")
        return self.add("Constant", (), {"value": round_to(v, dtype)}, shape, dtype)

    def cast(self, nid: int, dtype: str) -> int:
        return nid if self.dtype(nid) == dtype else self.add("Cast", (nid,), {"to": dtype})

    def expand(self, nid: int, shape: tuple[int, ...]) -> int:
        return nid if self.shape(nid) == shape else self.add("Expand", (nid,), {"shape": list(shape)})

    def operand(self, arg: Any, dtype: str) -> int:
        """A tensor argument cast to `dtype`, or a Python number as a scalar Constant of `dtype`."""
        if isinstance(arg, fx.Node):
            return self.cast(self.t(arg), dtype)
        return self.const(arg, dtype)

    def dropout_mask(self, shape: tuple[int, ...], dtype: str, p: float) -> int:
        """A bool Input the exported module draws as eager's dropout of a `dtype` tensor does (`Mask`)."""
        name = f"{self.node.name if self.node else 'dropout'}.mask"
        self.masks.append(Mask(name, shape, dtype, p))
        return self.b.add("Input", (), {"name": name}, shape, "bool")

    def add(self, op: str, inputs: Sequence[int] = (), attrs: dict[str, Any] | None = None,
            shape: Sequence[int] | None = None, dtype: str | None = None) -> int:
        try:
            return self.b.add(op, inputs, attrs, shape, dtype, name=self.node.name if self.node else None)
        except (ValueError, GraphError) as e:
            raise self.refuse(f"{op}: {e}") from None


def bind(node: fx.Node) -> dict[str, Any]:
    """The arguments of an aten call by schema name, defaults filled in."""
    schema = node.target._schema  # type: ignore[union-attr]
    out: dict[str, Any] = {}
    positional = list(node.args)
    for i, a in enumerate(schema.arguments):
        if i < len(positional) and not a.kwarg_only:
            out[a.name] = positional[i]
        elif a.name in node.kwargs:
            out[a.name] = node.kwargs[a.name]
        elif a.has_default_value():
            out[a.name] = a.default_value
        else:
            out[a.name] = None
    return out


def _propagate(gm: fx.GraphModule, example_inputs: Sequence[Any]) -> None:
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.passes.fake_tensor_prop import FakeTensorProp

    FakeTensorProp(gm, mode=FakeTensorMode(allow_non_fake_inputs=True)).propagate(*example_inputs)


def import_graph(gm: fx.GraphModule, example_inputs: Sequence[Any] | None = None,
                 name: str | None = None) -> Imported:
    """Map `gm` onto the format; raises `UnsupportedOp` for the first node it cannot map."""
    if example_inputs is not None and any("val" not in n.meta for n in gm.graph.nodes if n.op != "output"):
        _propagate(gm, example_inputs)
    return import_fx_graph(gm.graph, gm, name)


def import_fx_graph(graph: fx.Graph, root: torch.nn.Module, name: str | None = None) -> Imported:
    """`import_graph` of an `fx.Graph` whose `get_attr` nodes name attributes of `root` (every node
    with its `meta['val']`): no GraphModule is made, so no Python code is generated for it."""
    from .aten import HANDLERS, get_attr

    ctx = Context(name)
    placeholders: list[str] = []
    counts: dict[str, int] = {}
    out_node: fx.Node | None = None
    for node in graph.nodes:
        ctx.node = node
        if node.op == "placeholder":
            placeholders.append(node.name)
            val = ctx.val(node)
            if not isinstance(val, torch.Tensor):
                if any(u.op != "output" for u in node.users):
                    raise ctx.refuse(f"placeholder of type {type(val).__name__} (only tensors are mapped)")
                ctx.env[node] = None
                continue
            shape, dtype = ctx.meta_of(val)
            ctx.env[node] = ctx.b.add("Input", (), {"name": node.name}, shape, dtype)
        elif node.op == "output":
            out_node = node
        elif node.op == "get_attr":
            ctx.env[node] = get_attr(ctx, getattr_path(root, str(node.target)))
        elif node.op == "call_function" and node.target is operator.getitem:
            src, index = node.args
            value = ctx.env.get(src)
            if not isinstance(value, tuple):
                raise ctx.refuse(f"getitem on {getattr(src, 'name', src)}, which is not a tuple result")
            ctx.env[node] = value[index]
        elif node.op == "call_function" and str(node.target) in HANDLERS:
            name_ = str(node.target)
            ctx.env[node] = HANDLERS[name_](ctx, bind(node))
            counts[name_] = counts.get(name_, 0) + 1
        elif node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload):
            raise ctx.refuse("no mapping onto the format's ops")
        else:
            raise ctx.refuse("only torch.ops.aten calls are mapped (pass an aten-level graph, as AOTAutograd gives)")
    assert out_node is not None, "an FX graph has an output node"
    ctx.node = out_node
    return _finish(ctx, out_node, placeholders, counts)


def getattr_path(gm: torch.nn.Module, target: str) -> Any:
    obj: Any = gm
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj


def _finish(ctx: Context, out_node: fx.Node, placeholders: list[str], counts: dict[str, int]) -> Imported:
    result = out_node.args[0]
    returns_tuple = isinstance(result, (tuple, list))
    items = list(result) if returns_tuple else [result]  # type: ignore[arg-type]
    index_of = {n: i for i, n in enumerate(placeholders)}
    outputs: list[int] = []
    slots: list[Slot] = []
    for item in items:
        if item is None:
            slots.append(Slot("none"))
            continue
        if not isinstance(item, fx.Node):
            raise ctx.refuse(f"the graph returns {item!r}, not a tensor")
        value = ctx.env.get(item)
        if isinstance(value, Empty):
            slots.append(Slot("empty", shape=value.shape, dtype=value.dtype))
        elif value is None and item.op == "placeholder":
            slots.append(Slot("input", index_of[item.name]))
        elif isinstance(value, int) and not isinstance(value, bool):
            node = ctx.b.nodes[value]
            if node.op == "Input" and node.attrs["name"] in index_of:
                slots.append(Slot("input", index_of[node.attrs["name"]]))
            else:
                slots.append(Slot("output", len(outputs)))
                outputs.append(value)
        else:
            raise ctx.refuse(f"output {item.name} is not a tensor the graph computes")
    used = _reachable(ctx, outputs)
    graph = validated(Graph([n for n in ctx.b.nodes if n.id in used], outputs, ctx.b.name))
    return Imported(graph, Signature(tuple(placeholders), tuple(slots), returns_tuple, tuple(ctx.masks)), counts)


def _reachable(ctx: Context, outputs: list[int]) -> set[int]:
    """The nodes the outputs depend on: dead code (torch's unused values) is left out."""
    seen: set[int] = set()
    stack = list(outputs)
    while stack:
        nid = stack.pop()
        if nid not in seen:
            seen.add(nid)
            stack.extend(ctx.b.nodes[nid].inputs)
    return seen
