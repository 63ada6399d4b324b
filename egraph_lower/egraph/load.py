"""Graph -> e-graph, in bulk.

Each original node becomes a row of primitive values (id, attributes, input ids)
in a relation per constructor, written as a tab-separated file and read with
egglog's `input`; one rule per relation then builds the e-node and unions it
with `(Ref id)`, so inputs are found by id without nested terms or per-node
commands (both cost seconds and gigabytes at a real model's size).
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from egglog import bindings

from ..graph import Graph
from ..ops import LEAF_OPS
from ..rules.dsl import Rule
from .language import CTORS, LEAF, REF, declarations, encode

LOAD, LOWER = "load", "lower"


def _relation(ctor: str) -> str:
    return f"Node{ctor}"


def program(rules: Sequence[Rule]) -> str:
    """Declarations, the loading relations and rules, and the lowering rules, as egglog text."""
    parts = [declarations(), f"(ruleset {LOAD})", f"(ruleset {LOWER})"]
    parts.append(f"(relation {_relation(LEAF)} (i64))")
    parts.append(f"(rule (({_relation(LEAF)} i)) ((union ({REF} i) ({LEAF} i))) :ruleset {LOAD} :name \"load-leaf\")")
    for c in CTORS.values():
        names = [f"f{k}" for k in range(len(c.fields))] + [f"c{k}" for k in range(c.arity)]
        sorts = [f.sort for f in c.fields] + ["i64"] * c.arity
        parts.append(f"(relation {_relation(c.name)} (i64 {' '.join(sorts)}))")
        term = " ".join([f"f{k}" for k in range(len(c.fields))] + [f"({REF} c{k})" for k in range(c.arity)])
        parts.append(
            f"(rule (({_relation(c.name)} i {' '.join(names)})) ((union ({REF} i) ({c.name} {term})))"
            f" :ruleset {LOAD} :name \"load-{c.name}\")"
        )
    parts += [r.egglog(LOWER) for r in rules]
    return "\n".join(parts) + "\n"


def _cell(v: Any) -> str:
    if isinstance(v, float):
        return repr(v)
    return str(v)


def rows(graph: Graph) -> dict[str, list[str]]:
    """TSV lines per relation."""
    out: dict[str, list[str]] = {}
    by_id = graph.by_id
    for node in graph.nodes:
        if node.op in LEAF_OPS:
            out.setdefault(LEAF, []).append(str(node.id))
            continue
        first = by_id[node.inputs[0]].shape if node.inputs else ()
        ctor, fields = encode(node, len(first), first)
        cells = [str(node.id), *(_cell(f) for f in fields), *(str(i) for i in node.inputs)]
        out.setdefault(ctor, []).append("\t".join(cells))
    return out


def load(graph: Graph, rules: Sequence[Rule], workdir: str | None = None) -> bindings.EGraph:
    """A fresh e-graph holding `graph` (one e-class per node, `(Ref id)` in it) and `rules`."""
    egraph = bindings.EGraph()
    egraph.run_program(*egraph.parse_program(program(rules)))
    with tempfile.TemporaryDirectory(dir=workdir, prefix="egraph-lower-") as tmp:
        commands = []
        for ctor, lines in rows(graph).items():
            path = Path(tmp) / f"{ctor}.tsv"
            path.write_text("\n".join(lines) + "\n")
            commands.append(f'(input {_relation(ctor)} "{path}")')
        commands.append(f"(run {LOAD} 1)")
        egraph.run_program(*egraph.parse_program("\n".join(commands)))
    return egraph
