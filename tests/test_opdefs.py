"""The op declarations (egraph_lower/opdefs): every op has every part, and the parts agree.

`missing_parts` lists what a declaration lacks or gets wrong, naming the part; the
tests run it on every declared op (and every activation kind) and on deliberately
broken copies, so a forgotten part fails here, by name, before any stage trips on it.
"""

from __future__ import annotations

import dataclasses
import importlib.util
from typing import Any

import numpy as np
import pytest

from egraph_lower import backends, ops
from egraph_lower import patterns  # noqa: F401  (the Kernel op's machinery: the parts below call it directly)
from egraph_lower.egraph import language
from egraph_lower.evaluate import apply
from egraph_lower.graph import Node
from egraph_lower.opdefs import HEADS, OPDEFS, register
from egraph_lower.opdefs import kinds as K
from egraph_lower.opdefs.arraylib import NUMPY
from egraph_lower.opdefs.base import Attr, OpDef
from egraph_lower.rules import ALL_RULES
from egraph_lower.rules.domains import DOMAINS

HAS_TORCH = importlib.util.find_spec("torch") is not None
SORTS = {"String", "f64", "i64"}


def _kernels() -> dict[str, Any] | None:
    if not HAS_TORCH:
        return None
    from egraph_lower.torch import kernels

    return vars(kernels)


def _arrays(metas: tuple, dtype: str | None) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    out = []
    for shape, dt in metas:
        dt = dt or dtype or "f32"
        if dt == "bool":
            out.append(rng.random(shape) < 0.5)
        else:
            out.append(apply("Cast", {"to": dt}, [np.abs(rng.standard_normal(shape)) + 0.5], dt))
    return out


def missing_parts(d: OpDef, kernels: dict[str, Any] | None = None) -> list[str]:
    """What declaration `d` lacks or gets wrong, one line per problem, naming the part."""
    out: list[str] = []
    for a in d.attrs:
        if not callable(a.check):
            out.append(f"{d.name}: attribute {a.name!r} has no check")
    if d.infer is None:  # a leaf: declared shape, no constructor
        if d.ctors:
            out.append(f"{d.name}: a leaf (no infer) must have no e-graph constructor")
        return out
    if not d.ctors and d.name != "Kernel":  # (a kernel's constructors are made from its declaration)
        out.append(f"{d.name}: no e-graph constructor (ctors)")
    attr_names = {a.name for a in d.attrs}
    for c in d.ctors:
        if c.op != d.name:
            out.append(f"{d.name}: constructor {c.name} says it stands for {c.op}")
        if not c.heads:
            out.append(f"{d.name}: constructor {c.name} has no head in the rule notation")
        for f in c.fields:
            if f.sort not in SORTS:
                out.append(f"{d.name}: field {c.name}.{f.name} has sort {f.sort!r}")
            if not f.derived and f.name not in attr_names:
                out.append(f"{d.name}: field {c.name}.{f.name} decodes to no attribute of the op")
    if d.domain is not None and d.domain not in DOMAINS:
        out.append(f"{d.name}: checker domain {d.domain!r} is not one of {sorted(DOMAINS)}")
    if not d.torch:
        out.append(f"{d.name}: no torch kernel")
    elif kernels is not None and not callable(kernels.get(d.torch)):
        out.append(f"{d.name}: torch kernel {d.torch!r} is not a function in egraph_lower/torch/kernels.py")
    if d.sample is None:
        out.append(f"{d.name}: no sample node")
        return out
    out += _sample_problems(d, kernels)
    return out


def _sample_problems(d: OpDef, kernels: dict[str, Any] | None) -> list[str]:
    """Run every part on the declaration's sample node: they must agree."""
    assert d.sample is not None and d.infer is not None
    attrs, metas = d.sample
    try:
        for a in d.attrs:
            if a.name in attrs and callable(a.check):
                a.check(attrs[a.name])
        if d.check is not None:
            d.check(attrs)
        shape, dtype = d.infer(attrs, list(metas))
    except (ValueError, KeyError) as e:
        return [f"{d.name}: the sample is refused: {e}"]
    args = _arrays(metas, dtype)
    value = d.evaluate(attrs, args, dtype or "f32", shape)
    out = []
    if value.shape != shape:
        out.append(f"{d.name}: evaluate gives shape {list(value.shape)}, infer {list(shape)}")
    if value.dtype != apply("Cast", {"to": dtype}, [np.zeros(())], dtype).dtype:
        out.append(f"{d.name}: evaluate gives dtype {value.dtype}, infer {dtype}")
    rank = len(metas[0][0])
    node = Node(0, d.name, tuple(range(1, len(metas) + 1)), shape, dtype or "f32", dict(attrs), None)
    if OPDEFS.get(d.name) is d:  # the e-graph language is derived from the registered declarations
        ctor, fields = language.encode(node, rank, metas[0][0], tuple(m[0] for m in metas))
        op, back = language.decode(ctor, fields)
        again = Node(0, op, node.inputs, shape, node.dtype, back, None)
        if op != d.name or language.encode(again, rank, metas[0][0], tuple(m[0] for m in metas)) != (ctor, fields):
            out.append(f"{d.name}: encode/decode do not round-trip ({ctor} {fields} -> {op} {back})")
    if kernels is not None and d.torch in kernels:
        import torch

        tensors = [torch.from_numpy(np.asarray(a)) for a in args]
        got = kernels[d.torch](*tensors, **attrs)
        if tuple(got.shape) != shape:
            out.append(f"{d.name}: the torch kernel gives shape {list(got.shape)}, infer {list(shape)}")
        storages = {t.untyped_storage().data_ptr() for t in tensors if t.numel()}
        if got.numel() and got.untyped_storage().data_ptr() in storages and d.name not in kernels["VIEWS"]:
            out.append(f"{d.name}: the torch kernel returns (a view of) an input, and kernels.VIEWS does not list it")
    return out


# ---- every declared op ------------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(OPDEFS))
def test_every_op_has_every_part(name: str) -> None:
    assert missing_parts(OPDEFS[name], _kernels()) == []


@pytest.mark.parametrize("kind", K.KINDS, ids=lambda k: k.name)
def test_every_activation_kind_has_value_and_derivative(kind: K.Kind) -> None:
    x = np.linspace(0.25, 2.0, 8)
    for form, fn in (("value", kind.value), ("grad", kind.grad)):
        assert callable(fn), f"{kind.name}: no {form}"
        assert np.asarray(fn(NUMPY, x)).shape == x.shape, f"{kind.name}: {form} changes the shape"
    assert (kind.int_value is None) == (kind.int_grad is None), f"{kind.name}: an integer value needs an integer f'"
    if kind.int_value is not None:
        i = np.arange(-3, 4, dtype=np.int64)
        assert np.asarray(kind.int_value(NUMPY, i)).dtype == np.int64, f"{kind.name}: int_value leaves int64"


def test_the_op_table_is_derived_from_the_declarations() -> None:
    assert list(ops.OPS) == list(OPDEFS)
    for name, d in OPDEFS.items():
        assert ops.OPS[name].inputs == d.inputs and ops.OPS[name].backward == d.backward
        assert ops.OPS[name].attrs == {a.name: a.required for a in d.attrs}
    assert ops.OUTPUT_FORM_KINDS == tuple(k.name for k in K.KINDS if k.grad_out is not None)


def test_every_rule_lowers_an_op_with_a_checker_domain() -> None:
    for r in ALL_RULES:
        op = language.CTORS[r.lhs.ctor].op  # type: ignore[union-attr]
        assert OPDEFS[op].domain in DOMAINS, f"rule {r.name}: {op} has no checker domain"


def test_builtin_backends_name_only_declared_ops_and_cpu_runs_them_all() -> None:
    for b in backends.all_builtin():
        assert b.ops <= set(OPDEFS), (b.name, sorted(b.ops - set(OPDEFS)))
    assert backends.load("cpu").ops == set(OPDEFS) - {"Kernel"}  # (a backend declares its kernels, not the op)


def test_every_constructor_is_spelled_in_the_rule_notation() -> None:
    spelled = {c.name for c, _ in HEADS.values()}
    twins = set(language.TWINS.values())  # kernel-only: no rule may match them
    # (a backend file's kernels' constructors, made when one is loaded: only its kernel rules build them)
    kernels = {name for name, c in language.CTORS.items() if c.op == "Kernel"}
    assert spelled == set(language.CTORS) - twins - kernels and not spelled & twins


# ---- a declaration with a part missing is named -----------------------------------------------------

def _broken(name: str, **change: Any) -> OpDef:
    return dataclasses.replace(OPDEFS[name], **change)


@pytest.mark.parametrize(("change", "message"), [
    ({"torch": None}, "Reduce: no torch kernel"),
    ({"sample": None}, "Reduce: no sample node"),
    ({"ctors": ()}, "Reduce: no e-graph constructor"),
    ({"domain": "nowhere"}, "Reduce: checker domain 'nowhere'"),
    ({"attrs": (Attr("op", None),) + OPDEFS["Reduce"].attrs[1:]}, "Reduce: attribute 'op' has no check"),  # type: ignore[arg-type]
    ({"attrs": OPDEFS["Reduce"].attrs[:2]}, "Reduce: field Reduce.keep_dim decodes to no attribute"),
    ({"infer": lambda attrs, ins: ((7,), "f32")}, "Reduce: evaluate gives shape [2, 1], infer [7]"),
])
def test_a_missing_part_is_named(change: dict[str, Any], message: str) -> None:
    problems = missing_parts(_broken("Reduce", **change), _kernels())
    assert any(message in p for p in problems), problems


def test_a_constructor_without_a_head_is_named() -> None:
    ctor = dataclasses.replace(OPDEFS["MatMul"].ctors[0], heads=())
    problems = missing_parts(_broken("MatMul", ctors=(ctor,)))
    assert problems == ["MatMul: constructor MatMul has no head in the rule notation"]


@pytest.mark.skipif(not HAS_TORCH, reason="torch is not installed")
def test_a_torch_kernel_name_that_is_no_function_is_named() -> None:
    problems = missing_parts(_broken("MatMul", torch="matmul_typo"), _kernels())
    assert problems == ["MatMul: torch kernel 'matmul_typo' is not a function in egraph_lower/torch/kernels.py"]


def test_the_registry_refuses_a_duplicate() -> None:
    d = OPDEFS["MatMul"]
    with pytest.raises(ValueError, match="op 'MatMul' is declared twice"):
        register([d, d])
    twin = dataclasses.replace(d, name="MatMul2")
    with pytest.raises(ValueError, match="constructor 'MatMul' is declared twice"):
        register([d, twin])
    head_twin = dataclasses.replace(twin, ctors=(dataclasses.replace(d.ctors[0], name="MatMul2", op="MatMul2"),))
    with pytest.raises(ValueError, match="head 'MatMul' is declared twice"):
        register([d, head_twin])


def test_the_worked_example_in_extending_md_is_the_real_code() -> None:
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    blocks = (root / "docs/extending.md").read_text().split("```python\n")[1:]
    sources = {p: (root / "egraph_lower" / p).read_text() for p in ("opdefs/softmax.py", "rules/softmax.py",
                                                                     "opdefs/kinds.py")}
    for block in blocks[:3]:  # the declaration, the kind, the rules module; the aten handler is a sketch
        code = block.split("```", 1)[0]
        assert any(code in s for s in sources.values()), code[:200]


def test_the_declarations_import_without_torch() -> None:
    import subprocess
    import sys

    code = ("import sys; sys.modules['torch'] = None; import egraph_lower.opdefs, egraph_lower.ops, "
            "egraph_lower.evaluate, egraph_lower.rules.check; print(len(egraph_lower.opdefs.OPDEFS))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == str(len(OPDEFS))


def test_graph_builder_adds_any_declared_op_and_checks_it() -> None:
    from egraph_lower.build import GraphBuilder

    b = GraphBuilder()
    x = b.input("x", [2, 3])
    r = b.op("Reduce", x, op="Sum", axes=[-1], keep_dim=True)
    assert b.meta(r) == ((2, 1), "f32")
    with pytest.raises(ValueError, match="unknown op 'Nope'"):
        b.op("Nope", x)
    with pytest.raises(ValueError, match=r"MatMul takes 2 inputs \(a, b\), got 1"):
        b.op("MatMul", x)
    with pytest.raises(ValueError, match="unknown reduce op 'Median'"):
        b.op("Reduce", x, op="Median", axes=[0])
