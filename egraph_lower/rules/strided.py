"""Strided windows and masked scatter in primitives (`opdefs/strided.py`), for backends without their
kernels (WebGPU and Metal: no AsStrided, no scatter).

AsStrided reads flat(x) at P = offset + sum_k i_k stride_k (`StridedIndex`, a constant of the attributes):
- `as-strided-take`: a Take of flat(x) at P (a gather; zero strides read a position again, overlapping
  windows read positions of each other, an empty size reads nothing);
- `as-strided-slice`: contiguous strides (`dense`: the window is the run [offset, offset + m) in row-major
  order) are a Slice of flat(x) and a Reshape: no index.
AsStridedScatter writes src[i] at P (no position twice):
- `as-strided-scatter-take`: out_p = concat(flat x, flat src)[S_p], S_p = N + k where window element k
  writes p, else p (`StridedScatterIndex`): one gather, no scatter;
- `as-strided-scatter-run`: a contiguous window is flat(x)[:offset], then src, then flat(x)[end:].
MaskedScatter gives the k-th true position of the mask the source's k-th element. With c = cumsum(mask)
(a Scan over the flattened i64 mask, `Scan`'s own rules where a backend lacks it), the true position p
reads source element c_p - 1:
- `masked-scatter-take`: out_p = concat(flat x, flat source)[where(mask_p, N + c_p - 1, p)]: one gather
  (an all-false mask reads x alone, so an empty source is fine; an all-true mask reads the source's
  first N elements).
Its backward gives source element k the dy of the k-th true position, 0 past the last:
- `masked-scatter-bwd-onehot`: grad_k = sum_p where(key_p == k, g_p, 0) (g: dy, named so that the
  checker measures the error against |grad| alone, a selection), key_p = c_p - 1 where mask_p,
  else -1 (no k): a one-hot [m, N] of one term per row at most, exact.
"""

from __future__ import annotations

from .dsl import Rule, rule

_AS = "(AsStrided size stride offset flat {dense} end x)"
_SCATTER = "(AsStridedScatter size stride offset flat {dense} end n xshape sflat rest x src)"
_SCAN = "(Scan.Add 0 1 nflat nb ni nt [1] npnq nt [0] mi)"
_MASK = {"mf": "(Reshape nflat mask)", "i": "(Iota.i64 0 mf)", "z": "(- i i)",
         "mi": "(where mf (+ z 1) z)", "c": _SCAN}

RULES: tuple[Rule, ...] = (
    rule("as-strided-take", "as_strided(x)_i = flat(x)[offset + sum_k i_k stride_k]: a Take of the positions",
         _AS.format(dense="dense"), "(Take 0 (Reshape flat x) (StridedIndex size stride offset x))",
         group="forward"),
    rule("as-strided-slice", "contiguous strides: the window is flat(x)[offset:offset + m], reshaped",
         _AS.format(dense="1"), "(Reshape size (Slice 0 offset end 1 (Reshape flat x)))", group="forward"),
    rule("as-strided-scatter-take", "as_strided_scatter(x, src)_p = concat(flat x, flat src)[N + k] where window"
         " element k writes p, else x_p: one Take", _SCATTER.format(dense="dense"),
         "(Reshape xshape (Take 0 (Concat 0 (Reshape flat x) (Reshape sflat src))"
         " (StridedScatterIndex size stride offset n x)))", group="forward"),
    rule("as-strided-scatter-run", "contiguous strides: flat(x)[:offset], then src, then flat(x)[end:]",
         _SCATTER.format(dense="1"),
         "(Reshape xshape (Concat 0 (Concat 0 (Slice 0 0 offset 1 (Reshape flat x)) (Reshape sflat src))"
         " (Slice 0 rest n 1 (Reshape flat x))))", group="forward"),
    rule("masked-scatter-take", "masked_scatter(x, mask, s)_p = concat(flat x, flat s)[where(mask_p, N + c_p - 1,"
         " p)], c = cumsum(mask)", "(MaskedScatter nflat nb ni nt npnq n xshape sflat x mask source)",
         "(Reshape xshape (Take 0 (Concat 0 (Reshape nflat x) (Reshape sflat source))"
         " (where mf (+ (- c 1) (lit n)) i)))", group="forward", lets=_MASK),
    rule("masked-scatter-bwd-onehot", "d source_k = sum_p where(key_p == k, g_p, 0), key_p = cumsum(mask)_p - 1"
         " where mask_p, else -1", "(MaskedScatterBackward shape nflat nb ni nt npnq n mn g mask)",
         "(Reshape shape (sum [1] (where (== (Iota.i64 0 keys) keys) (Expand mn (Reshape nb (Reshape nflat g))) 0)))",
         group="backward",
         lets=dict(_MASK, keys="(Expand mn (Reshape nb (where mf (- c 1) (- z 1))))")),
)
