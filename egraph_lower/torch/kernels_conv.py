"""The convolution ops (opdefs/conv.py) as PyTorch functions: torch's own convolution, transposed
convolution and convolution backward kernels for Conv2d, ConvTranspose2d and the gradients, and the
layout ops the convolution rules expand into (Im2Col, Conv2dFlipWeight, Conv2dDilatePad,
Conv2dColumns, Conv2dWeightMatrix, Conv2dMergeGroups) in plain torch ops (unfold, flips, reshapes,
a scatter into zeros). The convolutions and their gradients compute f16/bf16 in float32 and round once
(`in_float32`: torch's float16 CPU kernels are not their float32 result rounded once, the gradients by
several ulp; its bfloat16 convolution is).
"""

from __future__ import annotations

import math

from collections.abc import Sequence

import torch
from torch import Tensor

from .kernels_half import in_float32


@in_float32
def conv2d(x: Tensor, w: Tensor, stride: Sequence[int], padding: Sequence[int], dilation: Sequence[int],
           groups: int) -> Tensor:
    return torch.nn.functional.conv2d(x, w, None, list(stride), list(padding), list(dilation), groups)


@in_float32
def conv2d_backward_input(dy: Tensor, w: Tensor, stride: Sequence[int], padding: Sequence[int],
                          dilation: Sequence[int], groups: int, input_shape: Sequence[int]) -> Tensor:
    x = torch.empty(tuple(input_shape), dtype=dy.dtype, device=dy.device)
    return torch.ops.aten.convolution_backward(dy, x, w, None, list(stride), list(padding), list(dilation), False,
                                               [0, 0], groups, [True, False, False])[0]


@in_float32
def conv_transpose2d(dy: Tensor, w: Tensor, stride: Sequence[int], padding: Sequence[int],
                     dilation: Sequence[int], groups: int, output_shape: Sequence[int]) -> Tensor:
    extra = [output_shape[2 + i] - ((dy.shape[2 + i] - 1) * stride[i] - 2 * padding[i]
                                    + dilation[i] * (w.shape[2 + i] - 1) + 1) for i in (0, 1)]
    return torch.nn.functional.conv_transpose2d(dy, w, None, list(stride), list(padding), extra, groups,
                                                list(dilation))


@in_float32
def conv2d_backward_weight(x: Tensor, dy: Tensor, stride: Sequence[int], padding: Sequence[int],
                           dilation: Sequence[int], groups: int, weight_shape: Sequence[int]) -> Tensor:
    w = torch.empty(tuple(weight_shape), dtype=dy.dtype, device=dy.device)
    return torch.ops.aten.convolution_backward(dy, x, w, None, list(stride), list(padding), list(dilation), False,
                                               [0, 0], groups, [False, True, False])[1]


def im2col(x: Tensor, kernel: Sequence[int], stride: Sequence[int], padding: Sequence[int],
           dilation: Sequence[int], groups: int) -> Tensor:
    cols = torch.nn.functional.unfold(x, tuple(kernel), tuple(dilation), tuple(padding), tuple(stride))
    return cols.reshape(x.shape[0], groups, cols.shape[1] // groups, cols.shape[2])


def conv2d_flip_weight(w: Tensor, groups: int) -> Tensor:
    o, cg, kh, kw = w.shape
    wg = torch.flip(w.reshape(groups, o // groups, cg, kh, kw), dims=(3, 4))
    return wg.transpose(1, 2).reshape(groups * cg, o // groups, kh, kw)


def conv2d_dilate_pad(dy: Tensor, w: Tensor, stride: Sequence[int], padding: Sequence[int],
                      dilation: Sequence[int], input_shape: Sequence[int]) -> Tensor:
    size = [input_shape[2 + i] + dilation[i] * (w.shape[2 + i] - 1) for i in (0, 1)]
    out = dy.new_zeros((dy.shape[0], dy.shape[1], size[0], size[1]))
    pos = [dilation[i] * (w.shape[2 + i] - 1) - padding[i]
           + stride[i] * torch.arange(dy.shape[2 + i], device=dy.device) for i in (0, 1)]
    keep = [(q >= 0) & (q < size[i]) for i, q in enumerate(pos)]
    out[:, :, pos[0][keep[0]][:, None], pos[1][keep[1]][None, :]] = dy[:, :, keep[0]][:, :, :, keep[1]]
    return out


def conv2d_columns(x: Tensor, w: Tensor, stride: Sequence[int], padding: Sequence[int], dilation: Sequence[int],
                   groups: int) -> Tensor:
    cols = im2col(x, w.shape[2:], stride, padding, dilation, groups)  # [N, G, R, OH*OW]
    oh, ow = ((x.shape[2 + i] + 2 * padding[i] - dilation[i] * (w.shape[2 + i] - 1) - 1) // stride[i] + 1
              for i in (0, 1))
    # every size spelled out: a -1 is ambiguous when the tensor has no elements (a batch of 0)
    return cols.reshape(cols.shape[0], groups, cols.shape[2], oh, ow).transpose(2, 3)


def conv2d_weight_matrix(w: Tensor, groups: int) -> Tensor:
    return w.reshape(groups, 1, w.shape[0] // groups, math.prod(w.shape[1:]))


def conv2d_merge_groups(t: Tensor) -> Tensor:
    n, g, oh, og, ow = t.shape
    return t.transpose(2, 3).reshape(n, g * og, oh, ow)
