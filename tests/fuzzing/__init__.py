"""A differential fuzzer of training steps for the torch backend (issue 21).

`strategies.programs()` draws a small random training step (a model, its inputs, a loss, several
results, layouts, views, in-place ops, mutated inputs and buffers) as Python source;
`check.check(program, target)` runs it eager and compiled with `egraph_lower.torch.backend(target)`
and says what raised or differed. `tests/test_torch_fuzz.py` runs a few on every CI run,
`bench/fuzz_torch.py` thousands.
"""
