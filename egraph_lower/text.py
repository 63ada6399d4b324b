"""Text from a user's graph made safe where it reaches a terminal, a DOT comment or an HTML page.

Names, kinds and messages come from documents anyone can write: they may hold ANSI escape
sequences, carriage returns, newlines or lone surrogates (JSON's `"\\ud800"`), which a terminal
would obey, a comment would end at, or UTF-8 cannot encode.
"""

from __future__ import annotations

import re

# C0 and C1 controls, DEL, and the lone surrogates a JSON document can spell
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
_UNSAFE_KEEP_NEWLINES = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\ud800-\udfff]")


def _escape(m: re.Match[str]) -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def printable(text: str, keep_newlines: bool = False) -> str:
    """`text` with every control character and lone surrogate written as an escape (`\\x1b`,
    `\\ud800`); newlines kept where `keep_newlines` (a multi-line summary), else escaped too."""
    return (_UNSAFE_KEEP_NEWLINES if keep_newlines else _UNSAFE).sub(_escape, text)
