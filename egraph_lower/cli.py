"""The command line: `egraph-lower lower|run|backends|rules|explore`.

Bad input of any kind ends with one line on stderr and exit status 2. A run's outputs are
checked before the work starts; files are written aside, then renamed into place together
only when the run succeeded (`outputs.Outputs`); a failed run leaves every one of them as it
was. SIGINT ends a run with exit status 130 and one line, SIGTERM and SIGHUP with 128 plus
their number, at any moment from the start of `main`: this module imports only the standard
library's light modules, and everything else is imported inside `signals.held()`, so an
interruption lands after an import, never inside one (`signals`).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, NoReturn

from . import signals
from .errors import LowerError
from .text import printable

if TYPE_CHECKING:
    import argparse

    from .egraph.saturate import Iteration, Limits

PROG = "egraph-lower"


def _limits(args: argparse.Namespace) -> Limits:
    with signals.held():
        from .egraph.saturate import Limits
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


def _summary(text: str) -> str:
    """A summary for people: control characters of names shown escaped, never obeyed."""
    return printable(text, keep_newlines=True) + "\n"


def cmd_lower(args: argparse.Namespace) -> int:
    with signals.held():
        import json

        from . import backends
        from .document import load_graph
        from .lower import LoweringFailed, lower
        from .outputs import STDOUT, Outputs

    limits = _limits(args)
    output = args.output or STDOUT
    with Outputs() as out:
        out.add(output, "graph")
        out.add(args.report, "report")
        summary_to_stdout = not out.stdout_named and not args.quiet  # else to stderr
        out.add(STDOUT if summary_to_stdout else None, "summary")
        t0 = time.perf_counter()
        graph = load_graph(args.graph)
        backend = backends.load(args.backend)
        read = time.perf_counter() - t0
        progress = _progress(not args.quiet)
        try:
            result = lower(graph, backend, limits=limits, progress=progress, extractor=args.extractor)
        except LoweringFailed as e:  # the report records the failed run; the graph stays as it was
            if args.report:
                e.report.seconds["read"] = read
                out.write(args.report, json.dumps(e.report.to_dict(), indent=2) + "\n")
                out.commit()
            raise
        finally:
            if progress:
                sys.stderr.write("\n")
        t1 = time.perf_counter()
        out.write(output, result.graph.json_chunks())
        seconds = result.report.seconds
        seconds["read"], seconds["write"] = read, time.perf_counter() - t1
        out.write(args.report, json.dumps(result.report.to_dict(), indent=2) + "\n")
        if summary_to_stdout:
            out.write(STDOUT, _summary(result.report.summary()))
        out.commit()
    if not summary_to_stdout and not args.quiet:
        sys.stderr.write(_summary(result.report.summary()))
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    with signals.held():
        from .document import load_graph
        from .evaluate import evaluate
        from .memory import check_run_memory
        from .npz import npz_bytes, read_npz
        from .outputs import Outputs

    with Outputs() as out:
        out.add(args.output, "arrays")
        graph = load_graph(args.graph)
        check_run_memory(graph)
        feeds = read_npz(args.inputs) if args.inputs else {}
        out.write(args.output, npz_bytes(evaluate(graph, feeds)))
        out.commit()
    return 0


def cmd_backends(args: argparse.Namespace) -> int:
    with signals.held():
        from . import backends
    for b in backends.all_builtin():
        print(f"{b.name:<6} {b.description}")
    return 0


def cmd_rules(args: argparse.Namespace) -> int:
    """The rule catalogue; with --check, every rule checked numerically: the table on stdout, then
    one line on stderr for each rule and dtype that fails, and exit status 1 if any does. With
    --backend FILE, that backend file's own rules and kernels instead of the built-in rules; with
    --rule NAME (repeatable), only the named built-in rules."""
    with signals.held():
        from .rules import ALL_RULES, BY_NAME

        if args.check:
            from .rules.check import check, check_backend, format_table
        if args.backend:
            from . import backends

    own = backends.load(args.backend) if args.backend else None
    chosen = ALL_RULES
    if args.rule:
        if own is not None:
            raise LowerError("--rule names built-in rules; it does not go with --backend")
        unknown = [name for name in args.rule if name not in BY_NAME]
        if unknown:
            raise LowerError(f"no rule named {', '.join(map(repr, unknown))} (egraph-lower rules lists them)")
        chosen = tuple(BY_NAME[name] for name in dict.fromkeys(args.rule))
    if args.check:
        results = check(chosen) if own is None else check_backend(own)
        if own is not None and not results:
            print(f"backend {own.name} declares no rules and no kernels")
            return 0
        print(format_table(results))
        failed = [res for res in results if not res.ok]
        for res in failed:
            print(f"{PROG}: rule {res.rule} fails its check in {res.dtype}: {res.failure}", file=sys.stderr)
        return 1 if failed else 0
    listed = chosen if own is None else own.rules
    if own is not None:
        for k in own.kernels:
            print(f"kernel {k.name}({', '.join(k.inputs)}): {k.description}".rstrip(": "))
            for i, text in enumerate(k.outputs):
                print(f"  output {i}  {text}")
        if not listed:
            return 0
    width = max(len(r.name) for r in listed)
    for r in listed:
        print(f"{r.name:<{width}}  [{r.group}] {r.identity}")
        print(f"{'':<{width}}  lowers {r.lowers}; needs {', '.join(r.needs)}")
    return 0


def cmd_explore(args: argparse.Namespace) -> int:
    with signals.held():
        import json

        from .document import load_graph
        from .explore import explore
        from .explore.whatif import WhatIf, parse_cost
        from .outputs import STDOUT, Outputs

    limits = _limits(args)
    with Outputs() as out:
        for path, what in ((args.json, "JSON report"), (args.html, "HTML report"), (args.dot, "DOT file")):
            out.add(path, what)
        summary_to_stdout = not out.stdout_named and not args.quiet  # else to stderr
        out.add(STDOUT if summary_to_stdout else None, "summary")
        graph = load_graph(args.graph)
        compare = [b.strip() for b in (args.compare or "").split(",") if b.strip()]
        what_if = WhatIf(tuple(args.without or ()), tuple(parse_cost(c) for c in args.cost or ()),
                         tuple(args.kernel or ()))
        progress = _progress(not args.quiet)
        try:
            ex = explore(graph, args.backend, compare=compare, limits=limits, progress=progress,
                         extractor=args.extractor, what_if=what_if if not what_if.empty else None)
        finally:
            if progress:
                sys.stderr.write("\n")
        if args.json:
            out.write(args.json, json.dumps(ex.report(), indent=2) + "\n")
        if args.html:
            out.write(args.html, ex.to_html())
        if args.dot:
            out.write(args.dot, ex.to_dot())
        if summary_to_stdout:
            out.write(STDOUT, _summary(ex.summary()))
        out.commit()
    if not summary_to_stdout and not args.quiet:
        sys.stderr.write(_summary(ex.summary()))
    return 0


def _add_limits(p: argparse.ArgumentParser) -> None:
    from .egraph.saturate import Limits

    d = Limits()
    p.add_argument("--max-iterations", type=int, default=d.iterations, metavar="N", help=f"default {d.iterations}")
    p.add_argument("--max-enodes", type=int, default=d.enodes, metavar="N", help=f"default {d.enodes:,}")
    p.add_argument("--timeout", type=float, default=d.seconds, metavar="S", help=f"saturation seconds, default {d.seconds:g}")


def parser() -> argparse.ArgumentParser:
    """The command line's parser (it imports argparse, the extractors and `Limits`: call it held)."""
    import argparse

    from .extract import EXTRACTORS

    class _Parser(argparse.ArgumentParser):
        """Usage errors are bad input too: one line on stderr, exit status 2 (`--help` has the usage)."""

        def error(self, message: str) -> NoReturn:
            self.exit(2, f"{self.prog}: error: {message}\n")

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
    rl.add_argument("--backend", "-b", metavar="FILE", help="a backend file's own rules and kernels instead")
    rl.add_argument("--rule", "-r", action="append", metavar="NAME", help="only this built-in rule (repeatable)")
    rl.set_defaults(func=cmd_rules)

    ex = sub.add_parser("explore", help="how the rules rewrote a graph: alternatives, costs, reports")
    ex.add_argument("graph", help="graph JSON file")
    ex.add_argument("--backend", "-b", required=True, help="cpu, mlx, metal, tpu, wgpu, or a backend JSON file")
    ex.add_argument("--compare", metavar="A,B", help="other backends to extract from the same e-graph")
    ex.add_argument("--json", metavar="FILE", help="write the report as JSON")
    ex.add_argument("--html", metavar="FILE", help="write the report as a self-contained HTML page")
    ex.add_argument("--dot", metavar="FILE", help="write the e-graph as Graphviz DOT")
    ex.add_argument("--extractor", choices=EXTRACTORS, default="greedy", help="default greedy")
    ex.add_argument("--without", action="append", metavar="RULE", help="what if: without this rule (repeatable)")
    ex.add_argument("--cost", action="append", metavar="OP=FACTOR",
                    help="what if: this op's cost scaled (MatMul=2, Activation.Erf=0.5; repeatable)")
    ex.add_argument("--kernel", action="append", metavar="FILE",
                    help="what if: with the kernels (and rules) of this file (repeatable)")
    ex.add_argument("--quiet", "-q", action="store_true", help="no summary, no progress")
    _add_limits(ex)
    ex.set_defaults(func=cmd_explore)
    return p


def _drop_stdout() -> None:
    """After stdout failed (a full device), send what is left in its buffer nowhere, so that
    Python's own flush at exit adds no second message."""
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def main(argv: Sequence[str] | None = None) -> int:
    """The command line (`argv`, or the process's arguments); its exit status.

    As the program (`argv` None) the signals stay ignored once it is done, while Python exits;
    called with arguments (from Python) it gives their handlers back as they were."""
    with signals.installed(restore=argv is not None):
        try:
            return _main(argv)
        except KeyboardInterrupt:  # a second one while the first failure was being reported
            return 130


def _main(argv: Sequence[str] | None) -> int:
    try:
        with signals.held():  # the parser's imports; each command holds its own the same way
            args = parser().parse_args(argv)
        return int(args.func(args))
    except LowerError as e:
        _drop_stdout()
        print(f"{PROG}: error: {printable(str(e))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into `head` and the like
        sys.stderr.close()
        return 0
    except OSError as e:  # a listing or table printed to a stdout that cannot take it
        _drop_stdout()
        print(f"{PROG}: error: cannot write to stdout: {e.strerror or printable(str(e))}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
