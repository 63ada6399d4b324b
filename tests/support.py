"""Shared by the tests: feeds over awkward domains, a float64 reference, closeness as the checker sees it,
one op evaluated in float64, and derivatives by central differences."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from egraph_lower.dtypes import FLOAT_DTYPES, to_numpy
from egraph_lower.evaluate import apply, evaluate
from egraph_lower.document import validated
from egraph_lower.graph import Graph

# The acceptance tolerances (rtol, atol) against a float64 reference.
TOLERANCE = {"f64": (1e-9, 1e-12), "f32": (3e-4, 3e-5), "bf16": (5e-2, 5e-2), "f16": (2e-2, 2e-2)}

# 0 exactly, the kinks of the hard kinds, dense moderate values, large magnitudes.
AWKWARD = np.array([0.0, -0.0, 3.0, -3.0, 1e-3, -1e-3, 0.5, -0.5, 2.0, -2.0, 10.0, -10.0, 30.0, -30.0, 80.0, -80.0])


def domain(n: int, dtype: str, rng: np.random.Generator, positive: bool = False) -> np.ndarray:
    """`n` values: the awkward points first, then a spread over [-8, 8] (or (0, 8])."""
    base = np.abs(AWKWARD) + 1e-3 if positive else AWKWARD
    rest = rng.uniform(1e-3 if positive else -8.0, 8.0, size=max(n - len(base), 0))
    vals = np.concatenate([base, rest])[:n]
    if dtype == "f16":
        vals = np.clip(vals, -60000.0, 60000.0)
    return vals


def feeds_for(graph: Graph, rng: np.random.Generator, positive: frozenset[str] = frozenset()) -> dict[str, np.ndarray]:
    feeds = {}
    for node in graph.nodes:
        if node.op not in ("Input", "Param"):
            continue
        name = node.attrs["name"]
        size = int(np.prod(node.shape)) if node.shape else 1
        if node.dtype in FLOAT_DTYPES and name.startswith("dy"):
            vals = rng.uniform(-2.0, 2.0, size=size)  # incoming gradients of a usual size
        elif node.dtype in FLOAT_DTYPES:
            vals = domain(size, node.dtype, rng, positive=name in positive)
            rng.shuffle(vals)
        elif node.dtype == "bool":
            vals = rng.integers(0, 2, size=size).astype(bool)
        else:
            vals = rng.integers(-5, 6, size=size)
        feeds[name] = np.asarray(vals).reshape(node.shape).astype(to_numpy(node.dtype))
    return feeds


def as_f64(graph: Graph) -> Graph:
    """The same graph computed in float64 throughout: the reference."""
    def f(d: str) -> str:
        return "f64" if d in FLOAT_DTYPES else d

    nodes = []
    for n in graph.nodes:
        attrs = dict(n.attrs)
        if n.op == "Cast" and attrs["to"] in FLOAT_DTYPES:
            attrs["to"] = "f64"
        nodes.append(replace(n, dtype=f(n.dtype), attrs=attrs))
    return Graph(nodes, list(graph.outputs), graph.name)


def close(got: np.ndarray, want: np.ndarray, dtype: str) -> tuple[bool, str]:
    rtol, atol = TOLERANCE.get(dtype, (0, 0))
    g = np.asarray(got, dtype=np.float64)
    w = np.asarray(want, dtype=np.float64)
    if g.shape != w.shape:
        return False, f"shape {g.shape} != {w.shape}"
    both_nan = np.isnan(g) & np.isnan(w)
    same_inf = np.isinf(g) & np.isinf(w) & (np.sign(g) == np.sign(w))
    with np.errstate(invalid="ignore"):
        ok = both_nan | same_inf | (np.abs(g - w) <= atol + rtol * np.abs(w))
    if ok.all():
        return True, ""
    i = int(np.argmin(ok.ravel()))
    return False, f"{int((~ok).sum())} values differ, e.g. got {g.ravel()[i]!r}, want {w.ravel()[i]!r}"


def assert_lowering_matches(original: Graph, lowered: Graph, feeds: dict[str, np.ndarray],
                            tolerance_of: str | None = None) -> None:
    """The lowered graph in its dtypes agrees with the original computed in float64
    (within the tolerance of `tolerance_of` when given, else of each output's dtype)."""
    validated(lowered)  # the whole format's checks, from scratch
    want = evaluate(as_f64(original), feeds)
    got = evaluate(lowered, feeds)
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        dtype = original.node(original.outputs[k]).dtype
        ok, why = close(g, w, tolerance_of or dtype)
        assert ok, f"output {k} ({dtype}): {why}"


def f64(op: str, attrs: dict[str, Any], *args: Any) -> np.ndarray:
    """`op` by the reference evaluator in float64, on arrays or (detached) torch tensors."""
    return apply(op, attrs, [np.asarray(a.detach().numpy() if hasattr(a, "detach") else a, dtype=np.float64)
                             for a in args], "f64")


def numeric_grad(f: Callable[[np.ndarray], float], x: np.ndarray, h: float = 1e-6) -> np.ndarray:
    """Central differences of a scalar function, element by element (float64)."""
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = (f(x + e) - f(x - e)) / (2 * h)
    return g


def numeric_vjp(f: Callable[[np.ndarray], np.ndarray], x: np.ndarray, dy: np.ndarray, h: float = 1e-6) -> np.ndarray:
    """dy . d f / d x by central differences, one element of x at a time (float64)."""
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = np.sum((f(x + e) - f(x - e)) * dy) / (2 * h)
    return g


def compiled_strict(fn: Callable[..., Any], *args: Any, target: str) -> Any:
    """`fn(*args)` traced by make_fx and run through the torch backend for `target` in strict mode, which
    must leave nothing in PyTorch and record no error."""
    from torch.fx.experimental.proxy_tensor import make_fx

    import egraph_lower.torch as elt

    be = elt.backend(target, strict=True)
    out = be(make_fx(fn)(*args), list(args))(*args)
    assert be.unlowered_ops == {} and all(not g.errors for g in be.graphs), be.summary()
    return out
