"""One OpInfo entry in one dtype through the torch.compile backend, sample by sample (bench/opinfo.py's
worker runs it; /work/shared/notes/opinfo-yardstick.md and docs/benchmarks.md, "OpInfo coverage",
define it).

The entries: every OpInfo of PyTorch's `op_db` that supports autograd with float32 among its CPU
backward dtypes, less linear algebra, FFT, sparse, masked, signal, special, the references and the
complex-valued ops (408 entries in torch 2.13). Each sample: the op's floating outputs that require
grad, a fixed random cotangent, `torch.autograd.grad` eagerly and through
`torch.compile(fn, backend=elt.backend(target), dynamic=False)` after `torch._dynamo.reset()`.

An entry's outcome in a dtype is the worst of its samples':
- "raised": the compiled function raised (eager ran);
- "wrong gradient": a gradient outside the OpInfo's tolerance of eager's (in f16/bf16, also further
  from a float64 evaluation than eager's by more than HALF_MARGIN ulp);
- "left in PyTorch": an aten op ran in PyTorch (`backend.unlowered_ops`), a fallback was recorded,
  or dynamo broke the graph (that code runs eagerly);
- "covered": none of those (a graph the backend leaves unchanged, its ops all the target's own
  kernels, counts as covered);
- "not run": the OpInfo does not support the dtype's backward on CPU, or has no sample with a
  gradient (eager raising on a sample leaves the sample out).
"""

from __future__ import annotations

import itertools
import math
import time
import warnings
from dataclasses import asdict, dataclass, field
from typing import Any

import torch
from torch.utils import _pytree as pytree

DTYPES = {"f32": torch.float32, "f64": torch.float64, "bf16": torch.bfloat16, "f16": torch.float16}
HALF = (torch.float16, torch.bfloat16)
# PyTorch's default tolerances (rtol, atol) where the OpInfo declares none for the dtype
DEFAULT_TOL = {torch.float32: (1.3e-6, 1e-5), torch.float64: (1e-7, 1e-7),
               torch.bfloat16: (1.6e-2, 1e-5), torch.float16: (1e-3, 1e-5)}
OUTCOMES = ("covered", "wrong gradient", "left in PyTorch", "raised", "not run")  # as reports list them
_WORSE = ("covered", "left in PyTorch", "wrong gradient", "raised")  # a sample's outcome beats those before it
SCANNED = 120  # the samples are spread over the first SCANNED of an entry's (max_pool2d has 1,440)

_DROPPED_PREFIXES = ("linalg.", "fft.", "sparse.", "_refs", "masked.", "signal.", "special.", "_segment",
                     "nn.functional.ctc", "cholesky", "lu", "svd", "conj")
_DROPPED = {"qr", "pinverse", "logdet", "matrix_exp", "ormqr", "pca_lowrank", "stft", "complex", "cfloat",
            "cdouble", "chalf", "polar", "angle", "real", "resolve_conj", "i0", "digamma", "lgamma",
            "polygamma", "mvlgamma", "normal", "bernoulli", "H", "mH"}


def entries() -> list[Any]:
    """The training-relevant OpInfos, in op_db's order.

    OpInfo calls its random ops (dropout, rrelu, ...) through `wrapper_set_seed`, which freezes the
    generator's state and seeds it with 42: code dynamo breaks its graph on, so such an op would always
    count as left in PyTorch. A user calls the op itself; so the wrapper is replaced by a plain call,
    and each run seeds the generator itself before eager's call and the compiled one (`_gradients`)."""
    from torch.testing._internal import common_methods_invocations as cmi

    cmi.wrapper_set_seed = lambda op, *args, **kwargs: op(*args, **kwargs)
    return [o for o in cmi.op_db
            if o.supports_autograd and torch.float32 in o.supported_backward_dtypes("cpu")
            and not o.name.startswith(_DROPPED_PREFIXES) and o.name not in _DROPPED]


def key(opinfo: Any) -> str:
    """`name` or `name.variant`: how an entry is named in reports and on the command line."""
    return f"{opinfo.name}.{opinfo.variant_test_name}" if opinfo.variant_test_name else opinfo.name


def tolerance(opinfo: Any, dtype: torch.dtype) -> tuple[float, float]:
    """(rtol, atol): the loosest `toleranceOverride` the OpInfo declares for the dtype on CPU (any of its
    tests), else PyTorch's default for the dtype."""
    found = [dec.d[dtype] for info in opinfo.decorators if getattr(info, "device_type", None) in (None, "cpu")
             for dec in getattr(info, "decorators", ()) if dtype in getattr(dec, "d", {})]
    if not found:
        return DEFAULT_TOL[dtype]
    return max(t.rtol for t in found), max(t.atol for t in found)


@dataclass
class Result:
    entry: str
    target: str
    dtype: str
    outcome: str
    samples: int = 0
    unlowered: dict[str, int] = field(default_factory=dict)  # aten ops (and fallbacks, graph breaks) left
    detail: str = ""
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _grad_inputs(sample: Any) -> list[torch.Tensor]:
    return [t for t in pytree.tree_leaves((sample.input, sample.args, sample.kwargs))
            if isinstance(t, torch.Tensor) and t.requires_grad]


class _Sample:
    """A sample as f(*gradient inputs) -> its floating outputs that require grad."""

    def __init__(self, opinfo: Any, sample: Any) -> None:
        self.op = opinfo.op
        flat, self.spec = pytree.tree_flatten((sample.input, sample.args, sample.kwargs))
        self.positions = [k for k, v in enumerate(flat) if isinstance(v, torch.Tensor) and v.requires_grad]
        self.fixed = [None if k in self.positions else v for k, v in enumerate(flat)]
        self.inputs = [flat[k].detach() for k in self.positions]

    def function(self, wide: bool = False) -> Any:
        fixed = [v.double() if wide and isinstance(v, torch.Tensor) and v.is_floating_point() else v
                 for v in self.fixed]

        def f(*tensors: Any) -> tuple[Any, ...]:
            flat = [v.clone() if isinstance(v, torch.Tensor) else v for v in fixed]  # ops may write to them
            for p, t in zip(self.positions, tensors):
                flat[p] = t
            x, args, kwargs = pytree.tree_unflatten(flat, self.spec)
            outs = pytree.tree_leaves(self.op(x, *args, **kwargs))
            return tuple(o for o in outs if isinstance(o, torch.Tensor) and o.requires_grad)

        return f


def _gradients(f: Any, tensors: list[torch.Tensor], dtypes: list[torch.dtype] | None = None) -> tuple[list[Any], list[Any]]:
    """(outputs, gradients of sum(out * dy)), the same random draws each call (dy rounded to `dtypes`)."""
    torch.manual_seed(0)
    outs = f(*tensors)
    torch.manual_seed(1)
    dys = [torch.randn(o.shape, dtype=torch.float64).to(d).to(o.dtype)
           for o, d in zip(outs, dtypes or [o.dtype for o in outs])]
    grads = torch.autograd.grad(outs, tensors, dys, allow_unused=True)
    return list(outs), [torch.zeros_like(t) if g is None else g for g, t in zip(grads, tensors)]


def _error(got: torch.Tensor, ref: torch.Tensor) -> float:
    got, ref = got.double(), ref.double()
    same = (torch.isnan(got) & torch.isnan(ref)) | (got == ref)
    return float(torch.where(same, torch.zeros_like(ref), (got - ref).abs()).max()) if ref.numel() else 0.0


def _wrong(got: list[Any], eager: list[Any], ref: list[Any] | None, tol: tuple[float, float]) -> str:
    """Why a gradient is wrong ("" when none is)."""
    from egraph_lower.rules.check import HALF_MARGIN

    for k, (g, e) in enumerate(zip(got, eager)):
        if g.shape != e.shape or g.dtype != e.dtype:
            return f"gradient {k}: {g.dtype}{list(g.shape)} where eager's is {e.dtype}{list(e.shape)}"
        if torch.allclose(g.double(), e.double(), rtol=tol[0], atol=tol[1], equal_nan=True):
            continue
        if ref is not None:  # f16/bf16: no worse than eager against float64
            finite = ref[k][torch.isfinite(ref[k])]
            top = float(finite.abs().max()) if finite.numel() else 1.0
            eps = torch.finfo(e.dtype).eps
            margin = HALF_MARGIN * eps * max(1.0, top)
            r = ref[k]
            # where eager overflows to nan and float64 does not (f16 soft margin beyond |t x| = 11), eager has
            # no error to compare with: the gradient is to be float64's rounded there (half an ulp + margin)
            lost = torch.isnan(e) & ~torch.isnan(r)
            if lost.any():
                if _error(g[lost], r[lost]) > 0.5 * eps * float(r[lost].abs().max()) + margin:
                    return f"gradient {k}: {_error(g[lost], r[lost]):.3g} from float64 where eager's is nan"
                g, e, r = g[~lost], e[~lost], r[~lost]
            if _error(g, r) <= _error(e, r) + margin:
                continue
            return f"gradient {k}: {_error(g, r):.3g} from float64, eager {_error(e, r):.3g} (+{margin:.2g})"
        return f"gradient {k}: {_error(g, e):.3g} from eager (rtol {tol[0]:g}, atol {tol[1]:g})"
    return ""


def _left(be: Any, breaks: int) -> dict[str, int]:
    left = dict(be.unlowered_ops)
    for g in be.graphs:
        for e in g.errors:  # "<stage>: <Error>: message": grouped by stage and error type
            what = "fallback: " + ": ".join(e.split(": ")[:2])[:80]
            left[what] = left.get(what, 0) + 1
    if breaks:  # that code ran eagerly, outside any graph the backend saw
        left["dynamo graph break"] = breaks
    return left


def run_sample(opinfo: Any, sample: Any, target: str, dtype: torch.dtype) -> tuple[str, dict[str, int], str]:
    """(outcome, what was left in PyTorch, detail) of one sample; raises when eager raises."""
    import torch._dynamo
    from torch._dynamo.utils import counters

    import egraph_lower.torch as elt

    case = _Sample(opinfo, sample)
    f = case.function()
    tensors = [t.clone().requires_grad_(True) for t in case.inputs]
    eager_out, eager = _gradients(f, tensors)
    if not eager_out:
        raise ValueError("no output requires grad")
    torch._dynamo.reset()
    counters.clear()
    be = elt.backend(target)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _, got = _gradients(torch.compile(f, backend=be, dynamic=False), tensors)
    except Exception as e:  # noqa: BLE001 - every failure is an outcome
        return "raised", {}, f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300]
    ref = None
    if dtype in HALF:
        wide = [t.detach().double().requires_grad_(True) for t in case.inputs]
        _, ref = _gradients(case.function(wide=True), wide, [o.dtype for o in eager_out])
    left = _left(be, sum(counters["graph_break"].values()))
    why = _wrong(got, eager, ref, tolerance(opinfo, dtype))
    if why:
        return "wrong gradient", left, why
    return ("left in PyTorch" if left else "covered"), left, ""


def samples(opinfo: Any, dtype: torch.dtype, n: int) -> list[Any]:
    """`n` samples (0: all) with a gradient input holding elements, spread evenly over the first SCANNED."""
    first = itertools.islice(opinfo.sample_inputs("cpu", dtype, requires_grad=True), None if n == 0 else SCANNED)
    out = [s for s in first if any(t.numel() for t in _grad_inputs(s))]
    return out if n == 0 or len(out) <= n else out[::math.ceil(len(out) / n)][:n]


def run_entry(opinfo: Any, target: str, dtype_name: str, n: int) -> Result:
    """The entry's outcome on `target` in the dtype: the worst of its samples'."""
    start = time.perf_counter()
    dtype = DTYPES[dtype_name]
    res = Result(key(opinfo), target, dtype_name, "not run")
    if dtype not in opinfo.supported_backward_dtypes("cpu"):
        res.detail = "the OpInfo has no CPU backward in this dtype"
        return res
    for s in samples(opinfo, dtype, n):
        try:
            outcome, left, detail = run_sample(opinfo, s, target, dtype)
        except Exception:  # noqa: BLE001 - eager itself fails on the sample: not the backend's to answer
            continue
        res.samples += 1
        for op, c in left.items():
            res.unlowered[op] = res.unlowered.get(op, 0) + c
        if res.outcome == "not run" or _WORSE.index(outcome) > _WORSE.index(res.outcome):
            res.outcome, res.detail = outcome, detail or res.detail
    if not res.samples:
        res.detail = res.detail or "no sample with a gradient that eager runs"
    res.seconds = round(time.perf_counter() - start, 2)
    return res
