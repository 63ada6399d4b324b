"""ModePad and ModePadBackward in copies (Slice, Flip, Concat, Expand, Pad), sums and adds.

Along the axis, x has n positions; the positive parts bp, ap of the padding are bands of `full` =
n + bp + ap (`opdefs/padding.py` computes every field from the attributes and the input's shape).
One rule per case of the bands (none, one position, more: the fields `lc`, `rc` the lhs fixes), so
that none copies a band it does not need (a one-position reflection needs no Flip, a one-position
replication no Expand, a one-position band's gradient no sum):

- `reflect-pad*`: [flip(x[1 : bp+1]), x, flip(x[n-1-ap : n-1])] concatenated (the end elements are
  not repeated).
- `replicate-pad*`: [x[0] expanded to bp, x, x[n-1] expanded to ap].
- `circular-pad*`: [x[n-bp : n], x, x[0 : ap]].
- `*-crop` (Reflect and Replicate with a negative pad): the padding by the positive parts, then the
  slice [cs, ce) of it that the negative ones leave.
- `reflect-pad-bwd*`: dx = dy[bp : bp+n] + the left band's gradient flipped and put at [1, bp+1)
  + the right band's flipped and put at [n-1-ap, n-1) (each put by a zero Pad): every output
  position adds into the position it read.
- `replicate-pad-bwd*`: dx = dy[bp : bp+n] + the left band summed into position 0 + the right band
  summed into position n-1.
- `circular-pad-bwd*`: dx = dy[bp : bp+n] + the left band put at [n-bp, n) + the right band at [0, ap).
- `*-bwd-*-crop`: dy padded with zeros where the crop dropped positions (the gradient of the slice),
  then the gradient of the padding by the positive parts.
- The case of no band and no crop (a padding of (0, 0)) is x, and its gradient dy.
"""

from __future__ import annotations

from ..opdefs.padding import ctor_name, fields
from .dsl import Rule, rule

_BANDS = {"Reflect": (0, 1, 2), "Replicate": (0, 1, 2), "Circular": (0, 1)}
_CASE = {0: "0", 1: "1", 2: "n"}  # a band of none, one position, more


def _node(mode: str, backward: bool, child: str, **fixed: object) -> str:
    """A mode's pattern, its fields by name, some of them fixed (a literal, or another field's variable)."""
    names = [str(fixed.get(f.name, f.name)) for f in fields(mode, backward)]
    return f"({ctor_name(mode, backward)} {' '.join(names)} {child})"


# the forward's left and right bands, by case (1: one position, 2: more)
_FORWARD: dict[str, tuple[dict[int, str], dict[int, str]]] = {
    "Reflect": ({1: "(Slice axis 1 2 1 x)", 2: "(Flip axis lflip (Slice axis 1 l1 1 x))"},
                {1: "(Slice axis -2 -1 1 x)", 2: "(Flip axis rflip (Slice axis rs -1 1 x))"}),
    "Replicate": ({1: "(Slice axis 0 1 1 x)", 2: "(Expand lshape (Slice axis 0 1 1 x))"},
                  {1: "(Slice axis edge n 1 x)", 2: "(Expand rshape (Slice axis edge n 1 x))"}),
    "Circular": ({1: "(Slice axis cl n 1 x)"}, {1: "(Slice axis 0 ap 1 x)"}),
}
# the backward's: each band's gradient put where it adds into dx
_BACKWARD: dict[str, tuple[dict[int, str], dict[int, str]]] = {
    "Reflect": ({1: "(Pad axis 1 lrest (Slice axis 0 1 1 dy))",
                 2: "(Pad axis 1 lrest (Flip axis lflip (Slice axis 0 bp 1 dy)))"},
                {1: "(Pad axis rpre 1 (Slice axis bpn full 1 dy))",
                 2: "(Pad axis rpre 1 (Flip axis rflip (Slice axis bpn full 1 dy)))"}),
    "Replicate": ({1: "(Pad axis 0 edge (Slice axis 0 1 1 dy))",
                   2: "(Pad axis 0 edge (Reduce.Sum axes 1 (Slice axis 0 bp 1 dy)))"},
                  {1: "(Pad axis edge 0 (Slice axis bpn full 1 dy))",
                   2: "(Pad axis edge 0 (Reduce.Sum axes 1 (Slice axis bpn full 1 dy)))"}),
    "Circular": ({1: "(Pad axis nmb 0 (Slice axis 0 bp 1 dy))"}, {1: "(Pad axis 0 nma (Slice axis bpn full 1 dy))"}),
}
# what each band is, for the identities
_SAY = {"Reflect": ({1: "x[1]", 2: "flip(x[1:bp+1])"}, {1: "x[n-2]", 2: "flip(x[n-1-ap:n-1])"}),
        "Replicate": ({1: "x[0]", 2: "x[0] repeated bp times"}, {1: "x[n-1]", 2: "x[n-1] repeated ap times"}),
        "Circular": ({1: "x[n-bp:]"}, {1: "x[:ap]"})}
_SAY_BWD = {"Reflect": ({1: "dy[0] at 1", 2: "flip(dy[:bp]) at [1, bp+1)"},
                        {1: "dy[bp+n] at n-2", 2: "flip(dy[bp+n:]) at [n-1-ap, n-1)"}),
            "Replicate": ({1: "dy[0] at 0", 2: "sum(dy[:bp]) at 0"},
                          {1: "dy[bp+n] at n-1", 2: "sum(dy[bp+n:]) at n-1"}),
            "Circular": ({1: "dy[:bp] at [n-bp, n)"}, {1: "dy[bp+n:] at [0, ap)"})}


def _name(mode: str, lc: int, rc: int, crop: int, backward: bool) -> str:
    case = f"{_CASE[lc]}{_CASE[rc]}" if lc or rc else "none"
    return f"{mode.lower()}-pad-{'bwd-' if backward else ''}{case}{'-crop' if crop else ''}"


def _forward(mode: str, lc: int, rc: int, crop: int) -> Rule:
    left, right = (_FORWARD[mode][0].get(lc), _FORWARD[mode][1].get(rc))
    parts = [p for p in (left, "x", right) if p]
    rhs = parts[0]
    for p in parts[1:]:
        rhs = f"(Concat axis {rhs} {p})"
    say = ", ".join(s for s in (_SAY[mode][0].get(lc), "x", _SAY[mode][1].get(rc)) if s)
    if crop:
        rhs, say = f"(Slice axis cs ce 1 {rhs})", f"[{say}][cs:ce] (a negative pad crops)"
    else:
        say = f"[{say}]"
    identity = f"{mode.lower()} pad{'' if lc or rc or crop else ' by (0, 0)'}(x) = {say} along the axis"
    return rule(_name(mode, lc, rc, crop, False), identity, _node(mode, False, "x", lc=lc, rc=rc, crop=crop), rhs,
                group="forward")


def _backward(mode: str, lc: int, rc: int, crop: int) -> Rule:
    g = "g" if crop else "dy"
    rhs = g if not (lc or rc) else f"(Slice axis bp bpn 1 {g})"
    for band in (_BACKWARD[mode][0].get(lc), _BACKWARD[mode][1].get(rc)):
        if band:
            rhs = f"(+ {rhs} {band.replace(' dy)', f' {g})')})"
    say = [s for s in (_SAY_BWD[mode][0].get(lc), _SAY_BWD[mode][1].get(rc)) if s]
    identity = f"d {mode.lower()} pad: dx = " + (" + ".join(["dy[bp:bp+n]"] + say) if say else "dy")
    if crop:
        identity = identity.replace("dy", "g") + ", g = dy zero-padded where a negative pad cropped"
    return rule(_name(mode, lc, rc, crop, True), identity, _node(mode, True, "dy", lc=lc, rc=rc, crop=crop), rhs,
                group="backward", lets={"g": "(Pad axis cs ca dy)"} if crop else None)


RULES: tuple[Rule, ...] = tuple(
    r for mode in ("Reflect", "Replicate", "Circular")
    for crop in ((0, 1) if mode != "Circular" else (0,))
    for lc in _BANDS[mode] for rc in _BANDS[mode] if not (crop and lc and rc)  # a crop leaves a side no band
    for r in (_forward(mode, lc, rc, crop), _backward(mode, lc, rc, crop))
)
