"""A backend file's own kernels and rules.

    "kernels": [{"name": "layer_norm_backward",
                 "description": "...",                                      optional
                 "inputs": ["x", "w", "mean", "rstd", "dy"],                the pattern's tensor variables
                 "outputs": ["(LnBwdInput axis axes x w mean rstd dy)",     what each output computes,
                             "(LnBwdWeight axis lead x mean rstd dy)",      in the rule notation
                             "(LnBwdBias axis lead dy)"],
                 "cost": {"launch": 1, "bytes": 1, "work": 12},             optional, these defaults but work 1
                 "dtypes": ["f32", "f16", "bf16"],                          optional: the dtypes it takes
                 "check": {"x": [4, 8], "axes": "[1]", ...}}],               optional: a sample to check it on
    "rules": [{"name": "...", "identity": "...", "lhs": "(...)", "rhs": "(...)"}]

A kernel becomes one lowering rule (`KernelRule`): where every output's pattern matches (on the same
variables), each output's e-class gains a `Kernel` e-node of that output (`language.kernel_ctor`),
which the backend runs; extraction then takes the kernel where it is cheaper than what it replaces.
Its cost, in the backend's model: `launch` launches, `bytes` times the bytes it reads (its inputs
once) and writes (its outputs), `work` units of work per element of its largest input. Each output
is a node of its own, priced at its share: 1/n of the launches, the reads and the work, and its own
write; a backend runs the outputs of one kernel on the same inputs as one launch.

Half precision: an f16/bf16 node that rules expand is loaded as its kernel-only twin and as the op
computed in float32 between casts (`egraph/load.py`). A kernel's rule matches the latter (the kernel in
float32, between casts), and its `-half` variant (`kernel-<name>-half`, where the pattern's ops have
twins) the twins: the kernel in the low dtype, reading and writing f16/bf16 as a fused kernel does,
which its `dtypes` must list. A kernel of every output matched together needs every output in the graph
(a layer norm without a bias has no `LnBwdBias`).

A backend's rules are rewrites like the built-in ones (`rules/`), applied only when lowering for it
(in every lowering for it, not only where it lacks an op). `egraph-lower rules --check --backend FILE`
checks them like the built-in ones, each on the domain of its left-hand side's op (so it names its
variables as the built-in rules of that op do), and checks each kernel output against its pattern on
that domain or on its `check` sample.

Any error in a declaration is one line naming the backend, the kernel or rule, and the problem.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..dtypes import DTYPES
from .cost import MAX_COST, KernelCost
from ..egraph.language import CTORS, TWINS, kernel_ctor
from ..errors import BackendError
from ..opdefs import OPDEFS
from ..opdefs.kernel import MAX_KERNEL_INPUTS, NAME, VARIABLE
from ..rules.dsl import App, Rule, Term, Var, apps, rule, to_egglog

MAX_KERNELS = 64
MAX_RULES = 256
MAX_OUTPUTS = 8
_KERNEL_KEYS = {"name", "description", "inputs", "outputs", "cost", "dtypes", "check"}
_KERNEL_COST_KEYS = {"launch", "bytes", "work"}
_RULE_KEYS = {"name", "identity", "lhs", "rhs"}
_OUT = "kernel_out_"  # the variables of a multi-output kernel's rule that hold its outputs' e-classes
BACKEND_GROUP = "backend"  # the group of a backend file's rules


@dataclass(frozen=True)
class KernelDecl:
    """One fused kernel of a backend file."""

    name: str
    description: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]  # each output's pattern, as written
    terms: tuple[App, ...]  # parsed
    sorts: tuple[tuple[str, str], ...]  # its primitive variables and their egglog sorts
    cost: KernelCost
    check: Mapping[str, Any] | None = field(default=None, compare=False)

    @property
    def ctors(self) -> tuple[str, ...]:
        """The constructor of each output (`language.kernel_ctor`)."""
        return tuple(kernel_ctor(self.name, self.inputs, text, i, dict(self.sorts)).name
                     for i, text in enumerate(self.outputs))

    def rhs(self, i: int) -> App:
        """The `Kernel` e-node of output `i`, over the kernel's inputs and primitive variables."""
        return App(self.ctors[i], tuple(name for name, _ in self.sorts), tuple(Var(v) for v in self.inputs))

    @property
    def rules(self) -> tuple[KernelRule, ...]:
        """Its rule, and where a pattern's ops have kernel-only twins, the same rule on the twins
        (`kernel-<name>-half`): an f16/bf16 node that rules expand is loaded as its twin next to the op
        computed in float32 between casts (`egraph/load.py`), and this one takes the kernel in the low
        dtype itself, reading and writing f16/bf16 as a fused kernel does."""
        out = [self._rule(f"kernel-{self.name}", self.terms)]
        twinned = tuple(_twinned(t) for t in self.terms)
        if twinned != self.terms:
            out.append(self._rule(f"kernel-{self.name}-half", twinned))
        return tuple(out)

    def _rule(self, name: str, terms: tuple[App, ...]) -> KernelRule:
        return KernelRule(name, f"the backend's kernel {self.name}", terms[0], self.rhs(0), BACKEND_GROUP,
                          (self.outputs[0], ""), more=tuple((terms[i], self.rhs(i)) for i in range(1, len(terms))))


def _twinned(t: Term) -> Any:
    """The pattern with each op that has a kernel-only twin (`language.TWINS`) spelled as its twin."""
    if not isinstance(t, App):
        return t
    return App(TWINS.get(t.ctor, t.ctor), t.params, tuple(_twinned(a) for a in t.args))


@dataclass(frozen=True)
class KernelRule(Rule):
    """A kernel as a rule: every output's pattern matched together, each output's class given the
    kernel's e-node of that output (a plain rewrite for a kernel of one output)."""

    more: tuple[tuple[Term, App], ...] = field(default=(), compare=False)

    @property
    def pairs(self) -> tuple[tuple[Term, Term], ...]:
        return ((self.lhs, self.rhs), *self.more)

    @property
    def ctors(self) -> frozenset[str]:  # type: ignore[override]
        return frozenset(a.ctor for lhs, rhs in self.pairs for a in apps(lhs) + apps(rhs))

    @property
    def rhs_apps(self) -> frozenset[App]:  # type: ignore[override]
        return frozenset(a for _, rhs in self.pairs for a in apps(rhs))

    def egglog(self, ruleset: str) -> str:
        if not self.more:
            return super().egglog(ruleset)
        facts = " ".join(f"(= {_OUT}{i} {to_egglog(lhs)})" for i, (lhs, _) in enumerate(self.pairs))
        actions = " ".join(f"(union {_OUT}{i} {to_egglog(rhs)})" for i, (_, rhs) in enumerate(self.pairs))
        return f"(rule ({facts})\n      ({actions})\n      :ruleset {ruleset} :name \"{self.name}\")"


def _fail(where: str, message: str) -> BackendError:
    return BackendError(f"backend {where}: {message}")


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def _text(doc: Mapping[str, Any], key: str, where: str, longest: int = 4000, required: bool = True) -> str:
    value = doc.get(key, "" if not required else None)
    if not isinstance(value, str) or (required and not value) or len(value) > longest:
        raise _fail(where, f"{key} must be a {'non-empty ' if required else ''}string of at most {longest} characters")
    return value


def _parsed(text: str, where: str) -> App:
    from ..patterns import parsed

    try:
        return parsed(text)  # type: ignore[return-value]
    except (SyntaxError, KeyError) as e:
        raise _fail(where, str(e).replace("\n", " ")) from None


def kernels(value: Any, where: str) -> tuple[KernelDecl, ...]:
    if not isinstance(value, list) or len(value) > MAX_KERNELS:
        raise _fail(where, f"kernels must be a list of at most {MAX_KERNELS} kernel objects")
    out = [_kernel(k, f"{where}", i) for i, k in enumerate(value)]
    names = [k.name for k in out]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup is not None:
        raise _fail(where, f"two kernels are named {dup!r}")
    return tuple(out)


def _named_object(doc: Any, where: str, kind: str, index: int, keys: set[str]) -> tuple[str, str]:
    """A kernel's or rule's object of a backend file: its name (checked) and where it is, for errors;
    refused if it is no object or has a key other than `keys`."""
    if not isinstance(doc, dict):
        raise _fail(where, f"{kind}s[{index}] must be an object")
    name = doc.get("name")
    if not isinstance(name, str) or not NAME.match(name):
        raise _fail(where, f"{kind}s[{index}]: name must be a letter, then letters, digits, _ . - (at most 100),"
                           f" not {_short(name)}")
    at = f"{where}: {kind} {name}"
    unknown = sorted(set(doc) - keys)
    if unknown:
        raise _fail(at, f"unknown key {_short(unknown[0])}")
    return name, at


def _kernel(doc: Any, backend: str, index: int) -> KernelDecl:
    from ..patterns import primitive_sorts, tensor_variables

    name, where = _named_object(doc, backend, "kernel", index, _KERNEL_KEYS)
    inputs = doc.get("inputs")
    if (not isinstance(inputs, list) or not 1 <= len(inputs) <= MAX_KERNEL_INPUTS
            or not all(isinstance(v, str) and VARIABLE.match(v) and not v.startswith(_OUT) for v in inputs)
            or len(set(inputs)) != len(inputs)):
        raise _fail(where, f"inputs must be a list of 1 to {MAX_KERNEL_INPUTS} distinct lower-case variable names")
    outputs = doc.get("outputs")
    if not isinstance(outputs, list) or not 1 <= len(outputs) <= MAX_OUTPUTS or not all(isinstance(o, str) for o in outputs):
        raise _fail(where, f"outputs must be a list of 1 to {MAX_OUTPUTS} patterns (strings in the rule notation)")
    terms = tuple(_parsed(o, f"{where}: outputs[{i}]") for i, o in enumerate(outputs))
    used: set[str] = set()
    sorts: dict[str, str] = {}
    for i, t in enumerate(terms):
        if t.ctor not in CTORS:
            raise _fail(where, f"outputs[{i}] must apply an op of the format, not be a literal")
        tensors = tensor_variables(t)
        extra = [v for v in tensors if v not in inputs]
        if extra:
            raise _fail(where, f"outputs[{i}]: variable {extra[0]!r} is not one of the inputs {inputs}")
        used.update(tensors)
        try:
            for k, s in primitive_sorts(t).items():
                if sorts.setdefault(k, s) != s:
                    raise ValueError(f"variable {k!r} stands for a {sorts[k]} and a {s}")
        except ValueError as e:
            raise _fail(where, f"outputs[{i}]: {e}") from None
    both = sorted(set(sorts) & set(inputs))
    if both:
        raise _fail(where, f"variable {both[0]!r} is an input and a primitive field")
    unused = [v for v in inputs if v not in used]
    if unused:
        raise _fail(where, f"input {unused[0]!r} is used by no output")
    if len(set(outputs)) != len(outputs):
        raise _fail(where, "two outputs have the same pattern")
    cost = _kernel_cost(doc.get("cost", {}), doc.get("dtypes"), len(outputs), where)
    check = doc.get("check")
    if check is not None and not isinstance(check, dict):
        raise _fail(where, "check must be an object: each variable's shape (a list) or value")
    return KernelDecl(name, _text(doc, "description", where, required=False), tuple(inputs), tuple(outputs), terms,
                      tuple(sorted(sorts.items())), cost, check)


def _kernel_cost(cost: Any, dtypes: Any, outputs: int, where: str) -> KernelCost:
    if not isinstance(cost, dict):
        raise _fail(where, "cost must be an object")
    unknown = sorted(set(cost) - _KERNEL_COST_KEYS)
    if unknown:
        raise _fail(where, f"unknown cost key {_short(unknown[0])}: use launch, bytes, work")
    values = {}
    for key in _KERNEL_COST_KEYS:
        v = cost.get(key, 1.0)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= MAX_COST:
            raise _fail(where, f"cost.{key} must be a number from 0 to {MAX_COST:g}, not {_short(v)}")
        values[key] = float(v)
    taken: frozenset[str] | None = None
    if dtypes is not None:
        if not isinstance(dtypes, list) or not dtypes or not all(isinstance(d, str) for d in dtypes):
            raise _fail(where, "dtypes must be a non-empty list of dtype names")
        bad = [d for d in dtypes if d not in DTYPES]
        if bad:
            raise _fail(where, f"unknown dtype {_short(bad[0])}")
        taken = frozenset(dtypes)
    return KernelCost(values["launch"], values["bytes"], values["work"], outputs, taken,
                      where.rsplit(": kernel ", 1)[-1])


def rules(value: Any, where: str) -> tuple[Rule, ...]:
    from ..rules import BY_NAME

    if not isinstance(value, list) or len(value) > MAX_RULES:
        raise _fail(where, f"rules must be a list of at most {MAX_RULES} rule objects")
    out: list[Rule] = []
    for i, doc in enumerate(value):
        name, at = _named_object(doc, where, "rule", i, _RULE_KEYS)
        if name in BY_NAME or any(r.name == name for r in out):
            raise _fail(at, "a rule of that name exists already" if name in BY_NAME else "two rules have this name")
        texts = [_text(doc, k, at) for k in ("lhs", "rhs")]
        try:
            made = rule(name, _text(doc, "identity", at, required=False), texts[0], texts[1], group=BACKEND_GROUP)
        except (SyntaxError, KeyError, IndexError) as e:
            raise _fail(at, str(e).replace("\n", " ")) from None
        lhs_op = CTORS[made.lhs.ctor].op if isinstance(made.lhs, App) and made.lhs.ctor in CTORS else None
        if lhs_op is None:
            raise _fail(at, "the left-hand side must apply an op of the format, not be a literal")
        if OPDEFS[lhs_op].domain is None:
            raise _fail(at, f"{lhs_op} has no checker domain (OpDef.domain), so no rule on it can be checked")
        out.append(made)
    return tuple(out)
