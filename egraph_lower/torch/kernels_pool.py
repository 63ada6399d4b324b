"""The pooling ops (opdefs/pool.py) as PyTorch functions: torch's own kernels for max, average,
adaptive average and adaptive max pooling (2-D and 3-D) and their backward ops, and the helpers
the pooling rules expand into (the one-hot of max pooling's indices, the window weights of average
pooling) from `opdefs/pool_math.py`. The average pooling backward ops compute f16/bf16 in float32
and round once (`in_float32`: torch's half kernels round each window's share as they add it). The
max pooling backward ops (plain and adaptive) are one scatter-add of dy at the indices, as torch's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor

from ..opdefs import pool_math
from .kernels_half import in_float32

A = torch.ops.aten


def _with_indices(x: Tensor, kernel: Sequence[int], stride: Sequence[int], padding: Sequence[int],
                  dilation: Sequence[int], ceil_mode: bool) -> tuple[Tensor, Tensor]:
    op = A.max_pool2d_with_indices if len(kernel) == 2 else A.max_pool3d_with_indices
    return op(x, list(kernel), list(stride), list(padding), list(dilation), ceil_mode)  # type: ignore[no-any-return]


def max_pool2d(x: Tensor, kernel: Sequence[int], stride: Sequence[int], padding: Sequence[int],
               dilation: Sequence[int], ceil_mode: bool = False) -> Tensor:
    return torch.nn.functional.max_pool2d(x, list(kernel), list(stride), list(padding), list(dilation), ceil_mode)


def max_pool2d_indices(x: Tensor, kernel: Sequence[int], stride: Sequence[int], padding: Sequence[int],
                       dilation: Sequence[int], ceil_mode: bool = False) -> Tensor:
    return max_pool2d_with_indices(x, kernel, stride, padding, dilation, ceil_mode)[1]


def max_pool2d_with_indices(x: Tensor, kernel: Sequence[int], stride: Sequence[int], padding: Sequence[int],
                            dilation: Sequence[int], ceil_mode: bool = False) -> tuple[Tensor, Tensor]:
    """MaxPool{2,3}d and MaxPool{2,3}dIndices of one x in one call (the exporter's, where a graph has
    both: each alone runs this same kernel); the rank is the kernel's."""
    return _with_indices(x, kernel, stride, padding, dilation, ceil_mode)


def max_pool3d(x: Tensor, kernel: Sequence[int], stride: Sequence[int], padding: Sequence[int],
               dilation: Sequence[int], ceil_mode: bool = False) -> Tensor:
    return torch.nn.functional.max_pool3d(x, list(kernel), list(stride), list(padding), list(dilation), ceil_mode)


def max_pool3d_indices(x: Tensor, kernel: Sequence[int], stride: Sequence[int], padding: Sequence[int],
                       dilation: Sequence[int], ceil_mode: bool = False) -> Tensor:
    return _with_indices(x, kernel, stride, padding, dilation, ceil_mode)[1]


def _scatter_dy(dy: Tensor, indices: Tensor, input_shape: Sequence[int]) -> Tensor:
    n, c = int(input_shape[0]), int(input_shape[1])
    dx = torch.zeros((n, c, math.prod(int(v) for v in input_shape[2:])), dtype=dy.dtype, device=dy.device)
    cells = math.prod(indices.shape[2:])  # not -1: ambiguous when there are no elements
    dx.scatter_add_(2, indices.reshape(n, c, cells), dy.reshape(n, c, cells))
    return dx.reshape(tuple(int(v) for v in input_shape))


def max_pool2d_backward(dy: Tensor, indices: Tensor, kernel: Sequence[int], stride: Sequence[int],
                        padding: Sequence[int], dilation: Sequence[int], input_shape: Sequence[int],
                        ceil_mode: bool = False) -> Tensor:
    return _scatter_dy(dy, indices, input_shape)


max_pool3d_backward = max_pool2d_backward


def adaptive_max_pool2d_backward(dy: Tensor, indices: Tensor, input_shape: Sequence[int]) -> Tensor:
    return _scatter_dy(dy, indices, input_shape)


adaptive_max_pool3d_backward = adaptive_max_pool2d_backward


def avg_pool2d(x: Tensor, kernel: Sequence[int], stride: Sequence[int], padding: Sequence[int],
               ceil_mode: bool = False, count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    return torch.nn.functional.avg_pool2d(x, list(kernel), list(stride), list(padding), ceil_mode, count_include_pad,
                                          divisor_override)


@in_float32  # torch has no f16/bf16 avg_pool3d kernel on CPU; the format's op is the float64 value rounded once
def avg_pool3d(x: Tensor, kernel: Sequence[int], stride: Sequence[int], padding: Sequence[int],
               ceil_mode: bool = False, count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    return torch.nn.functional.avg_pool3d(x, list(kernel), list(stride), list(padding), ceil_mode, count_include_pad,
                                          divisor_override)


@in_float32
def avg_pool2d_backward(dy: Tensor, kernel: Sequence[int], stride: Sequence[int], padding: Sequence[int],
                        input_shape: Sequence[int], ceil_mode: bool = False, count_include_pad: bool = True,
                        divisor_override: int | None = None) -> Tensor:
    x = torch.empty(tuple(input_shape), dtype=dy.dtype, device=dy.device)
    op = A.avg_pool2d_backward if len(kernel) == 2 else A.avg_pool3d_backward
    return op(dy, x, list(kernel), list(stride), list(padding), ceil_mode,  # type: ignore[no-any-return]
              count_include_pad, divisor_override)


avg_pool3d_backward = avg_pool2d_backward


def adaptive_avg_pool2d(x: Tensor, output_size: Sequence[int]) -> Tensor:
    return torch.nn.functional.adaptive_avg_pool2d(x, (int(output_size[0]), int(output_size[1])))


def adaptive_avg_pool3d(x: Tensor, output_size: Sequence[int]) -> Tensor:
    return torch.nn.functional.adaptive_avg_pool3d(x, (int(output_size[0]), int(output_size[1]), int(output_size[2])))


@in_float32
def adaptive_avg_pool2d_backward(dy: Tensor, input_shape: Sequence[int]) -> Tensor:
    x = torch.empty(tuple(input_shape), dtype=dy.dtype, device=dy.device)
    op = A._adaptive_avg_pool2d_backward if len(input_shape) == 4 else A._adaptive_avg_pool3d_backward
    return op(dy, x)  # type: ignore[no-any-return]


adaptive_avg_pool3d_backward = adaptive_avg_pool2d_backward


def _adaptive_max(x: Tensor, output_size: Sequence[int]) -> tuple[Tensor, Tensor]:
    op = A.adaptive_max_pool2d if len(output_size) == 2 else A.adaptive_max_pool3d
    return op(x, [int(v) for v in output_size])  # type: ignore[no-any-return]


def adaptive_max_pool2d(x: Tensor, output_size: Sequence[int]) -> Tensor:
    return _adaptive_max(x, output_size)[0]


def adaptive_max_pool2d_indices(x: Tensor, output_size: Sequence[int]) -> Tensor:
    return _adaptive_max(x, output_size)[1]


def adaptive_max_pool_with_indices(x: Tensor, output_size: Sequence[int]) -> tuple[Tensor, Tensor]:
    """AdaptiveMaxPool{2,3}d and its Indices of one x in one call (the exporter's)."""
    return _adaptive_max(x, output_size)


adaptive_max_pool3d = adaptive_max_pool2d
adaptive_max_pool3d_indices = adaptive_max_pool2d_indices


def max_pool2d_one_hot(indices: Tensor, like: Tensor, part: str, input_shape: Sequence[int]) -> Tensor:
    w = int(input_shape[-1])
    key = {"Plane": indices, "Row": indices // w, "Col": indices % w}[part]
    length = pool_math.part_length(part, input_shape)
    grid = torch.arange(length, device=indices.device).reshape((length,) + (1,) * indices.dim())
    return (grid == key.unsqueeze(0)).to(like.dtype)


def pool_weights(dy: Tensor, axis: int, kernel: Sequence[int], stride: Sequence[int], padding: Sequence[int],
                 input_shape: Sequence[int], ceil_mode: bool = False, count_include_pad: bool = True,
                 divisor_override: int | None = None) -> Tensor:
    attrs = {"kernel": kernel, "stride": stride, "padding": padding, "ceil_mode": ceil_mode,
             "count_include_pad": count_include_pad, "divisor_override": divisor_override}
    return torch.tensor(pool_math.avg_weights(attrs, input_shape, axis), dtype=dy.dtype, device=dy.device)


def adaptive_pool_weights(dy: Tensor, axis: int, input_shape: Sequence[int]) -> Tensor:
    m = pool_math.adaptive_weights(int(input_shape[2 + axis]), int(dy.shape[2 + axis]))
    return torch.tensor(m, dtype=dy.dtype, device=dy.device)


def max_unpool2d(x: Tensor, indices: Tensor, output_size: Sequence[int]) -> Tensor:
    """MaxUnpool{2,3}d: x written at its indices into zeros; of repeated indices the last window wins
    (torch's max_unpool leaves that to its threads: a scatter along the flattened volume writes in
    order on CPU, as the format says)."""
    n, c = int(x.shape[0]), int(x.shape[1])
    cells = math.prod(x.shape[2:])
    y = torch.zeros((n, c, math.prod(int(v) for v in output_size)), dtype=x.dtype, device=x.device)
    y.scatter_(2, indices.reshape(n, c, cells), x.reshape(n, c, cells))
    return y.reshape(n, c, *(int(v) for v in output_size))


max_unpool3d = max_unpool2d


# ---- fractional max pooling (opdefs/fractional_pool.py): aten's own kernels

def fractional_max_pool2d(x: Tensor, samples: Tensor, kernel: Sequence[int], output_size: Sequence[int]) -> Tensor:
    return torch.ops.aten.fractional_max_pool2d(x, list(kernel), list(output_size), samples)[0]


def fractional_max_pool2d_indices(x: Tensor, samples: Tensor, kernel: Sequence[int],
                                  output_size: Sequence[int]) -> Tensor:
    return torch.ops.aten.fractional_max_pool2d(x, list(kernel), list(output_size), samples)[1]


def fractional_max_pool3d(x: Tensor, samples: Tensor, kernel: Sequence[int], output_size: Sequence[int]) -> Tensor:
    return torch.ops.aten.fractional_max_pool3d(x, list(kernel), list(output_size), samples)[0]


def fractional_max_pool3d_indices(x: Tensor, samples: Tensor, kernel: Sequence[int],
                                  output_size: Sequence[int]) -> Tensor:
    return torch.ops.aten.fractional_max_pool3d(x, list(kernel), list(output_size), samples)[1]


def fractional_pool_index(samples: Tensor, sample: int, size: int, kernel: int, output: int) -> Tensor:
    """[N, C, output, kernel]: the positions the windows read along one axis, from samples[:, :, sample]
    in their dtype as aten's generate_intervals<scalar_t> computes them (each + and * rounded to it)."""
    u = samples[:, :, int(sample)]
    dt, size, kernel, output = samples.dtype, int(size), int(kernel), int(output)
    first = torch.full((*u.shape, output), size - kernel, dtype=torch.int64, device=samples.device)
    if output > 1:
        alpha = torch.tensor(size - kernel, dtype=dt) / torch.tensor(output - 1, dtype=dt)
        i = torch.arange(output - 1, device=samples.device).to(dt)
        a = ((i + u[..., None]) * alpha.to(samples.device)).trunc().to(torch.int64)
        first[..., :output - 1] = a - (u * alpha.to(samples.device)).trunc().to(torch.int64)[..., None]
    return first[..., None] + torch.arange(kernel, device=samples.device)
