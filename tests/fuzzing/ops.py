"""The layers a fuzzed forward is built from: each takes the value it is given (and what else the
builder holds), draws its parameters with hypothesis and writes one or a few lines.

`OPS` lists them simplest first (hypothesis shrinks towards the front). Each says which values it
applies to, whether it is smooth (half-precision programs use only smooth ops: a kink, a
comparison, a max or a rounding turns a one-ulp difference into an O(1) one), and which mapped
aten ops it reaches, so that `KEEP` can cut the graph at them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from .program import Builder, Val

Draw = Callable[[st.SearchStrategy[Any]], Any]


@dataclass(frozen=True)
class Op:
    name: str
    applies: Callable[[Builder, Val], bool]
    emit: Callable[[Draw, Builder, Val], None]
    smooth: bool = True
    keep: tuple[str, ...] = ()  # mapped aten ops it reaches, candidates for keep_in_pytorch
    view: bool = False  # it makes a view and saves nothing: the value stays fresh for an in-place op


OPS: list[Op] = []


def op(name: str, applies: Callable[[Builder, Val], bool] = lambda b, v: True, smooth: bool = True,
       keep: tuple[str, ...] = (), view: bool = False) -> Callable[[Callable[[Draw, Builder, Val], None]], None]:
    def register(fn: Callable[[Draw, Builder, Val], None]) -> None:
        OPS.append(Op(name, applies, fn, smooth, keep, view))
    return register


def rank(lo: int, hi: int = 9) -> Callable[[Builder, Val], bool]:
    return lambda b, v: lo <= v.rank <= hi


def dim_of(draw: Draw, v: Val) -> int:
    return int(draw(st.integers(0, v.rank - 1)))


# ---- elementwise ------------------------------------------------------------------------------------
UNARY = [  # (expression, smooth)
    ("torch.relu({})", False), ("F.gelu({})", True), ("torch.tanh({})", True), ("torch.sigmoid({})", True),
    ("F.silu({})", True), ("F.gelu({}, approximate='tanh')", True), ("F.mish({})", True),
    ("F.softplus({})", True), ("F.elu({})", False), ("F.leaky_relu({}, 0.1)", False),
    ("F.hardswish({})", False), ("F.hardsigmoid({})", False), ("F.relu6({})", False),
    ("F.hardtanh({}, -0.5, 0.5)", False), ("F.logsigmoid({})", True), ("F.selu({})", False),
    ("torch.sin({})", True), ("torch.cos({})", True), ("torch.atan({})", True), ("torch.erf({})", True),
    ("({} * 0.5 + 1.0)", True), ("(1.0 - {})", True), ("({} / 3.0)", True), ("{}.pow(2)", True), ("(-{})", True),
    ("torch.abs({})", False), ("torch.sqrt({}.pow(2) + 1.0)", True), ("torch.rsqrt({}.pow(2) + 1.0)", True),
    ("torch.log({}.pow(2) + 1.0)", True), ("torch.exp({} * 0.1)", True), ("torch.reciprocal({}.pow(2) + 1.0)", True),
    ("torch.sign({})", False), ("torch.floor({})", False),
]


@op("unary")
def _unary(draw: Draw, b: Builder, v: Val) -> None:
    choices = [e for e, smooth in UNARY if smooth or not b.half]
    expr = draw(st.sampled_from(choices))
    b.add(expr.format(v.name), v.shape, grad=v.grad, feature="elementwise " + expr.format("x"))


@op("custom op (cut)")
def _custom(draw: Draw, b: Builder, v: Val) -> None:
    b.add(f"torch.ops.fuzz.scale({v.name})", v.shape, grad=v.grad, feature="custom op fuzz::scale (cut)")


@op("clamp", smooth=False, keep=("aten.clamp",))
def _clamp(draw: Draw, b: Builder, v: Val) -> None:
    b.add(f"torch.clamp({v.name}, -1.0, 1.0)", v.shape, grad=v.grad, feature="clamp")


def _other(b: Builder, v: Val) -> list[Val]:
    return [u for u in b.pool if u.kind == "f" and u.shape == v.shape and u is not v]


@op("binary with another value", lambda b, v: bool(_other(b, v)))
def _binary(draw: Draw, b: Builder, v: Val) -> None:
    u = draw(st.sampled_from(_other(b, v)))
    forms = ["{} + {}", "{} * {}", "{} - {}", "{} / ({}.pow(2) + 1.0)"]
    if not b.half:
        forms += ["torch.maximum({}, {})", "torch.where({0} > {1}, {0}, {1})"]
    form = draw(st.sampled_from(forms))
    b.add(form.format(v.name, u.name), v.shape, grad=v.grad or u.grad, feature="binary " + form.format("x", "y"),
          fresh=form in ("{} + {}", "{} - {}"))


@op("binary with a parameter", rank(1))
def _with_param(draw: Draw, b: Builder, v: Val) -> None:
    per_channel = v.rank >= 3 and draw(st.booleans())
    shape = (v.shape[1],) + (1,) * (v.rank - 2) if per_channel else (v.shape[-1],)
    p = b.param(shape, draw(st.sampled_from(["contiguous", "sliced"])))
    form = draw(st.sampled_from(["{} * {}", "{} + {}"]))
    b.add(form.format(v.name, p), v.shape, grad=True, feature="binary with a parameter", fresh=True)


@op("scale by a buffer", rank(1))
def _with_buffer(draw: Draw, b: Builder, v: Val) -> None:
    buf = b.buffer(f"torch.linspace(-1, 1, {v.shape[-1]}, dtype={b.dt})")
    b.add(f"{v.name} * {buf}", v.shape, grad=v.grad, feature="a buffer read", fresh=True)


@op("masked_fill", rank(1), smooth=False)
def _masked_fill(draw: Draw, b: Builder, v: Val) -> None:
    masks = [i.val for i in b.inputs if i.val.kind == "b" and i.val.shape == v.shape]
    if masks and draw(st.booleans()):
        b.add(f"{v.name}.masked_fill({masks[0].name}, 0.0)", v.shape, grad=v.grad, feature="masked_fill (bool input)")
    else:
        b.add(f"{v.name}.masked_fill({v.name} < -0.5, 0.0)", v.shape, grad=v.grad, feature="masked_fill")


@op("attention mask and softmax", lambda b, v: v.rank >= 1 and v.shape[-1] >= 2, smooth=False,
    keep=("aten._softmax",))
def _masked_softmax(draw: Draw, b: Builder, v: Val) -> None:
    k = draw(st.integers(1, v.shape[-1] - 1))
    b.add(f"{v.name}.masked_fill(torch.arange({v.shape[-1]}) >= {k}, float('-inf')).softmax(-1)", v.shape,
          grad=v.grad, feature="masked_fill(-inf) + arange + softmax")


@op("softmax", rank(1), keep=("aten._softmax", "aten._log_softmax"))
def _softmax(draw: Draw, b: Builder, v: Val) -> None:
    fn = draw(st.sampled_from(["F.softmax", "F.log_softmax"]))
    b.add(f"{fn}({v.name}, dim={dim_of(draw, v)})", v.shape, grad=v.grad, feature=fn)


@op("tril", rank(2))
def _tril(draw: Draw, b: Builder, v: Val) -> None:
    fn, d = draw(st.sampled_from(["torch.tril", "torch.triu"])), draw(st.integers(-1, 1))
    b.add(f"{fn}({v.name}, {d})", v.shape, grad=v.grad, feature=fn)


@op("add arange", rank(1))
def _arange(draw: Draw, b: Builder, v: Val) -> None:
    b.add(f"{v.name} + torch.arange({v.shape[-1]}, dtype={b.dt})", v.shape, grad=v.grad, feature="arange",
          fresh=True)


@op("dropout", rank(1))
def _dropout(draw: Draw, b: Builder, v: Val) -> None:
    if b.half:  # the float64 reference cannot draw a half-precision run's masks
        return
    p = draw(st.sampled_from([0.5, 0.0, 0.2]))
    b.add(f"F.dropout({v.name}, {p}, training=True)", v.shape, grad=v.grad, feature="dropout", fresh=True)
