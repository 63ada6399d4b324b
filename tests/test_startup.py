"""Start-up stays small: what `import egraph_lower` and `egraph-lower lower` of a graph without
bf16 import, read from `python -X importtime` (never from wall time), and the lazy imports that
replace the eager ones (bf16 through ml_dtypes, egglog's engine without its Python layer).

A failure names the module and who imported it, so a dependency that grows a heavy import
again (ml_dtypes 0.7.0 took 1.0 s of a 1.6 s run) is found by name (docs/benchmarks.md,
"Start-up"; `bench/startup.py` measures it)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pytest

import egraph_lower as el
from cli_support import EXAMPLE, ROOT, command, env

# Never imported by `lower` of a graph without bf16: each has cost a large part of a small run.
NOT_ON_THE_PATH = {
    "ml_dtypes": "imported only for bf16 values (egraph_lower/dtypes.py)",
    "scipy": "imported only by the exact extractor and for large graphs' components (extract/)",
    "egglog": "egglog's Python layer (black, graphviz, ...): egraph_lower/egraph/engine.py loads its engine alone",
    "torch": "the core package never imports torch",
}
# Generous bounds, relative to numpy's import in the same process (load and a slow disk scale both).
PACKAGE_VS_NUMPY = 3.0  # any other third-party package's modules
OWN_VS_NUMPY = 5.0  # the package's own modules (compiled anew where bytecode is not cached)
SLACK_US = 100_000


@dataclass
class Imported:
    name: str
    self_us: int
    parent: str | None  # the module whose import imported it


def importtime(*args: str) -> list[Imported]:
    """The modules a `python -X importtime` run imports, each with the one that imported it."""
    r = subprocess.run([sys.executable, "-X", "importtime", *args], capture_output=True, text=True, env=env(),
                       cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    rows: list[tuple[int, str, int]] = []
    for line in r.stderr.splitlines():
        if line.startswith("import time:") and "self [us]" not in line:
            self_us, _, name = line[len("import time:"):].split("|")
            rows.append((len(name) - len(name.lstrip()), name.strip(), int(self_us)))
    out: list[Imported] = []  # importtime prints a module after everything it imported, one level deeper
    for i, (depth, name, self_us) in enumerate(rows):
        parent = next((n for d, n, _ in rows[i + 1:] if d < depth), None)
        out.append(Imported(name, self_us, parent))
    return out


def chain_of(mods: list[Imported], name: str) -> str:
    by_name = {m.name: m for m in mods}
    chain = [name]
    while (p := by_name[chain[-1]].parent) is not None:
        chain.append(p)
    return " <- ".join(chain)


def test_import_egraph_lower_imports_nothing_else() -> None:
    mods = [m.name for m in importtime("-c", "import egraph_lower")]
    assert "egraph_lower" in mods
    assert [m for m in mods if m.startswith("egraph_lower.") or m.split(".")[0] in ("numpy", *NOT_ON_THE_PATH)] == []


def test_lower_of_a_graph_without_bf16_imports_nothing_heavy() -> None:
    mods = importtime("-m", "egraph_lower.cli", "lower", str(EXAMPLE), "-b", "metal", "-o", os.devnull, "-q")
    names = {m.name.split(".")[0] for m in mods}
    for top, why in NOT_ON_THE_PATH.items():
        if top in names:
            first = top if any(m.name == top for m in mods) else next(m.name for m in mods if m.name.startswith(top))
            pytest.fail(f"{top} is imported by `egraph-lower lower` of a graph without bf16 ({why}): "
                        f"{chain_of(mods, first)}")
    per_package: dict[str, int] = defaultdict(int)
    for m in mods:
        per_package[m.name.split(".")[0]] += m.self_us
    numpy = per_package["numpy"]
    assert numpy > 0, "numpy is imported"
    for package, us in sorted(per_package.items(), key=lambda kv: -kv[1]):
        bound = (OWN_VS_NUMPY if package == "egraph_lower" else PACKAGE_VS_NUMPY) * numpy + SLACK_US
        if package != "numpy" and us > bound:
            slowest = sorted((m for m in mods if m.name.split(".")[0] == package), key=lambda m: -m.self_us)[:5]
            pytest.fail(f"importing {package} took {us / 1e3:.0f} ms, over {bound / 1e3:.0f} ms "
                        f"({'own modules' if package == 'egraph_lower' else 'a dependency'}; numpy took "
                        f"{numpy / 1e3:.0f} ms); slowest: "
                        + ", ".join(f"{m.name} {m.self_us / 1e3:.0f} ms (by {m.parent})" for m in slowest))


def test_bf16_still_imports_ml_dtypes_when_a_graph_has_it(tmp_path: Path) -> None:
    from egraph_lower.build import GraphBuilder

    b = GraphBuilder("half")
    x = b.input("x", [2, 4], "bf16")
    (tmp_path / "half.json").write_text(b.build([b.act_backward("Gelu", x, x)]).to_json())
    script = ("import sys, numpy as np, egraph_lower as el\n"
              f"g = el.load_graph({str(tmp_path / 'half.json')!r})\n"
              "assert 'ml_dtypes' not in sys.modules\n"  # reading and checking need no bf16 values
              "lowered = el.lower(g, 'wgpu').graph\n"
              "out = el.evaluate(lowered, {'x': np.linspace(-2, 2, 8, dtype=np.float32).reshape(2, 4)})\n"
              "assert out[0].dtype.name == 'bfloat16' and 'ml_dtypes' in sys.modules\n")
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env(), timeout=300)
    assert r.returncode == 0, r.stderr


def test_the_dtype_table_needs_no_ml_dtypes() -> None:
    r = subprocess.run([sys.executable, "-c", "import sys\nfrom egraph_lower.dtypes import DTYPES, ITEMSIZE\n"
                        "assert 'bf16' in DTYPES and list(DTYPES)[2] == 'bf16' and ITEMSIZE['bf16'] == 2\n"
                        "assert 'ml_dtypes' not in sys.modules\n"
                        "assert DTYPES['bf16'].name == 'bfloat16' and 'ml_dtypes' in sys.modules\n"],
                       capture_output=True, text=True, env=env(), timeout=300)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("first", ["egraph_lower", "egglog"])
def test_egglogs_engine_is_one_module_whichever_is_imported_first(first: str) -> None:
    """Loaded alone, the engine is the very module egglog's own import gets later (PyO3 makes an
    extension module once a process); with egglog imported first, it is egglog's."""
    script = ("import sys\n"
              + ("import egglog\n" if first == "egglog" else "")
              + "from egraph_lower.egraph.engine import bindings\n"
              + ("assert 'egglog' not in sys.modules\n" if first == "egraph_lower" else "")
              + "import egglog.bindings\n"
              "assert egglog.bindings is bindings and bindings.__name__ == 'egglog.bindings'\n"
              "assert bindings.EGraph is egglog.bindings.EGraph\n")
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env(), timeout=300)
    assert r.returncode == 0, r.stderr


def test_the_lazy_names_are_the_functions_and_classes() -> None:
    import egraph_lower.evaluate
    import egraph_lower.explore
    import egraph_lower.lower  # noqa: F401 - importing a submodule of the same name must not rebind the name
    from egraph_lower.document import load_graph
    from egraph_lower.lower import lower

    assert set(el.__all__) == set(el._EXPORTS)  # type: ignore[attr-defined]
    assert el.lower is lower and el.load_graph is load_graph
    assert callable(el.evaluate) and callable(el.explore)
    assert set(el.__all__) <= set(dir(el))
    with pytest.raises(AttributeError, match="no attribute 'lowr'"):
        el.lowr  # type: ignore[attr-defined]  # noqa: B018


def test_the_command_line_still_runs_from_its_entry_point(tmp_path: Path) -> None:
    r = subprocess.run(command("lower", str(EXAMPLE), "-b", "metal", "-q"), capture_output=True, text=True,
                       env=env(), timeout=300)
    assert r.returncode == 0 and r.stderr == ""
    assert el.from_json(r.stdout).name == "mlp_step"
