"""A fuzzed training step as Python source, and the builder the strategies write it with.

A program is a module (`class Model`: its layers, parameters and buffers, its forward returning
the loss first and then the other results), `make()` (a fresh model and inputs, the same each
call: seeded, every layout made explicitly), `step()` (forward and backward), `KEEP` (the mapped aten
ops it asks the backend to run in PyTorch, cutting the graph around them) and `DTYPE`. The source
is the program: the fuzzer runs it, and a reproducer prints it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

HARNESS = (Path(__file__).parent / "harness.py").read_text()

STEP = '''def step(model, *inputs):
    results = model(*inputs)
    results[0].backward()
    return results'''


@dataclass(frozen=True)
class Program:
    source: str  # Model, make(), step(), KEEP, DTYPE
    dtype: str  # "float32", "float64", "bfloat16", "float16"
    keep: tuple[str, ...]
    features: frozenset[str]  # what it exercises: ops, layouts, views, mutations (for coverage counts)

    @property
    def half(self) -> bool:
        return self.dtype in ("bfloat16", "float16")

    @property
    def reference(self) -> bool:
        """Whether the same step in float64 is comparable (no dropout mask to draw) and more exact."""
        return self.dtype != "float64" and "dropout" not in self.features

    def namespace(self) -> dict[str, object]:
        """The program's definitions, run (harness's names included: torch, nn, F)."""
        ns: dict[str, object] = {}
        exec(compile(HARNESS + "\n" + self.source, "<fuzzed program>", "exec"), ns)
        return ns

    def reproducer(self, target: str) -> str:
        """A standalone script: runs the step eager and compiled for `target` and prints what differs."""
        main = f'''
if __name__ == "__main__":
    import warnings
    import egraph_lower.torch as elt
    want = run(make, step)
    ref = run(make, step, double=True) if REFERENCE else None
    once = [run(make, step, double=True, jitter=torch.finfo(DTYPE).eps / 2)] if REFERENCE else None
    if REFERENCE and DTYPE in HALF:
        once.append(run(make, step, once=True))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = run(make, step, elt.backend({target!r}, keep_in_pytorch=KEEP))
    print("\\n".join(compare(got, want, ref, once=once)) or "no difference")
'''
        return HARNESS + "\n\n# ---- the program\n" + self.source + "\n" + main

    def __repr__(self) -> str:  # what hypothesis prints of a falsifying example: the program itself
        return f"Program(dtype={self.dtype!r}, keep={self.keep!r}, source='''\n{self.source}''')"


@dataclass
class Val:
    """A value of the forward: its Python name, shape, kind ("f": the program's float dtype, "i": int64,
    "b": bool) and what the builder knows of it."""

    name: str
    shape: tuple[int, ...]
    kind: str = "f"
    grad: bool = False  # requires grad
    root: str | None = None  # the input whose storage it views (None: its own or an intermediate's)
    # True while no op but views used it (or what it views) since an op that saves no result for backward
    # made it: then an in-place op on it is legal in eager. Shared with its views.
    token: list[bool] = field(default_factory=lambda: [False])

    @property
    def fresh(self) -> bool:
        return self.token[0]

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n


@dataclass
class Input:
    val: Val
    make: str  # the expression that makes it
    mutable: bool  # an in-place op on it is legal in eager (no grad, no overlapping memory)


@dataclass
class Builder:
    dtype: str
    init: list[str] = field(default_factory=list)  # Model.__init__'s body
    layouts: list[str] = field(default_factory=list)  # make()'s lines after the model is made
    body: list[str] = field(default_factory=list)  # forward's body
    inputs: list[Input] = field(default_factory=list)
    pool: list[Val] = field(default_factory=list)
    keep: set[str] = field(default_factory=set)
    features: set[str] = field(default_factory=set)
    channels_last: bool = False
    counter: int = 0

    @property
    def dt(self) -> str:
        return f"torch.{self.dtype}"

    @property
    def half(self) -> bool:
        return self.dtype in ("bfloat16", "float16")

    def name(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def add(self, expr: str, shape: tuple[int, ...], kind: str = "f", *, grad: bool, feature: str,
            root: str | None = None, fresh: bool = False, token: list[bool] | None = None) -> Val:
        """A new value `expr`; `token`: it is a view sharing that value's freshness (else `fresh`)."""
        v = Val(self.name("h"), tuple(shape), kind, grad and kind == "f", root, token or [fresh])
        self.body.append(f"{v.name} = {expr}")
        self.pool.append(v)
        self.features.add(feature)
        return v

    def stmt(self, line: str, feature: str) -> None:
        self.body.append(line)
        self.features.add(feature)

    def module(self, ctor: str, feature: str) -> str:
        name = self.name("m")
        self.init.append(f"self.{name} = {ctor}")
        self.features.add(feature)
        return f"self.{name}"

    def param(self, shape: tuple[int, ...], layout: str = "contiguous") -> str:
        """A parameter made in `layout`: contiguous, transposed (its last two dims) or sliced (every other
        element of its last dim)."""
        name = self.name("p")
        dims = list(shape)
        if layout == "transposed" and len(dims) >= 2:
            dims[-1], dims[-2] = dims[-2], dims[-1]
            expr = f"torch.randn({tuple(dims)}, dtype={self.dt}).transpose(-1, -2)"
        elif layout == "sliced" and dims:
            dims[-1] = 2 * dims[-1]
            expr = f"torch.randn({tuple(dims)}, dtype={self.dt})[..., ::2]"
        else:
            layout = "contiguous"
            expr = f"torch.randn({tuple(dims)}, dtype={self.dt})"
        self.init.append(f"self.{name} = nn.Parameter({expr})")
        self.features.add(f"parameter {layout}")
        return f"self.{name}"

    def buffer(self, expr: str) -> str:
        name = self.name("b")
        self.init.append(f"self.register_buffer({name!r}, {expr})")
        return f"self.{name}"

    def input(self, shape: tuple[int, ...], kind: str, layout: str, grad: bool, high: int = 0) -> Val:
        """An input of the step made in `layout` (contiguous, channels_last, transposed, sliced, expanded)."""
        name = f"x{len(self.inputs)}"
        dims = list(shape)
        if kind == "i":
            expr, layout, grad = f"torch.randint(0, {max(high, 1)}, {tuple(dims)})", "contiguous", False
        elif kind == "b":
            expr, layout, grad = f"torch.rand({tuple(dims)}) > 0.5", "contiguous", False
        elif layout == "channels_last" and len(dims) == 4:
            expr = f"torch.randn({tuple(dims)}).to({self.dt}).to(memory_format=torch.channels_last)"
        elif layout == "transposed" and len(dims) >= 2:
            dims[-1], dims[-2] = dims[-2], dims[-1]
            expr = f"torch.randn({tuple(dims)}).to({self.dt}).transpose(-1, -2)"
        elif layout == "sliced" and dims:
            dims[0] = 2 * dims[0] + 1
            expr = f"torch.randn({tuple(dims)}).to({self.dt})[1::2]"
        elif layout == "expanded" and dims and dims[0] != 1:
            dims[0] = 1
            expr = f"torch.randn({tuple(dims)}).to({self.dt}).expand({tuple(shape)})"
        else:
            layout = "contiguous"
            expr = f"torch.randn({tuple(dims)}).to({self.dt})"
        if grad:
            expr += ".requires_grad_()"
        mutable = not grad and layout != "expanded" and kind == "f"
        v = Val(name, tuple(shape), kind, grad, root=name, token=[mutable])
        self.inputs.append(Input(v, expr, mutable))
        self.pool.append(v)
        self.features.add(f"input {layout}" + (" (int)" if kind == "i" else " (bool)" if kind == "b" else ""))
        return v

    def program(self, results: list[str], seed: int) -> Program:
        args = ", ".join(i.val.name for i in self.inputs)
        init = "\n".join(f"        {line}" for line in self.init) or "        pass"
        body = "\n".join(f"        {line}" for line in self.body)
        made = "\n".join(f"    {i.val.name} = {i.make}" for i in self.inputs)
        layouts = "\n".join(f"    {line}" for line in self.layouts)
        if self.channels_last:
            layouts = "    model = model.to(memory_format=torch.channels_last)\n" + layouts
        reference = self.dtype != "float64" and "dropout" not in self.features
        source = f'''class Model(nn.Module):
    def __init__(self):
        super().__init__()
{init}

    def forward(self, {args}):
{body}
        return ({", ".join(results)},)


def make():
    torch.manual_seed({seed})
    model = Model()
{layouts}
{made}
    return model, ({args},)
'''
        source = "\n".join(line for line in source.splitlines() if line.strip() or not line)
        return program_of(self.dtype, tuple(sorted(self.keep)), source.replace("\n\n\n\n", "\n\n\n"),
                          reference, frozenset(self.features))


def program_of(dtype: str, keep: tuple[str, ...], body: str, reference: bool = True,
               features: frozenset[str] = frozenset()) -> Program:
    """A program from its model and make() (`body`): the header (DTYPE, REFERENCE, KEEP) and the step
    every program has around it, as the fuzzer writes them (the regression tests and the findings
    are written the same way)."""
    source = (f"DTYPE = torch.{dtype}\nREFERENCE = {reference}  # the same step in float64 is comparable (no"
              f" dropout masks to draw)\nKEEP = {keep!r}\n\n\n{body.strip()}\n\n\n{STEP}\n")
    return Program(source, dtype, keep, features)
