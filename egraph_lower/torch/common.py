"""What the importer, the exporter and the backend share: dtypes, the error, the calling convention."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import torch

from ..errors import LowerError
from ..graph import Graph

TORCH_TO_FORMAT: dict[torch.dtype, str] = {
    torch.float32: "f32",
    torch.float16: "f16",
    torch.bfloat16: "bf16",
    torch.float64: "f64",
    torch.int32: "i32",
    torch.int64: "i64",
    torch.bool: "bool",
}
FORMAT_TO_TORCH: dict[str, torch.dtype] = {v: k for k, v in TORCH_TO_FORMAT.items()}
# the dtype of an empty workspace no format op reads (batch norm's reserve): uint8, which the format lacks
WORKSPACE = "u8"


class UnsupportedOp(LowerError):
    """An FX node the importer cannot map onto the format with the same meaning.

    `op` names the aten op (`aten.lgamma.default`), `node` the FX node's name;
    the message says why. The caller decides: the torch.compile backend runs
    such graphs (or the ops) in PyTorch as they are.
    """

    def __init__(self, op: str, reason: str, node: str | None = None) -> None:
        self.op = op
        self.node = node
        self.reason = reason
        where = f" (node {node})" if node else ""
        super().__init__(f"unsupported op {op}{where}: {reason}")


def format_dtype(dtype: torch.dtype, op: str = "dtype", node: str | None = None) -> str:
    try:
        return TORCH_TO_FORMAT[dtype]
    except KeyError:
        known = ", ".join(str(d).removeprefix("torch.") for d in TORCH_TO_FORMAT)
        raise UnsupportedOp(op, f"dtype {dtype} is not in the format (it has {known})", node) from None


@dataclass(frozen=True)
class Slot:
    """One value a graph module returns.

    kind `output`: `graph.outputs[index]`; `input`: the module's `index`-th argument passed
    through unchanged (identity kept); `none`: None; `empty`: a fresh empty tensor of
    `shape` and `dtype` (the unused statistics of eval-mode batch norm).

    What the FX graph promised of an `output` (None and False for a graph made any other way):
    `stride`, the strides of its value (its memory format), which the exported module gives it;
    `private`, that its value shares storage with no argument and no other result (not a view),
    so the module never returns an argument, a constant's buffer or another result for it.
    """

    kind: Literal["output", "input", "none", "empty"]
    index: int = -1
    shape: tuple[int, ...] = ()
    dtype: str = "f32"
    stride: tuple[int, ...] | None = None
    private: bool = False


@dataclass(frozen=True)
class Mask:
    """A random tensor the exported module draws before it computes anything, the `Input` `name`:
    by `kind`, a dropout mask (bool), drawn as eager's `native_dropout` does,
    `empty(shape, dtype).bernoulli_(1 - p)`; or eager's `torch.rand` ("uniform") or `torch.randn`
    ("normal") of `shape` and `dtype` (the Input's dtype) on `device` (the aten call's; None: the
    first tensor argument's), `p` unused."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    p: float = 0.0
    kind: Literal["bernoulli", "uniform", "normal"] = "bernoulli"
    device: str | None = None


@dataclass(frozen=True)
class Signature:
    """How a graph module is called: its arguments (by the format's Input names) and results."""

    inputs: tuple[str, ...]
    outputs: tuple[Slot, ...]
    returns_tuple: bool = True
    masks: tuple[Mask, ...] = ()  # Inputs the module draws itself, in this order (dropout masks, rand)

    @staticmethod
    def of(graph: Graph) -> Signature:
        """The default: every Input/Param in graph order, then every graph output."""
        names = tuple(dict.fromkeys(n.attrs["name"] for n in graph.nodes if n.op in ("Input", "Param")))
        return Signature(names, tuple(Slot("output", i) for i in range(len(graph.outputs))))


@dataclass
class Imported:
    """An FX graph as a format graph, with the calling convention to export it back."""

    graph: Graph
    signature: Signature
    aten_ops: dict[str, int] = field(default_factory=dict)  # aten op -> how many nodes were mapped
