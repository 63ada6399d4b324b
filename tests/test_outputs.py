"""Output files from Python: checked when added, untouched until the commit, nothing left aside."""

from __future__ import annotations

from pathlib import Path

import pytest

from egraph_lower.errors import LowerError
from egraph_lower.outputs import Outputs, write_atomic


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
