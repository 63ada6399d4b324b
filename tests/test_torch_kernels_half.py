"""Half precision in the torch kernels: a format op a backend runs natively stands for its fused kernel,
which computes f16/bf16 in float32 and rounds once (as PyTorch's own CPU kernels mostly do). Each
kernel's result on f16/bf16 tensors is, bit for bit, its float32 result on the same (half-rounded)
inputs rounded to the dtype. CHANGED are the kernels made so by `kernels_half.in_float32` (their old
half computation rounded more than once and fails here); FINE are kernels whose single torch op was
checked to round once already. The norm kernels: tests/test_norm_torch.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from egraph_lower.torch import kernels as K  # noqa: E402

Tensor = Any
Case = Callable[[Callable[..., Tensor]], tuple[Callable[..., Tensor], tuple[Any, ...], dict[str, Any]]]
CONV = {"stride": [1, 1], "padding": [1, 1], "dilation": [1, 1], "groups": 1}
POOL = {"kernel": [3, 3], "stride": [1, 1], "padding": [1, 1]}
POOL3 = {"kernel": [3, 3, 3], "stride": [1, 1, 1], "padding": [1, 1, 1]}


def _attention_grads(which: str, r: Callable[..., Tensor]) -> tuple[Callable[..., Tensor], tuple[Any, ...],
                                                                    dict[str, Any]]:
    q, k, v, m, dy = r(2, 3, 40, 16), r(2, 3, 50, 16), r(2, 3, 50, 16), r(40, 50), r(2, 3, 40, 16)
    out, lse = K.attention(q, k, v, m), K.attention_lse(q, k, m)  # in float32: the forward's results
    if which == "value":
        return K.attention_backward_value, (q, k, m, lse, dy), {}
    return getattr(K, f"attention_backward_{which}"), (q, k, v, m, out, lse, dy), {}


def _ints(hi: int, *shape: int) -> Tensor:
    return torch.randint(0, hi, shape)


def _pos(*shape: int) -> Tensor:
    return torch.rand(*shape) + 0.5


# each: given `r` (random float32 values, shape as arguments), the kernel, its arguments and attributes
CHANGED: dict[str, Case] = {
    "matmul": lambda r: (K.matmul, (r(32, 600), r(600, 32)), {}),
    "conv2d": lambda r: (K.conv2d, (r(2, 16, 9, 9), r(8, 16, 3, 3)), CONV),
    "conv2d_backward_input": lambda r: (K.conv2d_backward_input, (r(2, 8, 9, 9), r(8, 16, 3, 3)),
                                        {**CONV, "input_shape": [2, 16, 9, 9]}),
    "conv2d_backward_weight": lambda r: (K.conv2d_backward_weight, (r(2, 16, 9, 9), r(2, 8, 9, 9)),
                                         {**CONV, "weight_shape": [8, 16, 3, 3]}),
    "conv_transpose2d": lambda r: (K.conv_transpose2d, (r(2, 8, 9, 9), r(8, 16, 3, 3)),
                                   {**CONV, "output_shape": [2, 16, 9, 9]}),
    "attention": lambda r: (K.attention, (r(2, 3, 40, 16), r(2, 3, 50, 16), r(2, 3, 50, 16), r(40, 50)), {}),
    "attention_backward_query": lambda r: _attention_grads("query", r),
    "attention_backward_key": lambda r: _attention_grads("key", r),
    "safe_softmax": lambda r: (K.safe_softmax, (r(300, 7),), {"axis": 0}),
    "softmax": lambda r: (K.softmax, (r(300, 7),), {"axis": 0}),
    "log_softmax": lambda r: (K.log_softmax, (r(7, 300),), {"axis": 1}),
    "mse_loss": lambda r: (K.mse_loss, (r(7, 30), r(7, 30)), {"reduction": "none"}),
    "mse_loss_backward": lambda r: (K.mse_loss_backward, (r(7, 30), r(7, 30), r(7, 30)), {"reduction": "none"}),
    "smooth_l1_loss": lambda r: (K.smooth_l1_loss, (r(7, 30), r(7, 30)), {"reduction": "none", "beta": 0.7}),
    "huber_loss": lambda r: (K.huber_loss, (r(7, 30), r(7, 30)), {"reduction": "none", "delta": 0.7}),
    "huber_loss_backward": lambda r: (K.huber_loss_backward, (r(7, 30), r(7, 30), r(())),
                                      {"reduction": "mean", "delta": 0.7}),
    "group_norm": lambda r: (K.group_norm, (r(2, 6, 5, 5) * 3 + 7, _pos(6), r(6)), {"groups": 3, "eps": 1e-5}),
    "group_norm_backward_input": lambda r: (K.group_norm_backward_input,
                                            (r(2, 6, 5, 5), _pos(6), r(2, 3) * 0.1, _pos(2, 3), r(2, 6, 5, 5)),
                                            {"groups": 3}),
    "group_norm_backward_weight": lambda r: (K.group_norm_backward_weight,
                                             (r(4, 6, 5, 5), r(4, 3) * 0.1, _pos(4, 3), r(4, 6, 5, 5)), {"groups": 3}),
    "avg_pool2d_backward": lambda r: (K.avg_pool2d_backward, (r(2, 3, 9, 9),), {**POOL, "input_shape": [2, 3, 9, 9]}),
    "adaptive_avg_pool2d_backward": lambda r: (K.adaptive_avg_pool2d_backward, (r(2, 3, 3, 4),),
                                               {"input_shape": [2, 3, 17, 13]}),
    "embedding_backward": lambda r: (K.embedding_backward, (r(40, 3), _ints(4, 40)),
                                     {"num_weights": 4, "padding_idx": -1}),
    "nll_loss": lambda r: (K.nll_loss, (torch.log_softmax(r(300, 5), 1), _ints(5, 300), _pos(5)),
                           {"reduction": "mean", "ignore_index": 1}),
    "nll_loss_backward": lambda r: (K.nll_loss_backward, (r(300, 5), r(()), _ints(5, 300), _pos(5), _pos(()) * 300),
                                    {"reduction": "mean", "ignore_index": 1}),
    "index_put": lambda r: (K.index_put, (r(4, 5), _ints(4, 40), r(40, 5)), {"axis": 0, "accumulate": True}),
    "index_put2": lambda r: (K.index_put2, (r(4, 5), _ints(4, 40), _ints(5, 40), r(40)),
                             {"axis": 0, "accumulate": True}),
    "scatter_reduce": lambda r: (K.scatter_reduce, (r(4, 5), _ints(4, 40, 5), r(40, 5)),
                                 {"axis": 0, "reduce": "mean", "include_self": True}),
    "scan": lambda r: (K.scan, (r(30, 200).abs() * 0.1 + 0.95,), {"op": "Mul", "axis": 1}),
    "prod": lambda r: (K.prod, (r(30, 200).abs() * 0.1 + 0.95,), {"axes": [1]}),
    "avg_pool3d": lambda r: (K.avg_pool3d, (r(2, 3, 5, 6, 7),), {**POOL3, "count_include_pad": False}),
    "avg_pool3d_backward": lambda r: (K.avg_pool3d_backward, (r(2, 3, 5, 6, 7),),
                                      {**POOL3, "input_shape": [2, 3, 5, 6, 7]}),
    "adaptive_avg_pool3d_backward": lambda r: (K.adaptive_avg_pool3d_backward, (r(2, 3, 3, 4, 2),),
                                               {"input_shape": [2, 3, 7, 9, 5]}),
}

FINE: dict[str, Case] = {
    "reduce": lambda r: (K.reduce, (r(7, 500),), {"op": "Sum", "axes": [1]}),
    "scan_add": lambda r: (K.scan, (r(30, 200),), {"op": "Add", "axis": 0}),
    "var": lambda r: (K.var, (r(30, 200),), {"axes": [1], "correction": 1.0}),
    "log_cum_sum_exp": lambda r: (K.log_cum_sum_exp, (r(30, 200),), {"axis": 1}),
    "reduce_mean": lambda r: (K.reduce, (r(70, 50),), {"op": "Mean", "axes": [0, 1]}),
    "softmax_backward": lambda r: (K.softmax_backward, (torch.softmax(r(300, 7), 0), r(300, 7)), {"axis": 0}),
    "log_softmax_backward": lambda r: (K.log_softmax_backward, (torch.log_softmax(r(7, 300), 1), r(7, 300)),
                                       {"axis": 1}),
    "attention_lse": lambda r: (K.attention_lse, (r(2, 3, 40, 16), r(2, 3, 50, 16), r(40, 50)), {}),
    "attention_backward_value": lambda r: _attention_grads("value", r),
    "scatter_add": lambda r: (K.scatter_add, (r(4, 5), _ints(4, 40, 5), r(40, 5)), {"axis": 0}),
    "avg_pool2d": lambda r: (K.avg_pool2d, (r(2, 3, 9, 9),), {**POOL, "count_include_pad": False}),
    "smooth_l1_loss_backward": lambda r: (K.smooth_l1_loss_backward, (r(7, 30), r(7, 30), r(())),
                                          {"reduction": "mean", "beta": 0.7}),
    "activation_backward": lambda r: (K.activation_backward, (r(7, 30), r(7, 30)), {"kind": "Gelu"}),
}


def _run(case: Case, dtype: torch.dtype, seed: int) -> tuple[Tensor, Tensor]:
    torch.manual_seed(seed)
    fn, args, attrs = case(lambda *shape: torch.randn(*shape) * 2 + 0.3)
    half = [a.to(dtype) if isinstance(a, torch.Tensor) and a.dtype == torch.float32 else a for a in args]
    wide = [a.float() if isinstance(a, torch.Tensor) and a.dtype == dtype else a for a in half]
    return fn(*half, **attrs), fn(*wide, **attrs)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("name", [*CHANGED, *(f"fine:{n}" for n in FINE)])
def test_half_kernel_is_its_float32_result_rounded_once(name: str, dtype: torch.dtype) -> None:
    case = FINE[name[5:]] if name.startswith("fine:") else CHANGED[name]
    for seed in range(3):
        half, wide = _run(case, dtype, seed)
        assert half.dtype == dtype and wide.dtype == torch.float32
        assert torch.equal(half, wide.to(dtype)), (seed, int((half != wide.to(dtype)).sum()), half.numel())


def test_a_kernel_keeps_float32_and_integer_results() -> None:
    """float32 goes through `in_float32` unchanged; a kernel's index or mask inputs are not widened."""
    x, i = torch.randn(4, 5), torch.randint(0, 4, (40,))
    v = torch.randn(40, 5)
    want = torch.ops.aten.index_put.default(x, [i], v, True)
    assert torch.equal(K.index_put(x, i, v, axis=0, accumulate=True), want)
    assert K.index_put(x.half(), i, v.half(), axis=0, accumulate=True).dtype == torch.float16
    idx = K.max_pool2d_indices(torch.randn(1, 2, 5, 5).bfloat16(), [2, 2], [2, 2], [0, 0], [1, 1])
    assert idx.dtype == torch.int64


@pytest.mark.parametrize("which", ["query", "key"])
def test_attention_gradients_are_q_dtype_with_a_float32_lse(which: str) -> None:
    """The importer keeps a half attention's log-sum-exp in float32: the gradients are still q's dtype."""
    torch.manual_seed(0)
    fn, args, _ = _attention_grads(which, lambda *shape: torch.randn(*shape))
    q, k, v, m, out, lse, dy = args
    half = [t.bfloat16() for t in (q, k, v, m, out)]
    got = fn(*half, lse, dy.bfloat16())
    want = fn(*(t.float() for t in half), lse, dy.bfloat16().float())
    assert got.dtype == torch.bfloat16 and torch.equal(got, want.to(torch.bfloat16))
