"""Shared by the command-line tests that run it as a subprocess (test_hostile, test_streams,
test_signals): the command, its environment, a run, a directory's snapshot, a refusal."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from egraph_lower.build import GraphBuilder

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "egraph_lower" / "examples" / "mlp_step.json"
PRECIOUS = b"precious\n"


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "egraph_lower.cli", *args]


def env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), **extra}


def cli(*args: str, cwd: Path, stdout: Any = subprocess.PIPE, extra_env: dict[str, str] | None = None,
        preexec: Callable[[], None] | None = None, stdin: Any = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command(*args), cwd=cwd, stdout=stdout, stderr=subprocess.PIPE, text=True, stdin=stdin,
                          env=env(**(extra_env or {})), preexec_fn=preexec, timeout=300)


def snapshot(d: Path) -> dict[str, Any]:
    """Every entry of `d` (not following links): bytes of files, targets of links, kinds of the rest."""
    out: dict[str, Any] = {}
    for p in sorted(d.iterdir()):
        st = p.lstat()
        if stat.S_ISLNK(st.st_mode):
            out[p.name] = ("link", os.readlink(p))
        elif stat.S_ISREG(st.st_mode):
            out[p.name] = p.read_bytes()
        elif stat.S_ISDIR(st.st_mode):
            out[p.name] = ("dir", snapshot(p))
        else:
            out[p.name] = ("special", stat.S_IFMT(st.st_mode))
    return out


def refused(r: subprocess.CompletedProcess[str], *expected: str) -> str:
    """Exit status 2 and exactly one stderr line (holding each of `expected`), no traceback."""
    assert "Traceback" not in r.stderr, r.stderr
    lines = r.stderr.splitlines()
    assert r.returncode == 2 and len(lines) == 1, (r.returncode, r.stderr)
    for e in expected:
        assert e in lines[0], lines[0]
    assert "\x1b" not in r.stderr
    return lines[0]


def fails_and_keeps(work: Path, args: list[str], *expected: str, **kw: Any) -> str:
    before = snapshot(work)
    line = refused(cli(*args, cwd=work, **kw), *expected)
    assert snapshot(work) == before
    return line


def chain(n: int) -> str:
    b = GraphBuilder(f"chain_{n}")
    x = b.input("x", [8, 16])
    for i in range(n):
        x = b.act_backward(("Sigmoid", "Tanh", "Gelu")[i % 3], x, x)
    return b.build([x]).to_json()
