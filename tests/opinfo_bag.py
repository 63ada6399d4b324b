"""The OpInfo of the embedding bags (opdefs/bag.py): nn.functional.embedding_bag, whose samples take modes
sum (with and without per-sample weights), mean and max, padding_idx, include_last_offset, empty bags and
2-D indices (flattened with offsets from an arange by F.embedding_bag), with the aten backward ops their
gradients reach; `opinfo_ops.OPINFO_BACKWARD` takes them in."""

from __future__ import annotations

ENTRIES: dict[tuple[str, str], tuple[str, ...]] = {
    ("nn.functional.embedding_bag", ""): ("_embedding_bag_backward", "_embedding_bag_per_sample_weights_backward"),
}
