"""The explore report per convolution: each convolution node's expansions on every explored backend, side by
side, with which one each backend chose and why (the JSON report, the text summary, the HTML page, the CLI)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import egraph_lower as el
from egraph_lower.build import GraphBuilder
from egraph_lower.explore import Exploration, explore
from egraph_lower.graph import Graph

BACKENDS_DIR = Path(__file__).parent / "backends_conv"
NO_TRANSPOSE, NEITHER = str(BACKENDS_DIR / "conv_no_transpose.json"), str(BACKENDS_DIR / "conv_neither.json")
CONV = {"stride": [2, 2], "padding": [1, 1], "dilation": [1, 1], "groups": 1}


def strided_conv_step(dtype: str = "f32") -> Graph:
    """One strided convolution and its input, weight and bias gradients."""
    b = GraphBuilder("strided_conv")
    x, w = b.input("x", [2, 3, 8, 8], dtype), b.param("w", [4, 3, 3, 3], dtype)
    y = b.op("Conv2d", x, w, **CONV)
    dy = b.input("dy", b.meta(y)[0], dtype)
    dx = b.op("Conv2dBackwardInput", dy, w, input_shape=[2, 3, 8, 8], **CONV)
    dw = b.op("Conv2dBackwardWeight", x, dy, weight_shape=[4, 3, 3, 3], **CONV)
    return b.build([y, dx, dw, b.reduce("Sum", dy, [0, 2, 3])])


@pytest.fixture(scope="module")
def ex() -> Exploration:
    return explore(strided_conv_step(), "metal", compare=[NO_TRANSPOSE, NEITHER])


@pytest.fixture(scope="module")
def convs(ex: Exploration) -> dict[str, dict[str, Any]]:
    return {c["op"]: c for c in ex.report()["convolutions"]}


BACKENDS = ("metal", "conv_no_transpose", "conv_neither")


def test_one_entry_per_convolution_node_with_every_backend(ex: Exploration, convs: dict[str, dict[str, Any]]) -> None:
    assert set(convs) == {"Conv2d", "Conv2dBackwardInput", "Conv2dBackwardWeight"}
    for c in convs.values():
        node = ex.graph.by_id[c["node"]]
        assert c["op"] == node.op and c["shape"] == list(node.shape) and c["attrs"] == CONV
        assert tuple(c["backends"]) == BACKENDS
        for e in c["expansions"]:
            assert tuple(e["backends"]) == BACKENDS
    json.dumps(ex.report(), allow_nan=False)

# The input gradient as a convolution of the dilated, padded dy with the flipped weight is one e-node
# reached by two paths: `conv-bwd-input-conv` directly, and `conv-bwd-input-transpose` then
# `conv-transpose-conv` (the transposed convolution's own lowering, added with ConvTranspose2d);
# explore names an expansion by the rules in the order they applied, so it carries the second path's name.
VIA_TRANSPOSE = "conv-bwd-input-transpose + conv-transpose-conv"
VIA_TRANSPOSE_IM2COL = VIA_TRANSPOSE + " + conv-im2col"


def test_the_three_backends_choose_three_input_gradient_expansions(convs: dict[str, dict[str, Any]]) -> None:
    chosen = {b: st["chosen"] for b, st in convs["Conv2dBackwardInput"]["backends"].items()}
    assert chosen == {"metal": "conv-bwd-input-transpose", "conv_no_transpose": VIA_TRANSPOSE,
                      "conv_neither": VIA_TRANSPOSE_IM2COL}


def test_each_backend_chose_its_cheapest_runnable_expansion(ex: Exploration, convs: dict[str, dict[str, Any]]) -> None:
    for c in convs.values():
        for b in BACKENDS:
            entries = [e["backends"][b] for e in c["expansions"]]
            runnable = [st for st in entries if st["legal"]]
            (chosen,) = [st for st in entries if st["chosen"]]
            assert chosen["legal"] and chosen["cost"] == min(st["cost"] for st in runnable)
            assert c["backends"][b]["cost"] == chosen["cost"] and c["backends"][b]["why"] == chosen["why"]
            assert chosen["why"].startswith("chosen: the " + ("only" if len(runnable) == 1 else "cheapest"))
            # the same as the alternatives the backend's extraction describes
            alts = ex.alternatives(c["node"], b)
            assert sorted(a["cost"] for a in alts if a["legal"]) == sorted(st["cost"] for st in runnable)


def test_what_a_backend_cannot_run_says_which_ops_it_lacks(ex: Exploration, convs: dict[str, dict[str, Any]]) -> None:
    said = 0
    for c in convs.values():
        for e in c["expansions"]:
            for b, st in e["backends"].items():
                if st["legal"]:
                    assert st["why"].startswith(("chosen:", "runnable,"))
                    continue
                assert st["why"].startswith("not runnable: needs ") and st["cost"] is None
                needs = st["why"].removeprefix("not runnable: needs ").split(", ")
                backend = ex.lowered[b].backend
                assert all(not backend.runs(op.split("{")[0]) for op in needs), (b, needs)
                said += 1
    transpose = next(e for e in convs["Conv2dBackwardInput"]["expansions"]
                     if e["expansion"] == "conv-bwd-input-transpose")
    assert transpose["backends"]["conv_no_transpose"]["why"] == "not runnable: needs ConvTranspose2d"
    assert said >= 6


def test_an_expansion_is_named_by_its_rules_in_the_order_they_applied(convs: dict[str, dict[str, Any]]) -> None:
    names = {e["expansion"]: e for e in convs["Conv2dBackwardInput"]["expansions"]}
    assert set(names) == {"as is", "conv-bwd-input-transpose", VIA_TRANSPOSE,
                          VIA_TRANSPOSE_IM2COL}
    assert names["as is"]["original"] and names["as is"]["op"] == "Conv2dBackwardInput"
    assert names[VIA_TRANSPOSE_IM2COL]["op"] == "Conv2dMergeGroups"
    # the weight gradient as a convolution takes conv-im2col on the backend without a convolution kernel
    weight = {e["expansion"]: e for e in convs["Conv2dBackwardWeight"]["expansions"]}
    as_conv = next(e for n, e in weight.items() if n.startswith("conv-bwd-weight-conv"))
    assert "conv-im2col" in as_conv["backends"]["conv_neither"]["rules"]
    assert "conv-im2col" not in as_conv["backends"]["metal"]["rules"]


def test_the_text_summary_shows_each_backends_choice(ex: Exploration) -> None:
    text = ex.summary()
    section = text[text.index("  convolutions (3"):text.index("  compare")]
    lines = section.splitlines()
    for b, chosen in (("metal", "conv-bwd-input-transpose"), ("conv_no_transpose", VIA_TRANSPOSE),
                      ("conv_neither", VIA_TRANSPOSE_IM2COL)):
        assert any(ln.split()[0] == b and f" {chosen}  (cost " in ln for ln in lines), (b, section)
    assert "not runnable: needs ConvTranspose2d" in section


def test_the_html_page_has_a_convolutions_section(ex: Exploration) -> None:
    page = ex.to_html()
    section = page[page.index('<h2 id="convolutions">'):page.index('<h2 id="choices">')]
    assert section.count("class='panel choice conv'") == 3
    assert "not runnable: needs ConvTranspose2d" in section
    for b in BACKENDS:
        assert f"<b>{b}</b>" in section
    assert VIA_TRANSPOSE_IM2COL in section


def test_half_precision_shows_the_expansions_of_the_float32_op(convs: dict[str, dict[str, Any]]) -> None:
    half = {c["op"]: c for c in explore(strided_conv_step("f16"), "metal", compare=[NO_TRANSPOSE, NEITHER])
            .report()["convolutions"]}
    for op, c in half.items():
        names = {e["expansion"] for e in c["expansions"]}
        # the f16 kernel as is, and each expansion of the f32 one (computed between Casts)
        assert names == {"as is", "as is (in f32)"} | {e["expansion"] + " (in f32)" for e in convs[op]["expansions"]
                                                        if not e["original"]}
        for b in BACKENDS:
            chosen = [e["backends"][b] for e in c["expansions"] if e["backends"][b]["chosen"]]
            assert len(chosen) == 1 and chosen[0]["cost"] == min(
                e["backends"][b]["cost"] for e in c["expansions"] if e["backends"][b]["legal"])
    chosen = {b: st["chosen"] for b, st in half["Conv2dBackwardInput"]["backends"].items()}
    assert chosen == {b: f"{name} (in f32)" for b, name in
                      {b: st["chosen"] for b, st in convs["Conv2dBackwardInput"]["backends"].items()}.items()}


def test_a_graph_without_convolutions_has_no_section() -> None:
    b = GraphBuilder("no_conv")
    x, dy = b.input("x", [4, 8]), b.input("dy", [4, 8])
    e = explore(b.build([b.relu_backward(x, dy)]), "metal")
    assert e.report()["convolutions"] == [] and 'id="convolutions"' not in e.to_html()
    assert "convolutions (" not in e.summary()


def test_cli_explore_writes_the_convolutions(tmp_path: Path) -> None:
    g = tmp_path / "g.json"
    g.write_text(strided_conv_step().to_json())
    done = subprocess.run([sys.executable, "-m", "egraph_lower.cli", "explore", str(g), "-b", "metal", "--compare",
                           f"wgpu,{NEITHER}", "--json", str(tmp_path / "r.json")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    doc = json.loads((tmp_path / "r.json").read_text())
    chosen = {c["op"]: {b: st["chosen"] for b, st in c["backends"].items()} for c in doc["convolutions"]}
    assert chosen["Conv2dBackwardInput"]["wgpu"] == chosen["Conv2dBackwardInput"]["conv_neither"]
    assert chosen["Conv2dBackwardInput"]["metal"] == "conv-bwd-input-transpose"
    assert "convolutions (3" in done.stdout
    assert el.load_backend("wgpu").runs("Conv2d") is False


@pytest.mark.skipif(shutil.which("chromium") is None, reason="chromium is not installed (apt-get install chromium)")
def test_the_convolutions_section_in_a_browser(ex: Exploration, tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    page.write_text(ex.to_html())
    done = subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                           "--disable-background-networking", "--disable-component-update", "--disable-sync",
                           f"--user-data-dir={tmp_path / 'profile'}", "--enable-logging=stderr", "--v=0",
                           "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    assert [ln for ln in done.stderr.splitlines() if ":CONSOLE" in ln] == []
    dom = done.stdout
    section = dom[dom.index('<h2 id="convolutions">'):dom.index('<h2 id="choices">')]
    assert section.count('class="panel choice conv"') == 3
    # one verdict row per backend and convolution, one chosen cell per backend and convolution
    assert section.count('<table class="verdicts">') == 3
    assert section.count('class="num chosen"') == 3 * len(BACKENDS)
