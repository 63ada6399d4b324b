"""PyTorch's OpInfo database as the coverage yardstick: every training-relevant entry through the
torch.compile backend, per target and dtype (docs/benchmarks.md, "OpInfo coverage").

    python bench/opinfo.py                                  # 408 entries x f32 f64 bf16 f16 x metal wgpu
    python bench/opinfo.py --samples 1 --dtypes f32 --targets metal
    python bench/opinfo.py --entries 'cumsum,nn.functional.*pool*' --json out.json
    python bench/opinfo.py --no-decompositions              # without decompose.py's table (the figure before it)

Each entry runs in a dtype in a worker process (`--jobs` of them), sample by sample as
bench/opinfo_run.py says; a worker that crashes, or spends more than `--timeout` CPU seconds on an
entry and dtype, is replaced and the entry counts as raised. Prints, per target and dtype, how many
entries are covered (nothing left in PyTorch, eager's gradients), have a wrong gradient, left an op in
PyTorch, raised, or did not run (the OpInfo has no CPU backward in the dtype); then the aten ops most
often left in PyTorch with the entries they cut, and each wrong gradient and failure. `--json PATH`
writes every result ('-': stdout, the table then goes to stderr).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import multiprocessing as mp
import sys
import time
from collections import Counter, defaultdict
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, TextIO

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from common import cpu_seconds  # noqa: E402
from opinfo_run import OUTCOMES, Result  # noqa: E402
from opinfo_reasons import REASONS  # noqa: E402

TARGETS = ("metal", "wgpu")
DTYPES = ("f32", "f64", "bf16", "f16")


def _serve(conn: Connection, decompose: bool) -> None:
    """The worker: for each (entry, target, dtype, samples) it is sent, one Result as a dict."""
    import opinfo_run

    if not decompose:  # the backend as it was before decompose.py: no decompositions at all
        import egraph_lower.torch.backend as backend_module

        backend_module.decompositions = lambda keep=(): {}  # type: ignore[assignment]
    by_key = {opinfo_run.key(o): o for o in opinfo_run.entries()}
    while (job := conn.recv()) is not None:
        entry, target, dtype, n = job
        conn.send(opinfo_run.run_entry(by_key[entry], target, dtype, n).to_json())


class Worker:
    """A child process running entries; replaced when it crashes or overruns its time."""

    def __init__(self, decompose: bool) -> None:
        self.decompose = decompose
        self.proc: Any = None
        self.conn: Connection | None = None
        self.job: tuple[str, str, str, int] | None = None
        self.cpu = self.wall = self.grace = 0.0

    def send(self, job: tuple[str, str, str, int]) -> None:
        if self.conn is None:
            ctx = mp.get_context("spawn")
            self.conn, child = ctx.Pipe()
            self.proc = ctx.Process(target=_serve, args=(child, self.decompose), daemon=True)
            self.proc.start()
            self.grace = 60.0  # its first entry imports torch, op_db and egraph_lower as well
        else:
            self.grace = 0.0
        self.cpu = self._cpu()
        self.wall = time.perf_counter()
        self.job = job
        self.conn.send(job)

    def stop(self, kill: bool = True) -> None:
        """End the child: killed, or (`kill=False`, between jobs) asked to return."""
        if self.proc is not None:
            if not kill and self.conn is not None and self.job is None:
                self.conn.send(None)
                self.proc.join(30)
            if self.proc.is_alive():
                self.proc.kill()
            self.proc.join()
        self.proc = self.conn = self.job = None

    def _cpu(self) -> float:
        return cpu_seconds(self.proc.pid)

    def poll(self, timeout: float) -> dict[str, Any] | None:
        """The running job's result if it is done (a "raised" one if the child died or overran)."""
        assert self.conn is not None and self.job is not None
        entry, target, dtype, _ = self.job
        try:
            if self.conn.poll(0):
                out: dict[str, Any] = self.conn.recv()
                self.job = None
                return out
        except (EOFError, OSError):
            pass
        else:
            limit = timeout + self.grace  # CPU seconds; ten times that in wall time (a loaded machine)
            if (self.proc.is_alive() and self._cpu() - self.cpu <= limit
                    and time.perf_counter() - self.wall <= 10 * limit):
                return None
        why = (f"the worker died (exit code {self.proc.exitcode})" if not self.proc.is_alive()
               else f"timed out (more than {timeout:g} CPU seconds)")
        self.stop()
        return Result(entry, target, dtype, "raised", detail=why, seconds=round(timeout, 2)).to_json()


def run(jobs: list[tuple[str, str, str, int]], workers: int, timeout: float, decompose: bool,
        progress: TextIO) -> list[dict[str, Any]]:
    pending = list(reversed(jobs))
    pool = [Worker(decompose) for _ in range(max(1, workers))]
    results: list[dict[str, Any]] = []
    try:
        while pending or any(w.job for w in pool):
            for w in pool:
                if w.job is None and pending:
                    w.send(pending.pop())
                if w.job is not None:
                    r = w.poll(timeout)
                    if r is not None:
                        results.append(r)
                        left = f" [{', '.join(sorted(r['unlowered']))}]" if r["unlowered"] else ""
                        print(f"[{len(results)}/{len(jobs)}] {r['entry']} {r['target']} {r['dtype']}: {r['outcome']}"
                              f" ({r['samples']} samples, {r['seconds']:.1f} s){left}"
                              f"{' ' + r['detail'] if r['detail'] and r['outcome'] != 'covered' else ''}",
                              file=progress, flush=True)
            time.sleep(0.05)
    finally:
        for w in pool:
            w.stop(kill=w.job is not None)
    return results


def report(results: list[dict[str, Any]], n_entries: int, top: int, out: TextIO, heading: str) -> None:
    print(heading, file=out)
    counts: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for r in results:
        counts[r["target"], r["dtype"]][r["outcome"]] += 1
    print(f"\n{'target':8} {'dtype':6} " + " ".join(f"{o:>15}" for o in OUTCOMES) + f" {'of':>5}", file=out)
    for (target, dtype), c in counts.items():
        print(f"{target:8} {dtype:6} " + " ".join(f"{c[o]:>15}" for o in OUTCOMES) + f" {n_entries:>5}", file=out)
    cut: dict[str, set[str]] = defaultdict(set)
    for r in results:
        for op in r["unlowered"]:
            cut[op].add(r["entry"])
    if cut:
        print(f"\nLeft in PyTorch, most entries first (an entry counts once for all targets and dtypes; "
              f"{min(top, len(cut))} of {len(cut)}):", file=out)
        for op, es in sorted(cut.items(), key=lambda kv: (-len(kv[1]), kv[0]))[:top]:
            names = sorted(es)
            more = f", ... (+{len(names) - 6})" if len(names) > 6 else ""
            print(f"  {len(es):4}  {op}: {', '.join(names[:6])}{more}", file=out)
    left = sorted({r["entry"] for r in results if r["outcome"] == "left in PyTorch"})
    if left:
        unexplained = [e for e in left if e not in REASONS]
        print(f"\nEntries left in PyTorch: {len(left) - len(unexplained)} that no lowering can cover (why: "
              f"bench/opinfo_reasons.py), {len(unexplained)} still to do"
              + (f": {', '.join(unexplained)}" if unexplained else ""), file=out)
    for outcome in ("wrong gradient", "raised"):
        bad = [r for r in results if r["outcome"] == outcome]
        if bad:
            print(f"\n{outcome.capitalize()} ({len(bad)}):", file=out)
            for r in bad[:top]:
                print(f"  {r['entry']} {r['target']} {r['dtype']}: {r['detail']}", file=out)
            if len(bad) > top:
                print(f"  ... (+{len(bad) - top})", file=out)


def _select(keys: list[str], patterns: str | None, exclude: str | None) -> list[str]:
    def hit(k: str, pats: str) -> bool:
        return any(fnmatch.fnmatchcase(k, p.strip()) for p in pats.split(",") if p.strip())

    return [k for k in keys if (patterns is None or hit(k, patterns)) and not (exclude and hit(k, exclude))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--entries", help="comma-separated fnmatch patterns of entries (name or name.variant)")
    ap.add_argument("--exclude", help="comma-separated patterns of entries to leave out")
    ap.add_argument("--dtypes", default=",".join(DTYPES), help="of f32,f64,bf16,f16 (default: all four)")
    ap.add_argument("--targets", default=",".join(TARGETS), help="backends (default: metal,wgpu)")
    ap.add_argument("--samples", type=int, default=2, help="samples per entry and dtype (0: all; default 2)")
    ap.add_argument("--timeout", type=float, default=300.0, help="CPU seconds per entry and dtype (default 300)")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    ap.add_argument("--top", type=int, default=30, help="rows of the lists (default 30)")
    ap.add_argument("--no-decompositions", action="store_true", help="the backend without decompose.py's table")
    ap.add_argument("--json", metavar="PATH", help="write every result as JSON ('-': stdout)")
    ap.add_argument("--list", action="store_true", help="print the selected entries and exit")
    args = ap.parse_args(argv)

    import torch

    import opinfo_run

    keys = _select([opinfo_run.key(o) for o in opinfo_run.entries()], args.entries, args.exclude)
    if args.list:
        print("\n".join(keys))
        return 0
    dtypes = [d.strip() for d in args.dtypes.split(",") if d.strip()]
    targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    if unknown := set(dtypes) - set(DTYPES):
        ap.error(f"unknown dtypes {sorted(unknown)} (of {', '.join(DTYPES)})")
    jobs = [(k, t, d, args.samples) for k in keys for t in targets for d in dtypes]
    start = time.perf_counter()
    out = sys.stderr if args.json == "-" else sys.stdout
    results = run(jobs, args.jobs, args.timeout, not args.no_decompositions, sys.stderr)
    minutes = (time.perf_counter() - start) / 60
    heading = (f"OpInfo coverage: {len(keys)} entries, {args.samples or 'all'} sample(s) an entry and dtype,"
               f" decompositions {'off' if args.no_decompositions else 'on'}, torch {torch.__version__},"
               f" {minutes:.1f} min")
    report(results, len(keys), args.top, out, heading)
    if args.json:
        doc = {"torch": torch.__version__, "samples": args.samples, "decompositions": not args.no_decompositions,
               "entries": len(keys), "minutes": round(minutes, 1), "results": results}
        text = json.dumps(doc, indent=1)
        if args.json == "-":
            print(text)
        else:
            Path(args.json).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
