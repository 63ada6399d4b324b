"""Hypothesis strategies of fuzzed training steps: `programs()`.

A program starts from an input (float, in a drawn layout; or integer ids through an embedding),
applies a drawn number of layers (`OPS`, each to the latest value or, less often, an earlier one),
takes a loss of the last value and returns it with up to three other results; on the way it may
mutate an input first thing, mutate buffers at the end, give the model and input channels_last,
and ask the backend to keep some mapped aten ops in PyTorch. Shapes are small, with size-one and
zero-size dims; dtypes float32 (most), float64, bfloat16 and float16 (smooth ops only).
"""

from __future__ import annotations

from hypothesis import strategies as st

from . import ops_layers, ops_mutation, ops_views  # noqa: F401  (they register their ops)
from .ops import OPS, Draw, Op
from .program import Builder, Program, Val

DTYPES = ["float32", "float64", "float32", "float32", "bfloat16", "float16"]
# How often each op is drawn among those that apply (1 when not named): layers whose boundaries and
# layouts matter most (convolutions, normalizations, pooling, attention, in-place ops) more often.
WEIGHTS = {"unary": 4, "custom op (cut)": 2, "binary with another value": 2, "softmax": 2, "dropout": 2, "linear": 5,
           "matmul with a parameter": 2, "convolution": 6, "convolution block": 8, "batch norm": 6, "layer norm": 3, "group norm": 4,
           "pooling": 5, "attention": 4, "in-place": 6, "transpose": 2, "t": 2, "permute": 2,
           "reshape: merge two dims": 2, "slice": 3, "cat": 2, "as_strided (cut)": 3, "pad": 2, "reduce": 2}
KEEP_ALWAYS = ("aten.mul.Tensor", "aten.add.Tensor", "aten.relu", "aten.view", "aten.permute", "aten.sum",
               "aten.gelu", "aten.tanh", "aten.threshold_backward", "aten.clone", "aten.expand")


def dims(draw: Draw, n: int, zero: bool) -> tuple[int, ...]:
    out = [int(draw(st.integers(1, 5))) for _ in range(n)]
    if zero and draw(st.integers(0, 9)) == 0:  # now and then a zero-size dim
        out[int(draw(st.integers(0, n - 1)))] = 0
    return tuple(out)


def _start(draw: Draw, b: Builder) -> Val:
    if draw(st.integers(0, 7)) == 0:
        vocab = int(draw(st.integers(1, 6)))
        idx = b.input(dims(draw, 2, zero=False), "i", "contiguous", False, high=vocab)
        return ops_layers.embedding(draw, b, idx, vocab)
    rank = draw(st.sampled_from([2, 4, 3, 4, 1]))
    shape = dims(draw, rank, zero=True)
    layouts = ["contiguous", "transposed", "sliced", "expanded"] + (["channels_last"] * 2 if rank == 4 else [])
    layout = draw(st.sampled_from(layouts))
    if rank == 4 and layout == "channels_last":
        b.channels_last = draw(st.booleans())
    return b.input(shape, "f", layout, grad=draw(st.booleans()))


def _weighted(draw: Draw, ops: list[Op]) -> Op:
    """One of `ops` by WEIGHTS (hypothesis shrinks towards the first)."""
    k = int(draw(st.integers(0, sum(WEIGHTS.get(o.name, 1) for o in ops) - 1)))
    for o in ops:
        k -= WEIGHTS.get(o.name, 1)
        if k < 0:
            return o
    raise AssertionError("unreachable")


IN_PLACE = next(o for o in OPS if o.name == "in-place")


@st.composite
def programs(draw: Draw, max_ops: int = 8, dtypes: tuple[str, ...] | None = None) -> Program:
    """A training step of up to `max_ops` layers (`dtypes`: the dtypes to draw from)."""
    dtype = draw(st.sampled_from(list(dtypes or DTYPES)))
    b = Builder(dtype)
    x = _start(draw, b)
    if draw(st.integers(0, 3)) == 0:  # a second float input of the same shape, mutated or added in
        other = b.input(x.shape, "f", draw(st.sampled_from(["contiguous", "transposed", "sliced"])),
                        grad=draw(st.booleans()))
        if not other.grad and draw(st.booleans()):
            ops_mutation.mutate_input(draw, b, other)
            other.token[0] = False
    if x.kind == "f" and draw(st.integers(0, 5)) == 0:
        b.input(x.shape, "b", "contiguous", False)
    if x.kind == "f" and not x.grad and b.inputs[0].mutable and draw(st.integers(0, 5)) == 0:
        ops_mutation.mutate_input(draw, b, x)
    v = x
    for _ in range(int(draw(st.integers(0, max_ops)))):
        floats = [u for u in b.pool if u.kind == "f"]
        v = floats[-1] if draw(st.integers(0, 3)) else draw(st.sampled_from(floats[::-1]))
        usable = [o for o in OPS if o.applies(b, v) and (o.smooth or not b.half)]
        chosen = _weighted(draw, usable)
        if not chosen.view and chosen.name != "in-place":  # it may save what it reads for backward: no
            for u in b.pool:                                  # in-place op on any value before from now on
                u.token[0] = False
        chosen.emit(draw, b, v)
        new = b.pool[-1]
        if new.fresh and new.kind == "f" and IN_PLACE.applies(b, new) and draw(st.integers(0, 2)) == 0:
            IN_PLACE.emit(draw, b, new)  # an in-place op right after the op that made it
        if chosen.keep and draw(st.integers(0, 2)) == 0:
            b.keep.add(draw(st.sampled_from(chosen.keep)))
    last = [u for u in b.pool if u.kind == "f"][-1]
    if not last.grad:  # the loss must need a gradient: give it a parameter
        last = b.add(f"{last.name} * {b.param(last.shape)}", last.shape, grad=True, feature="binary with a parameter")
    results = [ops_mutation.loss(draw, b, last)]
    results += [ops_mutation.extra(draw, b) for _ in range(int(draw(st.integers(0, 3))))]
    ops_mutation.mutate_buffers(draw, b, last)
    if draw(st.integers(0, 4)) == 0:
        b.keep.add(draw(st.sampled_from(KEEP_ALWAYS)))
    return b.program(results, seed=int(draw(st.integers(0, 3))))
