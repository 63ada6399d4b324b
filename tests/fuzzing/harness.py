"""Run a fuzzed training step and compare two runs: the fuzzer's and each reproducer's code.

A reproducer is this file's text, then the program (`make()`, `step()`, `KEEP`, `DTYPE`), then a
`__main__` block; so it imports nothing but torch (and egraph_lower for the backend), and what
it runs is exactly what the fuzzer ran.
"""

import torch
import torch.nn as nn  # noqa: F401  (the programs use them)
import torch.nn.functional as F  # noqa: F401
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves, tree_map


def _define_custom_ops() -> None:
    """`fuzz::scale` (x * 2, its gradient fuzz::scale too): never mapped, so it cuts a graph forward and
    backward. Its result has x's layout, in its real and its fake form alike."""
    if hasattr(torch.ops.fuzz, "scale"):
        return

    @torch.library.custom_op("fuzz::scale", mutates_args=())
    def scale(x: torch.Tensor) -> torch.Tensor:
        return torch.empty_like(x).copy_(x).mul_(2.0)

    @scale.register_fake
    def _(x: torch.Tensor) -> torch.Tensor:
        return torch.empty_like(x)

    scale.register_autograd(lambda ctx, g: torch.ops.fuzz.scale(g), setup_context=lambda ctx, inputs, output: None)


_define_custom_ops()

HALF = (torch.float16, torch.bfloat16)


class RoundOnce(TorchDispatchMode):
    """Eager with every aten op that returns f16/bf16 computed in float64 and rounded once to its dtype:
    PyTorch's op boundaries, where a half-precision step must round, and no rounding inside an op (the
    project's rule, "compute in float32, round once", at its exact limit). Views, in-place and random ops
    run as they are (a view and a copy do not round; an elementwise in-place op rounds once)."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        kwargs = kwargs or {}
        real = func(*args, **kwargs)
        schema = func._schema
        if (schema.is_mutable or any(r.alias_info is not None for r in schema.returns)
                or torch.Tag.nondeterministic_seeded in func.tags
                or not any(isinstance(t, torch.Tensor) and t.dtype in HALF for t in tree_leaves(real))):
            return real

        def wide(t):  # type: ignore[no-untyped-def]
            return t.double() if isinstance(t, torch.Tensor) and t.is_floating_point() else t

        try:
            exact = func(*tree_map(wide, args), **tree_map(wide, kwargs))
        except (RuntimeError, TypeError, NotImplementedError):  # no float64 kernel: eager's rounding stands
            return real
        for r, e in zip(tree_leaves(real), tree_leaves(exact)):
            if isinstance(r, torch.Tensor) and r.dtype in HALF:
                r.copy_(e)  # one rounding, to nearest even, into the tensor eager made (its strides)
        return real


class Jitter(TorchDispatchMode):
    """Every aten op's float64 result moved, element by element, by a random relative amount of at most
    `eps` (float32's): a float64 step that rounds each op's result once more, at random, as a target
    computing in float32 rounds it somewhere. How far that moves a value is how far a correct float32
    lowering may be from eager's (`compare`'s `once`). Views, in-place and random ops as they are."""

    def __init__(self, eps):  # type: ignore[no-untyped-def]
        super().__init__()
        self.eps = eps
        self.g = torch.Generator().manual_seed(1)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        out = func(*args, **(kwargs or {}))
        schema = func._schema
        if (schema.is_mutable or any(r.alias_info is not None for r in schema.returns)
                or torch.Tag.nondeterministic_seeded in func.tags):
            return out
        for r in tree_leaves(out):
            if isinstance(r, torch.Tensor) and r.dtype == torch.float64 and r.numel():
                r.mul_(1 + self.eps * (2 * torch.rand(r.shape, generator=self.g, dtype=torch.float64) - 1))
        return out


def run(make, step, backend=None, seed=0, double=False, once=False, jitter=0.0):  # type: ignore[no-untyped-def]
    """One step of a fresh model on fresh inputs, eager (`backend` None) or compiled with `backend`;
    everything a step leaves: its results, every gradient, every buffer, every input, the results'
    aliasing (`double`: the model and inputs in float64, the reference of half-precision programs;
    `jitter` with `double`: each op's result moved by one random rounding of that relative size, `Jitter`;
    `once`: eager, each op exact and rounded once, `RoundOnce`)."""
    model, inputs = make()
    if double:
        model = model.double()
        inputs = tuple(x.detach().double().requires_grad_(x.requires_grad) if x.is_floating_point() else x
                       for x in inputs)
    fn = step if backend is None else torch.compile(step, backend=backend, dynamic=False)
    torch.manual_seed(seed)
    if once or (double and jitter):
        with RoundOnce() if once else Jitter(jitter):
            out = fn(model, *inputs)
    else:
        out = fn(model, *inputs)
    state = {f"result {k}": o for k, o in enumerate(out)}
    state.update({f"gradient of {n}": p.grad for n, p in model.named_parameters()})
    state.update({f"gradient of input {k}": x.grad for k, x in enumerate(inputs) if x.requires_grad})
    state.update({f"buffer {n}": b for n, b in model.named_buffers()})
    state.update({f"input {k} after the step": x for k, x in enumerate(inputs)})
    named = [(f"input {k}", x) for k, x in enumerate(inputs)] + [(f"result {k}", o) for k, o in enumerate(out)]
    for k, o in enumerate(out):
        if isinstance(o, torch.Tensor):
            same = [n for n, x in named if x is o and n != f"result {k}"]
            shared = [n for n, x in named if isinstance(x, torch.Tensor) and x is not o and x.numel() and o.numel()
                      and x.untyped_storage().data_ptr() == o.untyped_storage().data_ptr()]
            state[f"aliasing of result {k}"] = f"is {same}, shares storage with {shared}"
    return state


def _strides(t: torch.Tensor) -> tuple[int, ...]:
    """The strides that say something: of dims longer than 1 (PyTorch leaves the others to chance)."""
    return () if t.numel() == 0 else tuple(s for s, n in zip(t.stride(), t.shape) if n > 1)


def compare(got, want, ref=None, strides=True, once=None):  # type: ignore[no-untyped-def]
    """What differs between two runs' states, one line each: dtype, shape, strides, requires_grad,
    aliasing, values (floats: rtol 1e-4, 1e-7 in float64, atol rtol times the tensor's largest value plus
    1e-5, 1e-10 in float64).
    `ref` (the same step in float64) forgives a float value that is no further from ref than twice
    want's own largest error from ref plus 4 ulps of ref's largest value: what a different order of
    roundings gives, in half precision, or where a gradient is rounding noise about 0.
    `once` is a second measure of that noise: eager's error is one draw of it, and where eager's kernels
    round inside an op (CPU's embedding backward sums in half, CPU's float32 batch norm accumulates in
    float64) eager can be exact where rounding as the target does is not. In half precision it is the
    step with each op exact and rounded once (`RoundOnce`); in float32, the float64 step with each op's
    result moved by one random float32 rounding (`Jitter`): how far rounding at other places than
    eager's moves a value, which is what a value that cancels to about 0 may differ by (a batch of identical samples:
    variance 0, so a mean one rounding off moves a batch norm's weight gradient by 1e-4, its terms
    amplified by 1/sqrt(eps)). In half precision both are drawn (the jitter then of the half dtype's
    rounding): eager and the step rounded once round at the same op boundaries, and a lowering that
    rounds at others (a batch norm's backward expanded) draws other noise where a value cancels to
    about 0 (a bias's gradient before a batch norm, a sum of rounded terms). `once` may be a list of
    such states. A value is then forgiven within twice the largest of them."""
    diffs = []
    for key, w in want.items():
        g = got.get(key)
        if not isinstance(w, torch.Tensor) or not isinstance(g, torch.Tensor):
            if type(g) is not type(w) or (not isinstance(w, torch.Tensor) and g != w):
                diffs.append(f"{key}: {g!r} where eager has {w!r}")
            continue
        if (g.shape, g.dtype, g.requires_grad) != (w.shape, w.dtype, w.requires_grad):
            diffs.append(f"{key}: shape, dtype, requires_grad {tuple(g.shape)} {g.dtype} {g.requires_grad}"
                         f" where eager has {tuple(w.shape)} {w.dtype} {w.requires_grad}")
            continue
        if strides and _strides(g) != _strides(w):
            diffs.append(f"{key}: strides {g.stride()} where eager has {w.stride()} (shape {tuple(w.shape)})")
        g, w = g.detach(), w.detach()
        if not w.is_floating_point():
            if not torch.equal(g, w):
                diffs.append(f"{key}: {int((g != w).sum())} of {w.numel()} elements differ ({w.dtype})")
            continue
        # float64: 1e-7, since the erf and atan approximations of backends without them are float32-accurate
        # in float64 too (egraph_lower/rules/approximations.py). The absolute floor is the project's
        # training tolerance (tests/torch_steps.py) in float32: a gradient that is zero but for rounding
        # (a bias before a batch norm) is noise of the size of the terms that cancel, not of itself.
        rtol, floor = (1e-7, 1e-10) if w.dtype == torch.float64 else (1e-4, 1e-5)
        scale = w.abs().nan_to_num(0, 0, 0).amax().item() if w.numel() else 0.0
        bad = ~torch.isclose(g, w, rtol=rtol, atol=rtol * scale + floor, equal_nan=True)
        if ref is not None and bad.any():  # no worse than twice eager's own error, plus 4 ulps
            r = ref[key].detach().to(torch.float64)
            err_w = (w.double() - r).abs().nan_to_num(0, 0, 0).amax().item()
            for draw in (once if isinstance(once, (list, tuple)) else [once] if once is not None else []):
                if isinstance(draw.get(key), torch.Tensor):
                    err_w = max(err_w, (draw[key].detach().double() - r).abs().nan_to_num(0, 0, 0).amax().item())
            tol = 2 * err_w + 4 * torch.finfo(w.dtype).eps * r.abs().nan_to_num(0, 0, 0).amax().item()
            bad &= ((g.double() - r).abs() > tol) & ~(g.isnan() & w.isnan())
        if bad.any():
            err = (g.double() - w.double()).abs().nan_to_num(float("inf"), float("inf"), float("inf"))
            diffs.append(f"{key}: {int(bad.sum())} of {w.numel()} values differ, max abs error"
                         f" {err.amax().item():.3g} (eager's largest {w.abs().amax().item():.3g})")
    return diffs
