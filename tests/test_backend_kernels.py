"""A backend file's own kernels and rules (issue 23): the example backend's kernels chosen where they are
cheaper and not where they are dearer, the lowered graphs valid documents that the reference evaluates as the
original, the declarations refused in one line when wrong, and `rules --check --backend` on the rules and
kernels. (Through torch: tests/test_torch_backend_kernels.py.)"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from egraph_lower import backends, cli
from egraph_lower.document import load_graph, validated
from egraph_lower.dtypes import FLOAT_DTYPES, to_numpy
from egraph_lower.errors import BackendError, GraphError, LowerError
from egraph_lower.evaluate import apply, evaluate
from egraph_lower.graph import Graph
from egraph_lower.lower import lower
from egraph_lower.document import from_dict as validate
from support import as_f64

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "egraph_lower" / "examples" / "metal_kernels.json"
GPT2 = Path(__file__).parent / "data" / "gpt2_block_backward.json"
LN_OPS = {"LayerNormBackwardInput", "LayerNormBackwardWeight", "LayerNormBackwardBias"}


def example() -> dict[str, Any]:
    return json.loads(EXAMPLE.read_text())


def with_kernel_cost(name: str, **cost: float) -> backends.Backend:
    doc = example()
    for k in doc["kernels"]:
        if k["name"] == name:
            k["cost"] = {**k.get("cost", {}), **cost}
    return backends.from_dict(doc, "changed")


def kernels_of(g: Graph) -> Counter[str]:
    return Counter(f"{n.attrs['name']}[{n.attrs.get('output', 0)}]" for n in g.nodes if n.op == "Kernel")


@pytest.fixture(scope="module")
def gpt2() -> Graph:
    return load_graph(GPT2)


@pytest.fixture(scope="module")
def lowered_gpt2(gpt2: Graph) -> Any:
    return lower(gpt2, backends.load(str(EXAMPLE)))


# --------------------------------------------------------------------------- the example backend

def test_the_example_declares_three_kernels_and_a_rule() -> None:
    b = backends.load(str(EXAMPLE))
    assert [k.name for k in b.kernels] == ["layer_norm_backward", "softmax_cross_entropy_backward", "bias_gelu_tanh"]
    assert [len(k.outputs) for k in b.kernels] == [3, 1, 1]
    assert [r.name for r in b.rules] == ["metal-ln-bwd-bias-mean"]
    assert len(b.kernel_ctors) == 5 and all(b.runs("Kernel", c) for c in b.kernel_ctors)
    assert not backends.load("metal").runs("Kernel", next(iter(b.kernel_ctors)))
    assert b.ops == backends.load("metal").ops  # metal's ops, plus its own kernels


def test_gpt2_backward_takes_every_kernel_where_cheaper(gpt2: Graph, lowered_gpt2: Any) -> None:
    got = lowered_gpt2.graph
    # three layer norms (each its three outputs) and the cross entropy's gradient
    assert kernels_of(got) == Counter({"layer_norm_backward[0]": 3, "layer_norm_backward[1]": 3,
                                       "layer_norm_backward[2]": 3, "softmax_cross_entropy_backward[0]": 1})
    assert not {n.op for n in got.nodes} & (LN_OPS | {"LogSoftmaxBackward", "NllLossBackward"})
    plain = lower(gpt2, "metal")
    assert lowered_gpt2.report.after["cost"] < plain.report.after["cost"]
    assert not kernels_of(plain.graph)
    # the kernel nodes are named for the node they replace and the kernel's rule
    names = {n.name for n in got.nodes if n.op == "Kernel" and n.attrs["output"] == 0}
    assert "_log_softmax_backward_data/kernel-softmax_cross_entropy_backward" in names


def test_a_dearer_kernel_gives_the_primitives_back(gpt2: Graph) -> None:
    dear = lower(gpt2, with_kernel_cost("layer_norm_backward", launch=1e6))
    assert kernels_of(dear.graph) == Counter({"softmax_cross_entropy_backward[0]": 1})
    assert not {n.op for n in dear.graph.nodes} & LN_OPS
    fired = dear.report.rules_fired
    assert fired["kernel-layer_norm_backward"] == 3 and fired["ln-bwd-input"] == 3  # both were in the e-graph
    # and the cross entropy's too, when its work is priced high enough
    both = example()
    both["kernels"][0]["cost"]["launch"] = 1e6
    both["kernels"][1]["cost"]["work"] = 1e9
    assert not kernels_of(lower(gpt2, backends.from_dict(both, "dear")).graph)


def test_a_kernel_of_other_dtypes_is_not_chosen(gpt2: Graph) -> None:
    doc = example()
    for k in doc["kernels"]:
        k["dtypes"] = ["f16"]
    assert not kernels_of(lower(gpt2, backends.from_dict(doc, "f16 only")).graph)


def _feeds(graph: Graph, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Values for every Input: floats over [-2, 2] (positive for the saved reciprocal std), class indices
    in range, masks of both values."""
    out = {}
    for n in graph.nodes:
        if n.op not in ("Input", "Param"):
            continue
        if n.dtype in FLOAT_DTYPES:
            v = rng.uniform(0.1, 2.0, n.shape) if n.shape and n.shape[-1] == 1 else rng.uniform(-2, 2, n.shape)
        elif n.dtype == "bool":
            v = rng.integers(0, 2, n.shape).astype(bool)
        else:
            v = rng.integers(0, 8, n.shape)
        out[n.attrs["name"]] = np.asarray(v).astype(to_numpy(n.dtype))
    return out


def test_the_lowered_graph_is_a_valid_document_that_run_evaluates(gpt2: Graph, lowered_gpt2: Any,
                                                                   tmp_path: Path) -> None:
    got = lowered_gpt2.graph
    again = validated(got)  # a valid document, read back from its JSON
    assert kernels_of(again) == kernels_of(got)
    path, feeds_path, out = tmp_path / "lowered.json", tmp_path / "in.npz", tmp_path / "out.npz"
    path.write_text(got.to_json())
    feeds = _feeds(gpt2, np.random.default_rng(0))
    np.savez(feeds_path, **feeds)
    assert cli.main(["run", str(path), "-i", str(feeds_path), "-o", str(out)]) == 0
    ran = np.load(out)
    want = evaluate(gpt2, feeds)
    for i, w in enumerate(want):  # (in f32: errors relative to the largest value, sums of many terms)
        np.testing.assert_allclose(ran[f"out{i}"], w, rtol=3e-4, atol=3e-5 * max(1.0, float(np.abs(w).max())))
    # in float64 they agree to the rounding of the expansions' f32 literals (the tanh GELU's constants)
    exact = evaluate(as_f64(got), feeds)
    for e, w in zip(exact, evaluate(as_f64(gpt2), feeds)):
        np.testing.assert_allclose(e, w, rtol=1e-6, atol=1e-6 * max(1.0, float(np.abs(w).max())))


def test_a_lowered_graph_with_kernels_lowers_again_for_its_backend(lowered_gpt2: Any) -> None:
    b = backends.load(str(EXAMPLE))
    again = lower(lowered_gpt2.graph, b)
    assert kernels_of(again.graph) == kernels_of(lowered_gpt2.graph)
    assert again.report.after["cost"] == pytest.approx(lowered_gpt2.report.after["cost"])
    with pytest.raises(LowerError, match="backend metal does not run it"):  # plain metal has no such kernel
        lower(lowered_gpt2.graph, "metal")


# --------------------------------------------------------------------------- the Kernel op

def _kernel(pattern: str, inputs: list[str], params: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {"name": "k", "inputs": inputs, "pattern": pattern, **({"params": params} if params else {}), **extra}


def test_a_kernel_node_is_its_pattern_computed_in_f64_and_rounded_once() -> None:
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((3, 5)), rng.standard_normal(5)
    attrs = _kernel("(* (- x (Reduce.Mean axes 1 x)) (Tanh w))", ["x", "w"], {"axes": "[1]"})
    want = (x - x.mean(axis=1, keepdims=True)) * np.tanh(w)
    np.testing.assert_allclose(apply("Kernel", attrs, [x, w], "f64"), want, rtol=1e-15)
    half = apply("Kernel", attrs, [x.astype(np.float16), w.astype(np.float16)], "f16")
    xs, ws = x.astype(np.float16).astype(np.float64), w.astype(np.float16).astype(np.float64)
    exact = (xs - xs.mean(axis=1, keepdims=True)) * np.tanh(ws)
    assert half.dtype == np.float16 and np.array_equal(half, exact.astype(np.float16))


def _one(attrs: dict[str, Any], ins: list[tuple[list[int], str]], shape: list[int]) -> dict[str, Any]:
    nodes = [{"id": i, "op": "Input", "attrs": {"name": f"i{i}"}, "inputs": [], "shape": s, "dtype": d}
             for i, (s, d) in enumerate(ins)]
    nodes.append({"id": len(ins), "op": "Kernel", "attrs": attrs, "inputs": list(range(len(ins))), "shape": shape,
                  "dtype": "f32"})
    return {"format": "egraph-lower/graph", "version": 3, "nodes": nodes, "outputs": [len(ins)]}


@pytest.mark.parametrize(("attrs", "message"), [
    (_kernel("(+ x y)", ["x"]), "pattern variable 'y' is not one of the inputs"),
    (_kernel("(Frob x)", ["x"]), "unknown head 'Frob'"),
    (_kernel("(Reduce.Sum axes 0 x)", ["x"]), "pattern variable 'axes' has no value in params"),
    (_kernel("(+ x", ["x"]), "unbalanced parentheses"),
    (_kernel("x", ["x"]), "must apply an op"),
    (_kernel("(+ x x)", ["x", "x"]), "distinct lower-case variable names"),
    (_kernel("(MatMul x x)", ["x"]), "MatMul in the pattern"),
])
def test_a_bad_kernel_node_is_one_line_naming_the_node(attrs: dict[str, Any], message: str) -> None:
    with pytest.raises(GraphError) as e:
        validate(_one(attrs, [([2, 3], "f32")] * len(attrs["inputs"]), [2, 3]))
    assert message in str(e.value) and str(e.value).startswith("node ") and "\n" not in str(e.value)


def test_a_kernel_node_takes_one_input_per_name() -> None:
    doc = _one(_kernel("(+ x y)", ["x", "y"]), [([2], "f32"), ([2], "f32")], [2])
    assert validate(doc).nodes[-1].op == "Kernel"
    doc["nodes"][-1]["inputs"] = [0]
    with pytest.raises(GraphError, match="takes 2 inputs"):
        validate(doc)


# --------------------------------------------------------------------------- declarations refused

def _with(change: Any) -> dict[str, Any]:
    doc = example()
    change(doc)
    return doc


def _set(path: tuple[Any, ...], value: Any) -> Any:
    def change(doc: dict[str, Any]) -> None:
        d = doc
        for k in path[:-1]:
            d = d[k]
        d[path[-1]] = value
    return change


@pytest.mark.parametrize(("change", "message"), [
    (_set(("kernels", 0, "outputs", 0), "(LnBwdInputt axis axes x w mean rstd dy)"),
     "kernel layer_norm_backward: outputs[0]: unknown head 'LnBwdInputt'"),
    (_set(("kernels", 1, "inputs"), ["logp", "dy", "target", "weight"]),
     "variable 'total' is not one of the inputs"),
    (_set(("kernels", 2, "inputs"), ["x", "b", "c"]), "input 'c' is used by no output"),
    (_set(("kernels", 2, "cost"), {"launch": -1}), "cost.launch must be a number"),
    (_set(("kernels", 2, "cost"), {"launches": 1}), "unknown cost key 'launches'"),
    (_set(("kernels", 2, "dtypes"), ["f8"]), "unknown dtype 'f8'"),
    (_set(("kernels", 2, "colour"), 1), "kernel bias_gelu_tanh: unknown key 'colour'"),
    (_set(("kernels", 2, "name"), "layer_norm_backward"), "two kernels are named 'layer_norm_backward'"),
    (_set(("kernels", 2, "name"), "no spaces"), "kernels[2]: name must be"),
    (_set(("kernels", 2, "outputs"), ["(GeluApprox (Reshape x (+ x b)))"]), "'x' is an input and a primitive"),
    (_set(("ops",), [*example()["ops"], "Kernel"]), "declare the kernels under \"kernels\""),
    (_set(("rules", 0, "name"), "ln-bwd-input"), "rule ln-bwd-input: a rule of that name exists already"),
    (_set(("rules", 0, "rhs"), "(Reduce.Sum lead 0 dz)"), "['dz'] not bound by the left-hand side"),
    (_set(("rules", 0, "lhs"), "(Frob lead dy)"), "rule metal-ln-bwd-bias-mean: unknown head 'Frob'"),
    (_set(("rules", 0, "typo"), 1), "unknown key 'typo'"),
])
def test_a_wrong_declaration_is_one_line(change: Any, message: str) -> None:
    with pytest.raises(BackendError) as e:
        backends.from_dict(_with(change), "file")
    assert message in str(e.value) and "\n" not in str(e.value), str(e.value)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "egraph_lower.cli", *args], capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


def test_an_unknown_op_in_a_kernel_pattern_exits_2_with_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(_with(_set(("kernels", 1, "outputs", 0), "(LogSoftmaxBackward axis axes logp (Xent dy))"))))
    for args in (("lower", str(GPT2), "--backend", str(bad)), ("rules", "--check", "--backend", str(bad))):
        r = _cli(*args)
        assert r.returncode == 2 and r.stdout == ""
        assert r.stderr.count("\n") == 1 and "kernel softmax_cross_entropy_backward" in r.stderr
        assert "unknown head 'Xent'" in r.stderr


# --------------------------------------------------------------------------- rules --check --backend

def test_rules_check_backend_checks_its_rules_and_kernels() -> None:
    r = _cli("rules", "--check", "--backend", str(EXAMPLE))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    for row in ("metal-ln-bwd-bias-mean", "kernel layer_norm_backward output 0", "kernel layer_norm_backward output 2",
                "kernel softmax_cross_entropy_backward output 0", "kernel bias_gelu_tanh output 0"):
        assert any(ln.startswith(row) and ln.endswith(" ok") for ln in lines), row
    assert not any(ln.startswith("ln-bwd-input") for ln in lines)  # the built-in rules are `rules --check`'s


def test_a_wrong_backend_rule_is_refused_with_its_name_and_worst_error(tmp_path: Path) -> None:
    wrong = _with(lambda d: d["rules"].append(
        {"name": "metal-ln-bwd-bias-wrong", "identity": "db = mean_lead(dy) (wrong: a mean, not a sum)",
         "lhs": "(LnBwdBias axis lead dy)", "rhs": "(Reduce.Mean lead 0 dy)"}))
    path = tmp_path / "wrong.json"
    path.write_text(json.dumps(wrong))
    r = _cli("rules", "--check", "--backend", str(path))
    assert r.returncode == 1
    refused = [ln for ln in r.stderr.splitlines() if "metal-ln-bwd-bias-wrong" in ln]
    assert len(refused) == 4  # f32, f16, bf16, f64
    assert all("fails its check" in ln and "worst error" in ln and "bound 32" in ln for ln in refused), refused
    row = next(ln for ln in r.stdout.splitlines() if ln.startswith("metal-ln-bwd-bias-wrong"))
    assert "FAIL" in row
    assert "metal-ln-bwd-bias-mean" not in r.stderr  # the right one passes


def test_a_kernel_the_domain_cannot_sample_needs_a_check_sample(tmp_path: Path) -> None:
    path = tmp_path / "nosample.json"
    path.write_text(json.dumps(_with(lambda d: d["kernels"][2].pop("check"))))
    r = _cli("rules", "--check", "--backend", str(path))
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert "kernel bias_gelu_tanh output 0" in r.stderr and "give the kernel a \"check\" sample" in r.stderr


def test_rules_backend_lists_its_kernels_and_rules() -> None:
    r = _cli("rules", "--backend", str(EXAMPLE))
    assert r.returncode == 0
    assert "kernel layer_norm_backward(x, w, mean, rstd, dy)" in r.stdout
    assert "  output 2  (LnBwdBias axis lead dy)" in r.stdout and "metal-ln-bwd-bias-mean" in r.stdout


def test_a_builtin_backend_has_no_rules_or_kernels_to_check() -> None:
    r = _cli("rules", "--check", "--backend", "metal")
    assert r.returncode == 0 and "declares no rules and no kernels" in r.stdout


def test_a_check_sample_that_does_not_fit_is_one_line_naming_the_kernel(tmp_path: Path) -> None:
    path = tmp_path / "badsample.json"
    path.write_text(json.dumps(_with(_set(("kernels", 2, "check", "x"), [5, 9]))))
    r = _cli("rules", "--check", "--backend", str(path))
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert "rule kernel bias_gelu_tanh output 0: cannot be checked: Binary: operands could not be broadcast" in r.stderr


def test_a_rule_on_an_op_the_checker_cannot_sample_is_refused() -> None:
    doc = _with(lambda d: d["rules"].append({"name": "concat-self", "lhs": "(Concat axis a b)", "rhs": "(Concat axis a b)"}))
    with pytest.raises(BackendError, match="rule concat-self: Concat has no checker domain"):
        backends.from_dict(doc, "file")


def test_a_backend_rule_runs_only_when_lowering_for_its_backend(gpt2: Graph, lowered_gpt2: Any) -> None:
    assert lowered_gpt2.report.rules_fired["metal-ln-bwd-bias-mean"] == 3
    assert "metal-ln-bwd-bias-mean" not in lower(gpt2, "metal").report.rules_fired
    # and for a backend that runs the op natively too: its own rules run in every lowering for it
    doc = json.loads((ROOT / "egraph_lower" / "backends" / "cpu.json").read_text())
    doc["rules"] = example()["rules"]
    fired = lower(gpt2, backends.from_dict(doc, "cpu+rule")).report.rules_fired
    assert fired == {"metal-ln-bwd-bias-mean": 3}  # nothing else: cpu runs every op


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_in_half_precision_the_kernels_are_taken_in_the_low_dtype(gpt2: Graph, dtype: str) -> None:
    import dataclasses

    half = validated(Graph([dataclasses.replace(n, dtype=dtype if n.dtype == "f32" else n.dtype) for n in gpt2.nodes],
                           gpt2.outputs, "half"))
    got = lower(half, backends.load(str(EXAMPLE)))
    kernels = [n for n in got.graph.nodes if n.op == "Kernel"]
    assert kernels_of(got.graph) == kernels_of(lower(gpt2, backends.load(str(EXAMPLE))).graph)
    assert {n.dtype for n in kernels} == {dtype}  # read and written in the low dtype: no casts around them
    assert got.report.rules_fired["kernel-layer_norm_backward-half"] == 3
    plain = lower(half, "metal")
    assert got.report.after["cost"] < plain.report.after["cost"]
    feeds = _feeds(half, np.random.default_rng(0))
    ref = evaluate(as_f64(half), feeds)
    eps = {"f16": 2.0**-10, "bf16": 2.0**-7}[dtype]
    for g, p, r in zip(evaluate(got.graph, feeds), evaluate(plain.graph, feeds), ref):
        finite = np.isfinite(r) & np.isfinite(p.astype(np.float64))
        scale = max(1.0, float(np.abs(r[finite]).max(initial=0.0)))

        def err(v: np.ndarray) -> float:
            return float(np.abs(v.astype(np.float64) - r)[finite].max(initial=0.0)) / scale

        # as close to the float64 reference as metal's own lowering of the graph, within a few eps(d)
        assert err(g) <= err(p) + 8 * eps, (err(g), err(p))
