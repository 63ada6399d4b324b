"""In-place ops (on intermediates, on views of them and of inputs), mutated inputs and buffers, and
the step's results: its loss and the values it returns besides (views, integers, booleans, an
input as it is, one value twice)."""

from __future__ import annotations

from hypothesis import strategies as st

from .ops import Draw, op
from .program import Builder, Val

IN_PLACE = [("{}.add_(1.0)", True), ("{}.mul_(0.5)", True), ("{}.relu_()", False), ("{}.clamp_(-1.0, 1.0)", False),
            ("{}[..., 0] = 0.0", True), ("{}.sigmoid_()", True)]


@op("in-place", lambda b, v: v.fresh and v.kind == "f" and v.numel > 0 and (v.root is None or not v.grad))
def _in_place(draw: Draw, b: Builder, v: Val) -> None:
    form = draw(st.sampled_from([f for f, smooth in IN_PLACE if smooth or not b.half]))
    if "[" in form and (v.rank == 0 or v.shape[-1] == 0):
        return
    what = "input (through a view)" if v.root else "intermediate"
    b.stmt(form.format(v.name), f"in-place {form.format('x')} on an {what}")
    v.token[0] = False


def mutate_input(draw: Draw, b: Builder, x: Val) -> None:
    """An input mutated first thing in the forward (so no op saved it before)."""
    forms = ["{}.mul_(0.5)", "{}.add_(1.0)"]
    if x.rank >= 1 and x.shape[0] >= 1:
        forms.append("{}[0] = 1.5")
    form = draw(st.sampled_from(forms))
    b.stmt(form.format(x.name), "input mutated " + form.format("x"))


def mutate_buffers(draw: Draw, b: Builder, v: Val) -> None:
    """A step counter and a running average of `v` (detached), as training code keeps them."""
    if draw(st.booleans()):
        steps = b.buffer("torch.zeros((), dtype=torch.int64)")
        b.stmt(f"{steps} += 1", "buffer mutated (int counter)")
    if draw(st.booleans()) and v.kind == "f":
        ema = b.buffer(f"torch.ones((), dtype={b.dt})")
        # Two statements: PyTorch's compiler path loses the add_ of a chained `b.mul_(0.9).add_(...)` on a
        # buffer (aot_eager leaves b * 0.9, torch 2.13), which is not what this fuzzer is after.
        b.stmt(f"{ema}.mul_(0.9)", "buffer mutated (running average)")
        b.stmt(f"{ema}.add_({v.name}.detach().mean() * 0.1)", "buffer mutated (running average)")


def loss(draw: Draw, b: Builder, v: Val) -> str:
    """The loss of `v`: a scalar that needs grad (eager refuses the step otherwise: it is not run)."""
    forms = ["sum", "square mean", "mse", "squared error"]
    if v.rank >= 2 and v.shape[1] >= 1:
        forms += ["cross entropy", "nll"]
    form = draw(st.sampled_from(forms))
    if form == "sum":
        expr = f"{v.name}.sum()"
    elif form == "square mean":
        expr = f"{v.name}.pow(2).mean()"
    elif form in ("mse", "squared error"):
        target = b.input(v.shape, "f", draw(st.sampled_from(["contiguous", "transposed", "sliced"])), False)
        reduction = draw(st.sampled_from(["mean", "sum"]))
        expr = (f"F.mse_loss({v.name}, {target.name}, reduction={reduction!r})" if form == "mse"
                else f"(({v.name} - {target.name}) ** 2).{reduction}()")
    else:
        c = v.shape[1]
        labels = b.input(v.shape[:1] + v.shape[2:], "i", "contiguous", False, high=c)
        if form == "nll":
            expr = f"F.nll_loss(F.log_softmax({v.name}, 1), {labels.name})"
        else:
            smoothing = draw(st.sampled_from([0.0, 0.1]))
            expr = f"F.cross_entropy({v.name}, {labels.name}, label_smoothing={smoothing})"
        b.keep.update(draw(st.sets(st.sampled_from(["aten.nll_loss_forward", "aten.nll_loss_backward",
                                                    "aten.nll_loss2d_forward", "aten._log_softmax"]), max_size=1)))
    b.features.add(f"loss {form}")
    name = b.name("loss")
    b.body.append(f"{name} = {expr}")
    return name


def extra(draw: Draw, b: Builder) -> str:
    """One more result: a value, a view of one, a detached one, an integer or boolean one, or an input."""
    floats = [u for u in b.pool if u.kind == "f"]
    v = draw(st.sampled_from(floats[::-1]))
    forms = ["{}", "{}.detach()", "input", "bool"]
    if v.rank >= 2:
        forms.append("{}.t()" if v.rank == 2 else "{}.transpose(0, 1)")
    if v.rank >= 1 and v.shape[0] >= 1:
        forms.append("{}[0]")
    if v.rank >= 1 and v.numel > 0 and not b.half:
        forms.append("argmax")
    form = draw(st.sampled_from(forms))
    if form == "input":
        x = draw(st.sampled_from([i.val for i in b.inputs]))
        b.features.add("result: an input as it is")
        return x.name
    if form == "bool":
        b.features.add("result: bool")
        return f"{v.name} > 0"
    if form == "argmax":
        b.features.add("result: int64 (argmax)")
        return f"{v.name}.argmax(-1)"
    b.features.add("result: " + form.format("x"))
    return form.format(v.name)
