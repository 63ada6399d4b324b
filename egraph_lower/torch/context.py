"""What an aten handler works with: the import `Context` (the graph being built, the FX node at
hand, its values' shapes and dtypes) and the values it hands back (`Empty`). The handlers
(`aten*.py`) and the importer (`importer.py`) both build on it, and it on neither.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

import torch
import torch.fx as fx

from ..build import GraphBuilder
from ..dtypes import INT_DTYPES, round_to
from ..errors import GraphError
from .common import WORKSPACE, Mask, UnsupportedOp, format_dtype

MAX_CONSTANT_ELEMENTS = 1 << 16  # a get_attr tensor larger than this is refused (it would bloat the JSON)


class Empty:
    """A value the importer does not compute: a fresh empty tensor (eval-mode batch norm's statistics).
    `dtype` is a format dtype or WORKSPACE, the uint8 of an empty workspace no format op reads (batch
    norm's reserve)."""

    def __init__(self, shape: tuple[int, ...], dtype: str) -> None:
        self.shape = shape
        self.dtype = dtype


def workspace(value: Any) -> Empty | None:
    """An empty uint8 tensor (batch norm's reserve, which `_batch_norm_with_update` returns and
    `batch_norm_backward` ignores) as an Empty: the format has no uint8, and no op of it reads one."""
    if isinstance(value, torch.Tensor) and value.dtype == torch.uint8 and value.numel() == 0 \
            and all(isinstance(d, int) for d in value.shape):
        return Empty(tuple(value.shape), WORKSPACE)
    return None


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
        self.masks: list[Mask] = []  # dropout masks and rand/randn the exported module draws, in graph order

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
        return shape, self.format_dtype(value.dtype)

    def format_dtype(self, dtype: torch.dtype) -> str:
        """`dtype`'s name in the format; refused, naming the current node, when the format has none."""
        return format_dtype(dtype, op_name(self.node) if self.node else "dtype", self.node.name if self.node else None)

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
        """A Constant of `dtype` (a Python scalar is rounded to the dtype first, as torch does); an
        infinite or NaN float as `non_finite` writes it."""
        v = self.scalar(value)
        if isinstance(v, float) and not math.isfinite(v):
            if dtype in INT_DTYPES or dtype == "bool":
                raise self.refuse(f"constant {v} is not finite ({dtype})")
            return self.non_finite(v, dtype, shape)
        if dtype in INT_DTYPES and isinstance(v, float) and v != int(v):
            raise self.refuse(f"constant {v} is not an integer ({dtype})")
        return self.add("Constant", (), {"value": round_to(v, dtype)}, shape, dtype)

    def non_finite(self, v: float, dtype: str, shape: Sequence[int] = ()) -> int:
        """-inf, +inf or nan of a float dtype, which the format's JSON cannot hold: as the format says a
        producer writes them, `Log` of a Constant 0 (-inf), its `Neg` (+inf), `Log` of -1 (nan)."""
        log = self.add("Activation", (self.add("Constant", (), {"value": -1.0 if math.isnan(v) else 0.0}, shape, dtype),),
                       {"kind": "Log"})
        return self.add("Activation", (log,), {"kind": "Neg"}) if v > 0 else log

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

    def random(self, kind: Literal["uniform", "normal"], shape: tuple[int, ...], dtype: str,
               device: str | None) -> int:
        """An Input of `dtype` the exported module draws as eager's `torch.rand` ("uniform") or
        `torch.randn` ("normal") of `shape` on `device` does (`Mask`)."""
        name = f"{self.node.name if self.node else kind}.{kind}"
        self.masks.append(Mask(name, shape, dtype, kind=kind, device=device))
        return self.b.add("Input", (), {"name": name}, shape, dtype)

    def add(self, op: str, inputs: Sequence[int] = (), attrs: dict[str, Any] | None = None,
            shape: Sequence[int] | None = None, dtype: str | None = None) -> int:
        try:
            return self.b.add(op, inputs, attrs, shape, dtype, name=self.node.name if self.node else None)
        except (ValueError, GraphError) as e:
            raise self.refuse(f"{op}: {e}") from None
