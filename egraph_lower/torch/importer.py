"""An aten-level `torch.fx.GraphModule` (what AOTAutograd hands a compiler) as a format graph.

    imported = import_graph(gm)            # .graph (egraph_lower Graph), .signature
    imported.graph.to_json()

Placeholders become `Input` nodes named by the placeholder; each `torch.ops.aten.*`
call becomes the format ops with the same meaning (the table is `registry.HANDLERS`, filled by `mappings.py`; the
decisions are in `aten.py`'s docstring); `operator.getitem` picks from multi-result
ops. Shapes and dtypes come from `node.meta['val']` (a FakeTensor); a graph without
them can be given `example_inputs` to propagate them. An op with no mapping raises
`UnsupportedOp` naming it.
"""

from __future__ import annotations

import operator
from collections.abc import Collection, Sequence
from typing import Any

import torch
import torch.fx as fx

from ..document import validated
from ..graph import Graph
from .common import Imported, Signature, Slot
from .context import Context, Empty, workspace
from .mappings import HANDLERS, get_attr


KEPT = "kept in PyTorch (backend(keep_in_pytorch=...))"


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
                 name: str | None = None, keep: Collection[str] = ()) -> Imported:
    """Map `gm` onto the format; raises `UnsupportedOp` for the first node it cannot map, or whose op
    `keep` names (`aten.native_group_norm.default`, or every overload: `aten.native_group_norm`)."""
    if example_inputs is not None and any("val" not in n.meta for n in gm.graph.nodes if n.op != "output"):
        _propagate(gm, example_inputs)
    return import_fx_graph(gm.graph, gm, name, keep)


def kept(node: fx.Node, keep: Collection[str]) -> bool:
    """Whether `keep` names the aten op of `node` (its overload or its packet)."""
    target = node.target
    if not keep or not isinstance(target, torch._ops.OpOverload):
        return False
    return str(target) in keep or str(target.overloadpacket) in keep


def import_fx_graph(graph: fx.Graph, root: torch.nn.Module, name: str | None = None,
                    keep: Collection[str] = ()) -> Imported:
    """`import_graph` of an `fx.Graph` whose `get_attr` nodes name attributes of `root` (every node
    with its `meta['val']`): no GraphModule is made, so no Python code is generated for it."""
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
            if (empty := workspace(val)) is not None:  # read by no format op: no Input for it
                ctx.env[node] = empty
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
        elif kept(node, keep):
            raise ctx.refuse(KEPT)
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
    returned: dict[fx.Node, Slot] = {}  # an FX node returned twice is one value, returned twice
    shared = _shared_storages(out_node, [n for n in items if isinstance(n, fx.Node)])
    for item in items:
        if item is None:
            slots.append(Slot("none"))
            continue
        if not isinstance(item, fx.Node):
            raise ctx.refuse(f"the graph returns {item!r}, not a tensor")
        value = ctx.env.get(item)
        if item in returned:
            slots.append(returned[item])
        elif isinstance(value, Empty):
            slots.append(Slot("empty", shape=value.shape, dtype=value.dtype))
        elif item.op == "placeholder":  # the argument itself, passed through
            slots.append(Slot("input", index_of[item.name]))
        elif isinstance(value, int) and not isinstance(value, bool):
            val = ctx.val(item)
            slots.append(Slot("output", len(outputs), stride=tuple(val.stride()), private=storage(val) not in shared))
            outputs.append(value)
        else:
            raise ctx.refuse(f"output {item.name} is not a tensor the graph computes")
        returned.setdefault(item, slots[-1])
    used = _reachable(ctx, outputs)
    graph = validated(Graph([n for n in ctx.b.nodes if n.id in used], outputs, ctx.b.name))
    return Imported(graph, Signature(tuple(placeholders), tuple(slots), returns_tuple, tuple(ctx.masks)), counts)


def storage(val: torch.Tensor) -> int:
    """Which storage a (fake) tensor's elements live in: views and their bases share one."""
    from torch.multiprocessing.reductions import StorageWeakRef

    return int(StorageWeakRef(val.untyped_storage()).cdata)


def _shared_storages(out_node: fx.Node, returned: list[fx.Node]) -> set[int]:
    """The storages a returned value may not have to itself: a placeholder's, or one that two
    different returned nodes share (a result and a view of it)."""
    shared: set[int] = set()
    seen: set[int] = set()
    for n in out_node.graph.nodes:
        val = n.meta.get("val")
        if n.op == "placeholder" and isinstance(val, torch.Tensor):
            shared.add(storage(val))
    for n in dict.fromkeys(returned):
        val = n.meta.get("val")
        if isinstance(val, torch.Tensor):
            key = storage(val)
            (shared if key in seen else seen).add(key)
    return shared


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
