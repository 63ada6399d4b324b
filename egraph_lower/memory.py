"""Memory bounds: refuse or stop work that would need more memory than the process may take.

Out of memory, egglog's Rust allocator aborts the process (SIGABRT, exit 134): nothing can
catch that, and NumPy's failure to allocate is a traceback. So what a run will need is
estimated before the memory is asked for:

- `run`: the values the reference evaluator holds at once (`check_run_memory`);
- `lower`/`explore`: the e-graph, `ENODE_BYTES` per e-node, from the rows of the bulk load
  and the rules (`egraph.saturate.first_growth`), then the growth of each iteration;
  saturation stops with `node_limit` before an iteration predicted to outgrow it.

The estimates are measurements of this code, not guarantees: see docs/reliability.md.
"""

from __future__ import annotations

import math
import resource

from .dtypes import ITEMSIZE
from .errors import LowerError
from .graph import Graph

# Peak resident memory over the final e-nodes, graph, e-graph, extraction and output included
# (2026-12-06, `bench/scale.py`'s chains): 587 bytes lowering the 100k chain for wgpu (2.2M e-nodes),
# 508 for metal (1.28M), 432 for the 1M chain for metal (12.75M). 1 KiB refused the 1M chain with
# 8 GiB left, which it lowers in 5.4 GB.
ENODE_BYTES = 640
# The reference evaluator computes in float64 (8 bytes an element) with temporaries.
WORK_BYTES_PER_ELEMENT = 24


def _kib(text: str, key: str) -> int | None:
    for line in text.splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    return None


def headroom() -> int | None:
    """Bytes this process may still allocate: what the system has available, less what the
    address-space and data limits (`ulimit -v`, `-d`) leave; None where it cannot be told."""
    room: list[int] = []
    try:
        with open("/proc/meminfo") as f:
            available = _kib(f.read(), "MemAvailable")
        if available is not None:
            room.append(available)
        with open("/proc/self/status") as f:
            status = f.read()
    except OSError:
        return None
    for limit, key in ((resource.RLIMIT_AS, "VmSize"), (resource.RLIMIT_DATA, "VmData")):
        soft = resource.getrlimit(limit)[0]
        used = _kib(status, key)
        if soft != resource.RLIM_INFINITY and used is not None:
            room.append(max(soft - used, 0))
    return min(room) if room else None


def size_text(n: float) -> str:
    for unit, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{int(n)} bytes"


def enode_budget() -> int | None:
    """The e-nodes the memory left allows (None: not known)."""
    room = headroom()
    return None if room is None else room // ENODE_BYTES


def check_load(rows: int) -> None:
    """Refuse a graph whose bulk load alone would outgrow the memory left."""
    budget = enode_budget()
    if budget is not None and rows > budget:
        raise LowerError(f"a graph of {rows:,} nodes needs about {size_text(rows * ENODE_BYTES)} of memory to load,"
                         f" more than the {size_text(budget * ENODE_BYTES)} left")


def check_run_memory(graph: Graph, room: int | None = None) -> None:
    """Refuse, before allocating anything, a graph whose values would not fit in memory when
    the reference evaluator runs it: the values live at once (each kept until its last use, as
    `evaluate` does) plus the float64 work of the node being computed. Names the node where the
    estimate first passes the memory left, with its size."""
    if room is None:
        room = headroom()
    if room is None:
        return
    keep = set(graph.outputs)
    last_use: dict[int, int] = {}
    for i, node in enumerate(graph.nodes):
        for j in node.inputs:
            last_use[j] = i
    size: dict[int, int] = {}
    live = 0
    for i, node in enumerate(graph.nodes):
        elements = math.prod(node.shape)
        size[node.id] = elements * ITEMSIZE[node.dtype]
        need = live + size[node.id] + elements * WORK_BYTES_PER_ELEMENT
        if need > room:
            label = node.op + (f"{{{node.attrs['kind']}}}" if "kind" in node.attrs else "")
            raise LowerError(f"node {node.id} ({label}): its value of shape {list(node.shape)} {node.dtype} takes"
                             f" {size_text(size[node.id])}; with the values held then, running it needs about"
                             f" {size_text(need)}, more than the {size_text(room)} of memory left")
        if node.id in last_use or node.id in keep:
            live += size[node.id]
        for j in set(node.inputs):
            if last_use.get(j) == i and j not in keep:
                live -= size.pop(j, 0)
