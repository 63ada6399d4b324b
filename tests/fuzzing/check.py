"""One fuzzed step, eager and compiled for a target: did it raise, did it differ?

`check(program, target)` runs the program's step eager (a step eager refuses is no program:
`Outcome.invalid`), then compiled with `egraph_lower.torch.backend(target, keep_in_pytorch=KEEP)`,
and compares everything the step leaves (`harness.compare`; in half precision against the float64
step, and where that differs, against a second draw of rounding noise too: the step with each op
rounded once, `harness.RoundOnce`, in half precision, and in any dtype the float64 step moved by one
rounding of each op's result, `harness.Jitter`). Where the compiled step differs from
eager, it runs under `aot_eager` too: what PyTorch's own compiler path does the same way is
PyTorch's behaviour, not the backend's (it is counted apart, `Outcome.pytorch`).
"""

from __future__ import annotations

import re
import time
import traceback
import warnings
from dataclasses import dataclass, field
from typing import Any

import torch

from .program import Program


@dataclass
class Outcome:
    status: str  # "ok", "raised", "differed", "invalid" (eager refuses it), "pytorch" (aot_eager differs too)
    detail: list[str] = field(default_factory=list)  # the differences, or the exception
    kind: str = ""  # what deduplicates failures: the exception's type and message, or which values differ
    fallbacks: list[str] = field(default_factory=list)  # the backend's warnings of a stage that failed
    seconds: float = 0.0


def _kind_of_exception(e: BaseException) -> str:
    e = getattr(e, "inner_exception", None) or e  # torch._dynamo's BackendCompilerFailed: what the backend raised
    first = (str(e).strip().splitlines() or [""])[0]
    first = re.sub(r"\d+", "N", re.sub(r"'[^']*'", "'...'", first))[:120]
    return f"raised {type(e).__name__}: {first}"


def _kind_of_diffs(diffs: list[str]) -> str:
    """The sorts of values that differ and how: 'gradient of m3.weight: 2 of 6 values differ' becomes
    'gradient: values'; sorted and unique."""
    kinds = set()
    for d in diffs:
        what, how = d.split(": ", 1)
        what = re.sub(r" (of|after)\b.*| \d+$", "", what)
        how = "values" if "values differ" in how or "elements differ" in how else how.split(" ", 1)[0]
        kinds.add(f"{what}: {how}")
    return "differed " + ", ".join(sorted(kinds))


def _eager(program: Program, ns: dict[str, Any]) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    run: Any = ns["run"]
    want = run(ns["make"], ns["step"])
    ref = run(ns["make"], ns["step"], double=True) if program.half else None
    return want, ref


def check(program: Program, target: str, eager: tuple[Any, Any] | None = None, backend: Any = None) -> Outcome:
    """The program's step compiled for `target` against eager (`eager`: its eager states, if known;
    `backend`: another torch.compile backend to run instead of egraph_lower's for `target`)."""
    import egraph_lower.torch as elt

    start = time.perf_counter()
    ns = program.namespace()
    run: Any = ns["run"]
    compare: Any = ns["compare"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            want, ref = eager if eager is not None else _eager(program, ns)
        except Exception as e:
            return Outcome("invalid", [_kind_of_exception(e)], seconds=time.perf_counter() - start)
        torch._dynamo.reset()
        backend = backend or elt.backend(target, keep_in_pytorch=program.keep)
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                got = run(ns["make"], ns["step"], backend)
        except Exception as e:
            tb = traceback.format_exception(e)
            torch._dynamo.reset()
            try:
                run(ns["make"], ns["step"], "aot_eager")
                status = "raised"
            except Exception:
                status = "pytorch"  # PyTorch's own compiler path raises too
            torch._dynamo.reset()
            return Outcome(status, [_kind_of_exception(e), *tb[-6:]], _kind_of_exception(e),
                           seconds=time.perf_counter() - start)
        torch._dynamo.reset()
        fallbacks = [str(w.message) for w in caught if "runs in PyTorch as it is" in str(w.message)]
        diffs = compare(got, want, ref)
        if diffs and ref is None and program.reference:  # rounding noise, or a difference?
            ref = run(ns["make"], ns["step"], double=True)
            diffs = compare(got, want, ref)
        once = None
        if diffs and program.reference:  # eager's luck, a value that cancels, or a difference?
            unit = torch.finfo(getattr(torch, program.dtype)).eps / 2  # the dtype's unit roundoff
            once = [run(ns["make"], ns["step"], double=True, jitter=unit)]
            if program.half:
                once.append(run(ns["make"], ns["step"], once=True))
            diffs = compare(got, want, ref, once=once)
        status = "differed" if diffs else "ok"
        if diffs:
            try:
                pytorch = run(ns["make"], ns["step"], "aot_eager")
            except Exception:
                pytorch = None
            torch._dynamo.reset()
            if pytorch is not None and not compare(got, pytorch, ref, once=once):
                status = "pytorch"  # the backend does what PyTorch's own compiler path does
    return Outcome(status, diffs, _kind_of_diffs(diffs) if diffs else "", fallbacks, time.perf_counter() - start)


def eager_states(program: Program) -> tuple[Any, Any] | Outcome:
    """The program's eager states (want, ref), or the invalid outcome when eager refuses it."""
    ns = program.namespace()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return _eager(program, ns)
        except Exception as e:
            return Outcome("invalid", [_kind_of_exception(e)])
