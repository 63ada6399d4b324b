"""The OpInfo entries of norms and distances (issue 19: linalg_vector_norm and the ops that reach it),
with the aten backward ops their gradients reach (tests/opinfo_ops.py merges them into OPINFO_BACKWARD)."""

from __future__ import annotations

ENTRIES: dict[tuple[str, str], tuple[str, ...]] = {
    ("norm", ""): (),  # linalg_vector_norm (norm.ScalarOpt_dim decomposed); its backward is primitives
    ("norm", "fro"): (),
    ("norm", "inf"): (),
    ("nn.functional.normalize", ""): (),  # x / clamp_min(VectorNorm, eps)
    ("nn.functional.cosine_similarity", ""): (),
    ("nn.functional.pairwise_distance", ""): (),  # VectorNorm of x1 - x2 + eps
}
