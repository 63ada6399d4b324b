"""The rule notation (egraph_lower/rules/dsl.py): the reduction heads, parsed, compiled and evaluated."""

from __future__ import annotations

import numpy as np
import pytest
from egglog import bindings

from egraph_lower.egraph.load import program
from egraph_lower.rules.check import eval_term
from egraph_lower.rules.dsl import App, Var, parse, rule, to_egglog


@pytest.mark.parametrize("op", ["Sum", "Mean", "Max", "Min"])
def test_a_reduction_head_names_its_op_and_keeps_its_axes_and_keep_dim(op: str) -> None:
    t = parse(f"(Reduce.{op} axes keep x)")
    assert t == App("Reduce", (op, "axes", "keep"), (Var("x"),))
    assert to_egglog(t) == f'(Reduce "{op}" axes keep x)'
    lit = parse(f"(Reduce.{op} [-1] 1 (* x x))")
    assert isinstance(lit, App) and lit.params == (op, "[-1]", "1")
    assert to_egglog(lit) == f'(Reduce "{op}" "[-1]" 1 (Bin "Mul" x x))'


def test_sum_is_the_sum_without_keep_dim() -> None:
    assert parse("(sum axes e)") == parse("(Reduce.Sum axes 0 e)")


@pytest.mark.parametrize("text", ["(Reduce.Sum axes x)", "(Reduce.Sum axes 1 [0])", "(Reduce.Median axes 1 x)",
                                  "(Reduce.Sum 1.5 1 x)", "[0]"])
def test_a_malformed_reduction_is_refused(text: str) -> None:
    with pytest.raises(SyntaxError):
        parse(text)


def test_reduction_rules_compile_to_egglog_that_egglog_accepts() -> None:
    rules = [
        rule("mean-keep", "mean_keep(x) = mean_keep(x) * 1", "(Reduce.Mean axes keep x)",
             "(* (Reduce.Mean axes keep x) 1)", group="forward"),
        rule("max-last", "max over the last axis, kept", "(Reduce.Max axes 1 x)",
             "(Reduce.Max [-1] 1 x)", group="forward"),
    ]
    egraph = bindings.EGraph()
    egraph.run_program(*egraph.parse_program(program(rules)))


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_a_last_axis_softmax_backward_is_stated_and_evaluated_against_numpy() -> None:
    # dx = J^T dy with J = diag(y) - y y^T per row, i.e. y * (dy - sum_keep(dy * y)) over the last axis
    expansion = parse("(* y (- dy (Reduce.Sum [-1] 1 (* dy y))))")
    rng = np.random.default_rng(3)
    y = _softmax(rng.standard_normal((5, 7)))
    dy = rng.standard_normal((5, 7))
    jacobians = np.einsum("ij,jk->ijk", y, np.eye(7)) - np.einsum("ij,ik->ijk", y, y)
    want = np.einsum("ijk,ij->ik", jacobians, dy)
    got = eval_term(expansion, {"y": y, "dy": dy}, "f64")
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize(("op", "ref"), [("Sum", np.sum), ("Mean", np.mean), ("Max", np.max), ("Min", np.min)])
@pytest.mark.parametrize("keep", [0, 1])
def test_the_checker_evaluates_every_reduction_head(op: str, ref, keep: int) -> None:
    x = np.random.default_rng(4).standard_normal((3, 4, 5))
    got = eval_term(parse(f"(Reduce.{op} axes keep x)"), {"x": x, "axes": "[0,2]", "keep": keep}, "f64")
    np.testing.assert_allclose(got, ref(x, axis=(0, 2), keepdims=bool(keep)), rtol=1e-13)
    last = eval_term(parse(f"(Reduce.{op} [-1] {keep} x)"), {"x": x}, "f64")
    np.testing.assert_allclose(last, ref(x, axis=-1, keepdims=bool(keep)), rtol=1e-13)
