"""The Core ATen coverage table of docs/torch.md (`egraph_lower/torch/coverage.py`) is the one the
mapping gives, and the mapping and the reasons name overloads torch has."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from egraph_lower.torch import coverage  # noqa: E402
from egraph_lower.torch.mappings import HANDLERS  # noqa: E402


def test_the_table_in_docs_torch_md_is_the_one_the_mapping_gives() -> None:
    text = coverage.DOC.read_text()
    assert coverage.written(text) == text, (
        "docs/torch.md's Core ATen table is out of date: run python -m egraph_lower.torch.coverage --write")


def test_every_handler_names_an_overload_torch_has() -> None:
    missing = sorted(name for name in HANDLERS if coverage.overload(name) is None)
    assert not missing, f"handlers registered for overloads torch 2.13 does not have: {missing}"


def test_each_reason_is_for_an_unmapped_core_aten_overload() -> None:
    core = set(coverage.core_overloads())
    assert not set(coverage.REASONS) - core, "a reason for an overload that is not Core ATen"
    assert not set(coverage.REASONS) & set(HANDLERS), "a reason for an overload that is mapped: remove it"


def test_the_table_lists_every_core_aten_overload_once() -> None:
    names = [name for name, _, _ in coverage.rows()]
    assert len(names) == len(set(names)) > 150
    assert {"aten.add.Tensor", "aten.convolution.default", "aten.nonzero.default"} <= set(names)
    assert all(torch.Tag.core in coverage.overload(n).tags for n in names)
    by = {name: (mapped, why) for name, mapped, why in coverage.rows()}
    assert by["aten.add.Tensor"][0] and not by["aten.add.Tensor"][1]
    assert by["aten.nonzero.default"] == ("", coverage.REASONS["aten.nonzero.default"])


def test_overload_names_what_torch_has_and_only_that() -> None:
    assert coverage.overload("aten.add.Tensor") is torch.ops.aten.add.Tensor
    assert coverage.overload("prims.convert_element_type.default") is torch.ops.prims.convert_element_type.default
    assert coverage.overload("aten.add.NoSuchOverload") is None
    assert coverage.overload("aten.no_such_op.default") is None


@pytest.mark.parametrize("target", ["metal", "wgpu"])
def test_atan2_out_reaches_the_backend_functionalized_so_its_reason_holds(target: str) -> None:
    """`aten.atan2.out` is Core ATen but left unmapped with a reason: a graph that has it (make_fx's,
    not functionalized, `out` a graph input) is handed to the backend, whose AOTAutograd turns it into
    atan2.default and copies the result into `out`: nothing is left in PyTorch and `out` holds eager's."""
    from torch.fx.experimental.proxy_tensor import make_fx

    from support import compiled_strict

    def fn(a: torch.Tensor, b: torch.Tensor, o: torch.Tensor) -> tuple[torch.Tensor]:
        torch.atan2(a, b, out=o)
        return (o * 2,)

    a, b = torch.randn(3, 4), torch.randn(4)
    a[0, 0], b[0] = 0.0, -0.0
    assert "aten.atan2.out" in {str(n.target) for n in make_fx(fn)(a, b, torch.empty(3, 4)).graph.nodes}
    assert "aten.atan2.out" not in HANDLERS and "aten.atan2.out" in coverage.REASONS
    o = torch.full((3, 4), float("nan"), dtype=torch.float64)  # out's dtype is the result's, as eager's
    (y,) = compiled_strict(fn, a, b, o, target=target)
    want = torch.atan2(a, b).double()
    torch.testing.assert_close(o, want, rtol=0, atol=0)
    torch.testing.assert_close(y, 2 * want, rtol=0, atol=0)


def test_each_non_core_reason_is_for_a_real_unmapped_aten_op_outside_core_aten() -> None:
    core = set(coverage.core_overloads())
    for name in coverage.NON_CORE_REASONS:
        op = coverage.overload(name)
        assert op is not None and name.startswith("aten."), f"{name}: not an aten overload torch has"
        assert name not in core, f"{name} is Core ATen: its reason belongs in REASONS"
        assert name not in HANDLERS, f"{name} is mapped: remove its reason"
    assert "| `aten.nextafter.default` |" in coverage.non_core_table()


@pytest.mark.parametrize("name", ["frexp", "nextafter"])
def test_the_ops_with_non_core_reasons_reach_the_backend_as_they_are(name: str) -> None:
    """Each stays in PyTorch as the overload its reason names (nothing decomposes it on the way)."""
    import egraph_lower.torch as elt

    be = elt.backend("wgpu")
    fn = {"frexp": lambda x, y: torch.frexp(x)[0] * y, "nextafter": torch.nextafter}[name]
    x, y = torch.randn(5), torch.randn(5)
    torch.compile(fn, backend=be, dynamic=False)(x, y)
    left = {f"aten.{op}" if not op.startswith("aten.") else op for op in be.unlowered_ops}
    assert left & set(coverage.NON_CORE_REASONS), be.unlowered_ops
