"""Outputs that are streams, from the command line: a character device (`/dev/null`, `/dev/full`),
a FIFO, a link to either, and this process's own descriptors (`/dev/stdout`, `/dev/stderr`,
`/proc/self/fd/N`) are written to, never replaced or refused; regular files are still replaced
whole, and only once every stream took its output (docs/reliability.md, "Output files")."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import numpy as np
import pytest

import egraph_lower as el
from cli_support import EXAMPLE, PRECIOUS, chain, cli, command, env, fails_and_keeps, snapshot

LOWERED = el.lower(el.load_graph(EXAMPLE), "metal").graph.to_json()


def lowered(text: str) -> None:
    """`text` is the example lowered for metal, whole."""
    assert el.from_json(text).to_json() == LOWERED


@pytest.mark.parametrize("path", ["/dev/null", "link-to-null"])
def test_dev_null_is_written_to_and_the_report_still_replaced(path: str, work: Path) -> None:
    (work / "link-to-null").symlink_to("/dev/null")
    (work / "report.json").write_bytes(PRECIOUS)
    r = cli("lower", "g.json", "-b", "metal", "-o", path, "--report", "report.json", cwd=work)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert r.stdout.startswith("lowered mlp_step for metal")  # the summary: stdout is not named
    assert json.loads((work / "report.json").read_text())["stop_reason"] == "saturated"
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode) and os.readlink(work / "link-to-null") == "/dev/null"
    assert sorted(p.name for p in work.iterdir()) == ["g.json", "link-to-null", "out.json", "report.json"]


@pytest.mark.parametrize("path", ["/dev/stdout", "/proc/self/fd/1", "/dev/fd/1", "link-to-stdout"])
def test_a_name_of_stdout_is_stdout(path: str, work: Path) -> None:
    """The graph on stdout (a pipe here), alone: the summary goes to stderr, as with `-o -`."""
    (work / "link-to-stdout").symlink_to("/dev/stdout")
    r = cli("lower", "g.json", "-b", "metal", "-o", path, cwd=work)
    assert r.returncode == 0, r.stderr
    lowered(r.stdout)
    assert r.stderr.startswith("lowered mlp_step for metal")
    fails_and_keeps(work, ["lower", "g.json", "-b", "metal", "-o", path, "--report", "-"], "stdout is already named")


def test_stdout_redirected_to_a_file_is_written_through_not_replaced(work: Path) -> None:
    """`-o /dev/stdout > file`: the shell's file takes the graph (the same inode: not replaced)."""
    target = work / "shell.json"
    with open(target, "wb") as fh:
        inode = os.fstat(fh.fileno()).st_ino
        r = cli("lower", "g.json", "-b", "metal", "-o", "/dev/stdout", "-q", cwd=work, stdout=fh)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    lowered(target.read_text())
    assert target.stat().st_ino == inode


def test_stderr_takes_the_graph_and_stdout_the_summary(work: Path) -> None:
    r = cli("lower", "g.json", "-b", "metal", "-o", "/dev/stderr", cwd=work)
    assert r.returncode == 0
    lowered(r.stderr)
    assert r.stdout.startswith("lowered mlp_step for metal")


@pytest.mark.parametrize("args, expected", [
    (["-o", "/dev/null", "--report", "/dev/null"], "the same file is named for two outputs"),
    (["-o", "/dev/stderr", "--report", "/proc/self/fd/2"], "the same file is named for two outputs"),
    (["-o", "/proc/self/fd/9"], "descriptor 9 is not open"),
    (["-o", "/dev/stdin"], "descriptor 0 is not open for writing"),
])
def test_streams_that_cannot_be_written_are_refused(args: list[str], expected: str, work: Path) -> None:
    with open(os.devnull, "rb") as stdin:  # read-only
        fails_and_keeps(work, ["lower", "g.json", "-b", "metal", *args], expected, stdin=stdin)


def test_a_full_device_fails_before_any_file_is_replaced(work: Path) -> None:
    """The stream is written first: when it fails, the report stays as it was."""
    (work / "report.json").write_bytes(PRECIOUS)
    fails_and_keeps(work, ["lower", "g.json", "-b", "metal", "-o", "/dev/full", "--report", "report.json"],
                    "cannot write graph '/dev/full'", "No space left")


def test_a_fifo_is_written_to_like_a_pipe(work: Path) -> None:
    os.mkfifo(work / "pipe")
    p = subprocess.Popen(command("lower", "g.json", "-b", "metal", "-o", "pipe", "-q"), cwd=work, env=env(),
                         stderr=subprocess.PIPE, text=True)
    with open(work / "pipe", "rb") as reader:  # waits for the writer's open, as the writer's waits for this
        got = reader.read()
    _, err = p.communicate(timeout=120)
    assert p.returncode == 0 and err == "", err
    lowered(got.decode())
    assert stat.S_ISFIFO(os.lstat(work / "pipe").st_mode)


def test_a_fifo_whose_reader_leaves_fails_and_replaces_no_file(work: Path) -> None:
    """Deterministic: the output (about 1.5 MB) is far larger than a pipe holds, and the reader
    leaves as soon as the first byte arrives, so the writer meets a pipe with no reader."""
    (work / "chain.json").write_text(chain(3000))
    (work / "report.json").write_bytes(PRECIOUS)
    os.mkfifo(work / "pipe")
    before = snapshot(work)
    p = subprocess.Popen(command("lower", "chain.json", "-b", "wgpu", "-o", "pipe", "--report", "report.json", "-q"),
                         cwd=work, env=env(), stderr=subprocess.PIPE, text=True)
    reader = os.open(work / "pipe", os.O_RDONLY)
    assert os.read(reader, 1) == b"{"  # the commit has begun
    os.close(reader)
    _, err = p.communicate(timeout=120)
    assert p.returncode == 2 and err.splitlines() == ["egraph-lower: error: cannot write graph 'pipe': Broken pipe"], err
    assert snapshot(work) == before


def test_run_and_explore_write_to_streams(work: Path) -> None:
    np.savez(work / "in.npz", x=np.ones((4, 8), np.float32), w=np.ones((8, 16), np.float32),
             b=np.ones(16, np.float32), dy=np.ones((4, 16), np.float32))
    r = cli("run", "g.json", "-i", "in.npz", "-o", "/dev/null", cwd=work)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    r = cli("explore", "g.json", "-b", "metal", "--json", "/dev/stdout", "--dot", "/dev/null", cwd=work)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["graph"] == "mlp_step"  # stdout holds the report alone,
    assert "mlp_step" in r.stderr  # the summary went to stderr
    assert sorted(p.name for p in work.iterdir()) == ["g.json", "in.npz", "out.json"]


def test_an_output_on_stdout_whose_reader_has_gone_fails_and_renames_nothing(work: Path) -> None:
    """`-o - | reader` where the reader exits first: the graph is lost, so the run fails (exit 2, one
    line) and the report, whose rename would come after, is left as it was."""
    (work / "report.json").write_bytes(PRECIOUS)
    read, write = os.pipe()
    os.close(read)  # the reader has gone before anything is written
    try:
        r = cli("lower", "g.json", "-b", "metal", "-o", "-", "--report", "report.json", cwd=work, stdout=write)
    finally:
        os.close(write)
    assert r.returncode == 2, r.stderr
    assert r.stderr.count("\n") == 1 and "cannot write to stdout" in r.stderr, r.stderr
    assert (work / "report.json").read_bytes() == PRECIOUS
