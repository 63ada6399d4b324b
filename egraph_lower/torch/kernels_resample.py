"""The resampling ops (opdefs/resample.py, opdefs/unfold.py) as PyTorch functions: torch's own upsample,
unfold and col2im kernels and their backward ops, and the helpers (interpolation matrices, nearest
indices, window one-hots and indices) from `opdefs/resample_math.py` and `opdefs/unfold.py`. The ops that
sum compute f16/bf16 in float32 and round once (`in_float32`).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from ..opdefs import resample_math as RM
from ..opdefs.unfold import window_index as window_index_matrix, window_one_hot as window_one_hot_matrix
from .kernels_half import in_float32

_A = torch.ops.aten
_NEAREST = {1: _A.upsample_nearest1d, 2: _A.upsample_nearest2d, 3: _A.upsample_nearest3d}
_EXACT = {1: _A._upsample_nearest_exact1d, 2: _A._upsample_nearest_exact2d, 3: _A._upsample_nearest_exact3d}
_LINEAR = {1: _A.upsample_linear1d, 2: _A.upsample_bilinear2d, 3: _A.upsample_trilinear3d}
_NEAREST_BWD = {1: _A.upsample_nearest1d_backward, 2: _A.upsample_nearest2d_backward,
                3: _A.upsample_nearest3d_backward}
_EXACT_BWD = {1: _A._upsample_nearest_exact1d_backward, 2: _A._upsample_nearest_exact2d_backward,
              3: _A._upsample_nearest_exact3d_backward}
_LINEAR_BWD = {1: _A.upsample_linear1d_backward, 2: _A.upsample_bilinear2d_backward,
               3: _A.upsample_trilinear3d_backward}
_AA = {"linear": _A._upsample_bilinear2d_aa, "cubic": _A._upsample_bicubic2d_aa}
_AA_BWD = {"linear": _A._upsample_bilinear2d_aa_backward, "cubic": _A._upsample_bicubic2d_aa_backward}


def _scales(scales: Sequence[float | None] | None, k: int) -> list[float | None]:
    return [None] * k if scales is None else [None if s is None else float(s) for s in scales]


@in_float32  # aten's CPU kernels have no f16/bf16 antialiased interpolation
def _interpolate_aa(x: Tensor, mode: str, out: list[int], align_corners: bool, sc: list[float | None]) -> Tensor:
    if all(o != n or s is None for o, n, s in zip(out, x.shape[2:], sc)):
        return _AA[mode](x, out, bool(align_corners), *sc)  # type: ignore[no-any-return]
    # an axis of the length it has with a scale: aten's forward copies it, the format's weights apply
    # the scale there (as aten's backward does): each axis's matrix
    for j, (o, n, s) in enumerate(zip(out, x.shape[2:], sc)):
        w = torch.tensor(RM.weights(mode, bool(align_corners), int(n), o, s, True), dtype=x.dtype, device=x.device)
        x = torch.movedim(torch.tensordot(w, x, dims=([1], [2 + j])), 0, 2 + j)
    return x.contiguous()


def interpolate(x: Tensor, mode: str, size: Sequence[int], align_corners: bool = False,
                scales: Sequence[float | None] | None = None, antialias: bool = False) -> Tensor:
    k, out = len(size), [int(s) for s in size]
    sc = _scales(scales, k)
    if antialias:
        return _interpolate_aa(x, mode, out, align_corners, sc)
    if mode == "nearest":
        return _NEAREST[k](x, out, *sc)  # type: ignore[no-any-return]
    if mode == "nearest_exact":
        return _EXACT[k](x, out, *sc)  # type: ignore[no-any-return]
    if mode == "linear":
        return _LINEAR[k](x, out, bool(align_corners), *sc)  # type: ignore[no-any-return]
    return _A.upsample_bicubic2d(x, out, bool(align_corners), *sc)  # type: ignore[no-any-return]


@in_float32
def interpolate_backward(dy: Tensor, mode: str, input_shape: Sequence[int], align_corners: bool = False,
                         scales: Sequence[float | None] | None = None, antialias: bool = False) -> Tensor:
    ishape = [int(s) for s in input_shape]
    k = len(ishape) - 2
    out, sc = [int(s) for s in dy.shape[2:]], _scales(scales, k)
    if antialias:
        return _AA_BWD[mode](dy, out, ishape, bool(align_corners), *sc)  # type: ignore[no-any-return]
    if mode == "nearest":
        return _NEAREST_BWD[k](dy, out, ishape, *sc)  # type: ignore[no-any-return]
    if mode == "nearest_exact":
        return _EXACT_BWD[k](dy, out, ishape, *sc)  # type: ignore[no-any-return]
    if mode == "linear":
        return _LINEAR_BWD[k](dy, out, ishape, bool(align_corners), *sc)  # type: ignore[no-any-return]
    return _A.upsample_bicubic2d_backward(dy, out, ishape, bool(align_corners), *sc)  # type: ignore[no-any-return]


def interpolate_weights(like: Tensor, mode: str, in_size: int, out_size: int, align_corners: bool = False,
                        scale: float | None = None, antialias: bool = False) -> Tensor:
    w = RM.weights(mode, bool(align_corners), int(in_size), int(out_size), scale, bool(antialias))
    return torch.tensor(w, dtype=like.dtype, device=like.device)


def interpolate_index(like: Tensor, mode: str, in_size: int, out_size: int, scale: float | None = None) -> Tensor:
    idx = RM.nearest_index(mode, int(in_size), int(out_size), scale)
    return torch.tensor(idx, dtype=torch.int64, device=like.device)


# ---- sliding windows (opdefs/unfold.py)

def unfold(x: Tensor, axis: int, size: int, step: int) -> Tensor:
    return x.unfold(int(axis), int(size), int(step)).contiguous()


@in_float32
def unfold_backward(dy: Tensor, axis: int, size: int, step: int, input_shape: Sequence[int]) -> Tensor:
    return _A.unfold_backward(dy, [int(s) for s in input_shape], int(axis), int(size), int(step))  # type: ignore[no-any-return]


@in_float32
def col2im(cols: Tensor, kernel: Sequence[int], stride: Sequence[int], padding: Sequence[int],
           dilation: Sequence[int], output_size: Sequence[int]) -> Tensor:
    return _A.col2im(cols, list(output_size), list(kernel), list(dilation), list(padding), list(stride))  # type: ignore[no-any-return]


def window_one_hot(like: Tensor, windows: int, size: int, step: int, dilation: int, length: int,
                   kernel_major: bool) -> Tensor:
    m = window_one_hot_matrix(int(windows), int(size), int(step), int(dilation), int(length), bool(kernel_major))
    return torch.tensor(m, dtype=like.dtype, device=like.device)


def window_index(like: Tensor, windows: int, size: int, step: int) -> Tensor:
    return torch.tensor(window_index_matrix(int(windows), int(size), int(step)), dtype=torch.int64, device=like.device)
