"""Each op of the format as a PyTorch function, with the format's semantics, and `KERNELS`, the table of them.

The exporter emits one FX call per format node, to the function here that the op's
declaration names (`OpDef.torch`); attributes are keyword arguments. This module holds
the elementwise, layout, reduction and matmul ops; each other family's functions are in
a module of its own (`kernels_acts`, `kernels_norm`, `kernels_softmax`, `kernels_index`,
`kernels_pool`, `kernels_conv`, `kernels_attention`), imported here, so that every op's
function is found in this module. The activation kinds are `opdefs/kinds.py`'s formulas,
evaluated over `TorchOps`. The semantics follow the reference
evaluator (`egraph_lower.evaluate`): the spec's conventions where a derivative is not
defined, `f'(nan) = nan` for every kind, integer Div truncating (x / 0 = 0), Cast
truncating and saturating, Reduce over no axes the identity. Values are computed in
the node's dtype (a backend's kernel would), not in float64 as the evaluator does; the
kernels of f16/bf16 compute in float32 and round once, as a backend's fused kernel and PyTorch's
do (`kernels_half.in_float32`, where torch's own half kernel would round more than once).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor

from ..opdefs import OPDEFS
from .common import FORMAT_TO_TORCH, WORKSPACE
from .kernels_half import in_float32
from .kernels_acts import TorchOps, activation, activation_backward, relu_backward
from .kernels_attention import (attention, attention_backward_key, attention_backward_query, attention_backward_value,
                                attention_lse, safe_softmax)
from .kernels_conv import (conv2d, conv2d_backward_input, conv2d_backward_weight, conv2d_columns, conv2d_dilate_pad,
                           conv2d_flip_weight, conv2d_merge_groups, conv2d_weight_matrix, conv_transpose2d, im2col)
from .kernels_index import (concat, dropout, dropout_mask, embedding, embedding_backward, gather, iota, nll_loss,
                            nll_loss_backward, nll_loss_total_weight, pad, random_tensor, scatter_add, slice_,
                            slice_backward, take)
from .kernels_norm import (batch_norm_backward_beta, batch_norm_backward_gamma, batch_norm_backward_input,
                           batch_norm_inference, batch_norm_training, batch_norm_training_backward_beta,
                           batch_norm_training_backward_gamma, batch_norm_training_backward_input, inv_rms, inv_std,
                           layer_norm, layer_norm_backward_bias, layer_norm_backward_input, layer_norm_backward_weight,
                           rms_norm, rms_norm_backward_input, rms_norm_backward_weight)
from .kernels_pool import (adaptive_avg_pool2d, adaptive_avg_pool2d_backward, adaptive_pool_weights, avg_pool2d,
                           avg_pool2d_backward, max_pool2d, max_pool2d_backward, max_pool2d_indices, max_pool2d_one_hot,
                           pool_weights)
from .kernels_softmax import log_softmax, log_softmax_backward, mse_loss, mse_loss_backward, softmax, softmax_backward
from .kernels_groupnorm import group_norm, group_norm_backward_input, group_norm_backward_weight
from .kernels_loss import (binary_cross_entropy, binary_cross_entropy_backward, huber_loss, huber_loss_backward,
                          smooth_l1_loss, smooth_l1_loss_backward, soft_margin_loss, soft_margin_loss_backward)
from .kernels_indexing import flip, index, index2, index3, index_put, index_put2, index_put3, scatter, scatter_reduce
from .kernels_math import binary_new
from ..opdefs.binary_math import NEW_OPS as NEW_BINARY_OPS
from .kernels_reduce import arg_reduce, arg_scan, log_cum_sum_exp, prod, scan, var
from .kernels_resample import interpolate, interpolate_backward, interpolate_index, interpolate_weights
from .kernels_resample import col2im, unfold, unfold_backward, window_index, window_one_hot
from .kernels_pool import (adaptive_avg_pool3d, adaptive_avg_pool3d_backward, adaptive_max_pool2d,
                           adaptive_max_pool2d_backward, adaptive_max_pool2d_indices, adaptive_max_pool3d,
                           adaptive_max_pool3d_backward, adaptive_max_pool3d_indices, avg_pool3d, avg_pool3d_backward,
                           max_pool3d, max_pool3d_backward, max_pool3d_indices, max_unpool2d, max_unpool3d)
from .kernels_pad import mode_pad, mode_pad_backward
from .kernels_sort import (arg_kth_value, arg_median, arg_mode, arg_sort, arg_top_k, kth_value, median, mode, sort,
                           top_k)
from .kernels_kernel import run_kernel
from .kernels_distance import cdist, cdist_backward, dist, pdist, pdist_backward, vector_norm
from .kernels_gating import glu_backward
from .kernels_misc import index_reduce
from .kernels_trilinear import trilinear
from .kernels_conv import (conv3d, conv3d_backward_input, conv3d_backward_weight, conv3d_columns, conv3d_dilate_pad,
                           conv3d_flip_weight, conv3d_merge_groups, conv3d_weight_matrix, conv_transpose3d, im2col3d)
from .kernels_views import slice_scatter
from .kernels_strided import (as_strided, as_strided_scatter, masked_scatter, masked_scatter_backward,
                              strided_index, strided_scatter_index)
from .kernels_gating import prelu_backward
from .kernels_blas import addbmm, addmv
from .kernels_views import diagonal, diagonal_backward, diagonal_scatter, repeat, select_scatter
from .kernels_pool import (fractional_max_pool2d, fractional_max_pool2d_indices, fractional_max_pool3d,
                           fractional_max_pool3d_indices, fractional_pool_index)
from .kernels_bag import (embedding_bag, embedding_bag_backward, embedding_bag_max_backward,
                          embedding_bag_max_indices, embedding_bag_offset2bag, embedding_bag_psw_backward,
                          embedding_bag_size)

# every op's function (those imported above included: `KERNELS` and `OpDef.torch` name them here)
__all__ = ["KERNELS", "VIEWS", "TorchOps", "activation", "activation_backward", "adaptive_avg_pool2d",
           "adaptive_avg_pool2d_backward", "adaptive_pool_weights", "attention", "attention_backward_key",
           "attention_backward_query", "attention_backward_value", "attention_lse", "avg_pool2d", "avg_pool2d_backward",
           "batch_norm_backward_beta", "batch_norm_backward_gamma", "batch_norm_backward_input", "batch_norm_inference",
           "batch_norm_training", "batch_norm_training_backward_beta", "batch_norm_training_backward_gamma",
           "batch_norm_training_backward_input", "binary", "cast", "compare", "concat", "constant", "conv2d",
           "conv2d_backward_input", "conv2d_backward_weight", "conv2d_columns", "conv2d_dilate_pad",
           "conv2d_flip_weight", "conv2d_merge_groups", "conv2d_weight_matrix", "conv_transpose2d", "dropout",
           "dropout_mask", "embedding", "embedding_backward", "empty", "expand", "gather", "im2col", "inv_rms",
           "inv_std", "iota", "layer_norm", "layer_norm_backward_bias", "layer_norm_backward_input",
           "layer_norm_backward_weight", "log_softmax", "log_softmax_backward", "matmul", "max_pool2d",
           "max_pool2d_backward", "max_pool2d_indices", "max_pool2d_one_hot", "mse_loss", "mse_loss_backward",
           "nll_loss", "nll_loss_backward", "nll_loss_total_weight", "pad", "pool_weights", "random_tensor", "reduce",
           "relu_backward",
           "reshape", "rms_norm", "rms_norm_backward_input", "rms_norm_backward_weight", "safe_softmax", "scatter_add",
           "slice_", "slice_backward", "softmax", "softmax_backward", "take", "transpose", "where",
           "flip",
           "index",
           "index2",
           "index3",
           "index_put",
           "index_put2",
           "index_put3",
           "scatter",
           "scatter_reduce"]
__all__ += ["group_norm", "group_norm_backward_input", "group_norm_backward_weight"]
__all__ += ["binary_cross_entropy", "binary_cross_entropy_backward", "huber_loss", "huber_loss_backward",
            "smooth_l1_loss", "smooth_l1_loss_backward", "soft_margin_loss", "soft_margin_loss_backward"]
__all__ += ["var", "arg_reduce", "scan", "log_cum_sum_exp", "arg_scan"]
__all__ += ["interpolate", "interpolate_backward", "interpolate_index", "interpolate_weights"]
__all__ += ["col2im", "unfold", "unfold_backward", "window_index", "window_one_hot"]
__all__ += ["adaptive_avg_pool3d", "adaptive_avg_pool3d_backward", "adaptive_max_pool2d", "adaptive_max_pool2d_backward",
            "adaptive_max_pool2d_indices", "adaptive_max_pool3d", "adaptive_max_pool3d_backward",
            "adaptive_max_pool3d_indices", "avg_pool3d", "avg_pool3d_backward", "max_pool3d", "max_pool3d_backward",
            "max_pool3d_indices", "max_unpool2d", "max_unpool3d"]
__all__ += ["mode_pad", "mode_pad_backward"]
__all__ += ["sort", "arg_sort", "top_k", "arg_top_k"]
__all__ += ["kth_value", "arg_kth_value", "median", "arg_median", "mode", "arg_mode"]
__all__ += ["kernel"]
__all__ += ["vector_norm"]
__all__ += ["glu_backward"]
__all__ += ["index_reduce"]
__all__ += ["trilinear"]
__all__ += ["conv3d", "conv3d_backward_input", "conv3d_backward_weight", "conv3d_columns", "conv3d_dilate_pad",
            "conv3d_flip_weight", "conv3d_merge_groups", "conv3d_weight_matrix", "conv_transpose3d", "im2col3d"]
__all__ += ["slice_scatter"]
__all__ += ["as_strided", "as_strided_scatter", "masked_scatter", "masked_scatter_backward", "strided_index",
            "strided_scatter_index"]
__all__ += ["prelu_backward"]
__all__ += ["addbmm", "addmv", "cdist", "cdist_backward", "dist", "pdist", "pdist_backward"]
__all__ += ["diagonal", "diagonal_scatter", "diagonal_backward", "select_scatter", "repeat"]
__all__ += ["fractional_max_pool2d", "fractional_max_pool2d_indices", "fractional_max_pool3d",
            "fractional_max_pool3d_indices", "fractional_pool_index"]
__all__ += ["embedding_bag", "embedding_bag_backward", "embedding_bag_max_backward", "embedding_bag_max_indices",
            "embedding_bag_offset2bag", "embedding_bag_psw_backward", "embedding_bag_size"]


def _dtype(name: str) -> torch.dtype:
    return FORMAT_TO_TORCH[name]


def constant(value: Tensor, shape: Sequence[int]) -> Tensor:
    return value if tuple(value.shape) == tuple(shape) else value.expand(tuple(shape))


def _int_div(a: Tensor, b: Tensor) -> Tensor:
    zero = b == 0
    q = torch.div(a, torch.where(zero, torch.ones_like(b), b), rounding_mode="trunc")
    return torch.where(zero, torch.zeros_like(q), q)


def _int_pow(a: Tensor, b: Tensor) -> Tensor:
    neg = b < 0
    r = torch.pow(a, torch.clamp_min(b, 0))
    odd = torch.remainder(b, 2) == 1
    negval = torch.where(a == 1, torch.ones_like(r),
                         torch.where(a == -1, torch.where(odd, -torch.ones_like(r), torch.ones_like(r)),
                                     torch.zeros_like(r)))
    return torch.where(neg, negval, r)


_BINARY: dict[str, Callable[[Tensor, Tensor], Tensor]] = {
    "Add": torch.add, "Sub": torch.sub, "Mul": torch.mul, "Div": torch.div,
    "Max": torch.maximum, "Min": torch.minimum, "Pow": torch.pow,
}
_BOOL_BINARY: dict[str, Callable[[Tensor, Tensor], Tensor]] = {
    "Max": torch.logical_or, "Min": torch.logical_and, "Mul": torch.logical_and,
}


def binary(a: Tensor, b: Tensor, op: str) -> Tensor:
    if op in NEW_BINARY_OPS:
        return binary_new(a, b, op)
    if a.dtype == torch.bool:
        return _BOOL_BINARY[op](a, b)
    if not a.is_floating_point():
        if op == "Div":
            return _int_div(a, b)
        if op == "Pow":
            return _int_pow(a, b)
    return _BINARY[op](a, b).to(a.dtype)


_COMPARE: dict[str, Callable[[Tensor, Tensor], Tensor]] = {
    "Eq": torch.eq, "Ne": torch.ne, "Lt": torch.lt, "Le": torch.le, "Gt": torch.gt, "Ge": torch.ge,
}


def compare(a: Tensor, b: Tensor, op: str) -> Tensor:
    return _COMPARE[op](a, b)


def where(cond: Tensor, a: Tensor, b: Tensor) -> Tensor:
    return torch.where(cond if cond.dtype == torch.bool else cond != 0, a, b)


def cast(x: Tensor, to: str) -> Tensor:
    dtype = _dtype(to)
    if x.dtype == dtype:
        return x
    if to == "bool":
        return x != 0
    if x.is_floating_point() and not dtype.is_floating_point:
        info = torch.iinfo(dtype)
        t = torch.trunc(x.double())
        lo, hi = float(info.min), float(info.max) + 1.0  # exact powers of two
        inside = (t >= lo) & (t < hi)
        r = torch.where(inside, t, torch.zeros_like(t)).to(dtype)
        big = torch.full_like(r, info.max)
        small = torch.full_like(r, info.min)
        return torch.where(t >= hi, big, torch.where(t < lo, small, r))
    return x.to(dtype)


def expand(x: Tensor, shape: Sequence[int]) -> Tensor:
    return x.expand(tuple(shape))


def reshape(x: Tensor, shape: Sequence[int]) -> Tensor:
    return x.reshape(tuple(shape))


def transpose(x: Tensor, perm: Sequence[int]) -> Tensor:
    return x.permute(tuple(perm))


def reduce(x: Tensor, op: str, axes: Sequence[int], keep_dim: bool = False) -> Tensor:
    dims = tuple(sorted({a % x.dim() for a in axes})) if x.dim() else ()
    if not dims:
        return x
    count = math.prod(x.shape[d] for d in dims)
    if op == "Prod":
        return prod(x, dims, keep_dim)
    if x.dtype == torch.bool:
        fn = torch.any if op == "Max" else torch.all
        return fn(x, dim=dims, keepdim=keep_dim)
    if op in ("Max", "Min") and count == 0:
        shape = [1 if i in dims else s for i, s in enumerate(x.shape)] if keep_dim else \
            [s for i, s in enumerate(x.shape) if i not in dims]
        info = torch.finfo(x.dtype) if x.is_floating_point() else torch.iinfo(x.dtype)
        fill = (-math.inf if op == "Max" else math.inf) if x.is_floating_point() else \
            (info.min if op == "Max" else info.max)
        return torch.full(shape, fill, dtype=x.dtype, device=x.device)
    if op == "Max":
        return torch.amax(x, dim=dims, keepdim=keep_dim)
    if op == "Min":
        return torch.amin(x, dim=dims, keepdim=keep_dim)
    s = torch.sum(x, dim=dims, keepdim=keep_dim)
    if op == "Sum":
        return s.to(x.dtype)
    if x.is_floating_point():
        return torch.mean(x, dim=dims, keepdim=keep_dim)
    return _int_div(s, torch.tensor(count, dtype=s.dtype, device=s.device)).to(x.dtype)


@in_float32  # torch's float16 CPU matmul is not its float32 result rounded once (its bfloat16 one is)
def matmul(a: Tensor, b: Tensor) -> Tensor:
    if a.dtype == torch.bool:
        return torch.matmul(a.long(), b.long()) != 0
    return torch.matmul(a, b)


def empty(like: Tensor | None, shape: Sequence[int], dtype: str) -> Tensor:
    """A fresh empty tensor (on the device of `like`); dtype WORKSPACE: an empty uint8 workspace."""
    device = like.device if like is not None else None
    return torch.empty(tuple(shape), dtype=torch.uint8 if dtype == WORKSPACE else _dtype(dtype), device=device)


# each op's function, as its declaration names it (`OpDef.torch`)
def kernel(*ins: Tensor, name: str, inputs: Sequence[str], pattern: str, output: int = 0,
           params: dict[str, Any] | None = None) -> Tensor:
    """A backend file's fused kernel (`Kernel`): a torch function registered for its name, else its
    pattern op by op (`kernels_kernel`)."""
    return run_kernel(KERNELS, ins, name, inputs, pattern, output, params)


KERNELS: dict[str, Callable[..., Any]] = {d.name: globals()[d.torch] for d in OPDEFS.values() if d.torch}
# the ops whose function may return one of its inputs, or a view of one (the exporter copies such a
# result where the FX graph promised a tensor of its own: contract.py); every other op's function
# returns a tensor of its own. tests/test_opdefs.py checks each op's sample against this.
VIEWS: frozenset[str] = frozenset(("Cast", "Expand", "Reshape", "Transpose", "Reduce", "Slice",
                                   "Conv2dWeightMatrix", "Conv2dMergeGroups", "Conv3dWeightMatrix",
                                   "Conv3dMergeGroups", "Im2Col3d", "Conv3dColumns"))
