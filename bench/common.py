"""Running a command as its own process and measuring it: wall time and peak memory (RSS)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Measured:
    seconds: float
    peak_mb: float
    returncode: int
    stderr: str


def measure(cmd: list[str], env: dict[str, str] | None = None) -> Measured:
    """Run `cmd` to completion; its wall time and the peak resident memory of that process."""
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=full_env, text=True)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    stderr = proc.stderr.read() if proc.stderr else ""
    return Measured(seconds, usage.ru_maxrss / 1024.0, os.waitstatus_to_exitcode(status), stderr)


def lower_cmd(graph: Path, backend: str, out: Path, report: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "egraph_lower.cli", "lower", str(graph), "--backend", backend,
            "-o", str(out), "--report", str(report), "--quiet", *extra]


def cpu_seconds(pid: int) -> float:
    """A child process's CPU seconds so far (Linux: /proc; elsewhere the wall clock stands in), for
    limits that a loaded machine does not trip the way a wall-clock limit would."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return time.perf_counter()
