"""Run the lowering rules iteration by iteration, under limits on iterations, e-nodes and time."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from egglog import bindings

from .load import LOWER

STOP_REASONS = ("saturated", "iteration_limit", "node_limit", "time_limit")


@dataclass(frozen=True)
class Limits:
    iterations: int = 30
    enodes: int = 20_000_000
    seconds: float = 120.0


@dataclass
class Iteration:
    index: int
    eclasses: int
    enodes: int
    seconds: float
    matches: dict[str, int]


@dataclass
class Saturation:
    stop_reason: str
    iterations: list[Iteration] = field(default_factory=list)
    rule_matches: dict[str, int] = field(default_factory=dict)
    rule_seconds: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0


_PRINT_SIZE = "(print-size)"


def enode_count(egraph: bindings.EGraph) -> int:
    """E-nodes over the expression constructors (not the loading relations, not `Ref`)."""
    (out,) = egraph.run_program(*egraph.parse_program(_PRINT_SIZE))
    assert isinstance(out, bindings.PrintAllFunctionsSize)  # what (print-size) outputs
    return sum(n for name, n in out.sizes if not name.startswith("Node") and name != "Ref")


def eclass_count(egraph: bindings.EGraph) -> int:
    """Distinct e-classes (needs a freeze: explore asks for it per iteration, lowering once)."""
    frozen = egraph.freeze()
    classes: set[int] = set()
    for name, fn in frozen.functions.items():
        if fn.output_sort == "Expr":
            classes.update(egraph.value_to_i64(row.output) for row in fn.rows)
    return len(classes)


def saturate(
    egraph: bindings.EGraph,
    limits: Limits = Limits(),
    progress: Callable[[Iteration], None] | None = None,
    count_eclasses: bool = False,
) -> Saturation:
    """Run `lower` one iteration at a time until nothing changes or a limit is reached."""
    result = Saturation(stop_reason="saturated")
    start = time.perf_counter()
    run = egraph.parse_program(f"(run {LOWER} 1)")
    for index in range(1, limits.iterations + 1):
        t0 = time.perf_counter()
        (out,) = egraph.run_program(*run)
        assert isinstance(out, bindings.RunScheduleOutput)  # what (run ...) outputs
        report = out.report
        matches = {k: v for k, v in report.num_matches_per_rule.items() if v}
        for k, v in report.num_matches_per_rule.items():
            result.rule_matches[k] = result.rule_matches.get(k, 0) + v
        for k, td in report.search_and_apply_time_per_rule.items():
            result.rule_seconds[k] = result.rule_seconds.get(k, 0.0) + td.total_seconds()
        enodes = enode_count(egraph)
        eclasses = eclass_count(egraph) if count_eclasses else -1
        it = Iteration(index, eclasses, enodes, time.perf_counter() - t0, matches)
        result.iterations.append(it)
        if progress:
            progress(it)
        if not report.updated:
            result.stop_reason = "saturated"
            break
        if enodes > limits.enodes:
            result.stop_reason = "node_limit"
            break
        if time.perf_counter() - start > limits.seconds:
            result.stop_reason = "time_limit"
            break
    else:
        result.stop_reason = "iteration_limit"
    result.seconds = time.perf_counter() - start
    return result
