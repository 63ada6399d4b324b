"""Start-up: `egraph-lower lower` of the bundled example as a whole process, and what its imports cost.

    python bench/startup.py              # 21 runs of each
    python bench/startup.py --runs 51 --backend wgpu

Prints the median and the fastest wall time, and the median CPU time, of N whole-process runs of
`egraph-lower lower egraph_lower/examples/mlp_step.json --backend metal -o OUT -q` (and of
`python -c pass`, the interpreter's own start, for scale), then the import time of each heavy
module, with what it imports: on that command's path (from `python -X importtime`, the fastest of
N runs; "-" where the command does not import it) and on its own (`python -X importtime -c
"import M"`).

Bytecode is cached as an installed package's is (PYTHONDONTWRITEBYTECODE is dropped and the
caches go to a temporary PYTHONPYCACHEPREFIX, filled by one run first), so the figures are
those of an install, not of compiling the sources anew. Run it on a quiet machine: the figures
scale with the load (`uptime` is printed with them).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from common import ROOT

EXAMPLE = ROOT / "egraph_lower" / "examples" / "mlp_step.json"
HEAVY = ("numpy", "egglog", "ml_dtypes", "scipy.sparse.csgraph", "scipy.optimize", "torch")  # (as the package imports them)


def environment(cache: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "PYTHONPATH": str(ROOT), "PYTHONPYCACHEPREFIX": cache}


def lower_command(backend: str, out: Path) -> list[str]:
    script = shutil.which("egraph-lower", path=str(Path(sys.executable).parent))
    head = [script] if script else [sys.executable, "-m", "egraph_lower.cli"]
    return [*head, "lower", str(EXAMPLE), "--backend", backend, "-o", str(out), "-q"]


def timed(cmd: list[str], env: dict[str, str], runs: int) -> tuple[list[float], list[float]]:
    """Each run's wall seconds and CPU seconds (user + system, the process's own: a loaded
    machine inflates it far less than the wall time, so it is the better guess of a quiet one)."""
    walls, cpus = [], []
    for _ in range(runs):
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        walls.append(time.perf_counter() - start)
        cpus.append(usage.ru_utime + usage.ru_stime)
        assert os.waitstatus_to_exitcode(status) == 0, cmd
    return walls, cpus


def imports(args: list[str], env: dict[str, str]) -> tuple[dict[str, int], dict[str, int]]:
    """One `python -X importtime` run: each module's cumulative and self microseconds."""
    r = subprocess.run([sys.executable, "-X", "importtime", *args], env=env, check=True, capture_output=True, text=True)
    cumulative, own = {}, {}
    for line in r.stderr.splitlines():
        if line.startswith("import time:") and "self [us]" not in line:
            self_us, cum_us, name = line[len("import time:"):].split("|")
            cumulative[name.strip()], own[name.strip()] = int(cum_us), int(self_us)
    return cumulative, own


def fastest_imports(args: list[str], env: dict[str, str], runs: int) -> dict[str, float]:
    """Per heavy module, its import's cumulative seconds (the fastest run); "egraph_lower (own)" is
    the package's own modules alone, "all imports" everything."""
    best: dict[str, float] = defaultdict(lambda: float("inf"))
    for _ in range(runs):
        cumulative, own = imports(args, env)
        figures = {m: cumulative[m] / 1e6 for m in HEAVY if m in cumulative}
        figures["egraph_lower (own)"] = sum(us for m, us in own.items() if m.split(".")[0] == "egraph_lower") / 1e6
        figures["all imports"] = sum(own.values()) / 1e6
        for k, v in figures.items():
            best[k] = min(best[k], v)
    return dict(best)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=21)
    p.add_argument("--backend", default="metal")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        env = environment(os.path.join(tmp, "pycache"))
        cmd = lower_command(args.backend, Path(tmp) / "out.json")
        timed(cmd, env, 1)  # fills the bytecode caches
        for m in HEAVY:
            subprocess.run([sys.executable, "-c", f"import {m}"], env=env, capture_output=True)
        print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}; "
              f"{args.runs} runs each; Python {sys.version.split()[0]}")
        print(f"$ {' '.join(cmd)}")
        for label, c in (("egraph-lower lower (whole process)", cmd), ("python -c pass", [sys.executable, "-c", "pass"])):
            t, cpu = timed(c, env, args.runs)
            print(f"  {label:<36} median {statistics.median(t):.3f} s   fastest {min(t):.3f} s   "
                  f"CPU median {statistics.median(cpu):.3f} s")
        on_path = fastest_imports(cmd[1:] if cmd[0] == sys.executable else ["-m", "egraph_lower.cli", *cmd[1:]],
                                  env, max(3, args.runs // 4))
        print("import time, seconds (fastest run):      on the command's path   on its own")
        for m in (*HEAVY, "egraph_lower (own)", "all imports"):
            alone = ""
            if m in HEAVY:
                r = subprocess.run([sys.executable, "-c", f"import {m}"], env=env, capture_output=True)
                alone = "not installed" if r.returncode else \
                    f"{fastest_imports(['-c', f'import {m}'], env, max(3, args.runs // 4))[m]:.3f}"
            figure = f"{on_path[m]:.3f}" if m in on_path else "-"
            print(f"  {m:<38} {figure:>20}   {alone:>10}")


if __name__ == "__main__":
    main()
