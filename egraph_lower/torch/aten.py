"""The aten ops the importer maps, each onto format ops with the same meaning.

Every handler takes the import `Context` and the call's arguments by schema name
and returns the node id of the result (a tuple for multi-result ops). Operands are
cast to the result's dtype first (torch computes in the promoted dtype); a Python
scalar becomes a scalar `Constant` of that dtype, rounded to it.

Decisions (checked against torch's kernels; see docs/torch.md):
- `threshold_backward(grad, x, 0)` is `ReluBackward(x, grad)`; another threshold t is
  `where(x <= t, 0, grad)` (torch's kernel, exactly). ReluBackward differs from
  torch only where x is NaN: torch passes grad through there, the format gives 0.
- `sigmoid_backward` and `tanh_backward` take the forward output:
  `ActivationBackward{Sigmoid|Tanh, wrt: output}(y, grad)`, exact.
- `elu`, `softplus`, `leaky_relu`, `hardtanh` and their backward ops, `log_sigmoid`,
  `sgn`, slicing, selecting and `cat`: `aten_acts.py`.
- `hardsigmoid_backward`: torch's gradient is grad/6 on the open interval (-3, 3),
  0 at +-3 (checked), the format's convention exactly. `hardswish_backward`: torch
  gives 0 for x <= -3, x/3 + 1/2 inside, 1 for x >= 3 (checked), again the format's.
- Layer norm and batch norm: `aten_norm.py`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import torch

from ..dtypes import FLOAT_DTYPES
from .context import MAX_CONSTANT_ELEMENTS, Context
from .registry import HANDLERS, Handler, handles




# --------------------------------------------------------------------------- identity, casts, constants

@handles("clone.default", "detach.default", "alias.default", "lift_fresh_copy.default")
def _identity(ctx: Context, a: dict[str, Any]) -> int:
    return ctx.t(a["self"])


@handles("_to_copy.default")
def _to_copy(ctx: Context, a: dict[str, Any]) -> int:
    x = a["self"]
    if a["device"] is not None and torch.device(a["device"]) != ctx.val(x).device:
        raise ctx.refuse(f"a copy to another device ({a['device']})")
    return ctx.cast(ctx.t(x), ctx.out_dtype())


def _convert_element_type(ctx: Context, a: dict[str, Any]) -> int:
    return ctx.cast(ctx.t(a["a"]), ctx.out_dtype())


HANDLERS["prims.convert_element_type.default"] = _convert_element_type


def _filled(value: Callable[[dict[str, Any]], Any]) -> Handler:
    def handler(ctx: Context, a: dict[str, Any]) -> int:
        shape, dtype = ctx.out()
        return ctx.const(value(a), dtype, shape)

    return handler


_FILLS: tuple[tuple[tuple[str, ...], Callable[[dict[str, Any]], Any]], ...] = (
    (("ones_like.default", "ones.default", "new_ones.default"), lambda a: 1),
    (("zeros_like.default", "zeros.default", "new_zeros.default"), lambda a: 0),
    (("full_like.default", "full.default", "new_full.default"), lambda a: a["fill_value"]),
    (("scalar_tensor.default",), lambda a: a["s"]),
    (("fill.Scalar",), lambda a: a["value"]),
)
for _fill_names, _value in _FILLS:
    handles(*_fill_names)(_filled(_value))


def get_attr(ctx: Context, value: Any) -> int:
    """A tensor held by the module (a constant of the graph)."""
    if not isinstance(value, torch.Tensor):
        raise ctx.refuse(f"get_attr of a {type(value).__name__}, not a tensor")
    shape, dtype = ctx.meta_of(value)
    if value.numel() > MAX_CONSTANT_ELEMENTS:
        raise ctx.refuse(f"a constant tensor of {value.numel()} elements (at most {MAX_CONSTANT_ELEMENTS})")
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    with unset_fake_temporarily():  # AOTAutograd compiles under a FakeTensorMode; the module's tensor is real
        data = value.detach().cpu()
        odd = None  # the non-finite values, 0 elsewhere
        if dtype in FLOAT_DTYPES:
            data = data.double()
            finite = torch.isfinite(data)
            if not bool(finite.all()):
                odd, data = data.where(~finite, 0.0), data.where(finite, 0.0)
        values = data.tolist()
    out = ctx.add("Constant", (), {"value": values}, shape, dtype)
    if odd is not None:  # the JSON holds finite numbers: each kind of non-finite value put where it is
        for v in (-math.inf, math.inf, math.nan):
            at = odd.isnan() if math.isnan(v) else odd == v
            if bool(at.any()):
                where = ctx.add("Constant", (), {"value": at.tolist()}, shape, "bool")
                out = ctx.add("Where", (where, ctx.non_finite(v, dtype), out))
    return out


# --------------------------------------------------------------------------- elementwise arithmetic

def _promoted(ctx: Context, first: Any, second: Any) -> str:
    """The dtype torch compares in: `torch.result_type` of the operands (0-d tensors count as such)."""
    probes: list[Any] = []
    for arg in (first, second):
        v = ctx.val(arg)
        if isinstance(v, torch.Tensor):
            probes.append(torch.empty((1,) if v.dim() else (), dtype=v.dtype, device="meta"))
        else:
            probes.append(torch.tensor(ctx.scalar(v)) if not probes else ctx.scalar(v))
    return ctx.format_dtype(torch.result_type(probes[0], probes[1]))


# torch's mul, add, maximum and minimum of bool tensors: and, or (format version 3's And and Or)
_BOOL_ARITHMETIC = {"Mul": "And", "Add": "Or", "Max": "Or", "Min": "And"}


def _binary(op: str, first: str = "self", second: str = "other", reverse: bool = False) -> Handler:
    def handler(ctx: Context, a: dict[str, Any]) -> int:
        dt = ctx.out_dtype()
        x, y = ctx.operand(a[first], dt), ctx.operand(a[second], dt)
        alpha = a.get("alpha", 1)
        if reverse:  # rsub: other - alpha * self
            x, y = y, x
            if alpha != 1:
                y = ctx.add("Binary", (y, ctx.const(alpha, dt)), {"op": "Mul"})
        elif alpha is not None and alpha != 1:
            y = ctx.add("Binary", (y, ctx.const(alpha, dt)), {"op": "Mul"})
        if dt == "bool" and op in _BOOL_ARITHMETIC:  # torch's arithmetic on bool is logical
            return ctx.add("Binary", (x, y), {"op": _BOOL_ARITHMETIC[op]})
        return ctx.add("Binary", (x, y), {"op": op})

    return handler


_BINARY_OPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Add", ("add.Tensor", "add.Scalar")),
    ("Sub", ("sub.Tensor", "sub.Scalar")),
    ("Mul", ("mul.Tensor", "mul.Scalar")),
    ("Div", ("div.Tensor", "div.Scalar", "true_divide.Tensor")),  # true_divide: div's alias (dynamic shapes trace it)
    ("Max", ("maximum.default",)),
    ("Min", ("minimum.default",)),
    ("Pow", ("pow.Tensor_Scalar", "pow.Tensor_Tensor")),
)
for _op, _names in _BINARY_OPS:
    handles(*_names)(_binary(_op, second="exponent" if _op == "Pow" else "other"))
handles("rsub.Tensor", "rsub.Scalar")(_binary("Sub", reverse=True))
handles("pow.Scalar")(_binary("Pow", first="self", second="exponent"))


@handles("div.Tensor_mode", "div.Scalar_mode")
def _div_mode(ctx: Context, a: dict[str, Any]) -> int:
    """None: Div; 'floor': FloorDiv; 'trunc': Div on integers (it truncates), Trunc of Div on floats
    (torch's trunc(a / b), the quotient rounded first: aten_math.py)."""
    mode = a["rounding_mode"]
    if mode == "floor":
        return _binary("FloorDiv")(ctx, a)
    if mode == "trunc" and ctx.out_dtype() in FLOAT_DTYPES:
        return ctx.add("Activation", (_binary("Div")(ctx, a),), {"kind": "Trunc"})
    if mode is not None and not (mode == "trunc" and ctx.out_dtype() in ("i32", "i64")):
        raise ctx.refuse(f"rounding_mode={mode!r}")
    return _binary("Div")(ctx, a)


_COMPARE = {"eq": "Eq", "ne": "Ne", "lt": "Lt", "le": "Le", "gt": "Gt", "ge": "Ge"}


def _compare(op: str) -> Handler:
    def handler(ctx: Context, a: dict[str, Any]) -> int:
        dt = _promoted(ctx, a["self"], a["other"])
        return ctx.add("Compare", (ctx.operand(a["self"], dt), ctx.operand(a["other"], dt)), {"op": op})

    return handler


for _name, _op in _COMPARE.items():
    handles(f"{_name}.Tensor", f"{_name}.Scalar")(_compare(_op))


@handles("where.self", "where.ScalarSelf", "where.ScalarOther", "where.Scalar")
def _where(ctx: Context, a: dict[str, Any]) -> int:
    dt = ctx.out_dtype()
    cond = ctx.cast(ctx.t(a["condition"]), "bool")
    return ctx.add("Where", (cond, ctx.operand(a["self"], dt), ctx.operand(a["other"], dt)))


# --------------------------------------------------------------------------- activations

_UNARY = {
    "relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh", "silu": "Silu", "hardswish": "HardSwish",
    "hardsigmoid": "HardSigmoid", "mish": "Mish", "neg": "Neg", "exp": "Exp", "log": "Log", "sqrt": "Sqrt",
    "rsqrt": "Rsqrt", "abs": "Abs", "sin": "Sin", "cos": "Cos", "tan": "Tan", "atan": "Atan",
    "reciprocal": "Recip", "round": "Round", "floor": "Floor", "ceil": "Ceil", "sign": "Sign", "erf": "Erf",
}


def _activation(kind: str | None) -> Handler:
    def handler(ctx: Context, a: dict[str, Any]) -> int:
        k = kind or {"none": "Gelu", "tanh": "GeluApprox"}[a["approximate"]]
        return ctx.add("Activation", (ctx.cast(ctx.t(a["self"]), ctx.out_dtype()),), {"kind": k})

    return handler


for _name, _kind in _UNARY.items():
    handles(f"{_name}.default")(_activation(_kind))
handles("gelu.default")(_activation(None))


# --------------------------------------------------------------------------- activation gradients

def _grad(ctx: Context, kind: str, x_arg: Any, dy_arg: Any, wrt: str = "input",
          params: dict[str, float] | None = None) -> int:
    shape, dt = ctx.out()
    if dt not in FLOAT_DTYPES:
        raise ctx.refuse(f"a gradient of dtype {dt} (the format's gradients are float)")
    x = ctx.expand(ctx.cast(ctx.t(x_arg), dt), shape)
    dy = ctx.expand(ctx.cast(ctx.t(dy_arg), dt), shape)
    attrs: dict[str, Any] = {"kind": kind}
    if wrt != "input":
        attrs["wrt"] = wrt
    attrs.update(params or {})  # a parametrised kind's parameters (aten_acts.py)
    return ctx.add("ActivationBackward", (x, dy), attrs)


def _grad_of(kind: str, x: str = "self", wrt: str = "input") -> Handler:
    return lambda ctx, a: _grad(ctx, kind, a[x], a["grad_output"], wrt)


handles("sigmoid_backward.default")(_grad_of("Sigmoid", "output", "output"))
handles("tanh_backward.default")(_grad_of("Tanh", "output", "output"))
handles("silu_backward.default")(_grad_of("Silu"))
handles("hardswish_backward.default")(_grad_of("HardSwish"))
handles("hardsigmoid_backward.default")(_grad_of("HardSigmoid"))
handles("mish_backward.default")(_grad_of("Mish"))


@handles("gelu_backward.default")
def _gelu_backward(ctx: Context, a: dict[str, Any]) -> int:
    kind = {"none": "Gelu", "tanh": "GeluApprox"}[a["approximate"]]
    return _grad(ctx, kind, a["self"], a["grad_output"])


@handles("threshold_backward.default")
def _threshold_backward(ctx: Context, a: dict[str, Any]) -> int:
    shape, dt = ctx.out()
    threshold = ctx.scalar(a["threshold"])
    if threshold == 0 and dt in FLOAT_DTYPES:
        x = ctx.expand(ctx.cast(ctx.t(a["self"]), dt), shape)
        dy = ctx.expand(ctx.cast(ctx.t(a["grad_output"]), dt), shape)
        return ctx.add("ReluBackward", (x, dy))
    x = ctx.t(a["self"])  # torch's kernel: x <= t ? 0 : grad (grad where x is nan)
    at_most = ctx.add("Compare", (x, ctx.const(threshold, ctx.dtype(x))), {"op": "Le"})
    return ctx.add("Where", (at_most, ctx.const(0, dt), ctx.operand(a["grad_output"], dt)))


# --------------------------------------------------------------------------- shapes and reductions

def _same_or(op: str, attrs: Callable[[Context, int, tuple[int, ...]], dict[str, Any]]) -> Handler:
    def handler(ctx: Context, a: dict[str, Any]) -> int:
        x = ctx.cast(ctx.t(a["self"]), ctx.out_dtype())
        shape = ctx.out()[0]
        if op != "Transpose" and ctx.shape(x) == shape:
            return x
        at = attrs(ctx, x, shape)
        if op == "Transpose" and at["perm"] == sorted(at["perm"]):
            return x
        return ctx.add(op, (x,), at)

    return handler


handles("view.default", "reshape.default", "_unsafe_view.default", "squeeze.default", "squeeze.dim",
        "squeeze.dims", "unsqueeze.default")(_same_or("Reshape", lambda c, x, s: {"shape": list(s)}))
handles("expand.default")(_same_or("Expand", lambda c, x, s: {"shape": list(s)}))


def _perm(ctx: Context, x: int, dims: Sequence[int]) -> list[int]:
    rank = len(ctx.shape(x))
    return [d % rank if rank else 0 for d in dims]


def _transpose_perm(ctx: Context, x: int, d0: int, d1: int) -> dict[str, Any]:
    perm = list(range(len(ctx.shape(x))))
    if not perm:  # a 0-d tensor: aten takes dims 0 and -1 there, and it is its own transpose
        return {"perm": perm}
    i, j = _perm(ctx, x, (d0, d1))
    perm[i], perm[j] = perm[j], perm[i]
    return {"perm": perm}


handles("t.default")(_same_or("Transpose", lambda c, x, s: {"perm": list(range(len(s)))[::-1]}))
HANDLERS["aten.permute.default"] = lambda ctx, a: _same_or(
    "Transpose", lambda c, x, s: {"perm": _perm(c, x, a["dims"])})(ctx, a)
HANDLERS["aten.transpose.int"] = lambda ctx, a: _same_or(
    "Transpose", lambda c, x, s: _transpose_perm(c, x, a["dim0"], a["dim1"]))(ctx, a)


def _reduce(op: str, dims_key: str | None) -> Handler:
    def handler(ctx: Context, a: dict[str, Any]) -> int:
        x = ctx.cast(ctx.t(a["self"]), ctx.out_dtype())
        rank = len(ctx.shape(x))
        dims = a.get(dims_key) if dims_key else None
        axes = sorted({d % rank for d in dims}) if dims and rank else list(range(rank))
        if not axes:
            return x
        return ctx.add("Reduce", (x,), {"op": op, "axes": axes, "keep_dim": bool(a.get("keepdim", False))})

    return handler


handles("sum.dim_IntList")(_reduce("Sum", "dim"))
handles("sum.default")(_reduce("Sum", None))
handles("mean.dim")(_reduce("Mean", "dim"))
handles("mean.default")(_reduce("Mean", None))
handles("amax.default")(_reduce("Max", "dim"))
handles("amin.default")(_reduce("Min", "dim"))
handles("all.default")(_reduce("Min", None))  # on bool, Reduce Min is all and Max is any
handles("any.default")(_reduce("Max", None))


# --------------------------------------------------------------------------- matrix products

@handles("mm.default", "bmm.default")
def _mm(ctx: Context, a: dict[str, Any]) -> int:
    dt = ctx.out_dtype()
    return ctx.add("MatMul", (ctx.cast(ctx.t(a["self"]), dt), ctx.cast(ctx.t(a["mat2"]), dt)))


@handles("addmm.default")
def _addmm(ctx: Context, a: dict[str, Any]) -> int:
    """beta * self + alpha * (mat1 @ mat2): MatMul + Add (scaled when alpha, beta are not 1)."""
    dt = ctx.out_dtype()
    prod = ctx.add("MatMul", (ctx.cast(ctx.t(a["mat1"]), dt), ctx.cast(ctx.t(a["mat2"]), dt)))
    if a["alpha"] != 1:
        prod = ctx.add("Binary", (prod, ctx.const(a["alpha"], dt)), {"op": "Mul"})
    if a["beta"] == 0:  # torch ignores self then, nan and inf included
        return prod
    bias = ctx.cast(ctx.t(a["self"]), dt)
    if a["beta"] != 1:
        bias = ctx.add("Binary", (bias, ctx.const(a["beta"], dt)), {"op": "Mul"})
    return ctx.add("Binary", (prod, bias), {"op": "Add"})

