"""The domain of the convolution rules: the convolutions of `CONV_CASES`.

Grouped and depthwise convolutions, strides that skip input rows and columns (positions no tap
reads, whose gradient is 0), padding past the kernel's reach, dilation, asymmetric kernels, a 1-D
convolution as height 1, stride 1 with "same" padding and with padding d(k-1) (the input gradient a
convolution of dy unpadded along that axis), pointwise (1 x 1) kernels, grouped and dilated, each only for the rules whose lhs matches it. Transposed convolutions are
checked on the same cases, their x of the shape of the convolution's dy and their output of x's
(output padding: the rows the stride skips). Values of mixed magnitudes
(1e-3 to 1e2, both signs) with exact zeros: a channel of x and a sample of dy all 0.

The 3-D rules are checked on `CONV3D_CASES`, tiny volumes (at most 5 along an axis) with the same
awkward points, one case for each set of axes along which the weight gradient as a convolution comes
out longer than the kernel (so that every `conv3d-bwd-weight-conv-crop-*` rule has a case): strides
larger than the kernel (input positions no tap reads, output padding for the transposed
convolution), windows at the padded edge and wholly in the padding, dilation, groups and depthwise.
"""

from __future__ import annotations

import numpy as np

from ...egraph import language
from ...evaluate import apply
from ...opdefs.base import WHOLE
from ...opdefs.conv import NDIM, names
from ..dsl import App, Rule, Var
from .base import round_to

# (x shape, w shape, stride, padding, dilation, groups) of the convolutions the conv rules are checked on
CONV_CASES: tuple[tuple[tuple[int, ...], tuple[int, ...], list[int], list[int], list[int], int], ...] = (
    ((2, 4, 8, 6), (6, 2, 3, 2), [2, 1], [1, 2], [1, 2], 2),  # grouped, taps in the padding, a row no tap reads
    ((2, 3, 9, 8), (4, 3, 3, 2), [2, 3], [1, 1], [2, 1], 1),  # strides that skip input rows and columns
    ((3, 2, 6, 5), (4, 2, 3, 3), [1, 1], [0, 1], [1, 1], 1),  # stride 1: the weight gradient fits the kernel
    ((2, 4, 8, 8), (4, 1, 3, 3), [2, 2], [1, 1], [1, 1], 4),  # depthwise, stride 2 on even sizes
    ((2, 6, 1, 11), (3, 2, 1, 3), [1, 2], [0, 2], [1, 2], 3),  # 1-D as height 1: a stride along W only
    ((1, 2, 9, 7), (2, 2, 2, 2), [3, 3], [3, 0], [2, 1], 1),  # padding past the kernel's reach
    ((2, 4, 5, 6), (4, 1, 3, 3), [1, 1], [1, 1], [1, 1], 4),  # depthwise, stride 1, "same" padding
    ((2, 4, 3, 5), (6, 2, 1, 1), [1, 1], [0, 0], [2, 1], 2),  # pointwise (1 x 1), grouped, dilated
    ((2, 3, 4, 4), (2, 3, 1, 1), [1, 1], [0, 0], [1, 1], 1),  # pointwise, plain
    ((1, 2, 5, 6), (3, 2, 3, 1), [1, 1], [2, 0], [2, 1], 1),  # stride 1, padding d(k-1) - p = 0 along H
)

# the same for 3-D convolutions; the comment names the crop axes (D 2, H 3, W 4) of each
CONV3D_CASES: tuple[tuple[tuple[int, ...], tuple[int, ...], list[int], list[int], list[int], int], ...] = (
    ((1, 2, 4, 3, 4), (2, 2, 2, 2, 2), [1, 1, 1], [0, 1, 2], [1, 1, 1], 1),  # []: W windows wholly in the padding
    ((1, 4, 5, 4, 3), (4, 2, 1, 2, 2), [3, 1, 1], [0, 1, 0], [1, 1, 1], 2),  # [2]: grouped, stride 3 > kernel 1
    ((2, 2, 3, 5, 3), (3, 2, 2, 2, 1), [1, 2, 1], [1, 1, 0], [2, 1, 1], 1),  # [3]: dilated D, edge windows
    ((1, 3, 3, 3, 5), (3, 1, 2, 2, 1), [1, 1, 3], [0, 1, 0], [1, 1, 1], 3),  # [4]: depthwise
    ((1, 2, 5, 5, 3), (2, 2, 2, 2, 2), [2, 2, 1], [1, 1, 1], [1, 1, 1], 1),  # [2,3]
    ((1, 2, 5, 3, 5), (2, 1, 1, 3, 1), [3, 1, 3], [0, 1, 0], [1, 1, 1], 2),  # [2,4]: grouped
    ((1, 2, 3, 5, 5), (2, 2, 2, 2, 1), [1, 2, 3], [0, 1, 0], [2, 1, 1], 1),  # [3,4]
    ((1, 2, 5, 5, 5), (2, 2, 1, 2, 1), [3, 2, 3], [0, 1, 0], [1, 1, 1], 1),  # [2,3,4]
    ((1, 3, 3, 4, 3), (3, 1, 3, 2, 1), [1, 1, 1], [1, 0, 0], [1, 2, 1], 3),  # []: depthwise, stride 1
    ((2, 4, 2, 3, 2), (2, 2, 1, 1, 1), [1, 1, 1], [0, 0, 0], [1, 2, 1], 2),  # []: pointwise, grouped
)


def _conv_fields(rule: Rule, attrs: dict[str, object], first: tuple[int, ...]) -> dict[str, object] | None:
    """The lhs's primitive variables bound to the fields a node of `attrs` encodes to (its first input of
    shape `first`); None where a literal field of the lhs differs from the node's (a rule for one case)."""
    lhs = rule.lhs
    assert isinstance(lhs, App)
    env: dict[str, object] = {}
    for f, param in zip(language.CTORS[lhs.ctor].fields, lhs.params):
        value = f.encode(attrs if f.attr == WHOLE else attrs.get(f.attr, f.default), first if f.shaped else len(first))
        if param[:1].islower():
            env[param] = value
        elif str(value) != param:
            return None
    return env


def conv_domain(rule: Rule, dtype: str) -> list[dict[str, object]]:
    """Each convolution of `CONV_CASES` (grouped, depthwise, strided with and without input positions
    no tap reads, padded, dilated, asymmetric kernels) whose node the rule's lhs matches: x, w, dy of
    mixed magnitudes (1e-3 to 1e2, both signs, some exact zeros: a channel of x and a sample of dy
    that are all 0)."""
    rng = np.random.default_rng(3)

    def values(shape: tuple[int, ...]) -> np.ndarray:
        return rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 3, size=shape)

    lhs = rule.lhs
    assert isinstance(lhs, App)
    nd = NDIM[language.CTORS[lhs.ctor].op]
    envs = []
    for xs, ws, s, p, d, g in CONV_CASES if nd == 2 else CONV3D_CASES:
        attrs: dict[str, object] = {"stride": s, "padding": p, "dilation": d, "groups": g, "input_shape": list(xs),
                                    "output_shape": list(xs), "weight_shape": list(ws)}
        x, w = values(xs), values(ws)
        dy = values(apply(names(nd)["conv"], attrs, [x, w], "f64").shape)
        x[:, 1] = 0.0
        dy[-1] = 0.0
        arrays = {"x": x, "w": w, "dy": dy}
        if language.CTORS[lhs.ctor].op == names(nd)["transpose"]:  # its x has the shape of a convolution's dy
            arrays = {"x": dy, "w": w}
        first = arrays[lhs.args[0].name if isinstance(lhs.args[0], Var) else "x"].shape
        env = _conv_fields(rule, attrs, first)
        if env is not None:
            envs.append({**env, **{k: round_to(v, dtype) for k, v in arrays.items()}})
    if not envs:
        raise ValueError(f"rule {rule.name}: no convolution of CONV_CASES (CONV3D_CASES) matches its left-hand side")
    return envs
