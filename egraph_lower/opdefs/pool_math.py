"""The arithmetic of the pooling family (`pool.py`), in float64 NumPy, for any number of spatial
axes (the format has 2-D and 3-D pooling): output sizes, windows, the max-pool scan, and the
per-axis matrices of average pooling.

Average pooling is separable: a window's sum is over a box, and its divisor (the box's size,
clipped to the input or not, or an override) is a product of one factor per spatial axis. So
y = x contracted with W_a along each spatial axis a (per plane: y = Wh x Ww^T in 2-D), with
W_a[o, l] = [l in window o] / divisor_a(o), and the gradient contracts dy with each W_a^T: the
backward rules and the reference share these matrices.

Max pooling (plain and adaptive) scans each window in row-major order over its offsets and keeps
the first maximum, a NaN winning over numbers (the last NaN); padding never wins; a window of
-inf (or of nothing but NaN's predecessors) names its first position. Indices are flat within
the spatial volume (d * H * W + h * W + w), as torch's.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

PARTS: tuple[str, ...] = ("Plane", "Row", "Col")


def check_padding(kernel: Sequence[int], padding: Sequence[int]) -> None:
    """torch's rule: padding at most half the kernel (so every window holds an input element)."""
    for k, p in zip(kernel, padding):
        if p > k // 2:
            raise ValueError(f"padding {list(padding)} is more than half of kernel {list(kernel)}")


def _out_len(length: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> int:
    span = length + 2 * p - d * (k - 1) - 1
    if span < 0:
        raise ValueError(f"the window ({d * (k - 1) + 1} wide) is larger than the padded input ({length + 2 * p})")
    out = (span + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= length + p:  # the last window must start inside the input or left padding
        out -= 1
    return out


def max_out(attrs: Mapping[str, Any], sizes: Sequence[int]) -> tuple[int, ...]:
    """The output's spatial sizes of max pooling an input of spatial `sizes`."""
    return tuple(_out_len(sizes[a], attrs["kernel"][a], attrs["stride"][a], attrs["padding"][a], attrs["dilation"][a],
                          bool(attrs.get("ceil_mode", False))) for a in range(len(sizes)))


def avg_out(attrs: Mapping[str, Any], sizes: Sequence[int]) -> tuple[int, ...]:
    """The output's spatial sizes of average pooling (no dilation)."""
    return tuple(_out_len(sizes[a], attrs["kernel"][a], attrs["stride"][a], attrs["padding"][a], 1,
                          bool(attrs.get("ceil_mode", False))) for a in range(len(sizes)))


def _scan(x: np.ndarray, coords: Sequence[np.ndarray], valid: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The windowed max of x [N, C, *S]: coords[a] [O_a, K_a] are the positions along spatial axis a
    that window o's k-th offset reads, valid[a] whether it reads one (not padding, inside the window).
    Offsets go in row-major order; the first maximum wins, a NaN over numbers (the last NaN), and a
    window whose values are all -inf names its first valid position."""
    sizes = x.shape[2:]
    nd = len(sizes)
    outs = tuple(c.shape[0] for c in coords)
    flat = x.reshape(x.shape[:2] + (math.prod(sizes),))
    best = np.full(x.shape[:2] + outs, -np.inf)
    idx = np.full(x.shape[:2] + outs, -1, dtype=np.int64)
    strides = [math.prod(sizes[a + 1:]) for a in range(nd)]
    for offs in itertools.product(*(range(c.shape[1]) for c in coords)):
        ok = np.ones(outs, dtype=bool)
        pos = np.zeros(outs, dtype=np.int64)
        for a, j in enumerate(offs):
            shape = [1] * nd
            shape[a] = outs[a]
            ok = ok & valid[a][:, j].reshape(shape)
            pos = pos + (np.clip(coords[a][:, j], 0, sizes[a] - 1) * strides[a]).reshape(shape)
        v = flat[:, :, pos]
        take = ok & ((v > best) | np.isnan(v) | (idx < 0))
        best = np.where(take, v, best)
        idx = np.where(take, pos, idx)
    return best, idx


def max_pool(attrs: Mapping[str, Any], x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Values and i64 flat indices of each window's maximum (the conventions of `_scan`)."""
    sizes = x.shape[2:]
    coords, valid = [], []
    for a, out in enumerate(max_out(attrs, sizes)):
        k, s, p, d = (int(attrs[key][a]) for key in ("kernel", "stride", "padding", "dilation"))
        c = (np.arange(out) * s - p)[:, None] + np.arange(k)[None, :] * d
        coords.append(c)
        valid.append((c >= 0) & (c < sizes[a]))
    return _scan(x, coords, valid)


def adaptive_bounds(length: int, out: int) -> tuple[np.ndarray, np.ndarray]:
    """Adaptive pooling's windows along one axis: window o is [floor(o L / O), ceil((o + 1) L / O))."""
    o = np.arange(out)
    return (o * length) // out, -((-(o + 1) * length) // out)


def adaptive_max_pool(output_size: Sequence[int], x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Values and i64 flat indices of adaptive max pooling (windows of `adaptive_bounds`)."""
    coords, valid = [], []
    for length, out in zip(x.shape[2:], output_size):
        lo, hi = adaptive_bounds(int(length), int(out))
        width = int((hi - lo).max()) if out else 1
        c = lo[:, None] + np.arange(width)[None, :]
        coords.append(c)
        valid.append(c < hi[:, None])
    return _scan(x, coords, valid)


def max_pool_backward(input_shape: Sequence[int], dy: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """dx: each window's dy added at the position its index names (summed where windows share one)."""
    n, c = input_shape[:2]
    volume = math.prod(input_shape[2:])
    if indices.size and (indices.min() < 0 or indices.max() >= volume):
        bad = int(indices.min()) if indices.min() < 0 else int(indices.max())
        raise ValueError(f"index {bad} is outside the {' x '.join(str(v) for v in input_shape[2:])} plane")
    dx = np.zeros((n * c, volume))
    rows = np.repeat(np.arange(n * c), math.prod(dy.shape[2:]))
    np.add.at(dx, (rows, indices.reshape(-1)), dy.reshape(-1))
    return dx.reshape(tuple(input_shape))


def part_length(part: str, input_shape: Sequence[int]) -> int:
    """The one-hot's length: the spatial volume (Plane), the volume without its last axis (Row: H in
    2-D, D * H in 3-D) or the last axis (Col: W)."""
    return {"Plane": math.prod(input_shape[2:]), "Row": math.prod(input_shape[2:-1]), "Col": input_shape[-1]}[part]


def one_hot(part: str, input_shape: Sequence[int], indices: np.ndarray) -> np.ndarray:
    """[L, *indices.shape] bool: index (Plane), index // W (Row) or index % W (Col) equals l."""
    w = input_shape[-1]
    length = part_length(part, input_shape)
    key = {"Plane": indices, "Row": indices // w, "Col": indices % w}[part]
    return np.arange(length).reshape((length,) + (1,) * indices.ndim) == key[None]


def avg_weights(attrs: Mapping[str, Any], input_shape: Sequence[int], axis: int) -> np.ndarray:
    """[O, L] float64: W_axis of average pooling (Wh for axis 0, Ww for axis 1 in 2-D); a divisor
    override goes into axis 0's."""
    length = input_shape[2 + axis]
    k, s, p = attrs["kernel"][axis], attrs["stride"][axis], attrs["padding"][axis]
    out = avg_out(attrs, input_shape[2:])[axis]
    override = attrs.get("divisor_override")
    m = np.zeros((out, length))
    for o in range(out):
        start = o * s - p
        end = min(start + k, length + p)
        size = end - start
        lo, hi = max(start, 0), min(end, length)
        if lo >= hi:
            continue
        if override is not None:
            div = float(override) if axis == 0 else 1.0
        else:
            div = float(size if attrs.get("count_include_pad", True) else hi - lo)
        m[o, lo:hi] = 1.0 / div
    return m


def adaptive_weights(length: int, out: int) -> np.ndarray:
    """[O, L] float64: window o is [floor(o L / O), ceil((o + 1) L / O)), averaged."""
    m = np.zeros((out, length))
    for o, (lo, hi) in enumerate(zip(*adaptive_bounds(length, out))):
        m[o, lo:hi] = 1.0 / (hi - lo)
    return m


def apply_weights(mats: Sequence[np.ndarray], x: np.ndarray) -> np.ndarray:
    """x [N, C, *S] contracted with mats[a] ([O_a, S_a]) along each spatial axis a: [N, C, *O]."""
    for a, m in enumerate(mats):
        x = np.moveaxis(np.tensordot(m, x, axes=([1], [2 + a])), 0, 2 + a)
    return x
