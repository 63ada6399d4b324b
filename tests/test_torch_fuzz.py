"""The differential fuzzer of training steps on every CI run: a bounded number of fuzzed steps (the
same ones each run: derandomized) per target, each compiled with the backend and compared with eager
(`fuzzing.check`); `bench/fuzz_torch.py` runs thousands. A step that raises or differs fails with
the program and a standalone reproducer (hypothesis shrinks it first).
"""

from __future__ import annotations

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
