"""The differential fuzzer of training steps on every CI run: a bounded number of fuzzed steps (the
same ones each run: derandomized) per target, each compiled with the backend and compared with eager
(`fuzzing.check`); `bench/fuzz_torch.py` runs thousands. A step that raises or differs fails with
the program and a standalone reproducer (hypothesis shrinks it first).
"""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")

from hypothesis import HealthCheck, given, reject, settings  # noqa: E402

from fuzzing.check import Outcome, check, eager_states  # noqa: E402
from fuzzing.program import Program  # noqa: E402
from fuzzing.strategies import programs  # noqa: E402

pytestmark = pytest.mark.usefixtures("fresh_dynamo")

EXAMPLES = 12  # per target: 60 to 100 s each under a load of 10 on 2 cores, a third of that quiet


def _check(program: Program, target: str) -> None:
    eager = eager_states(program)
    if isinstance(eager, Outcome):  # eager refuses it: not a program
        reject()
    outcome = check(program, target, eager)
    assert outcome.status in ("ok", "pytorch"), (
        f"{outcome.kind}\n" + "\n".join(outcome.detail) + f"\n\nreproducer:\n{program.reproducer(target)}")


@pytest.mark.parametrize("target", ["cpu", "metal", "wgpu"])
def test_fuzzed_training_steps_match_eager(target: str) -> None:
    @settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(programs())
    def fuzz(program: Program) -> None:
        _check(program, target)

    fuzz()


def _state(**values: object) -> dict[str, object]:
    return {k.replace("_", " "): v for k, v in values.items()}


G = torch.tensor([[0.2, -0.1], [0.05, 0.3]])
CASES = [  # (got, want, ref, what compare must say: a substring, or "" for nothing)
    (_state(gradient_of_w=G * 1.5), _state(gradient_of_w=G), None, "gradient of w: 4 of 4 values differ"),
    (_state(gradient_of_w=G.t().contiguous().t()), _state(gradient_of_w=G), None, "strides (1, 2)"),
    (_state(result_0=G.double()), _state(result_0=G), None, "dtype"),
    (_state(result_1=torch.tensor([1, 2])), _state(result_1=torch.tensor([1, 3])), None, "1 of 2 elements"),
    (_state(gradient_of_w=None), _state(gradient_of_w=G), None, "None where eager has"),
    (_state(aliasing_of_result_1="is [], shares storage with []"),
     _state(aliasing_of_result_1="is ['input 0'], shares storage with ['input 0']"), None, "aliasing of result 1"),
    (_state(result_0=G + 1e-6), _state(result_0=G), None, ""),  # within float32's tolerance
    (_state(result_0=torch.full((2,), float("nan"))), _state(result_0=torch.full((2,), float("nan"))), None, ""),
    # rounding noise about a gradient that is 0: eager's is as far from the float64 step as the other's
    (_state(gradient_of_w=torch.tensor([2e-6, -1e-6])), _state(gradient_of_w=torch.tensor([-8e-6, 3e-6])),
     _state(gradient_of_w=torch.tensor([0.0, 0.0], dtype=torch.float64)), ""),
    (_state(gradient_of_w=torch.tensor([0.5, -1e-6])), _state(gradient_of_w=torch.tensor([-8e-6, 3e-6])),
     _state(gradient_of_w=torch.tensor([0.0, 0.0], dtype=torch.float64)), "1 of 2 values differ"),
]


@pytest.mark.parametrize(("got", "want", "ref", "says"), CASES)
def test_the_comparison_sees_what_differs(got: dict[str, object], want: dict[str, object],
                                          ref: dict[str, object] | None, says: str) -> None:
    from fuzzing.program import HARNESS

    ns: dict[str, object] = {}
    exec(HARNESS, ns)
    diffs = ns["compare"](got, want, ref)  # type: ignore[operator]
    assert (says in "\n".join(diffs)) if says else diffs == [], diffs


def test_a_step_that_raises_is_a_failure() -> None:
    """A backend that raises is a failure of the step, not of PyTorch (aot_eager runs it)."""
    from hypothesis import find

    def broken(gm: object, example_inputs: object) -> object:
        raise RuntimeError("a broken backend")

    program = find(programs(), lambda p: "nn.Linear" in p.source and not p.half)
    outcome = check(program, "broken", backend=broken)
    assert outcome.status == "raised" and "a broken backend" in outcome.kind, outcome


H = torch.float16
LUCKY = dict(  # finding 3 of seed 0 (tests/fuzzing/findings/seed0.py): an embedding's gradient, a sum of four
    # terms of about 0.5 that cancel to 0.034. Eager's CPU kernel sums them in half and its roundings cancel
    # too (exact); computed exactly and rounded once, as the backend does, it is 16 ulps of 0.034 away
    want=_state(gradient_of_w=torch.tensor([0.0, 0.0341796875], dtype=H)),
    ref=_state(gradient_of_w=torch.tensor([0.0, 0.0341796875], dtype=torch.float64)),
    once=_state(gradient_of_w=torch.tensor([0.0, 0.03466796875], dtype=H)))


@pytest.mark.parametrize(("got", "once", "says"), [
    (torch.tensor([0.0, 0.03466796875], dtype=H), LUCKY["once"], ""),  # the step rounded once per op
    (torch.tensor([0.0, 0.03466796875], dtype=H), None, "1 of 2 values differ"),  # eager's luck alone
    (torch.tensor([0.0, 0.0361328125], dtype=H), LUCKY["once"], "1 of 2 values differ"),  # 4 times once's error
    (torch.tensor([0.002, 0.0341796875], dtype=H), LUCKY["once"], "1 of 2 values differ"),  # a 0 that is not
])
def test_half_values_are_judged_against_float64_by_eager_and_by_rounding_once(
        got: torch.Tensor, once: dict[str, object] | None, says: str) -> None:
    from fuzzing.program import HARNESS

    ns: dict[str, object] = {}
    exec(HARNESS, ns)
    diffs = ns["compare"](_state(gradient_of_w=got), LUCKY["want"], LUCKY["ref"], once=once)  # type: ignore[operator]
    assert (says in "\n".join(diffs)) if says else diffs == [], diffs


def test_a_half_gradient_summed_in_half_is_caught() -> None:
    """A lowering that summed a gradient in bf16 (rounding after every add, where PyTorch's sum accumulates
    in float32 and rounds once) is wrong in half precision, and the comparison says so, with the float64
    step and the step rounded once per op (`RoundOnce`) both at hand; the step rounded once passes."""
    from fuzzing.program import HARNESS

    ns: dict[str, Any] = {}
    exec(HARNESS, ns)

    class Scale(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.p = torch.nn.Parameter(torch.ones((), dtype=torch.bfloat16))

        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor]:
            return ((x * self.p).sum(),)

    def make() -> tuple[torch.nn.Module, tuple[torch.Tensor]]:
        torch.manual_seed(0)
        return Scale(), (torch.randn(4096).to(torch.bfloat16),)

    def step(model: torch.nn.Module, *inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        results = model(*inputs)
        results[0].backward()
        return results

    run, compare = ns["run"], ns["compare"]
    want, ref, once = run(make, step), run(make, step, double=True), run(make, step, once=True)
    acc = torch.zeros((), dtype=torch.bfloat16)
    for v in make()[1][0]:
        acc = acc + v  # rounds to bf16 at each of the 4096 adds
    assert abs(float(once["gradient of p"]) - float(ref["gradient of p"])) < 0.2  # once: one rounding of 39.4
    assert compare(once, want, ref, once=once) == []
    diffs = compare({**want, "gradient of p": acc}, want, ref, once=once)
    assert diffs and diffs[0].startswith("gradient of p: 1 of 1 values differ"), diffs


def test_a_float32_gradient_off_by_more_than_rounding_is_caught() -> None:
    """In float32 the second draw of noise is the float64 step with each op's result moved by one random
    rounding (`Jitter`): it forgives a value that cancels to about 0, never a well-conditioned one that
    is off. A linear layer's weight gradient 1e-3 off (relative) differs; the jittered step itself, and
    eager, pass."""
    from fuzzing.program import HARNESS

    ns: dict[str, Any] = {}
    exec(HARNESS, ns)

    def make() -> tuple[torch.nn.Module, tuple[torch.Tensor]]:
        torch.manual_seed(0)
        return torch.nn.Linear(8, 3), (torch.randn(16, 8),)

    def step(model: torch.nn.Module, *inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        loss = (model(*inputs) ** 2).sum()
        loss.backward()
        return (loss,)

    run, compare = ns["run"], ns["compare"]
    eps = torch.finfo(torch.float32).eps / 2
    want, ref, noise = run(make, step), run(make, step, double=True), run(make, step, double=True, jitter=eps)
    k = "gradient of weight"
    assert 0 < float((noise[k] - ref[k]).abs().max()) < 1e-5  # it moved, by about a rounding
    assert compare(want, want, ref, once=noise) == []
    assert compare({**want, k: noise[k].float()}, want, ref, once=noise) == []
    diffs = compare({**want, k: want[k] * (1 + 1e-3)}, want, ref, once=noise)
    assert diffs and diffs[0].startswith("gradient of weight:"), diffs
