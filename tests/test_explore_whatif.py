"""explore's what-if (issue 23): `--without RULE`, `--cost OP=FACTOR`, `--kernel FILE`; the base and the changed
lowering (on one e-graph where no rule is dropped), the nodes whose choice changed with their forms and costs,
and the total cost change, in the terminal, the JSON and the HTML (in a real browser where chromium is)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from egraph_lower import backends
from egraph_lower.document import load_graph
from egraph_lower.errors import LowerError
from egraph_lower.explore import REPORT_KEYS, WhatIf, explore
from egraph_lower.graph import Graph
from egraph_lower.lower import lower
from test_explore import _browse, _chromium, _console

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "egraph_lower" / "examples" / "metal_kernels.json"
GPT2 = Path(__file__).parent / "data" / "gpt2_block_backward.json"
LN = {"LayerNormBackwardInput", "LayerNormBackwardWeight", "LayerNormBackwardBias"}


@pytest.fixture(scope="module")
def gpt2() -> Graph:
    return load_graph(GPT2)


def _kernel_dear(tmp_path: Path, launch: float = 150.0) -> Path:
    """The example backend with its layer norm kernel dearer than the expansions: ln-bwd-input wins."""
    doc = json.loads(EXAMPLE.read_text())
    doc["name"] = "metal-dear-ln"
    doc["kernels"][0]["cost"]["launch"] = launch
    path = tmp_path / "dear.json"
    path.write_text(json.dumps(doc))
    return path


def test_without_a_rule_and_a_scaled_cost_change_the_choice(gpt2: Graph, tmp_path: Path) -> None:
    b = backends.load(str(_kernel_dear(tmp_path)))
    ex = explore(gpt2, b, what_if=WhatIf(without=("ln-bwd-input",), cost=(("MatMul", 2.0),)))
    w = ex.report()["what_if"]
    assert tuple(ex.report()) == REPORT_KEYS and w["backend"] == "metal-dear-ln (what if)"
    assert not w["one_egraph"]  # a dropped rule: an e-graph of its own
    changed = {c["node"]: c for c in w["changed"]}
    ln_inputs = [n.id for n in gpt2.nodes if n.op == "LayerNormBackwardInput"]
    assert set(ln_inputs) <= set(changed)  # without the expansion, the kernel (dear as it is) takes them
    for i in ln_inputs:
        assert changed[i]["before"]["rules"][0] == "ln-bwd-input"
        assert changed[i]["after"]["label"] == "Kernel{layer_norm_backward}"
        assert changed[i]["after"]["cost"] > changed[i]["before"]["cost"]
    # the totals are the two lowerings' own: lowered apart, each gives the same cost
    assert w["before"]["cost"] == pytest.approx(lower(gpt2, b).report.after["cost"])
    assert w["cost_delta"] == pytest.approx(w["after"]["cost"] - w["before"]["cost"]) and w["cost_delta"] > 0
    # the same what-if without the dropped rule: one e-graph, the choices stay, the MatMuls cost twice as much
    same = explore(gpt2, b, what_if=WhatIf(cost=(("MatMul", 2.0),))).report()["what_if"]
    assert same["one_egraph"] and same["changed"] == []
    base = lower(gpt2, b).graph
    matmuls = sum(b.cost.node_cost("MatMul", None, [(base.by_id[i].shape, base.by_id[i].dtype) for i in n.inputs],
                                   (n.shape, n.dtype)) for n in base.nodes if n.op == "MatMul")
    assert same["cost_delta"] == pytest.approx(matmuls)


def test_a_kernel_priced_out_gives_the_primitives_back_on_one_egraph(gpt2: Graph) -> None:
    ex = explore(gpt2, str(EXAMPLE), what_if=WhatIf(cost=(("Kernel.layer_norm_backward", 1000.0),)))
    w = ex.report()["what_if"]
    assert w["one_egraph"]
    ops = {c["op"] for c in w["changed"]}
    assert ops == LN and len(w["changed"]) == 9  # three layer norms, three outputs each
    assert all(c["before"]["label"].startswith("Kernel{layer_norm_backward") for c in w["changed"])
    assert w["cost_delta"] > 0


def test_a_kernel_file_adds_kernels_to_a_builtin_backend(gpt2: Graph, tmp_path: Path) -> None:
    extra = tmp_path / "kernels.json"
    extra.write_text(json.dumps(json.loads(EXAMPLE.read_text())["kernels"][:2]))
    w = explore(gpt2, "metal", what_if=WhatIf(kernels=(str(extra),))).report()["what_if"]
    assert w["one_egraph"] and w["cost_delta"] < 0
    after = {c["after"]["label"].split("[")[0].rstrip("}") + "}" if c["after"] else None for c in w["changed"]}
    # (the NLL gradient is no longer computed: the cross entropy kernel reads the log-probabilities)
    assert after == {"Kernel{layer_norm_backward}", "Kernel{softmax_cross_entropy_backward}", None}
    gone = [c for c in w["changed"] if c["after"] is None]
    assert [c["op"] for c in gone] == ["NllLossBackward"]
    assert w["kernels"] == [str(extra)]


@pytest.mark.parametrize(("what_if", "message"), [
    (WhatIf(without=("no-such-rule",)), "--without 'no-such-rule': no such rule"),
    (WhatIf(cost=(("Frob", 2.0),)), "--cost Frob: not a label of the cost model"),
    (WhatIf(kernels=("/nonexistent/k.json",)), "cannot read"),
])
def test_a_bad_what_if_is_one_line(gpt2: Graph, what_if: WhatIf, message: str) -> None:
    with pytest.raises(LowerError) as e:
        explore(gpt2, "metal", what_if=what_if)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_a_what_if_without_a_runnable_graph_is_reported(gpt2: Graph) -> None:
    w = explore(gpt2, "metal", what_if=WhatIf(without=("ln-bwd-input",))).report()["what_if"]
    assert w["after"]["nodes"] is None and "LayerNormBackwardInput" in w["after"]["error"]
    assert w["changed"] == [] and w["cost_delta"] is None


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "egraph_lower.cli", *args], capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


def test_the_cli_reports_in_the_terminal_json_and_html(tmp_path: Path) -> None:
    dear = _kernel_dear(tmp_path)
    js, page = tmp_path / "r.json", tmp_path / "r.html"
    r = _cli("explore", str(GPT2), "-b", str(dear), "--without", "ln-bwd-input", "--cost", "MatMul=2",
             "--json", str(js), "--html", str(page))
    assert r.returncode == 0, r.stderr
    summary = r.stdout
    assert "what if (without ln-bwd-input; MatMul x2; an e-graph of its own)" in summary
    w = json.loads(js.read_text())["what_if"]
    assert re.search(rf"cost {w['before']['cost']:,.2f} -> {w['after']['cost']:,.2f}  \(\+{w['cost_delta']:,.2f}\), "
                     rf"{len(w['changed'])} nodes chose differently", summary)
    assert re.search(r"node \d+ +LayerNormBackwardInput +Binary\{Mul\} .*->  Kernel\{layer_norm_backward\}", summary)
    html = page.read_text()
    assert "<h2 id='what-if'>What if</h2>" in html and "<table class='whatif'>" in html
    assert html.count("Kernel{layer_norm_backward}") >= 3 and "without <code>ln-bwd-input</code>" in html
    for bad in (("--cost", "MatMul"), ("--cost", "MatMul=-1"), ("--without", "nope")):
        r = _cli("explore", str(GPT2), "-b", "metal", *bad)
        assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr


@pytest.mark.skipif(_chromium() is None, reason="chromium is not installed (apt-get install chromium)")
def test_the_what_if_section_in_a_browser(gpt2: Graph, tmp_path: Path) -> None:
    ex = explore(gpt2, str(_kernel_dear(tmp_path)), what_if=WhatIf(without=("ln-bwd-input",), cost=(("MatMul", 2.0),)))
    page = tmp_path / "report.html"
    page.write_text(ex.to_html())
    done = _browse(page, tmp_path / "p1", "--dump-dom")
    assert done.returncode == 0 and _console(done.stderr) == []
    table = re.search(r"<table class=\"whatif\">(.*?)</table>", done.stdout, re.S)
    assert table and table.group(1).count("<tr>") == 1 + len(ex.report()["what_if"]["changed"])
