"""Fixtures the test modules ask for by name."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from cli_support import EXAMPLE, PRECIOUS

# No per-example deadline: it is a timing assertion, and on a loaded machine (CI's, or one shared
# with other jobs) a 200 ms example fails a test that is correct. Speed is measured in bench/.
settings.register_profile("egraph-lower", deadline=None)
settings.load_profile("egraph-lower")


@pytest.fixture
def fresh_dynamo() -> Iterator[None]:
    """dynamo reset before and after a test: each compiles anew (and never hits dynamo's recompile
    limit). The torch modules ask for it with `pytestmark = pytest.mark.usefixtures("fresh_dynamo")`."""
    import torch._dynamo  # (here: the modules without torch never import it)

    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """A directory holding the example graph and an existing, precious output (the command-line
    tests that run it as a subprocess: test_hostile, test_streams, test_signals)."""
    (tmp_path / "g.json").write_bytes(EXAMPLE.read_bytes())
    (tmp_path / "out.json").write_bytes(PRECIOUS)
    return tmp_path
