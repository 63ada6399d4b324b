"""A run's outputs: checked before the work starts, files written aside, committed together.

    with Outputs() as out:
        out.add(args.output, "graph")        # refused now if it cannot or must not be written
        out.add(args.report, "report")
        ... the work ...
        out.write(args.output, chunks)       # a file's into a hidden file in the target's directory
        out.write(args.report, text)
        out.commit()                         # the streams and stdout first, then every file renamed

What is promised:
- a target that does not exist or is a regular file is a *file*: written to a file made by
  `mkstemp` in the target's directory (`O_CREAT|O_EXCL`, a random name: it never follows a
  link planted there nor opens an existing file), flushed to disk (`fsync`) when written,
  renamed over the target at the commit, and removed on any error, on SIGINT and on the
  signals the command line turns into exceptions (SIGTERM, SIGHUP); `kill -9` leaves it
  behind (`.NAME.XXXXXXXX.tmp`, never renamed over anything);
- a character device (`/dev/null`, a terminal), a FIFO, or a symbolic link to either, is a
  *stream*: opened for writing when added (a FIFO's open waits for a reader, as a shell's `>`
  does), written to at the commit, never replaced; so is a descriptor of this process named
  through `/proc/self/fd` (`/dev/stdout`, `/dev/stderr`, `/dev/fd/N`), written through that
  descriptor whatever it is; `-`, and any name of descriptor 1, is stdout;
- anything else is refused: a directory, a block device, a socket, a symbolic link to
  anything but a device or a FIFO, a missing or unwritable directory, a path that names no
  file (empty, or ending in `/`), one path (or descriptor) named for two outputs;
- at the commit every file target is checked again, then the streams are written, then
  stdout (every file is complete by then), then the files renamed; a failure before the renames
  leaves every file target as it was (a stream may have taken part of its output: what a
  device or a pipe took cannot be taken back); the renames are one system call each: a
  crash between two of them leaves the first renamed, the second not;
- a lone surrogate (which UTF-8 cannot hold) is written as `\\udxxx`;
- every failure is a one-line `LowerError`.
"""

from __future__ import annotations

import fcntl
import os
import re
import stat
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from types import TracebackType
from typing import BinaryIO

from .errors import LowerError
from .signals import held

STDOUT = "-"
_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symbolic link"))
_OWN_FD = re.compile(r"/(?:proc/(self|\d+)/fd|dev/fd)/(\d+)")

Data = str | bytes | Iterable[str]


def _describe(mode: int) -> str | None:
    """What a non-regular file is (None for a regular file)."""
    if stat.S_ISREG(mode):
        return None
    return next((what for test, what in _KINDS if test(mode)), "a special file")


def _is_stream(mode: int) -> bool:
    return stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)


def check_target(path: str, what: str) -> None:
    """Refuse a file target that exists and is not a regular file (links are not followed)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as e:
        raise LowerError(f"cannot write {what} {path!r}: {e.strerror}") from None
    kind = _describe(st.st_mode)
    if kind is not None:
        raise LowerError(f"cannot write {what} {path!r}: it is {kind}, not a regular file")


def own_descriptor(path: str) -> int | None:
    """The descriptor of this process that `path` names through `/proc/self/fd` or `/dev/fd`
    (itself, or by a chain of symbolic links: `/dev/stdout` is one to `/proc/self/fd/1`)."""
    p = os.path.abspath(path)
    for _ in range(40):  # Linux's limit on links followed
        m = _OWN_FD.fullmatch(p)
        if m and m.group(1) in (None, "self", str(os.getpid())):
            return int(m.group(2))
        try:
            link = os.readlink(p)
        except OSError:
            return None
        p = os.path.normpath(os.path.join(os.path.dirname(p), link))
    return None


def _is_stream_target(path: str, what: str) -> bool:
    """True for a stream (a device or a FIFO, or a link to one), False for a file (a regular file
    or none yet); anything else is refused."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    except OSError as e:
        raise LowerError(f"cannot write {what} {path!r}: {e.strerror}") from None
    if stat.S_ISLNK(st.st_mode):
        try:
            if _is_stream(os.stat(path).st_mode):
                return True
        except OSError:
            pass  # a dangling link or a loop: refused as a link
    elif _is_stream(st.st_mode):
        return True
    check_target(path, what)
    return False


@dataclass
class _File:
    target: str
    what: str
    fd: int
    tmp: str | None  # the file written aside (None once renamed or removed)
    written: bool = False


@dataclass
class _Stream:
    target: str
    what: str
    fd: int  # this run's own descriptor for it (closed at the end)
    data: Data | None = None


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


def _open_stream(target: str, what: str, own: int | None) -> _Stream:
    where = f"cannot write {what} {target!r}"
    if own is not None:  # the caller's descriptor: written through, with its offset and flags
        try:
            mode = fcntl.fcntl(own, fcntl.F_GETFL) & os.O_ACCMODE
        except OSError:
            raise LowerError(f"{where}: descriptor {own} is not open") from None
        if mode not in (os.O_WRONLY, os.O_RDWR):
            raise LowerError(f"{where}: descriptor {own} is not open for writing")
        return _Stream(target, what, os.dup(own))
    try:  # a FIFO's open waits for a reader, as a shell's `>` does
        fd = os.open(target, os.O_WRONLY | os.O_NOCTTY)
    except OSError as e:
        raise LowerError(f"{where}: {e.strerror}") from None
    if not _is_stream(os.fstat(fd).st_mode):  # changed since it was looked at: not written through
        os.close(fd)
        raise LowerError(f"{where}: it changed while it was opened")
    return _Stream(target, what, fd)


class Outputs:
    """The outputs of one run (see the module's docstring)."""

    def __init__(self) -> None:
        self._files: dict[str, _File] = {}
        self._streams: dict[str, _Stream] = {}
        self._keys: dict[str, str] = {}  # each path added -> STDOUT, or the key of its file or stream
        self._stdout: Data | None = None

    @property
    def stdout_named(self) -> bool:
        """Whether an output added so far is stdout (`-`, `/dev/stdout`, ...)."""
        return STDOUT in self._keys.values()

    def add(self, path: str | os.PathLike[str] | None, what: str) -> None:
        """Check `path` now and open what it will be written to (None: no such output)."""
        if path is None:
            return
        path = os.fspath(path)
        own = 1 if path == STDOUT else own_descriptor(path)
        if own == 1:
            if self.stdout_named:
                raise LowerError(f"cannot write {what} to stdout: stdout is already named for another output")
            self._keys[path] = STDOUT
            return
        if own is None and os.path.basename(path) in ("", ".", ".."):
            raise LowerError(f"cannot write {what} {path!r}: not the path of a file")
        key = f"/proc/self/fd/{own}" if own is not None else os.path.abspath(path)
        if key in self._files or key in self._streams:
            raise LowerError(f"cannot write {what} {path!r}: the same file is named for two outputs")
        if own is not None or _is_stream_target(path, what):
            self._streams[key] = _open_stream(path, what, own)
        else:
            with held():
                self._files[key] = _open_aside(path, what)
        self._keys[path] = key

    def write(self, path: str | os.PathLike[str] | None, data: Data) -> None:
        """Write an output added before: a file's to its file aside; stdout's and a stream's kept
        for the commit."""
        if path is None:
            return
        key = self._keys[os.fspath(path)]
        if key == STDOUT:
            self._stdout = data
            return
        if key in self._streams:
            self._streams[key].data = data
            return
        f = self._files[key]
        try:
            with os.fdopen(os.dup(f.fd), "wb", closefd=True) as fh:
                _write(fh, data)
                fh.flush()
                os.fsync(fh.fileno())
        except OSError as e:
            raise LowerError(f"cannot write {f.what} {f.target!r}: {e.strerror}") from None
        f.written = True

    def commit(self) -> None:
        """The streams, then stdout (every file aside is complete by then), then each written
        file renamed over its target."""
        written = [f for f in self._files.values() if f.written]
        for f in written:  # all again first: any may have changed while the run worked
            check_target(f.target, f.what)
        for s in self._streams.values():
            if s.data is not None:
                _write_stream(s)
        if self._stdout is not None:
            write_stdout(self._stdout)
        with held():
            for f in written:
                _rename(f)
            self._discard()

    def discard(self) -> None:
        """Close every file aside and stream and remove the files aside: no target changes."""
        with held():
            self._discard()

    def _discard(self) -> None:
        for fd in [f.fd for f in self._files.values()] + [s.fd for s in self._streams.values()]:
            try:
                os.close(fd)
            except OSError:
                pass
        for f in self._files.values():
            if f.tmp is not None:
                try:
                    os.unlink(f.tmp)
                except FileNotFoundError:
                    pass
                f.tmp = None
        self._files.clear()
        self._streams.clear()

    def __enter__(self) -> Outputs:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        self.discard()


def _utf8(text: str) -> bytes:
    """UTF-8, with a lone surrogate (which UTF-8 cannot hold) written as `\\udxxx`."""
    return text.encode("utf-8", "backslashreplace")


def _write(fh: BinaryIO, data: Data) -> None:
    if isinstance(data, bytes):
        fh.write(data)
    elif isinstance(data, str):
        fh.write(_utf8(data))
    else:
        for chunk in data:
            fh.write(_utf8(chunk))


def _write_stream(s: _Stream) -> None:
    assert s.data is not None
    try:
        with os.fdopen(s.fd, "wb", closefd=False) as fh:
            _write(fh, s.data)
    except OSError as e:  # a full device, a pipe whose reader left
        raise LowerError(f"cannot write {s.what} {s.target!r}: {e.strerror}") from None


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
    except BrokenPipeError:  # an output is lost: a failure (the listings' broken pipes are not)
        raise LowerError("cannot write to stdout: the pipe's reader has closed it") from None
    except OSError as e:
        raise LowerError(f"cannot write to stdout: {e.strerror}") from None


def write_atomic(path: str | os.PathLike[str], data: Data, what: str = "file") -> None:
    """One output written safely on its own (checked, aside, renamed; a stream written to)."""
    with Outputs() as out:
        out.add(path, what)
        out.write(path, data)
        out.commit()
