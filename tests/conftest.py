"""Fixtures the test modules ask for by name."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture
def fresh_dynamo() -> Iterator[None]:
    """dynamo reset before and after a test: each compiles anew (and never hits dynamo's recompile
    limit). The torch modules ask for it with `pytestmark = pytest.mark.usefixtures("fresh_dynamo")`."""
    import torch._dynamo  # (here: the modules without torch never import it)

    torch._dynamo.reset()
    yield
    torch._dynamo.reset()
