"""Errors a user can cause. Each renders as one line that names the node and the problem."""

from __future__ import annotations


class LowerError(Exception):
    """Base of every error that comes from bad input rather than a bug (CLI exit status 2)."""


class GraphError(LowerError):
    """A graph document that breaks the format: names the node when there is one."""

    def __init__(self, message: str, node: int | None = None, op: str | None = None) -> None:
        self.node = node
        self.op = op
        where = ""
        if node is not None:
            where = f"node {node}" + (f" ({op})" if op else "") + ": "
        super().__init__(where + message)


class BackendError(LowerError):
    """An unknown backend name or a malformed backend file."""


class IllegalGraphError(LowerError):
    """A lowered graph holds a node the backend cannot run (a bug in rules or extraction)."""
