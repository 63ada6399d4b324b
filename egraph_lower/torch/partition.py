"""Split an FX graph around the nodes the importer cannot map.

`plan(gm)` walks the nodes in order and cuts them into segments: maximal runs of
mappable nodes, and the unmappable nodes between them. Each mappable run becomes
a sub-GraphModule (its own placeholders and outputs), which the caller lowers; the
unmappable nodes stay as they are in the top graph, which calls the segments in
order. Cutting in topological order never makes a cycle.

`combined_graph` puts every segment into one FX graph so that one lowering
serves them all; `split_lowered` cuts the lowered graph back into one piece per
segment.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Collection
from dataclasses import dataclass, field, replace

import torch
import torch.fx as fx

from ..graph import Graph, Node
from .common import Signature, Slot, UnsupportedOp
from .context import Context, op_name
from .importer import KEPT, bind, kept


@dataclass
class Segment:
    nodes: list[fx.Node]
    inputs: list[fx.Node] = field(default_factory=list)
    outputs: list[fx.Node] = field(default_factory=list)
    module: torch.nn.Module | None = None  # what runs it; None: its nodes, as PyTorch gave them
    # views the code after the segment reads, run in PyTorch on their bases after it (see `_replayed`)
    replay: list[fx.Node] = field(default_factory=list)


def probe(node: fx.Node, keep: Collection[str] = ()) -> UnsupportedOp | None:
    """Why `node` alone cannot be mapped (None when it can): its tensor arguments stand in as Inputs."""
    from .mappings import HANDLERS

    ctx = Context("probe")
    if kept(node, keep):
        ctx.node = node
        return ctx.refuse(KEPT)
    for arg in node.all_input_nodes:
        val = arg.meta.get("val")
        ctx.node = arg
        try:
            shape, dtype = ctx.meta_of(val)
        except UnsupportedOp:
            ctx.env[arg] = None
            continue
        ctx.env[arg] = ctx.b.add("Input", (), {"name": arg.name}, shape, dtype)
    ctx.node = node
    name = op_name(node)
    if name not in HANDLERS:
        return ctx.refuse("no mapping onto the format's ops")
    try:
        HANDLERS[name](ctx, bind(node))
    except UnsupportedOp as e:
        return e
    except Exception as e:  # a handler's bug or an argument it did not expect: the op runs in PyTorch
        return ctx.refuse(f"the mapping failed: {type(e).__name__}: {e}")
    return None


def _ordered(gm: fx.GraphModule) -> list[fx.Node]:
    """The graph's nodes, each getitem moved right after the node it picks from."""
    getitems: dict[fx.Node, list[fx.Node]] = {}
    for n in gm.graph.nodes:
        if n.op == "call_function" and n.target is operator.getitem and isinstance(n.args[0], fx.Node):
            getitems.setdefault(n.args[0], []).append(n)
    moved = {g for gs in getitems.values() for g in gs}
    out: list[fx.Node] = []
    for n in gm.graph.nodes:
        if n not in moved:
            out.append(n)
            out.extend(getitems.get(n, []))
    return out


def plan(gm: fx.GraphModule, keep: Collection[str] = ()
         ) -> tuple[list[fx.Node | Segment], dict[str, list[UnsupportedOp]]]:
    """The top graph's items in order (a node kept as it is, or a segment) and why each unmapped op is
    (`keep`: ops to run in PyTorch though they map, as `import_graph` takes them)."""
    items: list[fx.Node | Segment] = []
    refused: dict[str, list[UnsupportedOp]] = {}
    mapped: set[fx.Node] = set()
    current: Segment | None = None
    for n in _ordered(gm):
        if n.op in ("placeholder", "output"):
            ok = False
        elif n.op == "call_function" and n.target is operator.getitem:
            ok = n.args[0] in mapped
        elif n.op == "get_attr":
            ok = True
        else:
            why = probe(n, keep)
            ok = why is None
            if why is not None:
                refused.setdefault(op_name(n), []).append(why)
        if ok:
            mapped.add(n)
            if current is None:
                current = Segment([])
                items.append(current)
            current.nodes.append(n)
        else:
            current = None
            items.append(n)
    for seg in (i for i in items if isinstance(i, Segment)):
        inside = set(seg.nodes)
        seg.inputs = list(dict.fromkeys(a for n in seg.nodes for a in n.all_input_nodes if a not in inside))
        seg.outputs, seg.replay = _replayed(seg.nodes, [n for n in seg.nodes if any(u not in inside for u in n.users)])
    return items, refused


# the ops that read a value's storage, gaps between its elements included, as PyTorch's kernels leave it
_STORAGE_READERS = frozenset((torch.ops.aten.as_strided.default, torch.ops.aten.as_strided_copy.default,
                              torch.ops.aten.as_strided_scatter.default))


def _needs_base(node: fx.Node) -> bool:
    """Whether the code reading `node` may see more of its storage than the value itself: a view into
    a larger storage, or at an offset (a slice, a select, a split's piece), or not a tensor, or a value
    whose layout has gaps that an `as_strided` in PyTorch reads (`aten_strided.has_gaps`). A value whose
    storage is exactly its own elements is given that storage by `contract.as_layout`."""
    val = node.meta.get("val")
    if not isinstance(val, torch.Tensor):
        return True
    if val.numel() == 0:
        return False
    if any(u.op == "call_function" and u.target in _STORAGE_READERS for u in node.users):
        from .aten_strided import has_gaps

        if has_gaps(val):  # PyTorch's as_strided reads its gaps: the memory PyTorch's own kernels leave there
            return True
    extent = 1 + sum((n - 1) * s for n, s in zip(val.shape, val.stride()))
    return val.storage_offset() != 0 or val.untyped_storage().nbytes() != extent * val.element_size()


def _replayed(nodes: list[fx.Node], outputs: list[fx.Node]) -> tuple[list[fx.Node], list[fx.Node]]:
    """A segment's outputs, and the nodes to run in PyTorch after it: each output that is a view into a
    larger storage is not returned by the lowered piece (a fresh tensor could not be that view) but
    recomputed by its own aten op from its base, which the piece returns instead, as PyTorch's graph
    computes it; the chain goes back through views of views to a value with a storage of its own."""
    inside = set(nodes)
    returned = set(outputs)
    replay: set[fx.Node] = set()
    work = [o for o in outputs if _needs_base(o)]
    while work:
        n = work.pop()
        if n in replay:
            continue
        replay.add(n)
        returned.discard(n)
        for a in n.all_input_nodes:
            if a in inside and a not in replay:
                if _needs_base(a):
                    work.append(a)
                else:
                    returned.add(a)
    return [n for n in nodes if n in returned], [n for n in nodes if n in replay]


def segment_module(gm: fx.GraphModule, seg: Segment) -> fx.GraphModule:
    """A segment as a GraphModule of its own: placeholders for its inputs, a tuple of its outputs."""
    g = fx.Graph()
    env: dict[fx.Node, fx.Node] = {}
    for a in seg.inputs:
        p = g.placeholder(a.name)
        p.meta = dict(a.meta)
        env[a] = p
    for n in seg.nodes:
        env[n] = g.node_copy(n, lambda x: env[x])
    g.output(tuple(env[o] for o in seg.outputs))
    return fx.GraphModule(gm, g, class_name="Segment")


def assemble(gm: fx.GraphModule, items: list[fx.Node | Segment]) -> fx.GraphModule:
    """The top graph: kept nodes copied, each segment a call of its module (its nodes copied when it has none)."""
    g = fx.Graph()
    env: dict[fx.Node, fx.Node] = {}
    modules: dict[str, object] = {}
    for item in items:
        if isinstance(item, Segment) and item.module is None:  # kept as PyTorch gave it: its nodes, inline
            for n in item.nodes:
                if n.op == "get_attr":
                    modules[str(n.target)] = _getattr(gm, str(n.target))
                env[n] = g.node_copy(n, lambda x: env[x])
        elif isinstance(item, Segment):
            name = f"segment_{len(modules)}"
            modules[name] = item.module
            call = g.call_module(name, tuple(env[a] for a in item.inputs))
            for k, o in enumerate(item.outputs):
                env[o] = g.call_function(operator.getitem, (call, k))
                env[o].meta = dict(o.meta)
            for n in item.replay:  # views of what it returned, as PyTorch's graph takes them
                env[n] = g.node_copy(n, lambda x: env[x])
        else:
            if item.op == "get_attr":
                modules[str(item.target)] = _getattr(gm, str(item.target))
            env[item] = g.node_copy(item, lambda x: env[x])
    return fx.GraphModule(modules, g, class_name="PartlyLowered")


def _getattr(gm: fx.GraphModule, target: str) -> object:
    obj: object = gm
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj


def combined_graph(segments: list[Segment]) -> fx.Graph:
    """Every segment in one FX graph (its `get_attr` nodes name `gm`'s attributes), so one lowering
    serves them all.

    Each value a segment reads from outside it (a placeholder, an unmapped op's result,
    another segment's output) is a placeholder named after the top graph's node; the
    outputs are every segment's outputs, segment after segment. The segments share
    nothing else, so the lowered graph splits back into one piece per segment.
    """
    g = fx.Graph()
    inputs = list(dict.fromkeys(a for seg in segments for a in seg.inputs))
    ph: dict[fx.Node, fx.Node] = {}
    for a in inputs:
        ph[a] = g.placeholder(a.name)
        ph[a].meta = dict(a.meta)
    outs: list[fx.Node] = []
    for seg in segments:
        env: dict[fx.Node, fx.Node] = {a: ph[a] for a in seg.inputs}
        for n in seg.nodes:
            env[n] = g.node_copy(n, lambda x: env[x])
        outs += [env[o] for o in seg.outputs]
    g.output(tuple(outs))
    return g


def split_lowered(graph: Graph, signature: Signature, segments: list[Segment]
                  ) -> list[tuple[Graph, Signature] | None]:
    """`graph` (the lowered `combined_graph`, whose calling convention is `signature`) cut back into
    one (graph, signature) per segment, called with the segment's inputs; None for a segment
    whose piece computes nothing or needs a value that is not one of its inputs.

    A dropout mask (`signature.masks`) is drawn by the piece that needs it, at its start: the
    pieces run in order, so the generator is consumed as eager's dropouts consume it. A mask
    that an earlier piece drew already cannot be drawn again: such a piece is None."""
    by_id = graph.by_id
    out: list[tuple[Graph, Signature] | None] = []
    start = 0
    masks = {m.name: m for m in signature.masks}
    drawn: set[str] = set()
    for seg in segments:
        slots = signature.outputs[start:start + len(seg.outputs)]
        start += len(seg.outputs)
        names = tuple(a.name for a in seg.inputs)
        position = {n: i for i, n in enumerate(names)}
        outputs = [graph.outputs[s.index] for s in slots if s.kind == "output"]
        used = _reachable(by_id, outputs)
        needs = {by_id[i].attrs["name"] for i in used if by_id[i].op in ("Input", "Param")}
        passed = {signature.inputs[s.index] for s in slots if s.kind == "input"}
        own = needs & set(masks)
        if not outputs or not (needs - own | passed) <= set(names) or own & drawn:
            out.append(None)
            continue
        drawn |= own
        new_slots: list[Slot] = []
        k = 0
        for s in slots:
            if s.kind == "output":
                new_slots.append(replace(s, index=k))
                k += 1
            elif s.kind == "input":
                new_slots.append(replace(s, index=position[signature.inputs[s.index]]))
            else:
                new_slots.append(s)
        piece = Graph([n for n in graph.nodes if n.id in used], outputs, graph.name)
        out.append((piece, Signature(names, tuple(new_slots), True, tuple(m for m in signature.masks
                                                                           if m.name in own))))
    return out


def _reachable(by_id: dict[int, Node], outputs: list[int]) -> set[int]:
    seen: set[int] = set()
    stack = list(outputs)
    while stack:
        nid = stack.pop()
        if nid not in seen:
            seen.add(nid)
            stack.extend(by_id[nid].inputs)
    return seen


def same_computation(a: Graph, b: Graph) -> bool:
    """Whether `a` and `b` compute the same thing node for node (ids and order aside)."""
    if len(a.nodes) != len(b.nodes) or len(a.outputs) != len(b.outputs):
        return False
    intern: dict[tuple[object, ...], int] = {}

    def canon(g: Graph) -> tuple[list[int], set[int]]:
        ids: dict[int, int] = {}
        for n in g.nodes:  # inputs come before their users
            k = (n.op, json.dumps(n.attrs, sort_keys=True), n.shape, n.dtype, tuple(ids[i] for i in n.inputs))
            ids[n.id] = intern.setdefault(k, len(intern))
        return [ids[o] for o in g.outputs], set(ids.values())

    return canon(a) == canon(b)
