"""Extraction for a backend: the cheapest graph the backend runs, from the frozen e-graph.

Works on `egraph.tables.Tables`, without recursion, each pass once per distinct
signature where it can (shapes repeat):

- `metas`: the shape and dtype of every e-class (`infer_metas`), and the check that
  every chosen e-node agrees with its class's (`check_consistent`);
- `costs`: each e-node's kernel cost on the backend (`Costs.array`, inf where it
  cannot run), a choice's DAG cost, a graph's cost as it stands;
- the passes: `pricing` (the new-work pricing), `tree` (the tree pass), `local_search`,
  `integer_program`; `extractors` names the extractors made of them and runs one
  (`extract`);
- `selection`: a choice of e-node per class, finished (`Extraction`, what every
  extractor returns) or being changed in place with its reference counts
  (`Selection`, which the local search and explore switch through); `walks`: the
  walks over e-classes they all share.
"""

from __future__ import annotations

from .costs import Costs, dag_cost, graph_cost
from .extractors import EXTRACTORS, extract
from .metas import ClassMetas, Decoded, check_consistent, distinct_rows, infer_metas
from .selection import Extraction, Selection
from .tree import TreePass, tree_pass

__all__ = [
    "EXTRACTORS",
    "ClassMetas",
    "Costs",
    "Decoded",
    "Extraction",
    "Selection",
    "TreePass",
    "check_consistent",
    "dag_cost",
    "distinct_rows",
    "extract",
    "graph_cost",
    "infer_metas",
    "tree_pass",
]
