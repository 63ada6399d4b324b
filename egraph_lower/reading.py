"""Input files read with a bound: graphs, backend files, .npz archives.

At most `cap + 1` bytes are ever read, whatever the file is (a regular file, a pipe, a
device such as /dev/zero), so no input can make a run read until memory runs out. Every
failure is a one-line `LowerError` naming the file.
"""

from __future__ import annotations

import os
import stat

from .errors import LowerError

GRAPH_BYTES = 1 << 31  # 2 GiB: a graph of several million nodes
BACKEND_BYTES = 1 << 20  # 1 MiB: a backend file is a page of names and numbers
NPZ_BYTES = 1 << 33  # 8 GiB of arrays, compressed or not
_CHUNK = 1 << 20


def _size(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} bytes"


def too_large(what: str, path: str, cap: int) -> LowerError:
    return LowerError(f"cannot read {what} {path!r}: larger than {_size(cap)}")


def read_bytes(path: str | os.PathLike[str], what: str, cap: int, text: bool = False,
               magic: tuple[bytes, str] | None = None) -> bytes:
    """The bytes of `path`, or a LowerError when it is missing, unreadable or over `cap` bytes.
    A file that is not what is expected is refused at its first chunk, before more is read:
    with `text`, one holding a NUL byte (a binary file, such as /dev/zero); with `magic`
    (leading bytes, what the file should be), one that starts otherwise."""
    where = f"cannot read {what} {os.fspath(path)!r}"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        raise LowerError(f"{where}: no such file") from None
    except PermissionError:
        raise LowerError(f"{where}: permission denied") from None
    except OSError as e:
        raise LowerError(f"{where}: {e.strerror}") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise LowerError(f"{where}: it is a directory")
        if stat.S_ISREG(st.st_mode):
            if st.st_size > cap:
                raise too_large(what, os.fspath(path), cap)
            chunk = st.st_size + 1  # in one read (one more byte: a file that grew is seen)
        else:
            chunk = _CHUNK  # a pipe or a device: to the end, or just past the cap
        parts: list[bytes] = []
        got = 0
        while got <= cap:
            part = os.read(fd, min(chunk, cap + 1 - got))
            if not part:
                break
            if text and b"\x00" in part:
                raise LowerError(f"{where}: binary file, expected JSON text")
            if magic and not got and not part.startswith(magic[0][:len(part)]):
                raise LowerError(f"{where}: not {magic[1]}")
            parts.append(part)
            got += len(part)
    except OSError as e:
        raise LowerError(f"{where}: {e.strerror}") from None
    finally:
        os.close(fd)
    if got > cap:
        raise too_large(what, os.fspath(path), cap)
    return b"".join(parts)


def read_text(path: str | os.PathLike[str], what: str = "graph", cap: int = GRAPH_BYTES) -> str:
    """A file's text (UTF-8, no NUL bytes), read with `read_bytes`."""
    data = read_bytes(path, what, cap, text=True)
    where = f"cannot read {what} {os.fspath(path)!r}"
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise LowerError(f"{where}: not UTF-8 text (byte {e.start})") from None
