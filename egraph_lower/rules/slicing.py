"""SliceBackward in primitives: a zero padding of the gradient.

For step 1 the slice took `size - before - after` consecutive positions, so its
gradient is dy with `before` zeros ahead and `after` behind (`before`/`after` are
fields of the e-node computed from the attributes, Python's clamping included:
`opdefs/slicing.py`). A strided slice (step > 1) has no expansion here: it needs
dy's shape to interleave zeros, which the e-node's fields do not carry; it stays a
SliceBackward (cpu runs it).
"""

from __future__ import annotations

from .dsl import Rule, rule

RULES: tuple[Rule, ...] = (
    rule("slice-bwd-pad", "slice_bwd(g) (step 1) = pad(g, before, after) along the axis",
         "(SliceBackward axis start end 1 size before after g)", "(Pad axis before after g)", group="backward"),
)
