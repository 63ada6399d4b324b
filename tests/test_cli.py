"""The command line as a user meets it: the README's example, summaries, reports, and clean failures."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import egraph_lower as el
from egraph_lower import cli, rules

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "egraph_lower" / "examples" / "mlp_step.json"


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "egraph_lower.cli", *args], capture_output=True, text=True, env=env, cwd=cwd)


def quick_start_command() -> list[str]:
    """The first Quick start command of the README, after its install step."""
    text = (ROOT / "README.md").read_text()
    block = re.search(r"## Quick start\s+```(?:sh|bash|console)?\n(.*?)```", text, re.S)
    assert block, "README has a Quick start block"
    lines = [ln.strip() for ln in block.group(1).strip().splitlines() if ln.strip()]
    assert len(lines) == 2, "exactly two commands"
    first = lines[0].split("&&")[-1].split()
    assert first[0] == "egraph-lower"
    return first[1:]


def test_readme_quick_start(tmp_path: Path) -> None:
    args = quick_start_command()
    out = tmp_path / "lowered.json"
    args[args.index("-o") + 1] = str(out)  # same command, output kept out of the checkout
    r = run(*args, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    lowered = el.load_graph(out)
    assert not {"ActivationBackward", "ReluBackward"} & set(lowered.op_counts())
    assert "after" in r.stdout and "e-graph" in r.stdout


def test_lower_writes_graph_and_report(tmp_path: Path) -> None:
    out, report = tmp_path / "out.json", tmp_path / "report.json"
    r = run("lower", str(EXAMPLE), "--backend", "wgpu", "-o", str(out), "--report", str(report))
    assert r.returncode == 0, r.stderr
    rep = json.loads(report.read_text())
    assert set(rep) >= {"before", "after", "stop_reason", "eclasses", "enodes", "seconds"}
    assert set(rep["seconds"]) >= {"load", "saturate", "extract", "convert", "total"}
    assert rep["before"]["cost"] is None and rep["after"]["cost"] > 0
    assert rep["stop_reason"] == "saturated"
    assert el.load_graph(out).name == "mlp_step"


def test_lower_to_stdout_and_quiet(tmp_path: Path) -> None:
    r = run("lower", str(EXAMPLE), "--backend", "cpu", "--quiet")
    assert r.returncode == 0 and r.stderr == ""
    assert el.from_json(r.stdout).op_counts() == el.load_graph(EXAMPLE).op_counts()


def test_run_evaluates(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    inputs = tmp_path / "in.npz"
    np.savez(inputs, x=rng.normal(size=(4, 8)).astype(np.float32), w=rng.normal(size=(8, 16)).astype(np.float32),
             b=rng.normal(size=16).astype(np.float32), dy=rng.normal(size=(4, 16)).astype(np.float32))
    lowered = tmp_path / "lowered.json"
    assert run("lower", str(EXAMPLE), "-b", "metal", "-o", str(lowered), "-q").returncode == 0
    for graph, out in ((EXAMPLE, tmp_path / "a.npz"), (lowered, tmp_path / "b.npz")):
        r = run("run", str(graph), "--inputs", str(inputs), "-o", str(out))
        assert r.returncode == 0, r.stderr
    a, b = np.load(tmp_path / "a.npz"), np.load(tmp_path / "b.npz")
    assert sorted(a.files) == ["out0", "out1", "out2"]
    for k in a.files:
        np.testing.assert_allclose(b[k], a[k], rtol=3e-4, atol=3e-5)


def test_backends_lists_all() -> None:
    r = run("backends")
    assert r.returncode == 0
    assert [ln.split()[0] for ln in r.stdout.splitlines()] == ["cpu", "mlx", "metal", "tpu", "wgpu"]


def test_rules_catalogue() -> None:
    r = run("rules")
    assert r.returncode == 0 and "relu-bwd" in r.stdout


GOOD = json.loads(EXAMPLE.read_text())


def mutate(f) -> str:  # type: ignore[no-untyped-def]
    doc = json.loads(json.dumps(GOOD))
    f(doc)
    return json.dumps(doc)


BAD_INPUTS = {
    "malformed": ("{\"format\": ", "malformed JSON"),
    "unknown op": (mutate(lambda d: d["nodes"][3].update(op="Conv")), "node 3"),
    "unknown kind": (mutate(lambda d: d["nodes"][5]["attrs"].update(kind="Swish")), "node 5"),
    "unknown dtype": (mutate(lambda d: d["nodes"][0].update(dtype="f8")), "node 0"),
    "unknown key": (mutate(lambda d: d["nodes"][4].update(extra=1)), "node 4"),
    "wrong arity": (mutate(lambda d: d["nodes"][3].update(inputs=[0])), "node 3"),
    "dangling": (mutate(lambda d: d["nodes"][3].update(inputs=[0, 99])), "node 3"),
    "forward reference": (mutate(lambda d: d["nodes"][3].update(inputs=[0, 4])), "node 3"),
    "cycle": (mutate(lambda d: d["nodes"][3].update(inputs=[3, 1])), "node 3"),
    "duplicate id": (mutate(lambda d: d["nodes"][1].update(id=0)), "duplicate"),
    "shape mismatch": (mutate(lambda d: d["nodes"][3].update(shape=[4, 17])), "node 3"),
    "dtype mismatch": (mutate(lambda d: d["nodes"][4].update(dtype="f16")), "node 4"),
    "bad output": (mutate(lambda d: d.update(outputs=[77])), "77"),
    "nesting": ("[" * 100000 + "]" * 100000, "JSON"),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_is_one_line_exit_2_and_keeps_output(case: str, tmp_path: Path) -> None:
    text, expected = BAD_INPUTS[case]
    graph = tmp_path / "bad.json"
    graph.write_text(text)
    out = tmp_path / "out.json"
    out.write_text("precious")
    r = run("lower", str(graph), "--backend", "metal", "-o", str(out))
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    assert expected in lines[0], lines[0]
    assert out.read_text() == "precious"
    assert os.listdir(tmp_path) == sorted(os.listdir(tmp_path)) and len(os.listdir(tmp_path)) == 2


@pytest.mark.parametrize(
    "args, expected",
    [
        (["lower", "missing.json", "-b", "metal"], "no such file"),
        (["lower", str(EXAMPLE), "-b", "vulkan"], "unknown backend 'vulkan'"),
        (["lower", str(EXAMPLE), "-b", "missing-backend.json"], "no such file"),
        (["run", str(EXAMPLE), "-o", "x.npz"], "no value fed"),
    ],
)
def test_other_failures(args: list[str], expected: str, tmp_path: Path) -> None:
    r = run(*args, cwd=tmp_path)
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1 and expected in r.stderr, r.stderr


def test_binary_graph_file(tmp_path: Path) -> None:
    graph = tmp_path / "g.json"
    graph.write_bytes(b"\x00\x01\x02PK")
    r = run("lower", str(graph), "-b", "metal")
    assert r.returncode == 2 and "binary" in r.stderr


def test_user_backend_file(tmp_path: Path) -> None:
    doc = json.loads((ROOT / "egraph_lower" / "backends" / "metal.json").read_text())
    doc["name"] = "my-gpu"
    doc["ops"].append("ReluBackward")
    path = tmp_path / "my.json"
    path.write_text(json.dumps(doc))
    out = tmp_path / "o.json"
    r = run("lower", str(EXAMPLE), "-b", str(path), "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert el.load_graph(out).op_counts().get("ReluBackward") == 1


def test_exact_extractor_and_limits_from_the_command_line(tmp_path: Path) -> None:
    def lower(*args: str) -> dict:  # type: ignore[type-arg]
        report = tmp_path / "r.json"
        r = run("lower", str(EXAMPLE), "-b", "wgpu", "-o", str(tmp_path / "o.json"), "--report", str(report), "-q", *args)
        assert r.returncode == 0, r.stderr
        return json.loads(report.read_text())

    exact, greedy = lower("--extractor", "exact"), lower()
    assert exact["stop_reason"] == greedy["stop_reason"] == "saturated"
    assert exact["after"]["cost"] <= greedy["after"]["cost"] + 1e-9  # optimal on the same e-graph
    assert lower("--max-iterations", "2")["stop_reason"] == "iteration_limit"


def test_rules_check_prints_the_table() -> None:
    """The command end to end on two rules (every rule's check is tests/test_rules.py's, one test each)."""
    r = run("rules", "--check", "--rule", "gelu-bwd", "-r", "relu-bwd")
    assert r.returncode == 0, r.stderr
    rows = [line.split()[0] for line in r.stdout.splitlines() if line.split()[:1] in (["gelu-bwd"], ["relu-bwd"])]
    assert rows == ["gelu-bwd", "relu-bwd"] and "f32" in r.stdout and r.stderr == "", r.stdout


def test_rules_lists_only_the_named_rules() -> None:
    r = run("rules", "--rule", "relu-bwd")
    heads = [line.split()[0] for line in r.stdout.splitlines() if line and not line[0].isspace()]
    assert r.returncode == 0 and heads == ["relu-bwd"] and "lowers ReluBackward" in r.stdout, r.stdout


@pytest.mark.parametrize("args, message", [(["--rule", "no-such-rule"], "no rule named 'no-such-rule'"),
                                           (["--rule", "relu-bwd", "-b", "metal"], "does not go with --backend")])
def test_rules_refuses_a_bad_rule_name_in_one_line(args: list[str], message: str) -> None:
    r = run("rules", "--check", *args)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and message in r.stderr, r.stderr


def test_rules_check_fails_on_a_wrong_rule(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    good, other = rules.BY_NAME["sigmoid-bwd"], rules.BY_NAME["tanh-bwd"]
    broken = dataclasses.replace(good, name="sigmoid-bwd-broken", rhs=other.rhs)  # tanh's derivative for sigmoid
    monkeypatch.setattr(rules, "ALL_RULES", (good, broken))
    assert cli.main(["rules", "--check"]) == 1
    out, err = capsys.readouterr()
    assert "sigmoid-bwd-broken" in out and "FAIL" in out  # the table is still printed
    lines = err.strip().splitlines()
    assert lines and all("rule sigmoid-bwd-broken fails" in line for line in lines), err


@pytest.mark.parametrize("args", [["lower", str(EXAMPLE)], ["lower"], ["frobnicate"], ["lower", str(EXAMPLE), "-b", "metal", "--max-iterations", "x"]])
def test_usage_errors_are_one_line(args: list[str]) -> None:
    r = run(*args)
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1 and r.stderr.startswith("egraph-lower"), r.stderr
