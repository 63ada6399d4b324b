"""The convolution ops (opdefs/conv.py) as PyTorch functions: torch's own convolution, transposed
convolution and convolution backward kernels for Conv2d/Conv3d, ConvTranspose2d/3d and the gradients,
and the layout ops the convolution rules expand into (Im2Col, Im2Col3d, Conv{2,3}dFlipWeight,
Conv{2,3}dDilatePad, Conv{2,3}dColumns, Conv{2,3}dWeightMatrix, Conv{2,3}dMergeGroups) in plain torch
ops (unfold, flips, reshapes, a scatter into zeros), each written once for any number of spatial axes.
The convolutions and their gradients compute f16/bf16 in float32 and round once (`in_float32`: torch's
float16 CPU kernels are not their float32 result rounded once, the gradients by several ulp; its
bfloat16 convolution is).
"""

from __future__ import annotations

import math

from collections.abc import Sequence

import torch
from torch import Tensor

from .kernels_half import in_float32


def _conv(x: Tensor, w: Tensor, stride: Sequence[int], padding: Sequence[int], dilation: Sequence[int],
          groups: int) -> Tensor:
    return torch.ops.aten.convolution(x, w, None, list(stride), list(padding), list(dilation), False,
                                      [0] * len(stride), groups)


def _backward_input(dy: Tensor, w: Tensor, stride: Sequence[int], padding: Sequence[int],
                    dilation: Sequence[int], groups: int, input_shape: Sequence[int]) -> Tensor:
    x = torch.empty(tuple(input_shape), dtype=dy.dtype, device=dy.device)
    return torch.ops.aten.convolution_backward(dy, x, w, None, list(stride), list(padding), list(dilation), False,
                                               [0] * len(stride), groups, [True, False, False])[0]


def _transpose(dy: Tensor, w: Tensor, stride: Sequence[int], padding: Sequence[int],
               dilation: Sequence[int], groups: int, output_shape: Sequence[int]) -> Tensor:
    extra = [output_shape[2 + i] - ((dy.shape[2 + i] - 1) * stride[i] - 2 * padding[i]
                                    + dilation[i] * (w.shape[2 + i] - 1) + 1) for i in range(len(stride))]
    return torch.ops.aten.convolution(dy, w, None, list(stride), list(padding), list(dilation), True, extra, groups)


def _backward_weight(x: Tensor, dy: Tensor, stride: Sequence[int], padding: Sequence[int],
                     dilation: Sequence[int], groups: int, weight_shape: Sequence[int]) -> Tensor:
    w = torch.empty(tuple(weight_shape), dtype=dy.dtype, device=dy.device)
    return torch.ops.aten.convolution_backward(dy, x, w, None, list(stride), list(padding), list(dilation), False,
                                               [0] * len(stride), groups, [False, True, False])[1]


conv2d = conv3d = in_float32(_conv)
conv2d_backward_input = conv3d_backward_input = in_float32(_backward_input)
conv_transpose2d = conv_transpose3d = in_float32(_transpose)
conv2d_backward_weight = conv3d_backward_weight = in_float32(_backward_weight)


def _outs(x: Tensor, kernel: Sequence[int], stride: Sequence[int], padding: Sequence[int],
          dilation: Sequence[int]) -> list[int]:
    return [(x.shape[2 + i] + 2 * padding[i] - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1
            for i in range(len(kernel))]


def im2col(x: Tensor, kernel: Sequence[int], stride: Sequence[int], padding: Sequence[int],
           dilation: Sequence[int], groups: int) -> Tensor:
    cols = torch.nn.functional.unfold(x, tuple(kernel), tuple(dilation), tuple(padding), tuple(stride))
    return cols.reshape(x.shape[0], groups, cols.shape[1] // groups, cols.shape[2])


def _unfold(x: Tensor, kernel: Sequence[int], stride: Sequence[int], padding: Sequence[int],
            dilation: Sequence[int]) -> Tensor:
    """[N, C, *K, *O]: the input value each kernel tap reads at each output position (0 in the padding),
    by a strided view of the padded input."""
    nd = len(kernel)
    pads = [q for p in reversed(padding) for q in (p, p)]
    xp = torch.nn.functional.pad(x, pads) if any(padding) else x
    outs = _outs(x, kernel, stride, padding, dilation)
    st = xp.contiguous().stride()
    size = list(xp.shape[:2]) + list(kernel) + outs
    strides = list(st[:2]) + [st[2 + i] * dilation[i] for i in range(nd)] + [st[2 + i] * stride[i] for i in range(nd)]
    return xp.contiguous().as_strided(size, strides)


def im2col3d(x: Tensor, kernel: Sequence[int], stride: Sequence[int], padding: Sequence[int],
             dilation: Sequence[int], groups: int) -> Tensor:
    u = _unfold(x, kernel, stride, padding, dilation)
    n, c = x.shape[:2]
    return u.reshape(n, groups, c // groups * math.prod(kernel), math.prod(u.shape[2 + len(kernel):]))


def _flip_weight(w: Tensor, groups: int) -> Tensor:
    o, cg = w.shape[:2]
    nd = w.dim() - 2
    wg = torch.flip(w.reshape((groups, o // groups, cg) + tuple(w.shape[2:])), dims=tuple(range(3, 3 + nd)))
    return wg.transpose(1, 2).reshape((groups * cg, o // groups) + tuple(w.shape[2:]))


conv2d_flip_weight = conv3d_flip_weight = _flip_weight


def _dilate_pad(dy: Tensor, w: Tensor, stride: Sequence[int], padding: Sequence[int],
                dilation: Sequence[int], input_shape: Sequence[int]) -> Tensor:
    nd = len(stride)
    size = [input_shape[2 + i] + dilation[i] * (w.shape[2 + i] - 1) for i in range(nd)]
    out = dy.new_zeros((dy.shape[0], dy.shape[1], *size))
    pos = [dilation[i] * (w.shape[2 + i] - 1) - padding[i]
           + stride[i] * torch.arange(dy.shape[2 + i], device=dy.device) for i in range(nd)]
    keep = [(q >= 0) & (q < size[i]) for i, q in enumerate(pos)]
    src = dy
    for i in range(nd):
        src = src[(slice(None),) * (2 + i) + (keep[i],)]
    # each axis's kept positions, shaped to broadcast against the others (an open mesh)
    idx = tuple(pos[i][keep[i]].reshape([-1 if j == i else 1 for j in range(nd)]) for i in range(nd))
    out[(slice(None), slice(None)) + idx] = src
    return out


conv2d_dilate_pad = conv3d_dilate_pad = _dilate_pad


def _columns(x: Tensor, w: Tensor, stride: Sequence[int], padding: Sequence[int], dilation: Sequence[int],
             groups: int) -> Tensor:
    nd = w.dim() - 2
    kernel = list(w.shape[2:])
    outs = _outs(x, kernel, stride, padding, dilation)
    if nd == 2:
        cols = im2col(x, kernel, stride, padding, dilation, groups)  # [N, G, R, OH*OW]
    else:
        cols = im2col3d(x, kernel, stride, padding, dilation, groups)
    # every size spelled out: a -1 is ambiguous when the tensor has no elements (a batch of 0)
    t = cols.reshape([cols.shape[0], groups, cols.shape[2]] + outs)  # [N, G, R, *O]
    return t.permute([0, 1] + list(range(3, 2 + nd)) + [2, 2 + nd])


conv2d_columns = conv3d_columns = _columns


def _weight_matrix(w: Tensor, groups: int) -> Tensor:
    return w.reshape((groups,) + (1,) * (w.dim() - 3) + (w.shape[0] // groups, math.prod(w.shape[1:])))


conv2d_weight_matrix = conv3d_weight_matrix = _weight_matrix


def _merge_groups(t: Tensor) -> Tensor:
    nd = t.dim() - 3
    n, g, og = t.shape[0], t.shape[1], t.shape[1 + nd]
    perm = [0, 1, 1 + nd] + list(range(2, 1 + nd)) + [2 + nd]
    return t.permute(perm).reshape((n, g * og) + tuple(t.shape[2:1 + nd]) + (t.shape[2 + nd],))


conv2d_merge_groups = conv3d_merge_groups = _merge_groups
