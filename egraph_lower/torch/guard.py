"""What keeps a training step running: lowered code that falls back to PyTorch's graph.

Two guards, one per level:

- `Guarded(lowered, original, on_failure)` is a lowered piece of a graph: it runs
  `lowered`; if that raises, `on_failure` is told (it warns and records, or raises under
  `strict`), and from then on `original` (the piece as PyTorch gave it) runs instead,
  starting with the call that failed.
- `boxed_graph(module, original, on_failure)` is what the backend hands AOTAutograd for a
  whole graph: on the graph's first call it keeps the arguments and the random number
  generator's state, so that if anything in the call raises (a lowered piece, or PyTorch
  code after one, failing on what the piece returned), the whole graph as PyTorch gave it
  runs instead, from the start of the call, drawing the random numbers eager would; and
  it does so on every later call too once it has failed. Once a call has succeeded, later
  calls pass the arguments through (AOTAutograd's boxed convention: each is freed after its
  last use, as under `aot_eager`), so a step holds no more memory than PyTorch's graph
  does. A graph is compiled for fixed shapes and strides (dynamo guards them) and the
  kernels' failures depend on those, not on values, so a graph that ran once runs the same
  way on every later call; a lowered piece that still fails later falls back by `Guarded`.

Re-running is safe because the graphs are pure: AOTAutograd hands the backend functional
graphs (no op writes to its inputs: `keep_inference_input_mutations=False` makes it return
a mutated input's new value, which it copies in itself after the graph returns), so the
failed attempt changed nothing the original reads.

`symbolic_reason(gm, example_inputs)` says why a graph has symbolic sizes (None when it
has none): the backend lowers such a graph per concrete shape as it runs
(`specialise.PerShape`), each specialisation behind `first_call_guard`, the same guard
of its first call as a static graph's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.fx as fx

Boxed = Callable[[list[Any]], Any]


class Guarded(torch.nn.Module):
    """`lowered`, replaced by `original` for good after the first exception it raises.

    `draws`: whether the piece draws random numbers (dropout masks); then the generator's
    state is kept before each call, so that the original draws the same numbers."""

    def __init__(self, lowered: torch.nn.Module, original: torch.nn.Module,
                 on_failure: Callable[[BaseException], None], draws: bool = False) -> None:
        super().__init__()
        self.lowered = lowered
        self.original = original
        self._on_failure = on_failure
        self._failed = False
        self._draws = draws

    def forward(self, *args: Any) -> Any:
        if self._failed:
            return self.original(*args)
        state = torch.random.get_rng_state() if self._draws else None
        try:
            return self.lowered(*args)
        except Exception as e:
            self._on_failure(e)  # raises under strict
            self._failed = True
            if state is not None:
                torch.random.set_rng_state(state)
            return self.original(*args)


def boxed(module: Callable[..., Any]) -> Boxed:
    """`module` in AOTAutograd's calling convention: one list of arguments, cleared as it is consumed.

    A GraphModule gets the boxed code generation `aot_eager` gives it (it takes the list
    and frees each argument after its last use); any other module, a wrapper."""
    if isinstance(module, fx.GraphModule):
        from torch.fx.graph import _BoxedCodeGen

        if not isinstance(module.graph._codegen, _BoxedCodeGen):  # else made so (`export_graph(boxed=True)`)
            module.graph.set_codegen(_BoxedCodeGen())
            module.recompile()
        forward = module.forward

        def run_boxed(args: list[Any]) -> Any:
            return forward(args)

        run_boxed._boxed_call = True  # type: ignore[attr-defined]
        return run_boxed

    def run(args: list[Any]) -> Any:
        values = list(args)
        args.clear()
        return module(*values)

    run._boxed_call = True  # type: ignore[attr-defined]
    return run


def boxed_graph(module: Callable[..., Any], original: fx.GraphModule,
                on_failure: Callable[[BaseException], None]) -> Boxed:
    """The graph AOTAutograd calls: `module` (boxed), falling back to `original` from the start of a
    call if anything in its first call raises (see the module's docstring); `original` alone when
    nothing was lowered."""
    run_original = boxed(original)
    if module is original:
        return run_original
    return first_call_guard(boxed(module), run_original, on_failure)


def first_call_guard(run_lowered: Boxed, run_original: Boxed, on_failure: Callable[[BaseException], None]) -> Boxed:
    """`run_lowered`, falling back to `run_original` from the start of a call if anything in its first
    call raises, and for good after that (see the module's docstring). Both boxed."""
    state = {"first": True, "failed": False}

    def run(args: list[Any]) -> Any:
        if state["failed"]:
            return run_original(args)
        if not state["first"]:
            return run_lowered(args)
        values = list(args)
        args.clear()
        rng = torch.random.get_rng_state()
        try:
            out = run_lowered(list(values))
        except Exception as e:
            on_failure(e)  # raises under strict
            state["failed"] = True
            torch.random.set_rng_state(rng)
            return run_original(values)
        state["first"] = False
        return out

    run._boxed_call = True  # type: ignore[attr-defined]
    return run


def _symbolic(value: Any) -> bool:
    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return True
    if isinstance(value, torch.Tensor):
        return any(not isinstance(d, int) for d in value.shape)
    return False


def symbolic_reason(gm: fx.GraphModule, example_inputs: Sequence[Any]) -> str | None:
    """Why `gm` has symbolic sizes (a placeholder or an input that is a SymInt, or a symbolic shape)."""
    for node in gm.graph.nodes:
        if node.op != "placeholder":
            continue
        if _symbolic(node.meta.get("val")):
            return f"placeholder {node.name} has symbolic sizes (the format's shapes are concrete)"
    for k, x in enumerate(example_inputs):
        if _symbolic(x):
            return f"input {k} has symbolic sizes (the format's shapes are concrete)"
    return None
