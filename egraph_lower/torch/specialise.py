"""Graphs with symbolic sizes, lowered once per concrete shape when they run.

torch.compile hands a backend graphs with symbolic sizes under `dynamic=True`, after
`torch._dynamo.mark_dynamic`, and by default (`dynamic=None`) from the first change of an
input's shape on: their placeholders' `meta["val"]` have shapes like `(s0, 64)`, SymInt
arguments carry the sizes, and nodes compute with them (`sym_size`, `operator.mul` of
SymInts, views to `[s0 * 2, 64]`, a SymInt as a scalar operand). The format's shapes are
concrete, and so are the kernels a target compiles (Metal's and WebGPU's pipelines), so
such a graph is lowered per shape, at run time:

    per_shape = PerShape(gm, compile_shape, run_original, on_failure, max_shapes=16)

reads the concrete sizes of each call (`Shapes.key`: its SymInt arguments and the
shapes and strides of the tensors whose sizes are symbolic), and the first time it
meets them makes the graph specialised to them (`specialise`), has `compile_shape`
lower it through the backend's usual path (import, e-graph lowering through the
process-wide cache, export) and runs that; later calls with those sizes reuse it. At
most `max_shapes` specialisations are kept, the least recently used dropped first (a
shape met again after it was dropped is specialised again; its lowering then comes
from the cache). A specialisation that fails, at any stage, or whose lowered module
raises on its first call, runs the graph as PyTorch gave it for those sizes, the
arguments and the random generator's state kept for that first call as for a static
graph (`guard.first_call_guard`).

How a graph is specialised (`specialise`): a copy of the FX graph gets, at every node, the
`meta["val"]` the graph would have had if it had been traced at the call's sizes: shapes,
strides (so the lowered module's results get the layout `contract.as_layout` must give
them, the one PyTorch would give at these sizes), and storages (views and their bases
share one, so the aliasing the importer reads holds). Each size, stride, storage offset and
storage size in the trace's values is an expression in the symbols, so they are evaluated
at the symbols' values in this call (`_substitute`), as Inductor evaluates a dynamic graph's
buffer sizes at run time: dynamo's guards hold for the call, so the meta functions would
have taken the branches they took at trace time. Where a symbol is no placeholder's whole
size, stride or number (an unbacked size, `2*s0` alone), or the placeholders come out other
than the arguments, the graph is propagated with fake tensors of the arguments instead
(`FakeTensorProp`: each node's meta function runs again at concrete sizes; 0.7 ms a node
against 20 us evaluated; with the fake arguments then taken from the placeholders, a new
shape of transformers' BERT, forward and backward, costs 0.17 s, where propagating made it 0.37 s).
`tests/test_torch_symbolic.py` checks both give the same values on GPT-2's graphs. Every
node whose value is then a Python number (a SymInt placeholder, `sym_size`, SymInt
arithmetic) is put into its users as that number, and nodes left without a use that
compute nothing (`_assert_scalar`) go. Re-tracing with `make_fx` instead would cost a
propagation plus a new trace and rename every node (the warnings, `keep_in_pytorch` and
the records would no longer name the graph's nodes).

A number the graph returns (the forward saves `sym_size`s for the backward) cannot be a
result of a format graph: the specialised graph returns None in its place and the
runner puts the number back (`with_numbers`).

The specialised graph's key includes strides as well as sizes: dynamo guards the
relation of strides to sizes, so for one graph the sizes decide them, and keying on
both costs nothing and never runs a module traced for other strides.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx as fx

from .guard import Boxed, first_call_guard

Key = tuple[Any, ...]


def _plain_symbol(d: Any) -> str | None:
    """The name of a SymInt that is one symbol (`s0`; not `2*s0`), else None."""
    if isinstance(d, torch.SymInt):
        expr = d.node.expr
        if getattr(expr, "is_Symbol", False):
            return str(expr)
    return None


def _is_symbolic(value: Any) -> bool:
    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return True
    if isinstance(value, torch.Tensor):
        return any(not isinstance(d, int) for d in (*value.shape, *value.stride()))
    return False


@dataclass(frozen=True)
class Shapes:
    """Where a graph's symbolic sizes are: the placeholders that are SymInts or tensors with a
    symbolic size or stride, and the symbols their plain dims name (to label a specialisation)."""

    numbers: tuple[int, ...]  # argument positions of SymInt (SymFloat, SymBool) placeholders
    tensors: tuple[int, ...]  # argument positions of tensors with symbolic sizes or strides
    named: tuple[tuple[str, int, int | None], ...]  # (symbol, argument, dim or None for a number)

    @staticmethod
    def of(gm: fx.GraphModule) -> Shapes:
        numbers: list[int] = []
        tensors: list[int] = []
        named: dict[str, tuple[int, int | None]] = {}
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        for i, node in enumerate(placeholders):
            val = node.meta.get("val")
            if not _is_symbolic(val):
                continue
            if isinstance(val, torch.Tensor):
                tensors.append(i)
                for d, size in enumerate(val.shape):
                    name = _plain_symbol(size)
                    if name is not None:
                        named.setdefault(name, (i, d))
            else:
                numbers.append(i)
                name = _plain_symbol(val)
                if name is not None:
                    named.setdefault(name, (i, None))
        return Shapes(tuple(numbers), tuple(tensors),
                      tuple(sorted((s, i, d) for s, (i, d) in named.items())))

    def key(self, args: Sequence[Any]) -> Key:
        """The concrete sizes of one call: what a specialisation is for."""
        out: list[Any] = [args[i] for i in self.numbers]
        for i in self.tensors:
            t = args[i]
            out.append(t.shape)
            out.append(t.stride())
        return tuple(out)

    def sizes(self, args: Sequence[Any]) -> dict[str, int]:
        """The value of each named symbol in one call (`{"s0": 16}`)."""
        out: dict[str, int] = {}
        for name, i, d in self.named:
            value = args[i] if d is None else args[i].shape[d]
            out[name] = int(value)
        return out


def _fake_args(args: Sequence[Any]) -> tuple[Any, Any]:
    """Fake tensors of the real arguments (sizes, strides, storage offsets, shared storages kept), in
    a mode of static shapes; numbers as they are."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    mode = FakeTensorMode(allow_non_fake_inputs=True)
    fakes = [mode.from_tensor(a, static_shapes=True) if isinstance(a, torch.Tensor) else a for a in args]
    return mode, fakes


_NUMBER = (int, float, bool, torch.SymInt, torch.SymFloat, torch.SymBool)


def specialise(gm: fx.GraphModule, args: Sequence[Any]) -> tuple[fx.GraphModule, list[Any],
                                                                    dict[int, Any]]:
    """`gm` specialised to the sizes of `args` (see the module's docstring), the fake arguments its
    placeholders stand for, and the numbers it returns (result position -> value: the graph returns None
    there)."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.passes.fake_tensor_prop import FakeTensorProp

    graph = fx.Graph()
    graph.output(graph.graph_copy(gm.graph, {}))  # the nodes with a copy of their meta; the output
    mode = FakeTensorMode(allow_non_fake_inputs=True)
    if _substitute(graph, args, mode):  # the placeholders' values are the arguments' fakes
        fakes = [n.meta["val"] if isinstance(a, torch.Tensor) else a
                 for n, a in zip((n for n in graph.nodes if n.op == "placeholder"), args)]
    else:
        mode, fakes = _fake_args(args)
        with mode:
            FakeTensorProp(fx.GraphModule(gm, graph), mode=mode).propagate_dont_convert_inputs(*fakes)
    numbers = _inline_numbers(graph)
    graph.lint()
    return fx.GraphModule(gm, graph, class_name="SpecialisedGraph"), fakes, numbers  # its code made once


class _Unbound(Exception):
    """A size names a symbol the call's arguments do not give (an unbacked one, `2*s0` alone)."""


class _Sizes:
    """The value of the trace's size expressions at one call's sizes (cached: a graph repeats a few)."""

    def __init__(self, bound: dict[Any, int]) -> None:
        import sympy

        self.bound = {k: sympy.sympify(v) for k, v in bound.items()}
        self.seen: dict[Any, Any] = {}

    def __call__(self, value: Any) -> Any:
        if not isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            return value
        expr = value.node.expr
        out = self.seen.get(expr)
        if out is None:
            done = expr.xreplace(self.bound)
            if done.free_symbols:
                raise _Unbound(str(expr))
            kind = int if isinstance(value, torch.SymInt) else float if isinstance(value, torch.SymFloat) else bool
            out = self.seen[expr] = kind(done)
        return out


def _bindings(graph: fx.Graph, args: Sequence[Any]) -> dict[Any, int]:
    """Each symbol that is a whole size, stride or number of a placeholder, to its value in `args`."""
    bound: dict[Any, int] = {}
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    for node, arg in zip(placeholders, args):
        val = node.meta.get("val")
        pairs: list[tuple[Any, Any]]
        if isinstance(val, torch.Tensor) and isinstance(arg, torch.Tensor):
            pairs = [*zip(val.shape, arg.shape), *zip(val.stride(), arg.stride()),
                     (val.storage_offset(), arg.storage_offset())]
        elif isinstance(val, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            pairs = [(val, arg)]
        else:
            continue
        for sym, real in pairs:
            if isinstance(sym, (torch.SymInt, torch.SymFloat, torch.SymBool)) and sym.node.expr.is_Symbol:
                bound.setdefault(sym.node.expr, real)
    return bound


def _substitute(graph: fx.Graph, args: Sequence[Any], mode: Any) -> bool:
    """Put the call's sizes into every node's `meta["val"]`, as Inductor evaluates a dynamic graph's
    buffer sizes at run time: each size, stride, storage offset and storage size of the trace is an
    expression in the symbols, and dynamo's guards hold at this call, so the meta functions would
    take the branches they took at trace time and give these same expressions. Views keep sharing
    one storage. False (nothing changed) when a symbol is not given by the arguments or the
    placeholders come out other than the arguments: the caller then propagates instead."""
    from torch._subclasses.fake_tensor import FakeTensor
    from torch.multiprocessing.reductions import StorageWeakRef

    size = _Sizes(_bindings(graph, args))
    storages: dict[int, torch.Tensor] = {}

    def tensor(val: torch.Tensor) -> torch.Tensor:
        storage = val.untyped_storage()
        key = int(StorageWeakRef(storage).cdata)
        base = storages.get(key)
        if base is None:
            base = storages[key] = torch.empty(size(storage.nbytes()), dtype=torch.uint8, device="meta")
        elem = base.view(val.dtype).as_strided(tuple(size(d) for d in val.shape), tuple(size(d) for d in val.stride()),
                                               size(val.storage_offset()))
        return FakeTensor(mode, elem, val.device)

    def value(val: Any) -> Any:
        if isinstance(val, FakeTensor):
            return tensor(val)
        if isinstance(val, (tuple, list)):
            return type(val)(value(v) for v in val)
        return size(val)

    try:
        vals = {node: value(node.meta["val"]) for node in graph.nodes if "val" in node.meta}
    except (_Unbound, RuntimeError, TypeError, ValueError):
        return False
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    for node, arg in zip(placeholders, args):
        got = vals.get(node)
        if isinstance(arg, torch.Tensor) and not (
                isinstance(got, torch.Tensor) and got.shape == arg.shape and got.stride() == arg.stride()
                and got.storage_offset() == arg.storage_offset() and got.dtype == arg.dtype):
            return False
    for node, val in vals.items():
        node.meta["val"] = val
    return True


def _inline_numbers(graph: fx.Graph) -> dict[int, Any]:
    """Every node whose value is a number, put into its users as the number; the output's numbers
    replaced by None and returned by position."""
    numbers: dict[int, Any] = {}
    output = next(n for n in reversed(graph.nodes) if n.op == "output")
    result = output.args[0]
    items = list(result) if isinstance(result, (tuple, list)) else [result]
    for k, item in enumerate(items):
        if isinstance(item, fx.Node) and isinstance(item.meta.get("val"), _NUMBER):
            numbers[k] = _concrete(item.meta["val"])
            items[k] = None
    if numbers:
        output.args = (type(result)(items) if isinstance(result, (tuple, list)) else items[0],)
    for node in list(graph.nodes):
        if node.op in ("output", "get_attr"):
            continue
        val = node.meta.get("val")
        if isinstance(val, _NUMBER):
            value = _concrete(val)
            for user in list(node.users):
                user.args = fx.node.map_arg(user.args, lambda n: value if n is node else n)  # noqa: B023
                user.kwargs = fx.node.map_arg(user.kwargs, lambda n: value if n is node else n)  # noqa: B023
            if node.op != "placeholder":
                graph.erase_node(node)
        elif node.op == "call_function" and not node.users and val is None and _asserts(node):
            graph.erase_node(node)
    return numbers


def _asserts(node: fx.Node) -> bool:
    """Whether a node only checks something about sizes (it returns nothing, writes nothing)."""
    name = str(node.target)
    return any(k in name for k in ("_assert", "sym_constrain_range", "_check"))


def _concrete(value: Any) -> Any:
    if isinstance(value, torch.SymInt):
        return int(value)
    if isinstance(value, torch.SymFloat):
        return float(value)
    if isinstance(value, torch.SymBool):
        return bool(value)
    return value


def with_numbers(run: Boxed, numbers: dict[int, Any]) -> Boxed:
    """`run`, with the numbers the specialised graph returns None for put back in its results."""
    if not numbers:
        return run

    def put_back(args: list[Any]) -> Any:
        out = list(run(args))
        for k, value in numbers.items():
            out[k] = value
        return tuple(out)

    put_back._boxed_call = True  # type: ignore[attr-defined]
    return put_back


CompileShape = Callable[[fx.GraphModule, list[Any], Key, dict[str, int]], tuple[Callable[..., Any] | None, Callable[[BaseException], None]]]


class PerShape:
    """A graph with symbolic sizes as AOTAutograd calls it (boxed): lowered once per concrete shape.

    `compile_shape(spec, fake_args, key, sizes)` gives the module to run for one specialisation
    (None: run the original) and the callback to tell of a failure on its first call;
    `on_failure(key, sizes, stage, error)` is told when specialising fails (it raises under strict).
    `run_original`: the graph as PyTorch gave it, boxed (it runs at any sizes)."""

    def __init__(self, gm: fx.GraphModule, compile_shape: CompileShape, run_original: Boxed,
                 on_failure: Callable[[Key, dict[str, int], str, BaseException], None], max_shapes: int) -> None:
        if max_shapes < 1:
            raise ValueError(f"max_shapes must be at least 1, got {max_shapes}")
        self.gm = gm
        self.shapes = Shapes.of(gm)
        self._compile_shape = compile_shape
        self._run_original = run_original
        self._on_failure = on_failure
        self.max_shapes = max_shapes
        self.kept: OrderedDict[Key, Boxed] = OrderedDict()
        self._boxed_call = True

    def __call__(self, args: list[Any]) -> Any:
        key = self.shapes.key(args)
        run = self.kept.get(key)
        if run is None:
            run = self._specialised(key, args)
            self.kept[key] = run
            while len(self.kept) > self.max_shapes:
                self.kept.popitem(last=False)
        else:
            self.kept.move_to_end(key)
        return run(args)

    def _specialised(self, key: Key, args: list[Any]) -> Boxed:
        sizes = self.shapes.sizes(args)
        try:
            spec, fakes, numbers = specialise(self.gm, args)
        except Exception as e:
            self._on_failure(key, sizes, "specialisation", e)  # raises under strict
            return self._run_original
        module, on_run_failure = self._compile_shape(spec, fakes, key, sizes)
        if module is None:
            return self._run_original
        from .guard import boxed

        return first_call_guard(with_numbers(boxed(module), numbers), self._run_original, on_run_failure)

