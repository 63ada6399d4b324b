"""The command line: `egraph-lower lower|run|backends|rules|explore`.

Bad input of any kind ends with one line on stderr and exit status 2; an output
file is written aside and renamed into place only when the run succeeded.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from typing import NoReturn

from . import backends
from .egraph.saturate import Iteration, Limits
from .errors import LowerError
from .graph import load_graph, write_atomic
from .lower import EXTRACTORS

PROG = "egraph-lower"


def _limits(args: argparse.Namespace) -> Limits:
    return Limits(iterations=args.max_iterations, enodes=args.max_enodes, seconds=args.timeout)


def _progress(enabled: bool):  # type: ignore[no-untyped-def]
    """Progress on stderr for long runs, only when stderr is a terminal."""
    if not enabled or not sys.stderr.isatty():
        return None
    start = time.perf_counter()

    def show(it: Iteration) -> None:
        sys.stderr.write(f"\r  iteration {it.index}  e-nodes {it.enodes:,}  {time.perf_counter() - start:.1f} s ")
        sys.stderr.flush()

    return show


def cmd_lower(args: argparse.Namespace) -> int:
    from .lower import lower

    t0 = time.perf_counter()
    graph = load_graph(args.graph)
    backend = backends.load(args.backend)
    read = time.perf_counter() - t0
    progress = _progress(not args.quiet)
    result = lower(graph, backend, limits=_limits(args), progress=progress, extractor=args.extractor)
    if progress:
        sys.stderr.write("\n")
    t1 = time.perf_counter()
    if args.output:
        write_atomic(args.output, result.graph.json_chunks())
    else:
        sys.stdout.writelines(result.graph.json_chunks())
    seconds = result.report.seconds
    seconds["read"], seconds["write"] = read, time.perf_counter() - t1
    if args.report:
        write_atomic(args.report, json.dumps(result.report.to_dict(), indent=2) + "\n")
    if not args.quiet:
        print(result.report.summary(), file=sys.stdout if args.output else sys.stderr)
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from .evaluate import evaluate, read_npz, write_npz

    graph = load_graph(args.graph)
    feeds = read_npz(args.inputs) if args.inputs else {}
    outputs = evaluate(graph, feeds)
    write_npz(args.output, outputs)
    return 0


def cmd_backends(args: argparse.Namespace) -> int:
    for b in backends.all_builtin():
        print(f"{b.name:<6} {b.description}")
    return 0


def cmd_rules(args: argparse.Namespace) -> int:
    """The rule catalogue; with --check, every rule checked numerically: the table on stdout, then
    one line on stderr for each rule and dtype that fails, and exit status 1 if any does."""
    from .rules import ALL_RULES

    if args.check:
        from .rules.check import check, format_table

        results = check(ALL_RULES)
        print(format_table(results))
        failed = [res for res in results if not res.ok]
        for res in failed:
            print(f"{PROG}: rule {res.rule} fails its check in {res.dtype}: worst error {res.worst:.3g} eps, "
                  f"bound {res.bound:.3g}", file=sys.stderr)
        return 1 if failed else 0
    width = max(len(r.name) for r in ALL_RULES)
    for r in ALL_RULES:
        print(f"{r.name:<{width}}  [{r.group}] {r.identity}")
        print(f"{'':<{width}}  lowers {r.lowers}; needs {', '.join(r.needs)}")
    return 0


def cmd_explore(args: argparse.Namespace) -> int:
    from .explore import explore

    graph = load_graph(args.graph)
    compare = [b.strip() for b in (args.compare or "").split(",") if b.strip()]
    progress = _progress(not args.quiet)
    ex = explore(graph, args.backend, compare=compare, limits=_limits(args), progress=progress,
                 extractor=args.extractor)
    if progress:
        sys.stderr.write("\n")
    if args.json:
        write_atomic(args.json, json.dumps(ex.report(), indent=2) + "\n")
    if args.html:
        write_atomic(args.html, ex.to_html())
    if args.dot:
        write_atomic(args.dot, ex.to_dot())
    if not args.quiet:
        print(ex.summary())
    return 0


def _add_limits(p: argparse.ArgumentParser) -> None:
    d = Limits()
    p.add_argument("--max-iterations", type=int, default=d.iterations, metavar="N", help=f"default {d.iterations}")
    p.add_argument("--max-enodes", type=int, default=d.enodes, metavar="N", help=f"default {d.enodes:,}")
    p.add_argument("--timeout", type=float, default=d.seconds, metavar="S", help=f"saturation seconds, default {d.seconds:g}")


class _Parser(argparse.ArgumentParser):
    """Usage errors are bad input too: one line on stderr, exit status 2 (`--help` has the usage)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description="Lower backward ops for a backend by equality saturation.")
    sub = p.add_subparsers(dest="command", required=True)

    lo = sub.add_parser("lower", help="lower a graph for a backend")
    lo.add_argument("graph", help="graph JSON file")
    lo.add_argument("--backend", "-b", required=True, help="cpu, mlx, metal, tpu, wgpu, or a backend JSON file")
    lo.add_argument("-o", "--output", help="where to write the lowered graph (default: stdout)")
    lo.add_argument("--report", metavar="FILE", help="write the summary as JSON")
    lo.add_argument("--extractor", choices=EXTRACTORS, default="greedy", help="default greedy")
    lo.add_argument("--quiet", "-q", action="store_true", help="no summary, no progress")
    _add_limits(lo)
    lo.set_defaults(func=cmd_lower)

    ru = sub.add_parser("run", help="evaluate a graph with the NumPy reference evaluator")
    ru.add_argument("graph")
    ru.add_argument("--inputs", "-i", metavar="NPZ", help="inputs by Input/Param name")
    ru.add_argument("-o", "--output", required=True, metavar="NPZ", help="outputs as out0, out1, ...")
    ru.set_defaults(func=cmd_run)

    ba = sub.add_parser("backends", help="list the built-in backends")
    ba.set_defaults(func=cmd_backends)

    rl = sub.add_parser("rules", help="the rule catalogue")
    rl.add_argument("--check", action="store_true", help="check every rule numerically against float64")
    rl.set_defaults(func=cmd_rules)

    ex = sub.add_parser("explore", help="how the rules rewrote a graph: alternatives, costs, reports")
    ex.add_argument("graph", help="graph JSON file")
    ex.add_argument("--backend", "-b", required=True, help="cpu, mlx, metal, tpu, wgpu, or a backend JSON file")
    ex.add_argument("--compare", metavar="A,B", help="other backends to extract from the same e-graph")
    ex.add_argument("--json", metavar="FILE", help="write the report as JSON")
    ex.add_argument("--html", metavar="FILE", help="write the report as a self-contained HTML page")
    ex.add_argument("--dot", metavar="FILE", help="write the e-graph as Graphviz DOT")
    ex.add_argument("--extractor", choices=EXTRACTORS, default="greedy", help="default greedy")
    ex.add_argument("--quiet", "-q", action="store_true", help="no summary, no progress")
    _add_limits(ex)
    ex.set_defaults(func=cmd_explore)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return int(args.func(args))
    except LowerError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into `head` and the like
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
