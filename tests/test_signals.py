"""SIGINT, SIGTERM and SIGHUP at chosen moments of a run, imports included: one line (for SIGINT)
and exit status 130 (128 plus the number for the others), never a traceback, and every output as
it was, or, for a signal that lands while the files are renamed, every output new.

The moment is chosen by tests/interrupt/sitecustomize.py (first on the subprocess's PYTHONPATH):
the process sends the signal to itself as an import starts or as an `os` function is called, so
each case is the same on every run; no sleeps, no races."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import numpy as np
import pytest

import egraph_lower as el
from cli_support import EXAMPLE, PRECIOUS, ROOT, command, env, snapshot
from egraph_lower.build import GraphBuilder

SITE = Path(__file__).resolve().parent / "interrupt"
LOWER = ["lower", "g.json", "-b", "metal", "-o", "out.json", "--report", "report.json", "-q"]

# (moment, the command's arguments): the start-up's imports, which `main` holds; the run's own
# (lazy) imports, with the outputs' files aside open; writing a file aside; the renames.
MOMENTS = {
    "numpy's import": ("import:numpy", LOWER),
    "argparse's import": ("import:argparse", LOWER),
    "egglog (its engine found)": ("import:egglog", LOWER),
    "the package's lower": ("import:egraph_lower.lower", LOWER),
    "scipy's import, lazily": ("import:scipy.optimize", [*LOWER, "--extractor", "exact"]),
    "ml_dtypes' extension, lazily": ("import:ml_dtypes._ml_dtypes_ext", ["run", "half.json", "-i", "in.npz",
                                                                         "-o", "out.npz"]),
    "the output's file aside made": ("call:fchmod", LOWER),
    "the output written aside": ("call:fsync", LOWER),
    "the report written aside": ("call:fsync#2", LOWER),
    "the renames": ("call:replace", LOWER),
}


@pytest.fixture
def run_dir(work: Path) -> Path:
    """The example, a bf16 graph and its inputs, and precious outputs."""
    b = GraphBuilder("half")
    x = b.input("x", [4, 8], "bf16")
    b_ = b.build([b.act_backward("Gelu", x, x)])
    (work / "half.json").write_text(b_.to_json())
    np.savez(work / "in.npz", x=np.linspace(-3, 3, 32, dtype=np.float32).reshape(4, 8))
    for name in ("report.json", "out.npz"):
        (work / name).write_bytes(PRECIOUS)
    return work


def interrupted(d: Path, at: str, args: list[str], sig: str = "SIGINT",
                preexec: object = None) -> subprocess.CompletedProcess[str]:
    sent = d.parent / f"{d.name}.sent"  # (outside the directory the test compares)
    extra = {"PYTHONPATH": f"{SITE}{os.pathsep}{ROOT}", "EGRAPH_LOWER_TEST_SIGNAL_AT": at,
             "EGRAPH_LOWER_TEST_SIGNAL": sig, "EGRAPH_LOWER_TEST_SIGNAL_SENT": str(sent)}
    r = subprocess.run(command(*args), cwd=d, capture_output=True, text=True, env=env(**extra),
                       preexec_fn=preexec, timeout=300)  # type: ignore[arg-type]
    assert sent.exists(), f"the moment {at} never came: {r.stderr}"
    sent.unlink()
    return r


@pytest.mark.parametrize("moment", list(MOMENTS))
def test_sigint_at_any_moment_is_one_line_and_exit_130(moment: str, run_dir: Path) -> None:
    at, args = MOMENTS[moment]
    before = snapshot(run_dir)
    r = interrupted(run_dir, at, args)
    assert (r.returncode, r.stderr) == (130, "egraph-lower: interrupted\n"), (r.returncode, r.stderr)
    after = snapshot(run_dir)
    if at == "call:replace":  # held until both renames are done: every output new, none left aside
        assert sorted(after) == sorted(before)
        assert el.load_graph(run_dir / "out.json").name == "mlp_step"
        assert json.loads((run_dir / "report.json").read_text())["stop_reason"] == "saturated"
    else:
        assert after == before


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGHUP"])
@pytest.mark.parametrize("moment", ["numpy's import", "the output written aside"])
def test_sigterm_and_sighup_exit_128_plus_their_number(sig: str, moment: str, run_dir: Path) -> None:
    at, args = MOMENTS[moment]
    before = snapshot(run_dir)
    r = interrupted(run_dir, at, args, sig)
    assert (r.returncode, r.stderr) == (128 + getattr(signal, sig), ""), (r.returncode, r.stderr)
    assert snapshot(run_dir) == before


def _ignore(*signums: int) -> None:
    for s in signums:
        signal.signal(s, signal.SIG_IGN)


@pytest.mark.parametrize("sig", ["SIGINT", "SIGHUP"])
def test_a_signal_the_parent_ignores_stays_ignored(sig: str, run_dir: Path) -> None:
    """`nohup` (SIGHUP) and a background job of a non-interactive shell (SIGINT) start the run
    with the signal ignored: it stays ignored, and the run completes."""
    signum = getattr(signal, sig)
    r = interrupted(run_dir, "import:numpy", LOWER, sig, preexec=lambda: _ignore(signum))
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert el.load_graph(run_dir / "out.json").name == "mlp_step"


def test_main_from_python_gives_the_handlers_back() -> None:
    from egraph_lower import cli

    before = [signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)]
    assert cli.main(["backends"]) == 0
    assert [signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)] == before


def test_held_raises_when_the_outermost_section_ends() -> None:
    """From Python, with the handlers installed as `main` installs them."""
    from egraph_lower import signals

    done = []
    with signals.installed(), pytest.raises(KeyboardInterrupt):
        with signals.held():
            with signals.held():
                os.kill(os.getpid(), signal.SIGINT)
                done.append("inner")
            done.append("outer")  # still held: the signal waits
        done.append("after")  # not reached: raised as the outer section ended
    assert done == ["inner", "outer"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_the_example_still_runs_under_the_site_hook(work: Path) -> None:
    """The hook itself changes nothing when no moment is named."""
    r = subprocess.run(command("lower", "g.json", "-b", "metal", "-q"), cwd=work, capture_output=True, text=True,
                       env=env(PYTHONPATH=f"{SITE}{os.pathsep}{ROOT}"), timeout=300)
    assert r.returncode == 0 and r.stderr == ""
    assert el.from_json(r.stdout).name == EXAMPLE.stem
