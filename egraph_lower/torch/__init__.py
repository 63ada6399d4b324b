"""PyTorch in and out: import aten FX graphs, export lowered graphs, and a torch.compile backend.

    import egraph_lower.torch as elt
    compiled = torch.compile(model, backend=elt.backend("metal"), dynamic=False)

Needs the optional extra: `pip install 'egraph-lower[torch]'` (torch==2.13.0).
The core package `egraph_lower` never imports torch.
"""

from __future__ import annotations

try:
    import torch as _torch  # noqa: F401
except ImportError as e:  # pragma: no cover - exercised only without torch
    raise ImportError(
        "egraph_lower.torch needs PyTorch, which is not installed: "
        "pip install 'egraph-lower[torch]' (it pins torch==2.13.0)"
    ) from e

from .backend import TorchBackend, backend
from .common import Imported, Signature, Slot, UnsupportedOp
from .exporter import export_graph
from .importer import import_graph
from .kernels_kernel import register_kernel

__all__ = [
    "Imported",
    "Signature",
    "Slot",
    "TorchBackend",
    "UnsupportedOp",
    "backend",
    "export_graph",
    "import_graph",
    "register_kernel",
]
