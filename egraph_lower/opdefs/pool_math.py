"""The arithmetic of the pooling family (`pool.py`), in float64 NumPy: output sizes, windows,
the max-pool scan, and the per-axis matrices of average pooling.

Average pooling is separable: a window's sum is over a rectangle, and its divisor (the
rectangle's size, clipped to the input or not, or an override) is a product of an H part and a
W part. So y = Wh x Ww^T per plane, with Wh[o, h] = [h in window o] / divisor_h(o), and the
gradient is dx = Wh^T dy Ww: the backward rules and the reference share these matrices.
"""

from __future__ import annotations

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


def max_out(attrs: Mapping[str, Any], hw: Sequence[int]) -> tuple[int, ...]:
    return tuple(_out_len(hw[a], attrs["kernel"][a], attrs["stride"][a], attrs["padding"][a], attrs["dilation"][a],
                          bool(attrs.get("ceil_mode", False))) for a in (0, 1))


def avg_out(attrs: Mapping[str, Any], hw: Sequence[int]) -> tuple[int, ...]:
    return tuple(_out_len(hw[a], attrs["kernel"][a], attrs["stride"][a], attrs["padding"][a], 1,
                          bool(attrs.get("ceil_mode", False))) for a in (0, 1))


def max_pool(attrs: Mapping[str, Any], x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Values and i64 flat indices (h * W + w) of each window's maximum: the first maximum in
    window order, a NaN winning over numbers (the last NaN); padding never wins."""
    n, c, h, w = x.shape
    oh, ow = max_out(attrs, (h, w))
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = (attrs[k] for k in ("kernel", "stride", "padding", "dilation"))
    flat = x.reshape(n, c, h * w)
    best = np.full((n, c, oh, ow), -np.inf)
    idx = np.full((n, c, oh, ow), -1, dtype=np.int64)
    rows, cols = np.arange(oh) * sh - ph, np.arange(ow) * sw - pw
    for i in range(kh):
        r = rows + i * dh
        for j in range(kw):
            q = cols + j * dw
            valid = ((r >= 0) & (r < h))[:, None] & ((q >= 0) & (q < w))[None, :]
            pos = np.clip(r, 0, h - 1)[:, None] * w + np.clip(q, 0, w - 1)[None, :]
            v = flat[:, :, pos]
            take = valid & ((v > best) | np.isnan(v) | (idx < 0))
            best = np.where(take, v, best)
            idx = np.where(take, pos, idx)
    return best, idx


def max_pool_backward(input_shape: Sequence[int], dy: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """dx: each window's dy added at the position its index names (summed where windows share one)."""
    n, c, h, w = input_shape
    if indices.size and (indices.min() < 0 or indices.max() >= h * w):
        bad = int(indices.min()) if indices.min() < 0 else int(indices.max())
        raise ValueError(f"index {bad} is outside the {h} x {w} plane")
    dx = np.zeros((n * c, h * w))
    rows = np.repeat(np.arange(n * c), dy[0, 0].size)
    np.add.at(dx, (rows, indices.reshape(-1)), dy.reshape(-1))
    return dx.reshape(n, c, h, w)


def part_length(part: str, input_shape: Sequence[int]) -> int:
    h, w = input_shape[2], input_shape[3]
    return {"Plane": h * w, "Row": h, "Col": w}[part]


def one_hot(part: str, input_shape: Sequence[int], indices: np.ndarray) -> np.ndarray:
    """[L, *indices.shape] bool: index (Plane), index // W (Row) or index % W (Col) equals l."""
    w = input_shape[3]
    key = {"Plane": indices, "Row": indices // w, "Col": indices % w}[part]
    length = part_length(part, input_shape)
    return np.arange(length).reshape((length,) + (1,) * indices.ndim) == key[None]


def avg_weights(attrs: Mapping[str, Any], input_shape: Sequence[int], axis: int) -> np.ndarray:
    """[O, L] float64: Wh (axis 0) or Ww (axis 1) of AvgPool2d; a divisor override goes into Wh."""
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
    for o in range(out):
        lo, hi = (o * length) // out, -((-(o + 1) * length) // out)
        m[o, lo:hi] = 1.0 / (hi - lo)
    return m


def apply_weights(wh: np.ndarray, x: np.ndarray, ww_t: np.ndarray) -> np.ndarray:
    """wh @ x @ ww_t over the last two axes (wh [A, H], ww_t [W, B])."""
    return np.matmul(np.matmul(wh, x), ww_t)
