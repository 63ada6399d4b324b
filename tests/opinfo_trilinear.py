"""OpInfos of Trilinear (aten's _trilinear): bilinear's forward and each of its gradients are one;
`opinfo_ops.OPINFO_BACKWARD` takes them in."""

from __future__ import annotations

ENTRIES: dict[tuple[str, str], tuple[str, ...]] = {
    ("nn.functional.bilinear", ""): ("_trilinear",),
}
