"""Output files from Python: checked when added, untouched until the commit, nothing left aside."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from egraph_lower.errors import LowerError
from egraph_lower.outputs import Outputs, own_descriptor, write_atomic


def test_nothing_changes_before_the_commit_and_nothing_is_left_after(tmp_path: Path) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text("old a")
    with Outputs() as out:
        out.add(a, "a")
        out.add(b, "b")
        out.write(a, ["new ", "a"])
        out.write(b, b"new b")
        assert a.read_text() == "old a" and not b.exists()
        out.commit()
    assert a.read_text() == "new a" and b.read_bytes() == b"new b"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "b.json"]


def test_an_error_inside_leaves_every_target_and_removes_every_file_aside(tmp_path: Path) -> None:
    a = tmp_path / "a.json"
    a.write_text("old a")
    with pytest.raises(RuntimeError), Outputs() as out:
        out.add(a, "a")
        out.add(tmp_path / "b.json", "b")
        out.write(a, "new a")
        raise RuntimeError("the run failed")
    assert a.read_text() == "old a"
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]


def test_a_target_that_became_a_directory_stops_every_rename(tmp_path: Path) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text("old a")
    with Outputs() as out:
        out.add(a, "a")
        out.add(b, "b")
        out.write(a, "new a")
        out.write(b, "new b")
        b.mkdir()  # changed while the run worked
        with pytest.raises(LowerError, match="b.json.*a directory"):
            out.commit()
    assert a.read_text() == "old a"


@pytest.mark.parametrize("path, message", [("", "not the path of a file"), ("sub/", "not the path of a file"),
                                           ("missing/x", "no such directory"), (".", "not the path of a file")])
def test_paths_that_name_no_file(path: str, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path)
    with pytest.raises(LowerError, match=message), Outputs() as out:
        out.add(path, "graph")


def test_a_lone_surrogate_is_written_escaped(tmp_path: Path) -> None:
    target = tmp_path / "x.txt"
    write_atomic(target, "a\ud800b")
    assert target.read_bytes() == b"a\\ud800b"


PID = os.getpid()


@pytest.mark.parametrize("path, fd", [  # {pid}: this process's (in the id it would differ between xdist's workers)
    ("/dev/stdout", 1), ("/dev/stderr", 2), ("/dev/stdin", 0), ("/proc/self/fd/1", 1), ("/proc/{pid}/fd/2", 2),
    ("/dev/fd/7", 7), ("/proc/1/fd/1", 1 if PID == 1 else None), ("/dev/null", None), ("out.json", None),
    ("/proc/self/fdx/1", None),
])
def test_own_descriptor(path: str, fd: int | None) -> None:
    assert own_descriptor(path.format(pid=PID)) == fd


def test_own_descriptor_through_links(tmp_path: Path) -> None:
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("/dev/stderr")
    (tmp_path / "c").symlink_to("/dev/null")
    assert own_descriptor(str(tmp_path / "a")) == 2 and own_descriptor(str(tmp_path / "c")) is None


def test_a_device_is_written_to_after_the_files_aside_are_complete(tmp_path: Path) -> None:
    """From Python: a FIFO's reader sees the stream's data only at the commit, when the file
    aside is already complete and not yet renamed; then the file is renamed."""
    fifo, a = tmp_path / "fifo", tmp_path / "a.json"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # so the writer's open does not wait
    seen: list[bool] = []
    with Outputs() as out:
        out.add(a, "a")
        out.add(fifo, "stream")
        out.write(fifo, "to the stream")
        out.write(a, "new a")
        with pytest.raises(BlockingIOError):
            os.read(reader, 100)  # nothing yet
        real_replace = os.replace

        def replace(src: str, dst: str) -> None:
            seen.append(os.read(reader, 100) == b"to the stream" and not a.exists())
            real_replace(src, dst)

        os.replace = replace  # type: ignore[assignment]
        try:
            out.commit()
        finally:
            os.replace = real_replace
    os.close(reader)
    assert seen == [True] and a.read_text() == "new a"
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_nothing_is_written_to_a_stream_of_a_run_that_fails(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    with pytest.raises(RuntimeError), Outputs() as out:
        out.add(fifo, "stream")
        out.write(fifo, "never")
        raise RuntimeError("the run failed")
    assert os.read(reader, 100) == b""  # the writer closed, having written nothing
    os.close(reader)
