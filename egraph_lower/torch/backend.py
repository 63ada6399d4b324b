"""A torch.compile backend that lowers every forward and backward graph for a target.

    record: list[Graph] = []
    be = egraph_lower.torch.backend("metal", record=record)
    step = torch.compile(model, backend=be, dynamic=False)
    ...
    print(be.summary())

Through AOTAutograd, so aten's backward ops (`threshold_backward`, `sigmoid_backward`,
`native_batch_norm_backward`, ...) reach the importer as they are. The only decompositions
it applies are PyTorch's Core ATen ones of forward ops the importer does not map
(`decompose.py`: `stack`, `mv`, `index_add`, ...; never a backward, Core ATen, mapped
or kept op), so those reach it as the Core ATen ops they stand for. Each graph is imported, lowered with `egraph_lower.lower`
(through a process-wide cache, `cache.py`), exported and run in PyTorch. A graph with
ops outside the mapping is split around them: those ops run in PyTorch as they are;
the runs of mappable ops between them are lowered together, as one graph, and cut back
into one piece per run (`partial=False` runs such a graph whole, unlowered). A graph or
piece the lowering leaves as it was runs as PyTorch gave it: its aten ops are the
target's own kernels, and that costs no more than `aot_eager`.

A graph with symbolic sizes (`dynamic=True`, `mark_dynamic`, or dynamo's automatic
dynamic shapes after a change of shape) is lowered per concrete shape when it runs
(`specialise.py`): its record has the status "per shape", and each shape it met is a
record of its own, `forward1[s0=16]`, lowered like a static graph.

Nothing that fails inside the backend stops a training step unless `strict=True`:
a graph (or piece) that fails to import, lower, export or run, or whose specialisation
to a shape fails, runs as PyTorch gave it, with one warning naming the op or stage and
the reason; `summary()` lists it.
"""

from __future__ import annotations

import dataclasses
import logging
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx as fx

from ..backends import Backend
from ..backends import load as load_backend
from ..egraph.saturate import Limits
from ..errors import LowerError
from ..graph import Graph
from . import cache, kernel_strides
from .decompose import decompositions
from .common import Imported, Signature, UnsupportedOp
from .exporter import export_graph
from .guard import Boxed, Guarded, boxed, boxed_graph, symbolic_reason
from .importer import KEPT, import_fx_graph, import_graph
from .partition import Segment, assemble, combined_graph, plan, same_computation, segment_module, split_lowered
from .specialise import Key, PerShape

log = logging.getLogger("egraph_lower.torch")


@dataclass
class GraphRecord:
    """What happened to one FX graph handed to the backend."""

    name: str
    kind: str  # "forward", "backward" or "inference"
    status: str  # "lowered", "partly lowered", "not lowered", "nothing to lower"; "per shape" (symbolic sizes)
    lowered: int = 0  # format graphs lowered for it
    unlowered_ops: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)  # "<stage>: <reason>" of each fallback to PyTorch
    cached: int = 0  # of the lowered graphs, how many came from the cache
    replaced: int = 0  # graphs or pieces that run lowered (the others run as PyTorch gave them)
    of: str | None = None  # a specialisation: the name of the graph with symbolic sizes it is one shape of
    sizes: dict[str, int] | None = None  # a specialisation: the value of each symbolic size (`{"s0": 16}`)


class TorchBackend:
    """The callable handed to `torch.compile(backend=...)`; keeps a summary of what it lowered."""

    def __init__(self, target: str | Backend, record: list[Graph] | None = None, *,
                 limits: Limits | None = None, partial: bool = True, strict: bool = False,
                 keep_in_pytorch: Iterable[str] = (), max_shapes: int = 16) -> None:
        from torch._dynamo.backends.common import aot_autograd
        from torch._functorch.partitioners import min_cut_rematerialization_partition

        self.target = load_backend(target)
        self.record = record
        self.limits = limits or Limits()
        self.partial = partial
        self.strict = strict
        self.keep_in_pytorch = frozenset(keep_in_pytorch)
        if max_shapes < 1:
            raise ValueError(f"max_shapes must be at least 1, got {max_shapes}")
        self.max_shapes = max_shapes
        self.graphs: list[GraphRecord] = []
        self._warned: set[str] = set()
        # The partitioner of `aot_eager` (and inductor): the same graphs, so a step costs what it costs
        # there, plus what the lowering changes. Input mutations (batch norm's running statistics) stay
        # outside the graph: it returns the new values and AOTAutograd copies them in, since the format
        # has values, not buffers to write. The decompositions: PyTorch's Core ATen table restricted to
        # the forward ops the importer does not map and the user does not keep (decompose.py says why).
        self._aot = aot_autograd(fw_compiler=self._compiler("forward"), bw_compiler=self._compiler("backward"),
                                 inference_compiler=self._compiler("inference"),
                                 partition_fn=min_cut_rematerialization_partition,
                                 decompositions=decompositions(self.keep_in_pytorch),
                                 keep_inference_input_mutations=False)

    def __call__(self, gm: fx.GraphModule, example_inputs: Sequence[Any]) -> Callable[..., Any]:
        return self._aot(gm, example_inputs)

    # ---- the summary
    @property
    def unlowered_ops(self) -> dict[str, int]:
        """aten ops (and other calls) that ran in PyTorch as they are, with their node counts."""
        out: dict[str, int] = {}
        for g in self.graphs:
            for op, n in g.unlowered_ops.items():
                out[op] = out.get(op, 0) + n
        return out

    def summary(self) -> str:
        top = [g for g in self.graphs if g.of is None]
        lines = [f"egraph_lower torch backend for {self.target.name}: {len(top)} graphs"]
        for g in top:
            if g.status == "per shape":
                shapes = [s for s in self.graphs if s.of == g.name]
                lines.append(f"  {g.name} ({g.kind}): symbolic sizes, lowered per shape: {len(shapes)} shape(s) met")
                lines += self._summary_lines(shapes, "    ")
            else:
                lines += self._summary_lines([g], "  ")
        return "\n".join(lines)

    @staticmethod
    def _summary_lines(graphs: list[GraphRecord], indent: str) -> list[str]:
        lines = []
        for g in graphs:
            cached = f" ({g.cached} from the cache)" if g.cached else ""
            lines.append(f"{indent}{g.name} ({g.kind}): {g.status}, {g.lowered} lowered graph(s){cached},"
                         f" {g.replaced} graph(s) or piece(s) run lowered")
            lines += [f"{indent}  not lowered: {op} x{n}" for op, n in sorted(g.unlowered_ops.items())]
            lines += [f"{indent}  ran in PyTorch after a failure: {e}" for e in g.errors]
        return lines

    # ---- compiling
    def _compiler(self, kind: str) -> Callable[[fx.GraphModule, Sequence[Any]], Callable[..., Any]]:
        def compile_graph(gm: fx.GraphModule, example_inputs: Sequence[Any]) -> Callable[..., Any]:
            rec = GraphRecord(f"{kind}{sum(g.kind == kind and g.of is None for g in self.graphs)}", kind,
                              "not lowered")
            self.graphs.append(rec)
            if symbolic_reason(gm, example_inputs) is not None:
                return self._per_shape(gm, rec)
            try:
                module: Callable[..., Any] = self._compile(gm, example_inputs, rec)
            except Exception as e:  # anything the stages below did not foresee
                self._failed(rec, "compile", e)
                rec.status = "not lowered"
                module = gm
            return boxed_graph(module, gm, lambda e: self._failed(rec, "run", e))

        return compile_graph

    def _per_shape(self, gm: fx.GraphModule, rec: GraphRecord) -> Boxed:
        """A graph with symbolic sizes: lowered per concrete shape as it runs (`specialise.py`); each shape
        a record of its own, named by its sizes."""
        rec.status = "per shape"
        shapes: dict[Key, GraphRecord] = {}

        def record(key: Key, sizes: dict[str, int]) -> GraphRecord:
            if key not in shapes:
                label = ",".join(f"{k}={v}" for k, v in sizes.items()) or f"shape {len(shapes)}"
                shapes[key] = GraphRecord(f"{rec.name}[{label}]", rec.kind, "not lowered", of=rec.name, sizes=sizes)
                self.graphs.append(shapes[key])
            return shapes[key]

        def compile_shape(spec: fx.GraphModule, fakes: list[Any], key: Key, sizes: dict[str, int]) \
                -> tuple[Callable[..., Any] | None, Callable[[BaseException], None]]:
            shape = record(key, sizes)
            try:
                module: Callable[..., Any] = self._compile(spec, fakes, shape)
            except Exception as e:  # anything the stages did not foresee
                self._failed(shape, "compile", e)
                shape.status, module = "not lowered", spec
            return (None if module is spec else module), lambda e: self._failed(shape, "run", e)

        def failed(key: Key, sizes: dict[str, int], stage: str, error: BaseException) -> None:
            self._failed(record(key, sizes), stage, error)

        return PerShape(gm, compile_shape, boxed(gm), failed, self.max_shapes)

    def _compile(self, gm: fx.GraphModule, example_inputs: Sequence[Any], rec: GraphRecord) -> Callable[..., Any]:
        reason = symbolic_reason(gm, example_inputs)
        if reason is not None:
            self._failed(rec, "symbolic shapes", reason)
            return gm
        device = next((x.device for x in example_inputs if isinstance(x, torch.Tensor)), None)
        try:  # the layouts eager gives where PyTorch's fake kernels state others (batch norm)
            kernel_strides.restate(gm)
        except Exception as e:
            self._failed(rec, "strides of the real kernels", e)
            return gm
        try:
            imported = import_graph(gm, name=rec.name, keep=self.keep_in_pytorch)
        except UnsupportedOp as e:
            if not self.partial:
                self._unlowered(rec, e.op, 1, e.reason)
                return gm
            return self._compile_parts(gm, rec, device)
        except Exception as e:
            self._failed(rec, "import", e)
            return gm
        if not imported.graph.outputs:  # it only passes values through: nothing to lower
            rec.status = "nothing to lower"
            return gm
        module = self._lower_and_export(imported.graph, imported.signature, rec, device, boxed=True)
        if rec.lowered:
            rec.status = "lowered"
        return gm if module is None else module

    def _compile_parts(self, gm: fx.GraphModule, rec: GraphRecord, device: torch.device | None) -> fx.GraphModule:
        items, refused = plan(gm, self.keep_in_pytorch)
        for op, whys in refused.items():
            self._unlowered(rec, op, len(whys), whys[0].reason)
        segments = [i for i in items if isinstance(i, Segment)]
        if segments and not self._lower_together(gm, segments, rec, device):
            self._lower_apart(gm, segments, rec, device)
        rec.status = "partly lowered" if rec.lowered else "not lowered"
        return assemble(gm, items)

    def _lower_together(self, gm: fx.GraphModule, segments: list[Segment], rec: GraphRecord,
                        device: torch.device | None) -> bool:
        """All segments lowered as one graph, then cut into pieces; False when they must go one by one."""
        try:
            imported = import_fx_graph(combined_graph(segments), gm, name=rec.name, keep=self.keep_in_pytorch)
        except Exception as e:  # a node that maps alone but not in context: find it segment by segment
            log.info("%s: the segments do not import together (%s); one by one", rec.name, e)
            return False
        lowered = self._lowered(imported, rec)
        if lowered is None:
            return True  # the failure is recorded; the segments run as they are
        pieces = split_lowered(lowered, imported.signature, segments)
        before = split_lowered(imported.graph, imported.signature, segments)
        for seg, piece, was in zip(segments, pieces, before):
            if piece is None or (was is not None and same_computation(piece[0], was[0])):
                continue  # nothing to run differently: the segment's nodes stay as they are
            seg.module = self._guarded(self._export(piece[0], piece[1], rec, device), segment_module(gm, seg),
                                       piece[1], rec)
        return True

    def _lower_apart(self, gm: fx.GraphModule, segments: list[Segment], rec: GraphRecord,
                     device: torch.device | None) -> None:
        for k, seg in enumerate(segments):
            original = segment_module(gm, seg)
            try:
                imported = import_graph(original, name=f"{rec.name}.{k}", keep=self.keep_in_pytorch)
            except UnsupportedOp as e:  # a node that maps alone but not in context
                self._unlowered(rec, e.op, 1, e.reason)
                continue
            except Exception as e:
                self._failed(rec, f"import of piece {k}", e)
                continue
            if imported.graph.outputs:
                exported = self._lower_and_export(imported.graph, imported.signature, rec, device)
                seg.module = self._guarded(exported, original, imported.signature, rec)

    def _lower_and_export(self, graph: Graph, signature: Signature, rec: GraphRecord,
                          device: torch.device | None, boxed: bool = False) -> torch.nn.Module | None:
        """The lowered module, or None when the original should run: the lowering failed, or changed
        nothing (then the target runs the very aten ops the graph holds). `boxed`: the whole graph,
        which AOTAutograd calls boxed (`guard.boxed`), so its code is generated in that form only."""
        lowered = self._lowered(Imported(graph, signature), rec)
        if lowered is None or same_computation(lowered, graph):
            return None
        return self._export(lowered, signature, rec, device, boxed)

    def _lowered(self, imported: Imported, rec: GraphRecord) -> Graph | None:
        """The imported graph lowered for the target (cached), or None (recorded) when the lowering fails."""
        try:
            graph, hit = cache.lowered(imported.graph, self.target, self.limits)
        except Exception as e:
            self._failed(rec, f"lowering for {self.target.name}", e)
            return None
        if self.record is not None:
            self.record.append(graph if rec.sizes is None else dataclasses.replace(graph, sizes=dict(rec.sizes)))
        rec.lowered += 1
        rec.cached += hit
        return graph

    def _export(self, graph: Graph, signature: Signature, rec: GraphRecord,
                device: torch.device | None, boxed: bool = False) -> torch.nn.Module | None:
        """The lowered graph as a module (None, recorded, when the export fails)."""
        try:
            module = export_graph(graph, signature, boxed)
            if device is not None:
                module = module.to(device)
        except Exception as e:
            self._failed(rec, "export", e)
            return None
        rec.replaced += 1
        return module

    def _guarded(self, module: torch.nn.Module | None, original: fx.GraphModule, signature: Signature,
                 rec: GraphRecord) -> torch.nn.Module | None:
        """A lowered piece that falls back to `original` (the segment as PyTorch gave it) if it ever fails
        to run."""
        if module is None:
            return None
        return Guarded(module, original, lambda e: self._failed(rec, "run", e), draws=bool(signature.masks))

    # ---- what was not lowered
    def _unlowered(self, rec: GraphRecord, op: str, n: int, why: str) -> None:
        asked = why == KEPT  # the user's choice: neither a failure under strict nor worth a warning
        if self.strict and not asked:
            raise UnsupportedOp(op, why)
        rec.unlowered_ops[op] = rec.unlowered_ops.get(op, 0) + n
        log.info("%s: %s runs in PyTorch, not lowered (%s)", rec.name, op, why)
        if op not in self._warned and not asked:
            self._warned.add(op)
            warnings.warn(f"egraph_lower: {op} is not lowered, it runs in PyTorch: {why}", RuntimeWarning,
                          stacklevel=1)

    def _failed(self, rec: GraphRecord, stage: str, error: BaseException | str) -> None:
        """A stage failed: its graph or piece runs as PyTorch gave it (raises under strict)."""
        if self.strict:
            if isinstance(error, BaseException):
                raise error
            raise LowerError(f"{rec.name}: {stage}: {error}")
        why = error if isinstance(error, str) else f"{type(error).__name__}: {error}".splitlines()[0]
        msg = f"{rec.name}: {stage}: {why}"
        rec.errors.append(msg.split(": ", 1)[1])
        log.warning("%s (it runs in PyTorch as it is)", msg)
        warnings.warn(f"egraph_lower: {msg} (it runs in PyTorch as it is)", RuntimeWarning, stacklevel=1)


def backend(target: str | Backend, *, record: list[Graph] | None = None, limits: Limits | None = None,
            partial: bool = True, strict: bool = False, keep_in_pytorch: Iterable[str] = (),
            max_shapes: int = 16) -> TorchBackend:
    """A torch.compile backend lowering every forward and backward graph for `target`.

    `record`: each lowered graph (an egraph_lower `Graph`) is appended to it.
    `partial`: split graphs around ops outside the mapping (else run such graphs whole).
    `strict`: raise on an unmapped op or any failure (import, lowering, export, run, the
    specialisation of a graph with symbolic sizes to a shape) instead of running the graph or
    piece as PyTorch gave it.
    `keep_in_pytorch`: aten ops that run in PyTorch though they map, as an unmapped op does
    (`"aten.native_group_norm.default"`, or `"aten.native_group_norm"` for every overload);
    `strict` does not count them as failures.
    `max_shapes`: how many shapes each graph with symbolic sizes keeps lowered (the least recently
    used dropped first; one met again is specialised again, its lowering from the cache).
    """
    return TorchBackend(target, record, limits=limits, partial=partial, strict=strict,
                        keep_in_pytorch=keep_in_pytorch, max_shapes=max_shapes)
