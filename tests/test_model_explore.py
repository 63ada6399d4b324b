"""The explore report of a real model's backward graph shows the alternatives extraction weighed.

`tests/data/gpt2_block_backward.json` is the backward graph of the GPT-2-like block's training
step (`tests/torch_models.py`), as the torch backend imports it (`tests/test_torch_models.py`
checks it is still what the model gives). Explored for wgpu and compared with metal, as
docs/torch.md shows, every backward op of the issue's list has its forms in the JSON report:
the op as it is (not runnable there), each expansion with its cost and the rules that made
it, and extraction's choice, the cheapest runnable one.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

import egraph_lower as el
from egraph_lower.cli import main
from egraph_lower.explore import explore

GRAPH = Path(__file__).parent / "data" / "gpt2_block_backward.json"
WEIGHED = ("SoftmaxBackward", "LayerNormBackwardInput", "LayerNormBackwardWeight", "EmbeddingBackward",
           "NllLossBackward", "LogSoftmaxBackward", "DropoutBackward", "ActivationBackward", "SliceBackward")


def _check_choice(choice: dict[str, Any], op: str) -> None:
    alts = choice["alternatives"]
    kept = [a for a in alts if a["ops"] == {op: 1} and not a["rules"]]
    assert len(kept) == 1 and not kept[0]["legal"] and kept[0]["cost"] is None, alts  # no such kernel
    runnable = [a for a in alts if a["legal"]]
    assert runnable, alts
    for a in runnable:
        assert a["rules"] and op not in a["ops"], a
        assert isinstance(a["cost"], float) and math.isfinite(a["cost"]) and a["cost"] > 0, a
    chosen = [a for a in alts if a["chosen"]]
    assert len(chosen) == 1 and chosen[0]["legal"], alts
    assert chosen[0]["cost"] <= min(a["cost"] for a in runnable) * (1 + 1e-9), alts


def test_the_graph_is_small_enough_to_ship() -> None:
    assert GRAPH.stat().st_size < 100_000
    assert el.load_graph(str(GRAPH)).name == "gpt2_block_backward"


def test_explore_reports_the_alternatives_of_each_backward_op(tmp_path: Path) -> None:
    out_json, out_html = tmp_path / "gpt2.json", tmp_path / "gpt2.html"
    assert main(["explore", str(GRAPH), "-b", "wgpu", "--compare", "metal", "--json", str(out_json),
                 "--html", str(out_html)]) == 0
    report = json.loads(out_json.read_text())
    assert report["backend"] == "wgpu" and report["before"]["cost"] is None  # wgpu has none of these kernels
    assert isinstance(report["after"]["cost"], float) and isinstance(report["compare"]["metal"]["cost"], float)
    graph = el.load_graph(str(GRAPH))
    by_op: dict[str, list[dict[str, Any]]] = {}
    for c in report["choices"]:
        by_op.setdefault(c["op"], []).append(c)
    for op in WEIGHED:
        assert len(by_op.get(op, [])) == graph.op_counts()[op], op  # every such node has its choice
        for c in by_op[op]:
            _check_choice(c, op)
    # the softmax gradient and GELU(tanh)'s have two runnable expansions each: extraction weighed them
    for op in ("SoftmaxBackward", "ActivationBackward"):
        assert all(sum(a["legal"] for a in c["alternatives"]) >= 2 for c in by_op[op]), by_op[op]
    page = out_html.read_text()
    for op in WEIGHED:
        assert op in page


@pytest.mark.parametrize("backend", ["metal", "wgpu"])
def test_each_backend_prices_the_same_forms_with_its_own_costs(backend: str) -> None:
    ex = explore(str(GRAPH), "wgpu", compare=("metal",))
    other = "metal" if backend == "wgpu" else "wgpu"
    for choice in ex.choices(backend):
        if choice.node.op not in WEIGHED:
            continue
        _check_choice(choice.to_dict(), choice.node.op)
        # one e-graph, so the same e-nodes; two cost models, so other prices
        mine = {a.enode: a for a in choice.alternatives if a.legal}
        theirs = {a.enode: a for a in ex.choice(choice.node.id, other).alternatives if a.legal}
        both = mine.keys() & theirs.keys()
        assert both and any(mine[e].cost != theirs[e].cost for e in both), choice.node
        # what only one of them runs is what it has a kernel for: metal's ScatterAdd (the embedding gradient)
        only = {e: mine[e].ops for e in mine.keys() - theirs.keys()}
        assert all("ScatterAdd" in ops for ops in only.values()) and (backend == "metal") >= bool(only), only
        if backend == "metal" and choice.node.op == "EmbeddingBackward":
            assert only, choice.node
