"""The differential fuzzer of training steps (tests/fuzzing), run for thousands of steps.

    python bench/fuzz_torch.py --steps 2000 --seed 0 [--targets cpu,metal,wgpu] [--timeout 60]

Hypothesis draws `--steps` programs (`fuzzing.strategies.programs`, seeded); each runs eager and
compiled for every target in a child process, which is killed and replaced when a target's step
takes more than `--timeout` CPU seconds (counted as timed out). Prints, per target, how many steps
raised, differed from eager, timed out, and how many differed or raised under `aot_eager` the same
way (PyTorch's behaviour, not the backend's: not failures); then each kind of failure once, shrunk by
hypothesis for up to `--shrink` seconds, as a standalone reproducer (`--out DIR` writes them too, and
each new kind's first program, unshrunk, as `found_N.py` the moment it is found).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from hypothesis import HealthCheck, Phase, find, given, reject, seed, settings  # noqa: E402
from hypothesis.control import current_build_context  # noqa: E402
from hypothesis.database import InMemoryExampleDatabase, choices_to_bytes  # noqa: E402
from hypothesis.errors import NoSuchExample  # noqa: E402

from common import cpu_seconds  # noqa: E402
from fuzzing.program import Program  # noqa: E402
from fuzzing.strategies import programs  # noqa: E402

FAILED = ("raised", "differed", "timed out")


def _serve(conn: Connection) -> None:
    """The child: for each (program, targets) it is sent, the eager states once, then one Outcome a target."""
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "tests"))
    from fuzzing.check import Outcome, check, eager_states

    while True:
        program, targets = conn.recv()
        eager = eager_states(program)
        for target in targets:
            conn.send(eager if isinstance(eager, Outcome) else check(program, target, eager))


class Worker:
    def __init__(self) -> None:
        self.proc: Any = None
        self.conn: Connection | None = None
        self.new = False

    def start(self) -> Connection:
        if self.conn is None:
            ctx = mp.get_context("spawn")
            self.conn, child = ctx.Pipe()
            self.proc = ctx.Process(target=_serve, args=(child,), daemon=True)
            self.proc.start()
            self.new = True  # its first step imports torch and egraph_lower too
        return self.conn

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.join()
        self.proc = self.conn = None

    def _cpu(self) -> float:
        return cpu_seconds(self.proc.pid)

    def _wait(self, conn: Connection, limit: float) -> bool:
        """Whether the child answers before it has spent `limit` CPU seconds on the step (or ten times
        that in wall time): on a loaded machine a wall-clock limit would stop steps that are not slow."""
        cpu, wall = self._cpu(), time.perf_counter()
        while not conn.poll(1.0):
            if self._cpu() - cpu > limit or time.perf_counter() - wall > 10 * limit:
                return False
        return True

    def run(self, program: Program, targets: list[str], timeout: float) -> dict[str, Any]:
        """Each target's Outcome (status "timed out" past `timeout` CPU seconds: the child is then replaced)."""
        from fuzzing.check import Outcome

        out: dict[str, Any] = {}
        conn = self.start()
        conn.send((program, targets))
        for k, target in enumerate(targets):
            extra, self.new = (60 if self.new else 0), False
            if not self._wait(conn, timeout + extra):
                self.stop()
                out[target] = Outcome("timed out", [f"the step took more than {timeout} CPU seconds"], "timed out", seconds=timeout)
                rest = targets[k + 1:]
                if rest:
                    out.update(self.run(program, rest, timeout))
                return out
            out[target] = conn.recv()
        return out


@dataclass
class Failure:
    kind: str
    program: Program
    choices: tuple[Any, ...]
    targets: Counter[str] = field(default_factory=Counter)
    detail: list[str] = field(default_factory=list)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--targets", default="cpu,metal,wgpu")
    ap.add_argument("--timeout", type=float, default=60.0, help="CPU seconds a target's step may take (or ten times that in wall time)")
    ap.add_argument("--shrink", type=float, default=120.0, help="seconds of shrinking per kind of failure")
    ap.add_argument("--max-ops", type=int, default=8)
    ap.add_argument("--time-limit", type=float, help="stop drawing steps after this many seconds (the figures"
                    " then say how many ran); Ctrl-C does the same")
    ap.add_argument("--out", type=Path, help="a directory to write each failure's reproducer into")
    args = ap.parse_args(argv)
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]  # figures visible as they come
    targets = args.targets.split(",")
    worker = Worker()
    counts: dict[str, Counter[str]] = {t: Counter() for t in targets}
    failures: dict[str, Failure] = {}
    features: Counter[str] = Counter()
    start = time.perf_counter()
    done = [0, 0]  # steps run, invalid programs drawn

    @seed(args.seed)
    @settings(max_examples=args.steps, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(programs(max_ops=args.max_ops))
    def fuzz(program: Program) -> None:
        outcomes = worker.run(program, targets, args.timeout)
        if any(o.status == "invalid" for o in outcomes.values()):
            done[1] += 1
            reject()
        done[0] += 1
        features.update(program.features)
        for target, o in outcomes.items():
            counts[target][o.status] += 1
            counts[target]["fell back"] += bool(o.fallbacks)
            if o.status in FAILED:
                choices = tuple(current_build_context().data.choices)
                f = failures.get(o.kind)
                if f is None and args.out:  # unshrunk, at once: a long run's failures can be studied while it runs
                    _write(args.out / f"found_{len(failures) + 1}.py", Failure(o.kind, program, choices), target, program)
                if f is None or len(program.source) < len(f.program.source):
                    failures[o.kind] = f = Failure(o.kind, program, choices, f.targets if f else Counter(), o.detail)
                f.targets[target] += 1
        if done[0] % 25 == 0:
            so_far = "; ".join(f"{t} {c['raised']} raised {c['differed']} differed" for t, c in counts.items())
            print(f"  {done[0]} steps, {time.perf_counter() - start:.0f} s: {so_far}", file=sys.stderr, flush=True)
        if args.time_limit and time.perf_counter() - start > args.time_limit:
            raise KeyboardInterrupt  # hypothesis lets it through, unshrunk

    try:
        fuzz()
    except KeyboardInterrupt:
        print(f"stopped after {done[0]} steps", file=sys.stderr)
        worker.stop()  # a Ctrl-C may have left it in the middle of a step: its answers are not the next step's
    seconds = time.perf_counter() - start
    print(f"{done[0]} steps per target (seed {args.seed}, {done[1]} programs eager refuses skipped),"
          f" {seconds:.0f} s ({seconds / max(done[0], 1):.2f} s a step for {len(targets)} targets)")
    print(f"{'target':8} {'raised':>7} {'differed':>9} {'timed out':>10} {'ok':>6} {'pytorch':>8} {'fell back':>10}")
    for t in targets:
        c = counts[t]
        print(f"{t:8} {c['raised']:>7} {c['differed']:>9} {c['timed out']:>10} {c['ok']:>6} {c['pytorch']:>8}"
              f" {c['fell back']:>10}")
    print("(pytorch: aot_eager raised or differed the same way; fell back: a lowered graph or piece raised and"
          " ran in PyTorch instead)")
    for k, f in enumerate(sorted(failures.values(), key=lambda f: -sum(f.targets.values()))):
        target = f.targets.most_common(1)[0][0]
        shrunk = _shrink(worker, f, target, args)
        print(f"\n=== failure {k + 1}: {f.kind}\n    on {dict(f.targets)}; reproducer (shrunk) for {target}:")
        print(shrunk.reproducer(target))
        if args.out:
            _write(args.out / f"failure_{k + 1}.py", f, target, shrunk)
    worker.stop()
    print("\ncoverage (programs with each feature):", ", ".join(f"{n} {k}" for k, n in features.most_common()))
    return 1 if failures else 0


def _write(path: Path, f: Failure, target: str, program: Program) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"# {f.kind}\n# on {dict(f.targets)}\n" + program.reproducer(target))


def _shrink(worker: Worker, f: Failure, target: str, args: argparse.Namespace) -> Program:
    """The failing program shrunk by hypothesis to one that fails the same way on `target`."""
    db = InMemoryExampleDatabase()
    key = f.kind.encode()
    db.save(key + b".secondary", choices_to_bytes(f.choices))  # hypothesis takes its primary ones as shrunk
    deadline = time.perf_counter() + args.shrink

    def same(program: Program) -> bool:
        if time.perf_counter() > deadline:
            return False
        return worker.run(program, [target], args.timeout)[target].kind == f.kind

    try:
        return find(programs(max_ops=args.max_ops), same, database_key=key,
                    settings=settings(database=db, phases=[Phase.reuse, Phase.shrink], max_examples=10**6,
                                      deadline=None, suppress_health_check=list(HealthCheck),
                                      report_multiple_bugs=False))
    except (NoSuchExample, Exception):  # shrinking is a help: never lose the failure over it
        return f.program


if __name__ == "__main__":
    sys.exit(main())
