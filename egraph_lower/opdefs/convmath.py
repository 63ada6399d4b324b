"""The NumPy arithmetic of the convolution ops (float64, NCHW activations, OIHW weights).

Everything goes through one unfold: `unfold(x)` gives, for every output position and
every kernel tap, the input value the tap reads (0 where it falls into the padding),
as an array [N, C, KH, KW, OH, OW]. Then, with G groups, Cg = C/G, Og = O/G:

    conv(x, w)[n, g*Og+o, i, j]   = sum_{c, kh, kw} w[g*Og+o, c, kh, kw] * u[n, g*Cg+c, kh, kw, i, j]
    grad_w[g*Og+o, c, kh, kw]     = sum_{n, i, j}  dy[n, g*Og+o, i, j] * u[n, g*Cg+c, kh, kw, i, j]
    grad_x = fold(du),  du[n, g*Cg+c, kh, kw, i, j] = sum_o w[g*Og+o, c, kh, kw] * dy[n, g*Og+o, i, j]

where `fold` is the adjoint of `unfold`: each tap's value added back at the input
position it was read from (taps in the padding dropped).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

Pair = tuple[int, int]


def out_size(size: int, k: int, s: int, p: int, d: int) -> int:
    """Output length along one axis: floor((size + 2p - d(k-1) - 1) / s) + 1."""
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


def weight_conv_size(size: int, k: int, s: int, p: int, d: int) -> int:
    """Along one axis, the output length of the weight gradient computed as a convolution of x
    (padding p) with dy as the kernel (stride d, dilation s): out_size(size, out_size(size, k, s, p, d), d, p, s).

    It is at least k, and exceeds k by floor(r / d), r = (size + 2p - d(k-1) - 1) mod s: the
    input positions past the last one a tap of the forward convolution reads."""
    return out_size(size, out_size(size, k, s, p, d), d, p, s)


def _taps(shape: Sequence[int], kernel: Pair, s: Pair, p: Pair, d: Pair) -> tuple[int, int]:
    return (out_size(shape[2], kernel[0], s[0], p[0], d[0]), out_size(shape[3], kernel[1], s[1], p[1], d[1]))


def unfold(x: np.ndarray, kernel: Pair, s: Pair, p: Pair, d: Pair) -> np.ndarray:
    """[N, C, KH, KW, OH, OW]: the input value each kernel tap reads at each output position."""
    n, c = x.shape[:2]
    oh, ow = _taps(x.shape, kernel, s, p, d)
    xp = np.pad(x, ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])))
    u = np.zeros((n, c, kernel[0], kernel[1], oh, ow), dtype=x.dtype)
    for a in range(kernel[0]):
        for b in range(kernel[1]):
            r, q = a * d[0], b * d[1]
            u[:, :, a, b] = xp[:, :, r:r + s[0] * (oh - 1) + 1:s[0], q:q + s[1] * (ow - 1) + 1:s[1]]
    return u


def fold(u: np.ndarray, shape: Sequence[int], s: Pair, p: Pair, d: Pair) -> np.ndarray:
    """The adjoint of `unfold`: an array of `shape` [N, C, H, W]."""
    n, c, kh, kw, oh, ow = u.shape
    h, w = shape[2] + 2 * p[0], shape[3] + 2 * p[1]
    xp = np.zeros((n, c, h, w), dtype=u.dtype)
    for a in range(kh):
        for b in range(kw):
            r, q = a * d[0], b * d[1]
            xp[:, :, r:r + s[0] * (oh - 1) + 1:s[0], q:q + s[1] * (ow - 1) + 1:s[1]] += u[:, :, a, b]
    return xp[:, :, p[0]:p[0] + shape[2], p[1]:p[1] + shape[3]]


def _grouped(u: np.ndarray, g: int) -> np.ndarray:
    n, c = u.shape[:2]
    return u.reshape((n, g, c // g) + u.shape[2:])


def conv(x: np.ndarray, w: np.ndarray, s: Pair, p: Pair, d: Pair, g: int) -> np.ndarray:
    u = _grouped(unfold(x, (w.shape[2], w.shape[3]), s, p, d), g)  # n g c kh kw i j
    wg = w.reshape((g, w.shape[0] // g) + w.shape[1:])  # g o c kh kw
    y = np.einsum("ngcabij,gocab->ngoij", u, wg, optimize=True)
    return y.reshape((y.shape[0], -1) + y.shape[3:])


def grad_weight(x: np.ndarray, dy: np.ndarray, kernel: Pair, s: Pair, p: Pair, d: Pair, g: int) -> np.ndarray:
    u = _grouped(unfold(x, kernel, s, p, d), g)
    dyg = _grouped(dy, g)  # n g o i j
    dw = np.einsum("ngcabij,ngoij->gocab", u, dyg, optimize=True)
    return dw.reshape((-1,) + dw.shape[2:])


def grad_input(dy: np.ndarray, w: np.ndarray, shape: Sequence[int], s: Pair, p: Pair, d: Pair,
               g: int) -> np.ndarray:
    wg = w.reshape((g, w.shape[0] // g) + w.shape[1:])
    du = np.einsum("ngoij,gocab->ngcabij", _grouped(dy, g), wg, optimize=True)
    return fold(du.reshape((du.shape[0], -1) + du.shape[3:]), shape, s, p, d)


def im2col(x: np.ndarray, kernel: Pair, s: Pair, p: Pair, d: Pair, g: int) -> np.ndarray:
    """[N, G, Cg*KH*KW, OH*OW]: the unfold as a matrix per sample and group (rows in (c, kh, kw) order)."""
    u = _grouped(unfold(x, kernel, s, p, d), g)
    n, _, cg, kh, kw, oh, ow = u.shape
    return u.reshape(n, g, cg * kh * kw, oh * ow)


def flip_weight(w: np.ndarray, g: int) -> np.ndarray:
    """[O, Cg, KH, KW] -> [C, Og, KH, KW]: each group's channel axes swapped, the kernel turned by 180 degrees."""
    o, cg, kh, kw = w.shape
    wg = w.reshape(g, o // g, cg, kh, kw)[:, :, :, ::-1, ::-1]
    return np.ascontiguousarray(wg.transpose(0, 2, 1, 3, 4).reshape(g * cg, o // g, kh, kw))


def dilate_pad(dy: np.ndarray, kernel: Pair, shape: Sequence[int], s: Pair, p: Pair, d: Pair) -> np.ndarray:
    """dy with s-1 zeros between neighbours, placed at offset d(k-1)-p in an array of
    [N, O, H + d0(KH-1), W + d1(KW-1)] (entries that fall outside are dropped: no tap of the
    convolution reaches an input position from them)."""
    n, o, oh, ow = dy.shape
    size = [shape[2 + i] + d[i] * (kernel[i] - 1) for i in (0, 1)]
    out = np.zeros((n, o, size[0], size[1]), dtype=dy.dtype)
    pos = [d[i] * (kernel[i] - 1) - p[i] + s[i] * np.arange((oh, ow)[i]) for i in (0, 1)]
    keep = [(q >= 0) & (q < size[i]) for i, q in enumerate(pos)]
    out[:, :, pos[0][keep[0]][:, None], pos[1][keep[1]][None, :]] = dy[:, :, keep[0]][:, :, :, keep[1]]
    return out


def columns(x: np.ndarray, kernel: Pair, s: Pair, p: Pair, d: Pair, g: int) -> np.ndarray:
    """[N, G, OH, Cg*KH*KW, OW]: the unfold laid out for a MatMul per output row (rows in (c, kh, kw) order)."""
    u = _grouped(unfold(x, kernel, s, p, d), g)  # n g c a b i j
    n, _, cg, kh, kw, oh, ow = u.shape
    return np.ascontiguousarray(u.reshape(n, g, cg * kh * kw, oh, ow).transpose(0, 1, 3, 2, 4))


def weight_matrix(w: np.ndarray, g: int) -> np.ndarray:
    """[G, 1, Og, Cg*KH*KW]: each group's filters as the rows of a matrix."""
    o = w.shape[0]
    return w.reshape(g, 1, o // g, -1)


def merge_groups(t: np.ndarray) -> np.ndarray:
    """[N, G, OH, Og, OW] -> [N, G*Og, OH, OW]."""
    n, g, oh, og, ow = t.shape
    return np.ascontiguousarray(t.transpose(0, 1, 3, 2, 4)).reshape(n, g * og, oh, ow)
