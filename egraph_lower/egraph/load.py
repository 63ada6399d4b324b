"""Graph -> e-graph, in bulk.

Each original node becomes a row of primitive values (id, attributes, input ids)
in a relation per constructor, written as a tab-separated file and read with
egglog's `input`; one rule per relation then builds the e-node and unions it
with `(Ref id)`, so inputs are found by id without nested terms or per-node
commands (both cost seconds and gigabytes at a real model's size).
"""

from __future__ import annotations

import functools
import os
import tempfile
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from egglog import bindings

from ..errors import LowerError
from ..graph import Graph, new_node
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


I64_IDS = 1 << 63  # ids the loader's i64 columns hold


def dense_ids(graph: Graph) -> Graph:
    """`graph` with its nodes numbered 0, 1, ... in order, for a graph whose ids egglog's i64
    cannot hold (the format allows any non-negative integer). A node without a name is named
    `n<its id>`, so what is made of it still says where it came from."""
    index = {n.id: k for k, n in enumerate(graph.nodes)}
    nodes = [new_node(k, n.op, tuple(index[i] for i in n.inputs), n.shape, n.dtype, n.attrs,
                      n.name if n.name is not None else f"n{n.id}") for k, n in enumerate(graph.nodes)]
    return Graph(nodes, [index[o] for o in graph.outputs], graph.name)


def rows(graph: Graph) -> dict[str, list[str]]:
    """TSV lines per relation (ids below 2**63: see `dense_ids` for others)."""
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


@functools.lru_cache(maxsize=16)
def _parsed(text: str) -> list[Any]:
    """The program's commands, parsed once per process: parsing is a third of setting up an e-graph
    (23 of 58 ms for metal's rules), and the commands can be run on any e-graph."""
    return bindings.EGraph().parse_program(text)


def load(graph: Graph, rules: Sequence[Rule], workdir: str | None = None) -> bindings.EGraph:
    """A fresh e-graph holding `graph` (one e-class per node, `(Ref id)` in it) and `rules`.

    The rows reach egglog's `input` as in-memory files (`memfd_create`, read through
    /proc/self/fd), so no file is left behind whatever ends the process; where that is not
    available (or with `workdir`), as files in a temporary directory removed on return."""
    if graph.nodes and max(n.id for n in graph.nodes) >= I64_IDS:
        raise LowerError("node ids from 2**63 on do not fit the e-graph's i64: load dense_ids(graph)")
    egraph = bindings.EGraph()
    egraph.run_program(*_parsed(program(rules)))
    with ExitStack() as stack:
        commands = []
        tmp: str | None = None
        for ctor, lines in rows(graph).items():
            data = ("\n".join(lines) + "\n").encode()
            path = _in_memory(data, ctor, stack) if workdir is None else None
            if path is None:
                if tmp is None:
                    tmp = stack.enter_context(tempfile.TemporaryDirectory(dir=workdir, prefix="egraph-lower-"))
                path = str(Path(tmp) / f"{ctor}.tsv")
                Path(path).write_bytes(data)
            commands.append(f'(input {_relation(ctor)} {egglog_string(path)})')
        commands.append(f"(run {LOAD} 1)")
        egraph.run_program(*egraph.parse_program("\n".join(commands)))
    return egraph


def _in_memory(data: bytes, name: str, stack: ExitStack) -> str | None:
    """The path of an in-memory file holding `data`, open until `stack` closes (None: none here)."""
    if not hasattr(os, "memfd_create") or not os.path.isdir("/proc/self/fd"):
        return None
    fd = os.memfd_create(name, os.MFD_CLOEXEC)
    stack.callback(os.close, fd)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    return f"/proc/self/fd/{fd}"


def egglog_string(text: str) -> str:
    """`text` as an egglog string literal (backslashes and quotes escaped)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'

