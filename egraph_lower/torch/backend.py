"""A torch.compile backend that lowers every forward and backward graph for a target.

    record: list[Graph] = []
    be = egraph_lower.torch.backend("metal", record=record)
    step = torch.compile(model, backend=be, dynamic=False)
    ...
    print(be.summary())

Through AOTAutograd, without decompositions, so aten's backward ops
(`threshold_backward`, `sigmoid_backward`, `native_batch_norm_backward`, ...) reach
the importer as they are. Each graph is imported, lowered with `egraph_lower.lower`,
exported and run in PyTorch. A graph with ops outside the mapping is split around
them: those ops run in PyTorch as they are, the rest is lowered (`partial=False`
runs such a graph whole, unlowered). A graph that fails to lower runs unlowered too,
unless `strict=True`. What was not lowered is logged, warned once per op, and
listed by `summary()` / `unlowered_ops`.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx as fx

from ..backends import Backend
from ..backends import load as load_backend
from ..egraph.saturate import Limits
from ..graph import Graph
from ..lower import lower
from .common import Signature, UnsupportedOp
from .exporter import export_graph
from .importer import import_graph
from .partition import assemble, plan, segment_module

log = logging.getLogger("egraph_lower.torch")


@dataclass
class GraphRecord:
    """What happened to one FX graph handed to the backend."""

    name: str
    kind: str  # "forward", "backward" or "inference"
    status: str  # "lowered", "partly lowered", "not lowered", "nothing to lower"
    lowered: int = 0  # format graphs lowered for it
    unlowered_ops: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)


class TorchBackend:
    """The callable handed to `torch.compile(backend=...)`; keeps a summary of what it lowered."""

    def __init__(self, target: str | Backend, record: list[Graph] | None = None, *,
                 limits: Limits | None = None, partial: bool = True, strict: bool = False) -> None:
        from torch._dynamo.backends.common import aot_autograd

        self.target = load_backend(target)
        self.record = record
        self.limits = limits or Limits()
        self.partial = partial
        self.strict = strict
        self.graphs: list[GraphRecord] = []
        self._warned: set[str] = set()
        self._aot = aot_autograd(fw_compiler=self._compiler("forward"), bw_compiler=self._compiler("backward"),
                                 inference_compiler=self._compiler("inference"))

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
        lines = [f"egraph_lower torch backend for {self.target.name}: {len(self.graphs)} graphs"]
        for g in self.graphs:
            lines.append(f"  {g.name} ({g.kind}): {g.status}, {g.lowered} lowered graph(s)")
            lines += [f"    not lowered: {op} x{n}" for op, n in sorted(g.unlowered_ops.items())]
            lines += [f"    error: {e}" for e in g.errors]
        return "\n".join(lines)

    # ---- compiling
    def _compiler(self, kind: str) -> Callable[[fx.GraphModule, Sequence[Any]], Callable[..., Any]]:
        def compile_graph(gm: fx.GraphModule, example_inputs: Sequence[Any]) -> Callable[..., Any]:
            rec = GraphRecord(f"{kind}{sum(g.kind == kind for g in self.graphs)}", kind, "not lowered")
            self.graphs.append(rec)
            module = self._compile(gm, example_inputs, rec)
            return _boxed(module)

        return compile_graph

    def _compile(self, gm: fx.GraphModule, example_inputs: Sequence[Any], rec: GraphRecord) -> torch.nn.Module:
        device = next((x.device for x in example_inputs if isinstance(x, torch.Tensor)), None)
        try:
            imported = import_graph(gm, name=rec.name)
        except UnsupportedOp as e:
            if not self.partial:
                self._unlowered(rec, e.op, 1, e.reason)
                return gm
            return self._compile_parts(gm, rec, device)
        if not imported.graph.outputs:  # it only passes values through: nothing to lower
            rec.status = "nothing to lower"
            return export_graph(imported.graph, imported.signature)
        module = self._lower(imported.graph, rec, rec.name, imported.signature)
        if module is None:
            return gm
        rec.status = "lowered"
        return module.to(device) if device is not None else module

    def _compile_parts(self, gm: fx.GraphModule, rec: GraphRecord, device: torch.device | None) -> torch.nn.Module:
        items, refused = plan(gm)
        for op, whys in refused.items():
            self._unlowered(rec, op, len(whys), whys[0].reason)
        segments = [i for i in items if not isinstance(i, fx.Node)]
        for k, seg in enumerate(segments):
            sub = segment_module(gm, seg)
            seg.module = sub
            try:
                imported = import_graph(sub, name=f"{rec.name}.{k}")
            except UnsupportedOp as e:  # a node that maps alone but not in context
                self._unlowered(rec, e.op, 1, e.reason)
                continue
            if not imported.graph.outputs:
                continue
            lowered = self._lower(imported.graph, rec, imported.graph.name or "", imported.signature)
            if lowered is not None:
                seg.module = lowered.to(device) if device is not None else lowered
        rec.status = "partly lowered" if rec.lowered else "not lowered"
        return assemble(gm, items)

    def _lower(self, graph: Graph, rec: GraphRecord, name: str, signature: Signature) -> fx.GraphModule | None:
        """`graph` lowered for the target and exported, or None (logged) when the lowering fails."""
        try:
            result = lower(graph, self.target, limits=self.limits)
        except Exception as e:  # a lowering failure: run the graph as it is, unless strict
            if self.strict:
                raise
            msg = f"{name}: lowering for {self.target.name} failed: {e}"
            rec.errors.append(msg)
            log.warning(msg)
            warnings.warn(msg, RuntimeWarning, stacklevel=1)
            return None
        if self.record is not None:
            self.record.append(result.graph)
        rec.lowered += 1
        return export_graph(result.graph, signature)

    def _unlowered(self, rec: GraphRecord, op: str, n: int, why: str) -> None:
        if self.strict:
            raise UnsupportedOp(op, why)
        rec.unlowered_ops[op] = rec.unlowered_ops.get(op, 0) + n
        log.info("%s: %s runs in PyTorch, not lowered (%s)", rec.name, op, why)
        if op not in self._warned:
            self._warned.add(op)
            warnings.warn(f"egraph_lower: {op} is not lowered, it runs in PyTorch: {why}", RuntimeWarning,
                          stacklevel=1)


def _boxed(module: Callable[..., Any]) -> Callable[..., Any]:
    """AOTAutograd's calling convention: one list of arguments, cleared as it is consumed."""

    def run(args: list[Any]) -> Any:
        values = list(args)
        args.clear()
        return module(*values)

    run._boxed_call = True  # type: ignore[attr-defined]
    return run


def backend(target: str | Backend, *, record: list[Graph] | None = None, limits: Limits | None = None,
            partial: bool = True, strict: bool = False) -> TorchBackend:
    """A torch.compile backend lowering every forward and backward graph for `target`.

    `record`: each lowered graph (an egraph_lower `Graph`) is appended to it.
    `partial`: split graphs around ops outside the mapping (else run such graphs whole).
    `strict`: raise on an unmapped op or a failed lowering instead of running it unlowered.
    """
    return TorchBackend(target, record, limits=limits, partial=partial, strict=strict)
