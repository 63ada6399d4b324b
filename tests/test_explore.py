"""The exploration tool: its JSON report, the alternatives and what extraction chose, HTML in a real browser, DOT, CLI."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import egraph_lower as el
from egraph_lower.build import GraphBuilder
from egraph_lower.egraph.saturate import STOP_REASONS, Limits
from egraph_lower.explore import REPORT_KEYS, Exploration, explore
from egraph_lower.extract import graph_cost
from egraph_lower.graph import Graph
from egraph_lower.lower import check_legal
from egraph_lower.ops import BACKWARD_OPS

ROOT = Path(__file__).resolve().parents[1]


def training_step(name: str = "train_step") -> Graph:
    """A two-layer MLP's forward and backward: MatMul, Transpose, a broadcast Add, Gelu/Silu/Sigmoid/Tanh/Relu
    and their backward ops, Reduce."""
    b = GraphBuilder(name)
    x = b.input("x", [8, 16])
    dy = b.input("dy", [8, 4])
    w1, b1 = b.param("w1", [16, 32]), b.param("b1", [32])
    w2, w3 = b.param("w2", [32, 32]), b.param("w3", [32, 4])
    h1 = b.binary("Add", b.matmul(x, w1), b1)  # broadcast [8,32] + [32]
    a1 = b.act("Gelu", h1)
    h2 = b.matmul(a1, w2)
    a2 = b.act("Sigmoid", h2)
    a3 = b.act("Relu", a2)
    a4 = b.act("Silu", a3)
    out = b.matmul(a4, w3)
    loss = b.reduce("Sum", out, [0, 1])
    g4 = b.matmul(dy, b.transpose(w3, [1, 0]))
    g3 = b.act_backward("Silu", a3, g4)
    g2r = b.relu_backward(a2, g3)
    g2 = b.act_backward("Sigmoid", h2, g2r)
    g1a = b.matmul(g2, b.transpose(w2, [1, 0]))
    g1 = b.act_backward("Gelu", h1, g1a)
    gt = b.act_backward("Tanh", h1, g1)
    db1 = b.reduce("Sum", gt, [0])
    dw1 = b.matmul(b.transpose(x, [1, 0]), gt)
    return b.build([loss, dw1, db1])


def small_graph(name: str = "small") -> Graph:
    b = GraphBuilder(name)
    x, dy = b.input("x", [4, 8]), b.input("dy", [4, 8])
    g = b.act_backward("Sigmoid", x, dy)
    r = b.relu_backward(x, g)
    return b.build([r])


@pytest.fixture(scope="module")
def ex() -> Exploration:
    return explore(training_step(), "metal", compare=("cpu", "metal", "wgpu"))


@pytest.fixture(scope="module")
def report(ex: Exploration) -> dict:
    return ex.report()


# --- the JSON report ------------------------------------------------------------------------------
def test_report_keys_exactly(report: dict) -> None:
    assert tuple(report) == REPORT_KEYS
    assert set(report) == {"graph", "backend", "stop_reason", "iterations", "rules", "before", "after", "extraction",
                           "choices", "convolutions", "compare", "what_if"}
    assert report["what_if"] is None  # none asked for (tests/test_explore_whatif.py)
    assert report["convolutions"] == []  # no convolution in this graph (tests/test_explore_convolutions.py)
    assert report["extraction"] == {"extractor": "greedy", "optimal": False, "status": None}
    assert report["graph"] == "train_step" and report["backend"] == "metal"
    assert STOP_REASONS == ("saturated", "iteration_limit", "node_limit", "time_limit")
    assert report["stop_reason"] in STOP_REASONS
    for it in report["iterations"]:
        assert set(it) == {"index", "eclasses", "enodes", "seconds", "matches"}
    for r in report["rules"]:
        assert set(r) == {"name", "identity", "matches", "seconds"}
    for side in ("before", "after"):
        assert set(report[side]) == {"nodes", "cost"}
    for c in report["choices"]:
        assert set(c) == {"node", "op", "alternatives"}
        for a in c["alternatives"]:
            assert set(a) == {"cost", "ops", "legal", "chosen", "rules"}
    for st in report["compare"].values():
        assert {"nodes", "cost"} <= set(st)
    json.dumps(report, allow_nan=False)  # plain JSON, no NaN or Infinity


def test_iterations_and_rules(ex: Exploration, report: dict) -> None:
    its = report["iterations"]
    assert [it["index"] for it in its] == list(range(1, len(its) + 1))
    assert all(it["eclasses"] > 0 and it["enodes"] >= it["eclasses"] for it in its)  # e-classes were counted
    names = [r["name"] for r in report["rules"]]
    assert len(names) == len(set(names)) and set(names) == {r.name for r in ex.saturated.rules}
    for r in report["rules"]:
        assert r["matches"] == sum(it["matches"].get(r["name"], 0) for it in its)
    assert any(r["matches"] for r in report["rules"])
    assert all(set(it["matches"]) <= set(names) for it in its)


def test_before_after(ex: Exploration, report: dict) -> None:
    assert report["before"] == {"nodes": len(ex.graph.nodes), "cost": None}  # metal runs no backward op
    check_legal(ex.after, ex.backend)
    assert report["after"]["nodes"] == len(ex.after.nodes)
    assert report["after"]["cost"] == pytest.approx(graph_cost(ex.after, ex.backend))
    assert not any(n.op in BACKWARD_OPS for n in ex.after.nodes)


def test_every_backward_op_has_its_alternatives(ex: Exploration, report: dict) -> None:
    by_node = {c["node"]: c for c in report["choices"]}
    backward = [n for n in ex.graph.nodes if n.op in BACKWARD_OPS]
    assert len(backward) == 5
    ran = {r["name"] for r in report["rules"]}
    for node in backward:
        c = by_node[node.id]
        assert c["op"] == node.op
        alts = c["alternatives"]
        # the node left as it is: one op of its own kind, made by no rule, and metal lacks it
        as_is = [a for a in alts if a["ops"] == {node.op: 1} and a["rules"] == []]
        assert as_is and all(not a["legal"] and a["cost"] is None for a in as_is)
        chosen = [a for a in alts if a["chosen"]]
        assert len(chosen) == 1
        (ch,) = chosen
        assert ch["legal"] and ch["rules"] and node.op not in ch["ops"]
        legal = [a["cost"] for a in alts if a["legal"]]
        assert ch["cost"] <= min(legal) + 1e-6
        for a in alts:
            assert a["legal"] == (a["cost"] is not None)
            assert set(a["rules"]) <= ran
            assert all(isinstance(v, int) and v > 0 for v in a["ops"].values())


def test_chosen_is_what_extraction_chose(ex: Exploration) -> None:
    for name, lo in ex.lowered.items():
        assert lo.extraction is not None or lo.error
        for c in ex.choices(name):
            chosen = [a for a in c.alternatives if a.chosen]
            legal = [a for a in c.alternatives if a.legal]
            reached = lo.extraction is not None and c.eclass in lo.extraction.choice
            assert len(chosen) == (1 if reached else 0)
            assert not reached or legal
            if not chosen:
                continue
            assert chosen[0].cost <= min(a.cost for a in legal) + 1e-6  # type: ignore[type-var,operator]
            assert lo.extraction is not None and chosen[0].enode == lo.extraction.choice[c.eclass]
            assert sum(a.original for a in c.alternatives) == 1


def _switched_cost(ex: Exploration, backend: str, eclass: int, enode: int) -> float | None:
    """The DAG cost of the extracted graph with one class switched to another e-node, computed from scratch."""
    lo = ex.lowered[backend]
    assert lo.extraction is not None
    t = ex.saturated.tables
    choice = dict(lo.extraction.choice)
    choice[eclass] = enode
    total, seen, stack, on_path = 0.0, set(), [(r, False) for r in ex.saturated.roots], set()
    while stack:  # post-order walk: also finds a cycle (a form that needs its own value)
        c, done = stack.pop()
        if done:
            on_path.discard(c)
            continue
        if c in on_path:
            return None
        if c in seen:
            continue
        seen.add(c)
        n = choice.get(c, lo.ranking.choice[c])
        if n < 0 or lo.ranking.node_cost[n] is None:
            return None
        total += lo.ranking.node_cost[n]  # type: ignore[operator]
        on_path.add(c)
        stack.append((c, True))
        stack.extend((k, False) for k in set(t.children[n]))
    return total


def test_cost_is_what_the_form_adds_to_the_graph(ex: Exploration) -> None:
    # E.cost - cost(chosen) + cost(n) is the DAG cost of the graph with the class switched to n
    for name in ("metal", "wgpu", "cpu"):
        lo = ex.lowered[name]
        assert lo.extraction is not None
        for c in ex.choices(name):
            ch = c.chosen
            assert ch is not None and ch.cost is not None
            for a in c.alternatives:
                if a.legal:
                    want = _switched_cost(ex, name, c.eclass, a.enode)
                    assert want is not None
                    assert lo.extraction.cost - ch.cost + a.cost == pytest.approx(want, rel=1e-9)  # type: ignore[operator]


def test_only_rewritten_nodes_and_backward_ops_are_listed(ex: Exploration, report: dict) -> None:
    listed = {c["node"] for c in report["choices"]}
    for node in ex.graph.nodes:
        if node.op in BACKWARD_OPS:
            assert node.id in listed
        if node.id in listed and node.op not in BACKWARD_OPS:
            assert len(ex.alternatives(node.id)) > 1  # rewritten: more than the node itself
        if node.op in ("Input", "Param", "Constant"):
            assert node.id not in listed


def test_alternatives_method_matches_the_report(ex: Exploration, report: dict) -> None:
    for c in report["choices"]:
        assert ex.alternatives(c["node"]) == c["alternatives"]
    with pytest.raises(el.LowerError):
        ex.alternatives(10_000)
    with pytest.raises(el.LowerError):
        ex.alternatives(0, backend="tpu")  # not explored


def test_cpu_keeps_the_fused_kernels(ex: Exploration) -> None:
    for node in ex.graph.nodes:
        if node.op in BACKWARD_OPS:
            ch = ex.choice(node.id, "cpu").chosen
            assert ch is not None and ch.original and ch.legal


def test_compare(ex: Exploration, report: dict) -> None:
    cmp_ = report["compare"]
    assert list(cmp_) == ["cpu", "metal", "wgpu"]
    assert cmp_["metal"]["nodes"] == report["after"]["nodes"]
    assert cmp_["metal"]["cost"] == pytest.approx(report["after"]["cost"])
    assert cmp_["cpu"]["nodes"] <= cmp_["metal"]["nodes"]
    assert cmp_["cpu"]["cost"] < cmp_["metal"]["cost"]
    for name, st in cmp_.items():
        if st["nodes"] is None:  # a backend the catalogue cannot serve yet: said why, not hidden
            assert st["cost"] is None and st["error"]
        else:
            assert st["nodes"] > 0 and st["cost"] > 0 and math.isfinite(st["cost"])
            lo = ex.lowered[name]
            assert lo.graph is not None
            check_legal(lo.graph, lo.backend)


def test_one_egraph_for_all_backends(ex: Exploration) -> None:
    # the rules of every compared backend were loaded together, once (those that can meet the graph)
    from egraph_lower import rules
    from egraph_lower.egraph.load import label

    needed = rules.select(frozenset().union(*(b.missing for b in (ex.backend, *ex.compare))),
                          present={label(n.op, n.attrs) for n in ex.graph.nodes})
    assert {r.name for r in ex.saturated.rules} == {r.name for r in needed}


def test_without_compare_and_without_rules() -> None:
    e = explore(small_graph(), "cpu")
    r = e.report()
    assert r["compare"] == {}
    assert r["rules"] == []  # cpu lacks nothing: no rule runs
    assert r["before"] == r["after"]
    for c in r["choices"]:
        assert c["alternatives"] == [{"cost": c["alternatives"][0]["cost"], "ops": {c["op"]: 1}, "legal": True,
                                      "chosen": True, "rules": []}]
    assert {c["node"] for c in r["choices"]} == {2, 3}


def test_stop_reason_iteration_limit() -> None:
    e = explore(training_step(), "metal", compare=["wgpu"], limits=Limits(iterations=1))
    r = e.report()
    assert r["stop_reason"] == "iteration_limit" and len(r["iterations"]) == 1


# --- HTML -------------------------------------------------------------------------------------------
def test_html_self_contained(ex: Exploration) -> None:
    page = ex.to_html()
    assert page.startswith("<!DOCTYPE html>")
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", page, re.I)
    assert not re.search(r"<(script|link|iframe|img|object|embed)\b", page, re.I)
    assert "@import" not in page and "url(http" not in page
    assert page.count("<svg") >= 3  # growth chart, the graph before, the graph after
    for r in ex.report()["rules"]:
        if r["matches"]:
            assert r["name"] in page
    for b in ("cpu", "metal", "wgpu"):
        assert b in page


def test_html_escapes_names() -> None:
    g = small_graph('<script>alert("x")</script>')
    page = explore(g, "metal").to_html()
    assert "<script" not in page
    assert "&lt;script&gt;" in page


def test_html_summarises_large_graphs() -> None:
    b = GraphBuilder("long_chain")
    x = b.input("x", [4])
    h = x
    for i in range(200):
        h = b.act("Relu", b.binary("Add", h, x))
    page = explore(b.build([h]), "cpu").to_html()
    assert "Over 150 nodes" in page and "class='ops'" in page
    drawn = page.count("<g><title>node ")
    assert 0 < drawn <= 2 * 150  # before and after, each capped


# --- DOT --------------------------------------------------------------------------------------------
def _strip_quoted(text: str) -> str:
    return re.sub(r'"(?:[^"\\]|\\.)*"', '""', text)


def _check_dot(text: str) -> tuple[list[int], set[str], list[tuple[str, str]]]:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    body = [ln for ln in lines if not ln.startswith("//")]
    assert body[0] == "digraph egraph {" and body[-1] == "}"
    plain = _strip_quoted(text)
    assert plain.count("{") == plain.count("}")
    clusters = [int(m) for m in re.findall(r"subgraph cluster_(\d+) \{", plain)]
    assert len(clusters) == len(set(clusters))
    defined = set(re.findall(r"^\s*(\w+) \[", plain, re.M)) - {"graph", "node", "edge"}
    edges = re.findall(r"^\s*(\w+) -> (\w+)", plain, re.M)
    for a, b in edges:
        assert a in defined and b in defined
    return clusters, defined, edges


def test_dot_structure(ex: Exploration) -> None:
    text = ex.to_dot()
    clusters, _, edges = _check_dot(text)
    t = ex.saturated.tables
    assert len(clusters) == len(set(t.eclass))  # small enough: every e-class drawn
    assert len(edges) == sum(len(k) for k in t.children)
    assert "left out" not in text


def test_dot_capped(ex: Exploration) -> None:
    text = ex.to_dot(max_classes=10)
    clusters, defined, _ = _check_dot(text)
    assert len(clusters) == 10
    assert re.search(r"^// left out \d+ of \d+ e-classes", text, re.M)
    assert "left out" in re.search(r"label=(\"(?:[^\"\\]|\\.)*\")", text).group(1)  # type: ignore[union-attr]
    assert "left_out" in defined


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz `dot` is not installed")
def test_dot_renders(ex: Exploration, tmp_path: Path) -> None:
    for cap in (400, 10):
        src = tmp_path / f"e{cap}.dot"
        src.write_text(ex.to_dot(max_classes=cap))
        done = subprocess.run(["dot", "-Tsvg", str(src)], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert "Warning" not in done.stderr and "Error" not in done.stderr, done.stderr
        assert "<svg" in done.stdout


# --- CLI --------------------------------------------------------------------------------------------
def run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "egraph_lower.cli", *args], capture_output=True, text=True, env=env)


def test_cli_writes_all_three(tmp_path: Path) -> None:
    g = tmp_path / "g.json"
    g.write_text(training_step().to_json())
    j, h, d = tmp_path / "r.json", tmp_path / "r.html", tmp_path / "e.dot"
    done = run("explore", str(g), "--backend", "metal", "--compare", "cpu,metal,wgpu",
               "--json", str(j), "--html", str(h), "--dot", str(d))
    assert done.returncode == 0, done.stderr
    assert "explored train_step for metal" in done.stdout and "compare" in done.stdout
    doc = json.loads(j.read_text())
    assert tuple(doc) == REPORT_KEYS and list(doc["compare"]) == ["cpu", "metal", "wgpu"]
    assert "<svg" in h.read_text()
    _check_dot(d.read_text())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.dot", "g.json", "r.html", "r.json"]  # no temp files


@pytest.mark.parametrize("args", [("--backend", "nope"), ("--backend", "metal", "--compare", "cpu,nope")])
def test_cli_bad_backend(tmp_path: Path, args: tuple[str, ...]) -> None:
    g = tmp_path / "g.json"
    g.write_text(small_graph().to_json())
    j = tmp_path / "r.json"
    done = run("explore", str(g), *args, "--json", str(j))
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("egraph-lower: error:") and "nope" in lines[0]
    assert not j.exists()


# --- the page in a real browser -----------------------------------------------------------------------
def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _browse(page: Path, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [_chromium() or "chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", *args, page.as_uri()]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180)


def _console(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if ":CONSOLE" in ln]


@pytest.mark.skipif(_chromium() is None, reason="chromium is not installed (apt-get install chromium)")
def test_html_in_a_browser(ex: Exploration, tmp_path: Path) -> None:
    # the console check catches errors: a page that logs one is seen
    bad = tmp_path / "bad.html"
    bad.write_text("<!DOCTYPE html><p>x</p><script>console.error('boom'); missingFn();</script>")
    assert any("boom" in ln for ln in _console(_browse(bad, tmp_path / "p0", "--dump-dom").stderr))

    page = tmp_path / "report.html"
    page.write_text(ex.to_html())
    done = _browse(page, tmp_path / "p1", "--dump-dom")
    assert done.returncode == 0, done.stderr[-2000:]
    assert _console(done.stderr) == []
    dom = done.stdout
    assert "<title>train_step on metal" in dom
    rules = re.search(r"<table class=\"rules\">(.*?)</table>", dom, re.S)
    assert rules and rules.group(1).count("<tr>") > 1  # header and rule rows
    assert len(re.findall(r"<svg[^>]*class=\"chart\"", dom)) == 1
    graphs = re.findall(r"<svg[^>]*class=\"graph\"", dom)
    assert len(graphs) == 2
    assert dom.count("<rect") > len(ex.graph.nodes) + len(ex.after.nodes)
    assert dom.count("class=\"num chosen\"") >= 5 * 3  # each backward op: a choice on each of 3 backends
    assert "<table class=\"compare\">" in dom
    for b in ("cpu", "wgpu"):
        assert f"<b>{b}</b>" in dom

    shot = tmp_path / "shot.png"
    done = _browse(page, tmp_path / "p2", "--hide-scrollbars", "--window-size=1280,2400", f"--screenshot={shot}")
    assert done.returncode == 0 and _console(done.stderr) == []
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000


def test_a_compared_backend_without_a_form_is_reported_not_fatal(tmp_path: Path) -> None:
    tiny = tmp_path / "tiny.json"
    tiny.write_text(json.dumps({
        "name": "tiny", "description": "no activations, no backward ops",
        "ops": ["Input", "Param", "Constant", "Binary", "MatMul", "Transpose", "Reduce"],
        "cost": {"launch": 5, "byte": 1e-5, "flop": 2e-6, "view": 0.1}}))
    e = explore(small_graph(), "metal", compare=[str(tiny)])
    st = e.report()["compare"]["tiny"]
    assert st["nodes"] is None and st["cost"] is None and "backend tiny" in st["error"]
    assert "no runnable graph" in e.to_html()
    with pytest.raises(el.LowerError):  # the explored backend itself must have a form
        explore(small_graph(), str(tiny))


def test_explore_with_the_exact_extractor(tmp_path: Path) -> None:
    pytest.importorskip("scipy")
    graph = el.load_graph(el.__path__[0] + "/examples/mlp_step.json")
    greedy = el.explore(graph, "wgpu").report()
    exact = el.explore(graph, "wgpu", extractor="exact").report()
    assert exact["after"]["cost"] <= greedy["after"]["cost"] + 1e-9
    for choice in exact["choices"]:
        chosen = [a for a in choice["alternatives"] if a["chosen"]]
        assert len(chosen) <= 1 and all(a["legal"] for a in chosen)
