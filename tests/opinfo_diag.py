"""OpInfos of the diagonal ops, select_scatter and repeat (opdefs/views.py): diagonal and its copy, diag,
diag_embed, diagflat and trace (which reach aten's diagonal, diagonal_scatter or diagonal_backward),
diagonal_scatter, select_scatter, repeat and tile (aten's repeat; its gradient sums over reshapes);
`opinfo_ops.OPINFO_BACKWARD` takes them in. Not the entry `diagonal`: its output is a view of
its input, which AOTAutograd returns as an alias regenerated outside the compiled graph, so the graph
has no backward to compare (bench/opinfo.py covers it; diagonal_copy reaches the same Diagonal and
diagonal_backward)."""

from __future__ import annotations

ENTRIES: dict[tuple[str, str], tuple[str, ...]] = {
    ("diag", ""): ("diagonal_backward",),
    ("diag_embed", ""): ("diagonal",),
    ("diagflat", ""): ("diagonal",),
    ("diagonal_copy", ""): ("diagonal_copy", "diagonal_backward"),
    ("diagonal_scatter", ""): ("diagonal_scatter",),
    ("trace", ""): ("trace",),
    ("select_scatter", ""): ("select_scatter",),
    ("repeat", ""): ("repeat",),
    ("tile", ""): ("repeat",),
}
