"""Sends this process a signal at a chosen moment: loaded by the subprocesses of
tests/test_signals.py, which put this directory first on PYTHONPATH.

EGRAPH_LOWER_TEST_SIGNAL_AT says when, once per process:
- `import:NAME`: as the import of module NAME starts (from a finder first on sys.meta_path,
  so the signal's handler runs inside that import, as a Ctrl-C there would);
- `call:NAME` or `call:NAME#N`: as the first (or N-th) call of `os.NAME` starts.
EGRAPH_LOWER_TEST_SIGNAL names the signal (default SIGINT); EGRAPH_LOWER_TEST_SIGNAL_SENT, a
file made as the signal is sent (so a test knows the moment came). No sleeps: the process sends
the signal to itself, so the moment is the same on every run and every machine.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

_AT = os.environ.get("EGRAPH_LOWER_TEST_SIGNAL_AT", "")
_SIGNAL = getattr(signal, os.environ.get("EGRAPH_LOWER_TEST_SIGNAL", "SIGINT"))


def _send() -> None:
    sent = os.environ.get("EGRAPH_LOWER_TEST_SIGNAL_SENT")
    if sent:
        with open(sent, "w"):
            pass
    os.kill(os.getpid(), _SIGNAL)


class _AtImport:
    def __init__(self, name: str) -> None:
        self.name = name

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name == self.name:
            sys.meta_path.remove(self)
            _send()
        return None


def _at_call(name: str, nth: int) -> None:
    original = getattr(os, name)
    calls = 0

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == nth:
            _send()
        return original(*args, **kwargs)

    setattr(os, name, wrapper)


if _AT.startswith("import:"):
    sys.meta_path.insert(0, _AtImport(_AT[len("import:"):]))
elif _AT.startswith("call:"):
    what, _, count = _AT[len("call:"):].partition("#")
    _at_call(what, int(count or 1))
