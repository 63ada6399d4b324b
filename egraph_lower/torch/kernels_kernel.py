"""A backend file's fused kernel (`Kernel`, opdefs/kernel.py) in PyTorch: the torch function registered
for its name, else its pattern run op by op with the format's kernels.

    elt.register_kernel("layer_norm_backward", fn)   # fn(*inputs, **params) -> a tensor or one per output

Run op by op, an f16/bf16 kernel computes in float32 and rounds once at the end, as the reference
(`Kernel` rounds its float64 value once) and a fused kernel do.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
from torch import Tensor

_REGISTERED: dict[str, Callable[..., Any]] = {}
_HALF = (torch.float16, torch.bfloat16)


def register_kernel(name: str, fn: Callable[..., Any] | None) -> None:
    """Run the kernel `name` with `fn(*inputs, **params)` (its inputs in the order of its `inputs`, its
    primitive values by name), which returns its value, or a tuple or list of one per output; None
    forgets the function (the pattern runs again)."""
    if fn is None:
        _REGISTERED.pop(name, None)
    else:
        _REGISTERED[name] = fn


def registered(name: str) -> Callable[..., Any] | None:
    return _REGISTERED.get(name)


def run_kernel(table: Mapping[str, Callable[..., Tensor]], ins: Sequence[Tensor], name: str, inputs: Sequence[str],
               pattern: str, output: int = 0, params: Mapping[str, Any] | None = None) -> Tensor:
    """A `Kernel` node's value: its registered function's, else its pattern run with `table`'s functions
    (`kernels.KERNELS`, each format op's)."""
    params = dict(params or {})
    fn = _REGISTERED.get(name)
    if fn is not None:
        got = fn(*ins, **params)
        return got[output] if isinstance(got, (tuple, list)) else got
    from ..patterns import parsed

    half = next((t.dtype for t in ins if t.dtype in _HALF), None)
    wide = [t.float() if t.dtype in _HALF else t for t in ins]
    value = _run(parsed(pattern), dict(zip(inputs, wide)), params, table)
    return value.to(half) if half is not None and value.dtype == torch.float32 else value


def _run(t: Any, env: Mapping[str, Tensor], params: Mapping[str, Any], table: Mapping[str, Callable[..., Tensor]]) -> Tensor:
    from ..egraph.language import SCALAR
    from ..patterns import decoded
    from ..rules.dsl import App, Lit, Var

    if isinstance(t, Var):
        return env[t.name]
    assert isinstance(t, App)
    args: list[Tensor | float] = []
    for a in t.args:
        if isinstance(a, Lit):
            args.append(float(a.value))
        elif isinstance(a, App) and a.ctor == SCALAR:
            args.append(float(params[a.params[0]]))
        else:
            args.append(_run(a, env, params, table))
    like = next((a for a in args if isinstance(a, Tensor) and a.is_floating_point()),
                next((a for a in args if isinstance(a, Tensor)), None))
    dtype = like.dtype if like is not None and like.is_floating_point() else torch.float32
    device = like.device if like is not None else None
    tensors = [a if isinstance(a, Tensor) else torch.tensor(a, dtype=dtype, device=device) for a in args]
    op, attrs = decoded(t, params)
    return table[op](*tensors, **attrs)
