"""Input files read with a bound: regular files, pipes and devices alike."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from egraph_lower.errors import LowerError
from egraph_lower.reading import read_bytes, read_text


def test_a_file_at_the_cap_is_read_one_byte_more_is_not(tmp_path: Path) -> None:
    p = tmp_path / "f"
    p.write_bytes(b"x" * 100)
    assert read_bytes(p, "thing", 100) == b"x" * 100
    with pytest.raises(LowerError, match="cannot read thing .*larger than 99 bytes"):
        read_bytes(p, "thing", 99)


def test_a_pipe_is_read_no_further_than_its_cap() -> None:
    r, w = os.pipe()
    writer = threading.Thread(target=lambda: _write_until_closed(w))
    writer.start()
    try:
        with pytest.raises(LowerError, match="larger than 1 KiB"):
            read_bytes(f"/proc/self/fd/{r}", "pipe", 1024)
    finally:
        os.close(r)
        writer.join()


def _write_until_closed(fd: int) -> None:
    try:
        while True:
            os.write(fd, b"y" * 4096)
    except OSError:  # the reader closed its end
        pass
    finally:
        os.close(fd)


def test_a_binary_or_undecodable_file_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "g.json"
    p.write_bytes(b"{}\x00")
    with pytest.raises(LowerError, match="binary file"):
        read_text(p)
    p.write_bytes(b"{\xff}")
    with pytest.raises(LowerError, match="not UTF-8 text"):
        read_text(p)
    with pytest.raises(LowerError, match="binary file"):
        read_text("/dev/zero")


@pytest.mark.parametrize("path, message", [("missing.json", "no such file"), (".", "it is a directory")])
def test_missing_and_directories(path: str, message: str) -> None:
    with pytest.raises(LowerError, match=message):
        read_text(path)
