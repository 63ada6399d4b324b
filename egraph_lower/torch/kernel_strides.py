"""The strides PyTorch's real kernels give where its fake kernels state others.

The FX graph's `meta["val"]` comes from fake kernels, and the contract (`contract.py`) gives
each result of a lowered piece those strides. Where a fake kernel states a layout the
real one does not produce, eager (and `aot_eager`, which runs the real kernels) has other
strides than the meta: the lowered piece would then return, and the PyTorch code after
it (an `as_strided`, a result the user sees) would read, another layout than eager's.

Batch norm is such a kernel (checked on CPU, `tests/test_torch_contract.py`): its real
kernels, forward and backward, make their result contiguous in the input's suggested
memory format (channels_last or contiguous), while its fake kernel gives the result of a
permuted input (a transposed 2-D or 3-D input, a 4-D one neither contiguous nor
channels_last) that input's strides, and the backward's result grad_out's.

`restate(gm)` finds those nodes, asks the real kernel for its strides (it runs once, on
zeros of the node's input layouts), and propagates the meta again from them with the
fake kernels, so every value after them carries the layout eager gives it. A graph
without such a node is left as it is.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.fx as fx

aten = torch.ops.aten

# the ops whose fake kernel states the layout of result 0 otherwise than the real kernel
MISSTATED = frozenset((
    aten._native_batch_norm_legit_no_training.default,
    aten._native_batch_norm_legit.default,
    aten._native_batch_norm_legit.no_stats,
    aten._native_batch_norm_legit_functional.default,
    aten.native_batch_norm.default,
    aten.native_batch_norm_backward.default,
))


def _real(x: Any) -> Any:
    """A real tensor of a fake one's shape, strides, offset, dtype and device (zeros); anything else as it is."""
    if not isinstance(x, torch.Tensor):
        return x
    extent = 0 if x.numel() == 0 else 1 + sum((n - 1) * s for n, s in zip(x.shape, x.stride()))
    memory = torch.zeros(x.storage_offset() + extent, dtype=x.dtype, device=x.device)
    return memory.as_strided(x.shape, x.stride(), x.storage_offset())


def _real_stride(node: fx.Node) -> tuple[int, ...] | None:
    """Result 0's strides as the real kernel gives them (None: it has no tensor there)."""
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    args, kwargs = fx.node.map_aggregate((node.args, node.kwargs),
                                         lambda a: a.meta.get("val") if isinstance(a, fx.Node) else a)
    with unset_fake_temporarily(), torch.no_grad():
        real_args, real_kwargs = fx.node.map_aggregate((args, kwargs), _real)
        out = node.target(*real_args, **real_kwargs)  # type: ignore[operator]
    first = out[0] if isinstance(out, (tuple, list)) else out
    return tuple(first.stride()) if isinstance(first, torch.Tensor) else None


def _stated(node: fx.Node) -> torch.Tensor | None:
    val = node.meta.get("val")
    first = val[0] if isinstance(val, (tuple, list)) else val
    return first if isinstance(first, torch.Tensor) else None


def misstated(gm: fx.GraphModule) -> dict[fx.Node, tuple[int, ...]]:
    """The nodes whose meta states result 0's strides otherwise than the real kernel, with the real ones."""
    out: dict[fx.Node, tuple[int, ...]] = {}
    for node in gm.graph.nodes:
        if node.op != "call_function" or node.target not in MISSTATED:
            continue
        stated = _stated(node)
        if stated is None or stated.numel() <= 1:
            continue
        real = _real_stride(node)
        if real is not None and real != tuple(stated.stride()):
            out[node] = real
    return out


def restate(gm: fx.GraphModule) -> bool:
    """Give the nodes `misstated` finds their real kernel's strides, and every value after them the
    meta the fake kernels propagate from there (True: the meta changed)."""
    from torch._guards import detect_fake_mode

    wrong = misstated(gm)
    if not wrong:
        return False
    placeholders = [n.meta.get("val") for n in gm.graph.nodes if n.op == "placeholder"]
    mode = detect_fake_mode(placeholders)
    if mode is None:
        return False
    _Restate(gm, wrong, mode).run(*placeholders)
    return True


class _Restate(fx.Interpreter):
    """The fake kernels over the graph, each misstated result restrided as its real kernel lays it out."""

    def __init__(self, gm: fx.GraphModule, wrong: dict[fx.Node, tuple[int, ...]], mode: Any) -> None:
        super().__init__(gm)
        self.wrong = wrong
        self.mode = mode

    def run_node(self, n: fx.Node) -> Any:
        if n.op == "placeholder":
            return super().run_node(n)
        with self.mode:
            out = super().run_node(n)
            if n in self.wrong:
                out = _restrided(out, self.wrong[n])
        if n.op != "output":
            n.meta["val"] = out
        return out

    def get_attr(self, target: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        value = super().get_attr(target, args, kwargs)
        return self.mode.from_tensor(value) if isinstance(value, torch.Tensor) else value


def _restrided(out: Any, stride: tuple[int, ...]) -> Any:
    first = out[0] if isinstance(out, (tuple, list)) else out
    new = torch.empty_strided(first.shape, stride, dtype=first.dtype, device=first.device)
    return (new, *out[1:]) if isinstance(out, (tuple, list)) else new
