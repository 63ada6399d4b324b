"""egraph-lower: lower the backward ops of a node graph into what a backend runs, by equality saturation.

    import egraph_lower as el
    graph = el.load_graph("graph.json")
    result = el.lower(graph, "metal")          # result.graph, result.report
    outputs = el.evaluate(result.graph, {"x": x, "dy": dy})

The names below are imported when first used (PEP 562): `import egraph_lower` imports nothing
else, so the command line, which imports this package first, can take SIGINT before its own
imports start and imports only what its command needs (`cli`).
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .backends import Backend
    from .backends import load as load_backend
    from .document import from_dict, from_json, load_graph, validated
    from .egraph.saturate import Limits
    from .errors import BackendError, GraphError, IllegalGraphError, LowerError
    from .evaluate import evaluate
    from .explore import Exploration, explore
    from .graph import Graph, Node
    from .lower import LowerResult, Report, lower

_EXPORTS: dict[str, tuple[str, str]] = {  # name -> (module, its name there)
    "Backend": ("backends", "Backend"),
    "load_backend": ("backends", "load"),
    "Limits": ("egraph.saturate", "Limits"),
    "BackendError": ("errors", "BackendError"),
    "GraphError": ("errors", "GraphError"),
    "IllegalGraphError": ("errors", "IllegalGraphError"),
    "LowerError": ("errors", "LowerError"),
    "evaluate": ("evaluate", "evaluate"),
    "Exploration": ("explore", "Exploration"),
    "explore": ("explore", "explore"),
    "from_dict": ("document", "from_dict"),
    "from_json": ("document", "from_json"),
    "load_graph": ("document", "load_graph"),
    "validated": ("document", "validated"),
    "Graph": ("graph", "Graph"),
    "Node": ("graph", "Node"),
    "LowerResult": ("lower", "LowerResult"),
    "Report": ("lower", "Report"),
    "lower": ("lower", "lower"),
}
__all__ = [  # = _EXPORTS' names (tests/test_startup.py)
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


def __getattr__(name: str) -> object:
    try:
        module, attr = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(f"{__name__}.{module}"), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


class _Package(types.ModuleType):
    """Importing the submodule `lower`, `evaluate` or `explore` binds it on the package; here
    the name stays the function, as when this package imported them all up front."""

    def __setattr__(self, name: str, value: object) -> None:
        if name in _EXPORTS and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
