"""What the explore page's modules (html, convolutions_html, drawing) write the same way: any value as
escaped HTML text, and a cost as a number."""

from __future__ import annotations

from html import escape
from typing import Any

from ..text import printable


def esc(x: Any) -> str:
    """`x` as HTML text (attribute-safe): control characters and lone surrogates shown escaped."""
    return escape(printable(str(x), keep_newlines=True), quote=True)


def cost_text(c: float | None) -> str:
    """A cost with thousands separators (three significant digits from a million on); — for none."""
    if c is None:
        return "—"
    return f"{c:,.2f}" if abs(c) < 1e6 else f"{c:,.3g}"
