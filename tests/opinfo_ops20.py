"""OpInfos of issue 20's activations with a tensor operand (glu), with the aten backward ops their
gradients reach; `opinfo_ops.OPINFO_BACKWARD` takes them in. glu's forward reaches the importer
decomposed by PyTorch's table (narrows, a sigmoid and a product); its gradient is glu_backward."""

from __future__ import annotations

ENTRIES: dict[tuple[str, str], tuple[str, ...]] = {
    ("nn.functional.glu", ""): ("glu_backward",),
    ("nn.functional.prelu", ""): ("_prelu_kernel_backward",),
}
