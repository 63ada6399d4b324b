"""The decompositions the backend hands AOTAutograd (`egraph_lower/torch/decompose.py`): PyTorch's Core
ATen table, restricted to the forward ops outside Core ATen that the importer does not map and the user
does not keep; never a backward op, a Core ATen op, a mapped op, a kept op or an op that draws random
numbers. A forward op outside Core ATen then runs lowered, with eager's gradients.

The examples are written so that a family mapping one of them later keeps the tests true: an op
stays in the table exactly while it is unmapped."""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")

import egraph_lower.torch as elt  # noqa: E402
from egraph_lower.torch.decompose import _core_table, decompositions, why_not  # noqa: E402
from egraph_lower.torch.mappings import HANDLERS  # noqa: E402

pytestmark = pytest.mark.usefixtures("fresh_dynamo")

aten = torch.ops.aten
# forward ops outside Core ATen that PyTorch's table decomposes
FORWARD_OUTSIDE_CORE = [aten.stack.default, aten.mv.default, aten.index_add.default, aten.baddbmm.default,
                        aten.addcmul.default, aten.dot.default, aten.std.correction, aten.lerp.Tensor]


@pytest.mark.parametrize("op", FORWARD_OUTSIDE_CORE, ids=str)
def test_a_forward_op_outside_core_aten_is_decomposed_while_it_is_unmapped(op: Any) -> None:
    assert torch.Tag.core not in op.tags and op in dict(_core_table())
    assert (op in decompositions()) == (str(op) not in HANDLERS), why_not(op)


@pytest.mark.parametrize(("op", "why"), [
    (aten.silu.default, "mapped"),                          # mapped (and in PyTorch's table)
    (aten.var.dim, "Core ATen"),                            # core, in PyTorch's table, not mapped
    (aten.col2im.default, "Core ATen"),
    (aten.glu_backward.default, "backward"),                # a backward op (GluBackward), never decomposed
    (aten.native_group_norm_backward.default, "backward"),
    (aten.threshold_backward.default, "backward"),
    (aten.bernoulli.default, "random"),                     # its decomposition draws other numbers
], ids=str)
def test_backward_core_mapped_and_random_ops_are_never_decomposed(op: Any, why: str) -> None:
    assert op in dict(_core_table()), "PyTorch's table holds it: the test shows it is taken out"
    assert op not in decompositions()
    assert why in (why_not(op) or "")


def test_a_kept_op_is_not_decomposed() -> None:
    assert aten.stack.default not in decompositions(keep={"aten.stack"})
    assert aten.mv.default not in decompositions(keep={"aten.mv.default"})
    assert aten.mv.default in decompositions(keep={"aten.mv.out"}) or str(aten.mv.default) in HANDLERS


def test_the_table_holds_no_backward_core_mapped_or_random_op() -> None:
    table = decompositions()
    assert len(table) > 500  # most of PyTorch's table (943 entries in torch 2.13) is forward ops
    for op in table:
        assert "backward" not in op.overloadpacket.__name__, op
        assert torch.Tag.core not in op.tags, op
        assert str(op) not in HANDLERS, op
        assert torch.Tag.nondeterministic_seeded not in op.tags, op


def _mixed(a: Any, b: Any, v: Any, m: Any) -> Any:
    """stack, mv and baddbmm: forward ops outside Core ATen, none mapped on main."""
    s = torch.stack([a, b]).sum(0)
    return (torch.mv(s, v).sin().sum() + torch.baddbmm(m, s.unsqueeze(0), s.t().unsqueeze(0), alpha=0.5).sum())


@pytest.mark.parametrize("target", ["metal", "wgpu"])
def test_forward_ops_outside_core_run_lowered_with_eagers_gradients(target: str) -> None:
    torch.manual_seed(0)
    args = [torch.randn(3, 4), torch.randn(3, 4), torch.randn(4), torch.randn(1, 3, 3)]
    leaves = [x.requires_grad_(True) for x in args]
    want = torch.autograd.grad(_mixed(*leaves), leaves)
    be = elt.backend(target, strict=True)  # strict: an op left in PyTorch raises
    got = torch.autograd.grad(torch.compile(_mixed, backend=be, dynamic=False)(*leaves), leaves)
    assert be.unlowered_ops == {} and all(not g.errors for g in be.graphs), be.summary()
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)


def test_the_same_ops_kept_run_in_pytorch() -> None:
    """Kept, stack and mv run in PyTorch (in torch 2.13 AOTAutograd's tracing already decomposes these three
    without the table: docs/benchmarks.md, "OpInfo coverage", measured no OpInfo entry that the table moves)."""
    args = [torch.randn(3, 4), torch.randn(3, 4), torch.randn(4), torch.randn(1, 3, 3)]
    leaves = [x.requires_grad_(True) for x in args]
    be = elt.backend("metal", strict=True, keep_in_pytorch={"aten.stack", "aten.mv"})
    torch.autograd.grad(torch.compile(_mixed, backend=be, dynamic=False)(*leaves), leaves)
    assert {"aten.stack.default", "aten.mv.default"} <= set(be.unlowered_ops), be.summary()
