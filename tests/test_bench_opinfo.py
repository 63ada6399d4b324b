"""bench/opinfo_reasons.py: each entry it says no lowering can cover is an entry of bench/opinfo.py's
yardstick, and none is one that tests/test_torch_opinfo.py checks covered."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("expecttest")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import opinfo_run  # noqa: E402
from opinfo_ops import OPINFO_BACKWARD  # noqa: E402
from opinfo_reasons import REASONS  # noqa: E402


def test_each_uncoverable_entry_is_a_yardstick_entry_with_a_reason() -> None:
    names = {opinfo_run.key(o) for o in opinfo_run.entries()}
    assert set(REASONS) <= names, f"not OpInfo entries of the yardstick: {sorted(set(REASONS) - names)}"
    assert all(len(why) > 40 for why in REASONS.values())


def test_no_uncoverable_entry_is_one_the_tests_check_covered() -> None:
    checked = {f"{name}.{variant}" if variant else name for name, variant in OPINFO_BACKWARD}
    assert not set(REASONS) & checked, sorted(set(REASONS) & checked)
