"""The NumPy arithmetic of the convolution ops (float64, channels first: x [N, C, *S], w [O, C/G, *K]),
for any number of spatial axes (the format has 2-D and 3-D convolutions: S = (H, W) or (D, H, W)).

Everything goes through one unfold: `unfold(x)` gives, for every output position and
every kernel tap, the input value the tap reads (0 where it falls into the padding),
as an array [N, C, *K, *O]. Then, with G groups, Cg = C/G, Og = O/G, a a kernel tap and
i an output position (each a tuple of the spatial axes):

    conv(x, w)[n, g*Og+o, i]   = sum_{c, a} w[g*Og+o, c, a] * u[n, g*Cg+c, a, i]
    grad_w[g*Og+o, c, a]       = sum_{n, i}  dy[n, g*Og+o, i] * u[n, g*Cg+c, a, i]
    grad_x = fold(du),  du[n, g*Cg+c, a, i] = sum_o w[g*Og+o, c, a] * dy[n, g*Og+o, i]

where `fold` is the adjoint of `unfold`: each tap's value added back at the input
position it was read from (taps in the padding dropped).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

Ints = Sequence[int]
_K, _O = "uvw", "ijk"  # einsum letters of the kernel taps and the output positions (up to 3 axes)


def out_size(size: int, k: int, s: int, p: int, d: int) -> int:
    """Output length along one axis: floor((size + 2p - d(k-1) - 1) / s) + 1."""
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


def weight_conv_size(size: int, k: int, s: int, p: int, d: int) -> int:
    """Along one axis, the output length of the weight gradient computed as a convolution of x
    (padding p) with dy as the kernel (stride d, dilation s): out_size(size, out_size(size, k, s, p, d), d, p, s).

    It is at least k, and exceeds k by floor(r / d), r = (size + 2p - d(k-1) - 1) mod s: the
    input positions past the last one a tap of the forward convolution reads."""
    return out_size(size, out_size(size, k, s, p, d), d, p, s)


def _outs(shape: Ints, kernel: Ints, s: Ints, p: Ints, d: Ints) -> tuple[int, ...]:
    return tuple(out_size(shape[2 + i], kernel[i], s[i], p[i], d[i]) for i in range(len(kernel)))


def _window(tap: Ints, outs: Ints, s: Ints, d: Ints) -> tuple[slice, ...]:
    """The positions of the padded input that kernel tap `tap` reads, one per output position."""
    return (slice(None), slice(None)) + tuple(
        slice(a * d[i], a * d[i] + s[i] * (outs[i] - 1) + 1, s[i]) for i, a in enumerate(tap))


def unfold(x: np.ndarray, kernel: Ints, s: Ints, p: Ints, d: Ints) -> np.ndarray:
    """[N, C, *K, *O]: the input value each kernel tap reads at each output position."""
    n, c = x.shape[:2]
    outs = _outs(x.shape, kernel, s, p, d)
    xp = np.pad(x, ((0, 0), (0, 0)) + tuple((q, q) for q in p))
    u = np.zeros((n, c) + tuple(kernel) + outs, dtype=x.dtype)
    for tap in itertools.product(*(range(k) for k in kernel)):
        u[(slice(None), slice(None)) + tap] = xp[_window(tap, outs, s, d)]
    return u


def fold(u: np.ndarray, shape: Ints, s: Ints, p: Ints, d: Ints) -> np.ndarray:
    """The adjoint of `unfold`: an array of `shape` [N, C, *S]."""
    nd = len(shape) - 2
    kernel, outs = u.shape[2:2 + nd], u.shape[2 + nd:]
    xp = np.zeros(tuple(u.shape[:2]) + tuple(shape[2 + i] + 2 * p[i] for i in range(nd)), dtype=u.dtype)
    for tap in itertools.product(*(range(k) for k in kernel)):
        xp[_window(tap, outs, s, d)] += u[(slice(None), slice(None)) + tap]
    return xp[(slice(None), slice(None)) + tuple(slice(p[i], p[i] + shape[2 + i]) for i in range(nd))]


def _grouped(u: np.ndarray, g: int) -> np.ndarray:
    n, c = u.shape[:2]
    return u.reshape((n, g, c // g) + u.shape[2:])


def _letters(nd: int) -> tuple[str, str]:
    return _K[:nd], _O[:nd]


def conv(x: np.ndarray, w: np.ndarray, s: Ints, p: Ints, d: Ints, g: int) -> np.ndarray:
    k, o = _letters(x.ndim - 2)
    u = _grouped(unfold(x, w.shape[2:], s, p, d), g)  # n g c *k *o
    wg = w.reshape((g, w.shape[0] // g) + w.shape[1:])  # g o c *k
    y = np.einsum(f"ngc{k}{o},gzc{k}->ngz{o}", u, wg, optimize=True)
    return y.reshape((y.shape[0], -1) + y.shape[3:])


def grad_weight(x: np.ndarray, dy: np.ndarray, kernel: Ints, s: Ints, p: Ints, d: Ints, g: int) -> np.ndarray:
    k, o = _letters(x.ndim - 2)
    u = _grouped(unfold(x, kernel, s, p, d), g)
    dw = np.einsum(f"ngc{k}{o},ngz{o}->gzc{k}", u, _grouped(dy, g), optimize=True)
    return dw.reshape((-1,) + dw.shape[2:])


def grad_input(dy: np.ndarray, w: np.ndarray, shape: Ints, s: Ints, p: Ints, d: Ints, g: int) -> np.ndarray:
    k, o = _letters(dy.ndim - 2)
    wg = w.reshape((g, w.shape[0] // g) + w.shape[1:])
    du = np.einsum(f"ngz{o},gzc{k}->ngc{k}{o}", _grouped(dy, g), wg, optimize=True)
    return fold(du.reshape((du.shape[0], -1) + du.shape[3:]), shape, s, p, d)


def im2col(x: np.ndarray, kernel: Ints, s: Ints, p: Ints, d: Ints, g: int) -> np.ndarray:
    """[N, G, Cg*prod(K), prod(O)]: the unfold as a matrix per sample and group (rows in (c, *k) order,
    columns in the output's row-major order)."""
    u = _grouped(unfold(x, kernel, s, p, d), g)
    n, _, cg = u.shape[:3]
    return u.reshape(n, g, cg * math.prod(kernel), -1)


def flip_weight(w: np.ndarray, g: int) -> np.ndarray:
    """[O, Cg, *K] -> [C, Og, *K]: each group's channel axes swapped, the kernel reversed along every
    spatial axis (turned by 180 degrees in 2-D)."""
    o, cg = w.shape[:2]
    nd = w.ndim - 2
    wg = w.reshape((g, o // g, cg) + w.shape[2:])[(slice(None),) * 3 + (slice(None, None, -1),) * nd]
    perm = (0, 2, 1) + tuple(range(3, 3 + nd))
    return np.ascontiguousarray(wg.transpose(perm).reshape((g * cg, o // g) + w.shape[2:]))


def dilate_pad(dy: np.ndarray, kernel: Ints, shape: Ints, s: Ints, p: Ints, d: Ints) -> np.ndarray:
    """dy with s-1 zeros between neighbours, placed at offset d(k-1)-p in an array of
    [N, O, *(S + d(K-1))] (entries that fall outside are dropped: no tap of the
    convolution reaches an input position from them)."""
    nd = dy.ndim - 2
    size = [shape[2 + i] + d[i] * (kernel[i] - 1) for i in range(nd)]
    out = np.zeros(tuple(dy.shape[:2]) + tuple(size), dtype=dy.dtype)
    pos = [d[i] * (kernel[i] - 1) - p[i] + s[i] * np.arange(dy.shape[2 + i]) for i in range(nd)]
    keep = [(q >= 0) & (q < size[i]) for i, q in enumerate(pos)]
    src = dy[(slice(None), slice(None)) + np.ix_(*keep)] if nd else dy
    out[(slice(None), slice(None)) + np.ix_(*(q[k] for q, k in zip(pos, keep)))] = src
    return out


def columns(x: np.ndarray, kernel: Ints, s: Ints, p: Ints, d: Ints, g: int) -> np.ndarray:
    """[N, G, *O[:-1], Cg*prod(K), O[-1]]: the unfold laid out for a MatMul per output row (rows in
    (c, *k) order): [N, G, OH, Cg*KH*KW, OW] in 2-D, [N, G, OD, OH, Cg*KD*KH*KW, OW] in 3-D."""
    nd = x.ndim - 2
    u = _grouped(unfold(x, kernel, s, p, d), g)  # n g c *k *o
    n, _, cg = u.shape[:3]
    outs = u.shape[3 + nd:]
    t = u.reshape((n, g, cg * math.prod(kernel)) + outs)
    perm = (0, 1) + tuple(range(3, 2 + nd)) + (2, 2 + nd)
    return np.ascontiguousarray(t.transpose(perm))


def weight_matrix(w: np.ndarray, g: int) -> np.ndarray:
    """[G, 1 (nd - 1 times), Og, Cg*prod(K)]: each group's filters as the rows of a matrix."""
    o = w.shape[0]
    return w.reshape((g,) + (1,) * (w.ndim - 3) + (o // g, -1))


def merge_groups(t: np.ndarray) -> np.ndarray:
    """[N, G, *O[:-1], Og, O[-1]] -> [N, G*Og, *O]."""
    nd = t.ndim - 3
    n, g, og = t.shape[0], t.shape[1], t.shape[1 + nd]
    perm = (0, 1, 1 + nd) + tuple(range(2, 1 + nd)) + (2 + nd,)
    return np.ascontiguousarray(t.transpose(perm)).reshape((n, g * og) + t.shape[2:1 + nd] + t.shape[2 + nd:])
