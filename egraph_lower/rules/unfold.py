"""Sliding windows in primitives (`opdefs/unfold.py`): Tensor.unfold, its backward op and col2im.

Unfold reads x[.., w step + k, ..] into window w's position k:
- `unfold-take`: a Take of the window index [n, size] (`WindowIndex`) along the axis, the size axis
  moved last: a gather;
- `unfold-tiled`: windows that tile the axis (step = size) are a Slice of the first n size elements and a
  Reshape: no index;
- `unfold-matmul`: x (the axis last) times the one-hot [L, n size] (`WindowOneHot`): no gather.
Its backward adds each window's dy back at the positions it read (the adjoint):
- `unfold-bwd-tiled`: step = size, each position read once at most: dy laid back out and padded with the
  tail past the last window (zeros);
- `unfold-bwd-matmul`: dy [.., n size] times the one-hot [n size, L]: overlapping windows sum, gaps
  get 0.
Col2Im adds column (k, o) of each channel at its window's position o stride + k dilation (per axis),
then drops the padding; per axis that is a one-hot matrix [K O, L + 2 p], so
- `col2im-separable`: cols as [N, C, KH OH, KW OW] between the two matrices (two MatMuls), then Slices;
- `col2im-tiled`: windows that tile the plane (kernel = stride, no dilation) put each value at one
  position: a Transpose to [N, C, OH, KH, OW, KW], a Reshape, zeros past the last window, Slices.
"""

from __future__ import annotations

from .dsl import Rule, rule

_UNFOLD = "(Unfold axis size step ax n len {tiled} end tail split merged wins flatw takeperm tolast fromlast x)"
_UNFOLD_BWD = "(UnfoldBackward axis size step ishape ax n len {tiled} end tail split merged wins flatw untake tolastdy back dy)"
_COL2IM = ("(Col2Im kernel stride padding dilation osize kh kw sh sw ph pw dh dw oh ow lh lw oh2 ow2 eh ew six"
           " {tiled} tiles ah aw seps cols)")
_CROP = "(Slice 3 pw ew 1 (Slice 2 ph eh 1 {t}))"

RULES: tuple[Rule, ...] = (
    rule("unfold-take", "out[.., w, .., k] = x[.., w step + k, ..]: a Take of the window index, the size axis last",
         _UNFOLD.format(tiled="tiled"), "(Transpose takeperm (Take ax x (WindowIndex n size step x)))",
         group="forward"),
    rule("unfold-tiled", "step = size: the windows are the first n size elements, reshaped",
         _UNFOLD.format(tiled="1"), "(Transpose takeperm (Reshape split (Slice ax 0 end 1 x)))", group="forward"),
    rule("unfold-matmul", "out = x M^T, M [n size, L] the one-hot of the positions each window reads",
         _UNFOLD.format(tiled="tiled"),
         "(Transpose fromlast (Reshape wins (MatMul (Transpose tolast x)"
         " (Transpose [1,0] (WindowOneHot n size step 1 len 0 x)))))", group="forward"),
    rule("unfold-bwd-tiled", "step = size: each position is read once at most: dy laid out again, zeros past the"
         " last window", _UNFOLD_BWD.format(tiled="1"), "(Pad ax 0 tail (Reshape merged (Transpose untake dy)))",
         group="backward"),
    rule("unfold-bwd-matmul", "dx = dy M, M [n size, L] the one-hot of the positions each window read",
         _UNFOLD_BWD.format(tiled="tiled"),
         "(Transpose back (MatMul (Reshape flatw (Transpose tolastdy dy)) (WindowOneHot n size step 1 len 0 dy)))",
         group="backward"),
    rule("col2im-separable", "dx = crop(Mh^T cols Mw), M the per-axis one-hot [K O, L + 2 p] of o stride + k dilation",
         _COL2IM.format(tiled="tiled"),
         _CROP.format(t="(MatMul (MatMul (Transpose [1,0] (WindowOneHot oh kh sh dh lh 1 cols))"
                        " (Reshape seps (Transpose [0,1,2,4,3,5] (Reshape six cols))))"
                        " (WindowOneHot ow kw sw dw lw 1 cols))"),
         group="forward"),
    rule("col2im-tiled", "kernel = stride, no dilation: each value at one position (a Transpose and Reshape),"
         " zeros past the last window, the padding cropped", _COL2IM.format(tiled="1"),
         _CROP.format(t="(Pad 3 0 aw (Pad 2 0 ah (Reshape tiles (Transpose [0,1,4,2,5,3] (Reshape six cols)))))"),
         group="forward"),
)
