"""egglog's compiled engine (`egglog.bindings`), loaded without egglog's Python layer.

The package uses only `egglog.bindings`, the Rust extension (10 ms to load). Importing it as
`from egglog import bindings` runs `egglog/__init__.py` first, which imports egglog's Python
front end and with it black, graphviz, cloudpickle, opentelemetry and more: 0.2 s or more,
most of a small run's start (docs/benchmarks.md, "Start-up"). So, unless egglog is imported
already, the extension is loaded here from its file under its own name, `egglog.bindings`,
and taken out of `sys.modules` again (its init enters it there), so that egglog's own import
of it later, if a program makes one, runs as usual (binding `egglog.bindings`) and gets the
same module object: PyO3 initialises an extension module once a process and hands that
object to every later import (`tests/test_startup.py` checks it). Anything
unexpected (egglog laid out otherwise) falls back to the plain import.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
from types import ModuleType
from typing import TYPE_CHECKING


def _load() -> ModuleType:
    if "egglog" not in sys.modules:
        try:
            spec = importlib.util.find_spec("egglog")
            for directory in (spec.submodule_search_locations or []) if spec else []:
                for suffix in importlib.machinery.EXTENSION_SUFFIXES:
                    path = os.path.join(directory, "bindings" + suffix)
                    if os.path.isfile(path):
                        ext = importlib.util.spec_from_file_location("egglog.bindings", path)
                        if ext is None or ext.loader is None:
                            continue
                        module = importlib.util.module_from_spec(ext)
                        ext.loader.exec_module(module)
                        if sys.modules.get("egglog.bindings") is module:  # (entered by the extension's init)
                            del sys.modules["egglog.bindings"]
                        if hasattr(module, "EGraph"):
                            return module
        except Exception:  # noqa: BLE001 - any surprise: the plain import below
            pass
    from egglog import bindings as plain

    return plain


if TYPE_CHECKING:
    from egglog import bindings
else:
    bindings = _load()
