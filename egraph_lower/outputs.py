"""A run's output files: checked before the work starts, written aside, committed together.

    with Outputs() as out:
        out.add(args.output, "graph")        # refused now if it cannot or must not be replaced
        out.add(args.report, "report")
        ... the work ...
        out.write(args.output, chunks)       # into a hidden file in the target's directory
        out.write(args.report, text)
        out.commit()                         # stdout first, then every file renamed into place

What is promised:
- a target that exists and is not a regular file (a directory, a device, a FIFO, a socket, a
  symbolic link) is refused; so is a missing or unwritable directory, a path that names no
  file (empty, or ending in `/`), and one path named for two outputs;
- the file written aside is made by `mkstemp` in the target's directory (`O_CREAT|O_EXCL`, a
  random name: it never follows a link planted there nor opens an existing file), and removed
  on any error, on SIGINT and on the signals the command line turns into exceptions (SIGTERM,
  SIGHUP); `kill -9` leaves it behind (`.NAME.XXXXXXXX.tmp`, never renamed over anything);
- each file is flushed to disk (`fsync`) when written; at the commit every target is checked
  again, then stdout is written, then the files renamed; a failure before the renames leaves
  every target as it was (the renames are one system call each: a crash between two of them
  leaves the first renamed, the second not);
- `-` is stdout; a lone surrogate (which UTF-8 cannot hold) is written as `\\udxxx`;
- every failure is a one-line `LowerError`.
"""

from __future__ import annotations

import os
import signal
import stat
import sys
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import TracebackType

from .errors import LowerError

STDOUT = "-"
_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symbolic link"))

Data = str | bytes | Iterable[str]


_DEFERRED = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}


@contextmanager
def _signals_deferred() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP held back while a file aside is made and recorded, or the
    files renamed: an interruption then comes before or after, never between, so no file
    aside escapes the cleanup and a renamed output is never reported as not written."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, _DEFERRED)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _describe(mode: int) -> str | None:
    """What a non-regular file is (None for a regular file)."""
    if stat.S_ISREG(mode):
        return None
    return next((what for test, what in _KINDS if test(mode)), "a special file")


def check_target(path: str, what: str) -> None:
    """Refuse a target that exists and is not a regular file (links are not followed)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as e:
        raise LowerError(f"cannot write {what} {path!r}: {e.strerror}") from None
    kind = _describe(st.st_mode)
    if kind is not None:
        raise LowerError(f"cannot write {what} {path!r}: it is {kind}, not a regular file")


@dataclass
class _File:
    target: str
    what: str
    fd: int
    tmp: str | None  # the file written aside (None once renamed or removed)
    written: bool = False


def _open_aside(target: str, what: str) -> _File:
    directory = os.path.dirname(target) or "."
    where = f"cannot write {what} {target!r}"
    if not os.path.isdir(directory):
        raise LowerError(f"{where}: no such directory {directory!r}")
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(target)}.", suffix=".tmp")
    except OSError as e:
        raise LowerError(f"{where}: {e.strerror}") from None
    mask = os.umask(0o22)
    os.umask(mask)
    try:
        os.fchmod(fd, 0o666 & ~mask)  # what open() would have made, not mkstemp's 0600
    except OSError:
        pass  # a file system without modes: the file keeps what it has
    return _File(target, what, fd, tmp)


class Outputs:
    """The output files of one run (see the module's docstring)."""

    def __init__(self) -> None:
        self._files: dict[str, _File] = {}
        self._stdout: Data | None = None
        self._stdout_named = False

    def add(self, path: str | os.PathLike[str] | None, what: str) -> None:
        """Check `path` now and open the file that will replace it (None: no such output)."""
        if path is None:
            return
        path = os.fspath(path)
        if path == STDOUT:
            if self._stdout_named:
                raise LowerError(f"cannot write {what} to stdout: stdout is already named for another output")
            self._stdout_named = True
            return
        if os.path.basename(path) in ("", ".", ".."):
            raise LowerError(f"cannot write {what} {path!r}: not the path of a file")
        key = os.path.abspath(path)
        if key in self._files:
            raise LowerError(f"cannot write {what} {path!r}: the same file is named for two outputs")
        check_target(path, what)
        with _signals_deferred():
            self._files[key] = _open_aside(path, what)

    def write(self, path: str | os.PathLike[str] | None, data: Data) -> None:
        """Write an output added before: a file's to its file aside, stdout's kept for the commit."""
        if path is None:
            return
        path = os.fspath(path)
        if path == STDOUT:
            self._stdout = data
            return
        f = self._files[os.path.abspath(path)]
        try:
            with os.fdopen(os.dup(f.fd), "wb", closefd=True) as fh:
                if isinstance(data, bytes):
                    fh.write(data)
                elif isinstance(data, str):
                    fh.write(_utf8(data))
                else:
                    for chunk in data:
                        fh.write(_utf8(chunk))
                fh.flush()
                os.fsync(fh.fileno())
        except OSError as e:
            raise LowerError(f"cannot write {f.what} {f.target!r}: {e.strerror}") from None
        f.written = True

    def commit(self) -> None:
        """Stdout first, then each written file renamed over its target."""
        written = [f for f in self._files.values() if f.written]
        for f in written:  # all again first: any may have changed while the run worked
            check_target(f.target, f.what)
        if self._stdout is not None:
            write_stdout(self._stdout)
        with _signals_deferred():
            for f in written:
                _rename(f)
            self._discard()

    def discard(self) -> None:
        """Close every file aside and remove the named ones: no target changes."""
        with _signals_deferred():
            self._discard()

    def _discard(self) -> None:
        for f in self._files.values():
            try:
                os.close(f.fd)
            except OSError:
                pass
            if f.tmp is not None:
                try:
                    os.unlink(f.tmp)
                except FileNotFoundError:
                    pass
                f.tmp = None
        self._files.clear()

    def __enter__(self) -> Outputs:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        self.discard()


def _utf8(text: str) -> bytes:
    """UTF-8, with a lone surrogate (which UTF-8 cannot hold) written as `\\udxxx`."""
    return text.encode("utf-8", "backslashreplace")


def _rename(f: _File) -> None:
    where = f"cannot write {f.what} {f.target!r}"
    assert f.tmp is not None
    try:
        os.replace(f.tmp, f.target)
        f.tmp = None
    except OSError as e:
        raise LowerError(f"{where}: {e.strerror}") from None


def write_stdout(data: Data) -> None:
    """Write to stdout and flush; a failure (a full device, a closed pipe) is one LowerError."""
    try:
        if isinstance(data, bytes):
            sys.stdout.flush()
            sys.stdout.buffer.write(data)
        elif isinstance(data, str):
            sys.stdout.write(data)
        else:
            sys.stdout.writelines(data)
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as e:
        raise LowerError(f"cannot write to stdout: {e.strerror}") from None


def write_atomic(path: str | os.PathLike[str], data: Data, what: str = "file") -> None:
    """One output written safely on its own (checked, aside, renamed)."""
    with Outputs() as out:
        out.add(path, what)
        out.write(path, data)
        out.commit()
