"""SIGINT, SIGTERM and SIGHUP for the command line: exceptions where they may land, held back where not.

The command line installs `_handler` for the three (`installed()`) as the first thing `main`
does, before it imports anything but the standard library's light modules. From then on:

- outside a `held()` section, SIGINT raises KeyboardInterrupt and SIGTERM or SIGHUP
  SystemExit(128 + the signal's number), so the run unwinds and removes its files aside;
- inside one (the imports of numpy, egglog, SciPy, ml_dtypes and the package's own modules;
  making a file aside and recording it; the renames), the handler only records the signal,
  and the exception is raised when the outermost section ends, in the package's code. So an
  interruption never lands inside a third-party import, which could catch it with a bare
  `except`, wrap it in an ImportError, or leave a half-made module and a traceback.

A signal's Python handler always runs in the main thread, between bytecodes, whichever thread
the kernel gave the signal to, so a flag holds it against the threads egglog or OpenBLAS start
too (a blocked mask would not: the kernel hands the signal to a thread that does not block it).
A signal's disposition that is not the default (ignored under `nohup`, a host program's own
handler) is left alone. Where `installed()` is not in force (the package used from Python, or
outside the main thread) `held()` blocks the three signals in the calling thread instead.
"""

from __future__ import annotations

import _thread
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType, TracebackType

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

_ours: set[int] = set()  # the signals whose handler is `_handler` now
_main_thread: int | None = None  # the thread that installed it (signal handlers can only be set from the main thread)
_depth = 0  # how many held() sections the main thread is in
_pending: int | None = None  # the first signal that arrived while held


def _raise(signum: int) -> None:
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise SystemExit(128 + signum)


def _handler(signum: int, frame: FrameType | None) -> None:
    global _pending
    if _depth:
        if _pending is None:
            _pending = signum
        return
    _pending = None  # (one that came while held is raised now, as this one)
    _raise(signum)


def _default(signum: int) -> object:
    return signal.default_int_handler if signum == signal.SIGINT else signal.SIG_DFL


@contextmanager
def installed(restore: bool = True) -> Iterator[None]:
    """`_handler` for each of the three signals whose disposition is the default; on exit the
    default again, or (`restore` false: a program that is about to exit, its status decided)
    ignored, so that nothing is raised while Python exits."""
    global _main_thread
    mine = [s for s in SIGNALS if signal.getsignal(s) is _default(s) and s not in _ours]
    _main_thread = _thread.get_ident()
    for s in mine:
        signal.signal(s, _handler)
        _ours.add(s)
    try:
        yield
    finally:
        for s in mine:
            signal.signal(s, _default(s) if restore else signal.SIG_IGN)  # type: ignore[arg-type]
            _ours.discard(s)


class held:
    """A section no SIGINT, SIGTERM or SIGHUP interrupts: one that arrives inside is raised as
    its exception when the outermost section ends (see the module's docstring)."""

    def __enter__(self) -> None:
        global _depth
        self._mask: set[int | signal.Signals] | None = None
        if _ours and _thread.get_ident() == _main_thread:
            _depth += 1
        else:
            self._mask = signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        global _depth, _pending
        if self._mask is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, self._mask)
            return
        _depth -= 1
        if _depth == 0 and _pending is not None:
            signum, _pending = _pending, None
            _raise(signum)
