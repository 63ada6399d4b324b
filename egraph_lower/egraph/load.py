"""Graph -> e-graph, in bulk.

Each original node becomes a row of primitive values (id, attributes, input ids)
in a relation per constructor, written as a tab-separated file and read with
egglog's `input`; one rule per relation then builds the e-node and unions it
with `(Ref id)`, so inputs are found by id without nested terms or per-node
commands (both cost seconds and gigabytes at a real model's size).

Half precision: a node of dtype f16 or bf16 that one of the rules given can rewrite away is
loaded, unless the targets compute in the low precision (`half_math="native"`), as two
members of its e-class: its kernel-only twin (`language.TWINS`: the backend's own kernel,
which no rule expands) and `Cast{to: f16}(op(Cast{to: f32}(x), ...))`, the op computed in
float32 and rounded once, as PyTorch's kernels do. Only the f16/bf16 inputs are cast (a bool
mask, an int index or an f32 input is passed as it is). The rules expand the inner op, so
every expansion computes in float32; extraction picks the twin where the backend runs the op.
Other nodes load as they always did.
"""

from __future__ import annotations

import functools
import os
import tempfile
from collections.abc import Collection, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from .engine import bindings

from ..errors import LowerError
from ..graph import Graph, new_node
from ..opdefs import OPDEFS
from ..opdefs.fractional_pool import ARITHMETIC_IN_DTYPE
from ..ops import LEAF_OPS
from ..rules.dsl import Rule
from .language import CTORS, LEAF, REF, TWINS, declarations, encode, input_shapes

LOAD, LOWER = "load", "lower"
HALF_DTYPES = ("f16", "bf16")
HALF_MATH = ("float32", "native")  # how targets compute an f16/bf16 op (backends' `half_precision_math`)
_HALF = "Half_"  # prefix of a half-precision relation: Half_<ctor>_<which inputs are cast, as 0/1>


def _relation(ctor: str) -> str:
    return f"Node{ctor}"


def program(rules: Sequence[Rule], loaded: Collection[str] | None = None) -> str:
    """Declarations, the loading relations and rules, and the lowering rules, as egglog text.

    `loaded`: the constructors a graph's rows use (None: every one). Only those get a loading
    relation and rule, and only those and the rules' are declared: egglog sets up every
    constructor, relation and rule it is given (about 1.4 MB for a loading pair, 3 MB for a
    lowering rule, measured; declaring all 150-odd constructors takes 6 ms, a graph's 20 under
    1 ms), so a program for all of them costs hundreds of megabytes before the first row."""
    return _head(_declared(rules, loaded)) + _body(rules, loaded)


def _declared(rules: Sequence[Rule], loaded: Collection[str] | None) -> frozenset[str] | None:
    """The constructors a program for `rules` and rows of `loaded` declares (None: every one)."""
    if loaded is None:
        return None
    return frozenset(loaded).union(*(r.ctors for r in rules))


@functools.lru_cache(maxsize=16)
def _head(ctors: frozenset[str] | None) -> str:
    """Declarations of `ctors` (None: every constructor), rulesets and the leaf relation."""
    parts = [declarations(ctors), f"(ruleset {LOAD})", f"(ruleset {LOWER})"]
    parts.append(f"(relation {_relation(LEAF)} (i64))")
    parts.append(f"(rule (({_relation(LEAF)} i)) ((union ({REF} i) ({LEAF} i))) :ruleset {LOAD} :name \"load-leaf\")")
    return "\n".join(parts) + "\n"


def _body(rules: Sequence[Rule], loaded: Collection[str] | None) -> str:
    """The loading relations and rules of the constructors in `loaded`, and the lowering rules."""
    parts = []
    for c in CTORS.values():
        if loaded is not None and c.name not in loaded:
            continue
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


def _half_ctor(relation: str) -> str:
    """The constructor of the op a half-precision relation computes in float32."""
    return relation[len(_HALF):].rsplit("_", 1)[0]


def _half_program(relation: str) -> str:
    """The declaration and loading rule of one half-precision relation (see the module docstring)."""
    c = CTORS[_half_ctor(relation)]
    mask = relation.rsplit("_", 1)[1]
    names = [f"f{k}" for k in range(len(c.fields))] + [f"c{k}" for k in range(c.arity)]
    sorts = ["String"] + [f.sort for f in c.fields] + ["i64"] * c.arity
    kids = [f'(Cast "f32" ({REF} c{k}))' if m == "1" else f"({REF} c{k})" for k, m in enumerate(mask)]
    term = " ".join([f"f{k}" for k in range(len(c.fields))] + kids)
    return (f"(relation {_relation(relation)} (i64 {' '.join(sorts)}))\n"
            f"(rule (({_relation(relation)} i dt {' '.join(names)})) ((union ({REF} i) (Cast dt ({c.name} {term}))))"
            f" :ruleset {LOAD} :name \"load-{relation}\")")


def label(op: str, attrs: Any) -> str:
    """A node's label as rules and backends name ops: `Activation.Erf`, `Binary.FloorDiv`, `ReluBackward`."""
    if op == "Binary":
        return f"Binary.{attrs.get('op')}"
    return f"{op}.{attrs.get('kind')}" if OPDEFS[op].kinded else op


def rows(graph: Graph, rules: Sequence[Rule] = (), half_math: str = "float32") -> dict[str, list[str]]:
    """TSV lines per relation (ids below 2**63: see `dense_ids` for others): per constructor,
    and for the f16/bf16 nodes that `rules` rewrite, per half-precision relation (module docstring)."""
    out: dict[str, list[str]] = {}
    by_id = graph.by_id
    lowered = {r.lowers for r in rules} if half_math == "float32" else set()
    for node in graph.nodes:
        if node.op in LEAF_OPS:
            out.setdefault(LEAF, []).append(str(node.id))
            continue
        first = by_id[node.inputs[0]].shape if node.inputs else ()
        shapes = input_shapes(node.op, lambda: tuple(by_id[i].shape for i in node.inputs))
        ctor, fields = encode(node, len(first), first, shapes)
        cells = [str(node.id), *(_cell(f) for f in fields), *(str(i) for i in node.inputs)]
        # (an op whose arithmetic is in its dtype, fractional pooling's windows, stays in it: its float32
        # computation would be other windows)
        if (node.dtype in HALF_DTYPES and ctor in TWINS and label(node.op, node.attrs) in lowered
                and node.op not in ARITHMETIC_IN_DTYPE):
            mask = "".join("1" if by_id[i].dtype in HALF_DTYPES else "0" for i in node.inputs)
            out.setdefault(f"{_HALF}{ctor}_{mask}", []).append("\t".join([cells[0], node.dtype, *cells[1:]]))
            ctor = TWINS[ctor]
        out.setdefault(ctor, []).append("\t".join(cells))
    return out


def load(graph: Graph, rules: Sequence[Rule], workdir: str | None = None,
         half_math: str = "float32") -> bindings.EGraph:
    """A fresh e-graph holding `graph` (one e-class per node, `(Ref id)` in it) and `rules`;
    f16/bf16 nodes as the module docstring says (`half_math`: one of `HALF_MATH`).

    The program and the rows reach egglog as files, the program through `include` and the rows
    through `input`, so egglog reads and parses them itself: the Python bindings' parse makes a
    Python object of every command and term, and parsing and running those took two to four times
    as long as including the text (a first graph's program: 24 ms against 6). The files are in-memory (`memfd_create`, read through
    /proc/self/fd), so none is left behind whatever ends the process; where that is not available
    (or with `workdir`), they are files in a temporary directory removed on return."""
    if graph.nodes and max(n.id for n in graph.nodes) >= I64_IDS:
        raise LowerError("node ids from 2**63 on do not fit the e-graph's i64: load dense_ids(graph)")
    if half_math not in HALF_MATH:
        raise LowerError(f"half_math must be one of {', '.join(HALF_MATH)}, not {half_math!r}")
    egraph = bindings.EGraph()
    relations = rows(graph, rules, half_math)
    loaded = [r for r in relations if r != LEAF and not r.startswith(_HALF)]
    half = [r for r in relations if r.startswith(_HALF)]
    declared = _declared(rules, loaded + [_half_ctor(r) for r in half] + (["Cast"] if half else []))
    text = "".join([_head(declared), _body(rules, loaded), *(_half_program(r) + "\n" for r in half)])
    with ExitStack() as stack:
        files = _Files(stack, workdir)
        commands = [f"(include {egglog_string(files.path('program.egg', text.encode()))})"]
        for ctor, lines in relations.items():
            path = files.path(f"{ctor}.tsv", ("\n".join(lines) + "\n").encode())
            commands.append(f"(input {_relation(ctor)} {egglog_string(path)})")
        commands.append(f"(run {LOAD} 1)")
        egraph.run_program(*egraph.parse_program("\n".join(commands)))
    return egraph


class _Files:
    """Paths egglog can read `data` from, valid until `stack` closes: in-memory files where the
    system has them, else files in one temporary directory (under `workdir`)."""

    def __init__(self, stack: ExitStack, workdir: str | None) -> None:
        self.stack, self.workdir = stack, workdir
        self.tmp: str | None = None

    def path(self, name: str, data: bytes) -> str:
        found = _in_memory(data, name, self.stack) if self.workdir is None else None
        if found is not None:
            return found
        if self.tmp is None:
            self.tmp = self.stack.enter_context(tempfile.TemporaryDirectory(dir=self.workdir, prefix="egraph-lower-"))
        path = Path(self.tmp) / name
        path.write_bytes(data)
        return str(path)


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

