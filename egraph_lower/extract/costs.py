"""Costs on a backend: each e-node's kernel (`Costs.array`), a choice's DAG cost (`dag_cost`),
and a graph's cost as it stands (`graph_cost`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..backends import Backend, node_kind
from ..egraph.language import LEAF
from ..egraph.tables import Tables
from ..graph import Graph
from ..validate import Meta
from .metas import ClassMetas, Decoded, child_metas, distinct_rows


def dag_cost(node_cost: Sequence[float] | np.ndarray, choice: dict[int, int]) -> float:
    """The DAG cost of a choice: each chosen e-node's kernel once, summed exactly rounded (so in
    whatever order the choice was made)."""
    if isinstance(node_cost, np.ndarray):
        return math.fsum(node_cost[np.fromiter(choice.values(), dtype=np.int64, count=len(choice))].tolist())
    return math.fsum(map(node_cost.__getitem__, choice.values()))


class Costs:
    """The backend's kernel cost of each e-node (inf where the backend cannot run it)."""

    def __init__(self, t: Tables, metas: ClassMetas, backend: Backend, decoded: Decoded) -> None:
        self.t, self.metas, self.backend, self.decoded = t, metas, backend, decoded

    def array(self) -> np.ndarray:
        """The kernel cost of every e-node (inf where the backend cannot run it), computed
        once per distinct (constructor, fields, metas)."""
        t, metas = self.t, self.metas
        ids = metas.ids
        runs = np.array([self._runs(ctor, fields) for ctor, fields in t.sigs], dtype=bool)
        idx = np.flatnonzero(runs[t.sig_array]) if len(runs) else np.empty(0, dtype=np.int64)  # the rest: inf
        out_ids = ids[t.eclass_array[idx]]
        kid = child_metas(t, ids, idx)
        known = (out_ids >= 0) & (kid != -1).all(axis=1)
        idx, out_ids, kid = idx[known], out_ids[known], kid[known]
        costs = np.full(t.n_nodes, np.inf)
        if idx.size:
            rows, inverse = distinct_rows(t.sig_array[idx], out_ids, kid)
            unique = np.empty(len(rows))
            for j, row in enumerate(rows.tolist()):
                ctor, fields = t.sigs[row[0]]
                unique[j] = self._cost(ctor, fields, [metas.table[i] for i in row[2:] if i != -2], metas.table[row[1]])
            costs[idx] = unique[inverse]
        return costs

    def _runs(self, ctor: str, fields: tuple[Any, ...]) -> bool:
        if ctor == LEAF:
            return True
        op, _attrs, kind = self.decoded(ctor, fields)
        return self.backend.runs(op, kind)

    def _cost(self, ctor: str, fields: tuple[Any, ...], ins: Sequence[Meta], out: Meta) -> float:
        """The kernel cost of an e-node the backend runs (`_runs`)."""
        if ctor == LEAF:
            return 0.0
        op, _attrs, kind = self.decoded(ctor, fields)
        return self.backend.cost.node_cost(op, kind, ins, out)




def graph_cost(graph: Graph, backend: Backend) -> float | None:
    """The cost of running `graph` as it is on `backend`; None when it holds an op the backend lacks."""
    by_id = graph.by_id
    total = 0.0
    for node in graph.nodes:
        if not backend.runs_node(node):
            return None
        ins = [(by_id[i].shape, by_id[i].dtype) for i in node.inputs]
        kind = node_kind(node.op, node.attrs)
        total += backend.cost.node_cost(node.op, kind, ins, (node.shape, node.dtype))
    return total
