"""Run the lowering rules iteration by iteration, under limits on iterations, e-nodes and time."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from .engine import bindings

from ..errors import LowerError
from ..graph import Graph
from ..memory import ENODE_BYTES, enode_budget, size_text
from ..rules.dsl import App, Rule
from .load import LOWER

STOP_REASONS = ("saturated", "iteration_limit", "node_limit", "time_limit")


# The command-line flag of each limit, and the stop reason it causes.
FLAGS = {"iteration_limit": "--max-iterations", "node_limit": "--max-enodes", "time_limit": "--timeout"}


@dataclass(frozen=True)
class Limits:
    """Bounds on one saturation, checked when made (raises LowerError): `iterations` an integer
    >= 0, `enodes` an integer >= 1, `seconds` a finite number > 0."""

    iterations: int = 30
    enodes: int = 20_000_000
    seconds: float = 120.0

    def __post_init__(self) -> None:
        def integer(v: object) -> bool:
            return isinstance(v, int) and not isinstance(v, bool)

        if not integer(self.iterations) or self.iterations < 0:
            raise LowerError(f"--max-iterations must be an integer >= 0, not {self.iterations!r}")
        if not integer(self.enodes) or self.enodes < 1:
            raise LowerError(f"--max-enodes must be an integer >= 1, not {self.enodes!r}")
        seconds = self.seconds
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not (math.isfinite(seconds) and seconds > 0):
            raise LowerError(f"--timeout must be a finite number of seconds > 0, not {seconds!r}")


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
    memory: str | None = None  # why a `node_limit` came from the memory left, not --max-enodes


_PRINT_SIZE = "(print-size)"


def enode_count(egraph: bindings.EGraph) -> int:
    """E-nodes over the expression constructors (not the loading relations, not `Ref`)."""
    (out,) = egraph.run_program(*egraph.parse_program(_PRINT_SIZE))
    assert isinstance(out, bindings.PrintAllFunctionsSize)  # what (print-size) outputs
    return sum(n for name, n in out.sizes if not name.startswith("Node") and name != "Ref")


def first_growth(graph: Graph, rules: Sequence[Rule]) -> int:
    """New e-nodes the first iteration can add, from the graph's rows: for each node some rule
    rewrites, the distinct applications on the right-hand sides of the rules that rewrite it
    (34 for a `ActivationBackward{GeluApprox}`, measured 34; 25 for a `Tanh` one, measured 17:
    terms the graph already holds are not new)."""
    terms: dict[str, set[App]] = {}
    for r in rules:
        terms.setdefault(r.lowers, set()).update(r.rhs_apps)
    per_op_kind = {(label.partition(".")[0], label.partition(".")[2] or None): len(t) for label, t in terms.items()}
    ops = {op for op, _ in per_op_kind}
    get = per_op_kind.get
    return sum(get((n.op, n.attrs.get("kind")), 0) for n in graph.nodes if n.op in ops)


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
    growth: int = 0,
) -> Saturation:
    """Run `lower` one iteration at a time until nothing changes or a limit is reached.

    Before each iteration, the e-nodes it will leave are estimated (after the first, those
    loaded and `growth` more, see `first_growth`; after the next ones, as many new e-nodes
    as the last iteration made); when the memory left (`memory.enode_budget`) cannot hold
    them, saturation stops there with `node_limit` and says so in `memory`."""
    result = Saturation(stop_reason="saturated")
    start = time.perf_counter()
    run = egraph.parse_program(f"(run {LOWER} 1)")
    budget = enode_budget()
    before = after = 0
    if budget is not None and limits.iterations:
        before = enode_count(egraph)
        after = before + growth
    for index in range(1, limits.iterations + 1):
        if budget is not None and after > budget:
            result.stop_reason = "node_limit"
            result.memory = (f"the e-graph would outgrow the memory left (about {after:,} e-nodes after iteration"
                             f" {index}, {size_text(after * ENODE_BYTES)}; {size_text(budget * ENODE_BYTES)} left)")
            break
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
        before, after = enodes, 2 * enodes - before  # the next iteration: as many new e-nodes again
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
