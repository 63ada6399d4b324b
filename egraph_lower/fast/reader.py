"""Reading a graph document's text without a Python call per JSON object.

`read_graph(text)` is `check_document(parse_json(text))`, the plain definition: the
same Graph, or the same error in the same words. tests/test_graph.py holds it to that
(`test_from_json_finds_every_duplicate_key`, `test_from_json_is_parse_json_then_validate`)."""

from __future__ import annotations

import json
from typing import NoReturn

from ..graph import Graph, parse_json
from .collector import gc_paused
from .validator import validate_counting_keys


def _refuse(token: str) -> NoReturn:
    raise ValueError(f"{token} is not JSON")  # the document is read again by parse_json, which words it


def read_graph(text: str) -> Graph:
    """The Graph of a document's text, taking a shortcut for the duplicate-key check of
    `parse_json` (its `object_pairs_hook` is a Python call for every JSON object).

    The text is parsed without that check, which keeps the last of duplicate keys, and validated.
    Each key of the text is followed by a ':' outside strings, so the text has at most
    `text.count(":")` keys, and at least as many as the parsed objects have (fewer if a key
    repeats). When the objects counted have as many keys as there are colons, no key can repeat.
    Otherwise (a ':' in a string, or a duplicate), and on any error, the text is read again the
    plain way, which words the error as it always did."""
    with gc_paused(long_lived=True):  # across parsing and validating: not a scan of the parsed text between
        try:
            graph, keys = validate_counting_keys(json.loads(text, parse_constant=_refuse), consume=True)
            if keys == text.count(":"):
                return graph
        except Exception:
            pass
        return validate_counting_keys(parse_json(text))[0]
