"""Text from a graph shown where it cannot act: terminals, DOT, HTML."""

from __future__ import annotations

from egraph_lower.text import printable


def test_controls_and_lone_surrogates_are_shown_escaped() -> None:
    assert printable("a\x1b[31mb\rc\x07\x7f\u0085\ud800") == "a\\x1b[31mb\\x0dc\\x07\\x7f\\x85\\ud800"
    assert printable("line\nnext") == "line\\x0anext"
    assert printable("line\nnext", keep_newlines=True) == "line\nnext"
    assert printable("ünïcode ✓ and tabs\tstay readable") == "ünïcode ✓ and tabs\\x09stay readable"
