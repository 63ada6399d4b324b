"""egraph-lower: lower the backward ops of a node graph into what a backend runs, by equality saturation.

    import egraph_lower as el
    graph = el.load_graph("graph.json")
    result = el.lower(graph, "metal")          # result.graph, result.report
    outputs = el.evaluate(result.graph, {"x": x, "dy": dy})
"""

from __future__ import annotations

from .backends import Backend
from .backends import load as load_backend
from .egraph.saturate import Limits
from .errors import BackendError, GraphError, IllegalGraphError, LowerError
from .evaluate import evaluate
from .explore import Exploration, explore
from .document import from_dict, from_json, load_graph, validated
from .graph import Graph, Node
from .lower import LowerResult, Report, lower

__all__ = [
    "Backend",
    "BackendError",
    "Exploration",
    "Graph",
    "GraphError",
    "IllegalGraphError",
    "Limits",
    "LowerError",
    "LowerResult",
    "Node",
    "Report",
    "evaluate",
    "explore",
    "from_dict",
    "from_json",
    "load_backend",
    "load_graph",
    "lower",
    "validated",
]
__version__ = "0.1.0"
