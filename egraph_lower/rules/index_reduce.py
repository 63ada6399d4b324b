"""IndexReduce in ScatterReduce, for backends without an index_reduce kernel (every one but cpu).

`index-reduce-scatter`: index_reduce(x, axis, index [K], src, reduce, include_self) is the scatter_reduce
of the index reshaped to [1, .., K, .., 1] (`icol`) and expanded to src's shape (`ishape`): position q of
src writes x's position q with q[axis] := index[q[axis]], which is what index_reduce reduces there. The
fields of the ScatterReduce are the lhs's own (computed for that expanded index: `opdefs/index_reduce.py`),
so ScatterReduce's expansions (`rules/scatter.py`) follow for a backend without its kernel too.
"""

from __future__ import annotations

from .dsl import Rule, rule

_F = "axis flat xshape nshape all paxes cut iflat ishape"

RULES: tuple[Rule, ...] = (
    rule("index-reduce-scatter", "index_reduce(x, axis, index, src) = scatter_reduce(x, axis, expand(index as "
         "[1,..,K,..,1], src.shape), src), the same reduction and include_self",
         f"(IndexReduce reduce inc {_F} icol x index src)",
         f"(ScatterReduce reduce inc {_F} x (Expand ishape (Reshape icol index)) src)", group="forward"),
)
