"""The leaves: Input and Param (fed by name), Constant (a value in the document).

Their shape and dtype are declared by the node (no `infer`), and they have no
e-graph constructor of their own: each is loaded as `Leaf <id>` and copied as is.
"""

from __future__ import annotations

from ..feeds import _op_constant, _op_leaf
from .base import Attr, OpDef
from .meta import NAME, any_value

OPS: tuple[OpDef, ...] = (
    OpDef("Input", (), (Attr("name", NAME),), None, _op_leaf("Input"), (), domain=None, torch=None),
    OpDef("Param", (), (Attr("name", NAME),), None, _op_leaf("Param"), (), domain=None, torch=None),
    OpDef("Constant", (), (Attr("value", any_value),), None, _op_constant, (), domain=None, torch=None),
)
