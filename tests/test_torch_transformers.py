"""Hugging Face GPT-2, BERT, LLaMA and T5 train one step through egraph_lower's torch backend as in eager.

Random weights from small configs (nothing downloaded); skipped without torch or
transformers (`pip install '.[transformers]'`, which `.ci/run` does). Dropout is 0 so
the compiled and the eager step see the same numbers; everything else is as shipped.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable
from typing import Any

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import egraph_lower.torch as elt  # noqa: E402
from egraph_lower.torch import cache  # noqa: E402


@pytest.fixture(autouse=True)
def _fresh_dynamo() -> Any:
    torch._dynamo.reset()
    transformers.logging.set_verbosity_error()
    yield
    torch._dynamo.reset()


def _gpt2() -> tuple[Any, Callable[[Any], Any]]:
    cfg = transformers.GPT2Config(n_layer=2, n_head=2, n_embd=64, vocab_size=128, n_positions=64,
                                  resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    model = transformers.GPT2LMHeadModel(cfg)
    model.loss_type = "ForCausalLM"
    ids = torch.randint(0, 128, (2, 16))
    return model, lambda m: m(input_ids=ids, labels=ids).loss


def _bert() -> tuple[Any, Callable[[Any], Any]]:
    cfg = transformers.BertConfig(num_hidden_layers=2, num_attention_heads=2, hidden_size=64, intermediate_size=128,
                                  vocab_size=128, max_position_embeddings=64, num_labels=3,
                                  hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    cfg.problem_type = "single_label_classification"  # set before the first call, or dynamo recompiles
    model = transformers.BertForSequenceClassification(cfg)
    ids, labels = torch.randint(0, 128, (2, 16)), torch.randint(0, 3, (2,))
    return model, lambda m: m(input_ids=ids, labels=labels).loss


def _llama() -> tuple[Any, Callable[[Any], Any]]:
    """As shipped: RMSNorm, rotary embeddings, the causal mask built with cumsum, index and bitwise_and
    (issue 19 found those left in PyTorch), SwiGLU, attention through the sdpa flash kernel."""
    cfg = transformers.LlamaConfig(num_hidden_layers=2, num_attention_heads=2, hidden_size=64, intermediate_size=128,
                                   vocab_size=128, max_position_embeddings=64)
    model = transformers.LlamaForCausalLM(cfg)
    model.loss_type = "ForCausalLM"
    ids = torch.randint(1, 128, (2, 16))
    return model, lambda m: m(input_ids=ids, labels=ids).loss


def _llama_gqa() -> tuple[Any, Callable[[Any], Any]]:
    """LLaMA with grouped-query attention (2 key/value heads for 4 query heads): transformers hands sdpa
    k and v of 2 heads with enable_gqa, which reaches the backend as the flash kernel on grouped shapes."""
    cfg = transformers.LlamaConfig(num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, hidden_size=64,
                                   intermediate_size=128, vocab_size=128, max_position_embeddings=64)
    model = transformers.LlamaForCausalLM(cfg)
    model.loss_type = "ForCausalLM"
    ids = torch.randint(1, 128, (2, 16))
    return model, lambda m: m(input_ids=ids, labels=ids).loss


def _t5() -> tuple[Any, Callable[[Any], Any]]:
    """Encoder-decoder with relative position buckets; its labels shifted right with copy, fill,
    select_scatter and slice_scatter (issue 19 found those left in PyTorch)."""
    cfg = transformers.T5Config(num_layers=2, num_decoder_layers=2, num_heads=2, d_model=64, d_kv=32, d_ff=128,
                                vocab_size=128, decoder_start_token_id=0, pad_token_id=0, dropout_rate=0.0)
    model = transformers.T5ForConditionalGeneration(cfg)
    ids, labels = torch.randint(1, 128, (2, 16)), torch.randint(1, 128, (2, 12))
    return model, lambda m: m(input_ids=ids, labels=labels).loss


MODELS = {"gpt2": _gpt2, "bert": _bert, "llama": _llama, "llama-gqa": _llama_gqa, "t5": _t5}


@pytest.mark.parametrize(("name", "target"), [("gpt2", "metal"), ("gpt2", "cpu"), ("bert", "metal"),
                                              ("llama", "wgpu"), ("llama-gqa", "wgpu"), ("t5", "metal")])
def test_one_training_step_matches_eager(name: str, target: str, monkeypatch: pytest.MonkeyPatch) -> None:
    torch.manual_seed(0)
    eager, loss_of = MODELS[name]()
    eager.train()
    compiled = copy.deepcopy(eager)
    be = elt.backend(target)
    imported: list[Any] = []  # the graphs as imported, before lowering
    lowered = cache.lowered

    def record(graph: Any, *args: Any, **kwargs: Any) -> Any:
        imported.append(graph)
        return lowered(graph, *args, **kwargs)
    monkeypatch.setattr(cache, "lowered", record)
    step = torch.compile(lambda: loss_of(compiled), backend=be, dynamic=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = step()
        got.backward()
    want = loss_of(eager)
    want.backward()
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    for (pname, p), q in zip(compiled.named_parameters(), eager.parameters()):
        if q.grad is None:
            assert p.grad is None, pname
        else:
            torch.testing.assert_close(p.grad, q.grad, rtol=1e-3, atol=1e-5, msg=lambda m: f"{pname}: {m}")
    failed = [str(w.message) for w in caught if "runs in PyTorch as it is" in str(w.message)]
    assert not failed, be.summary()
    assert {g.kind for g in be.graphs} == {"forward", "backward"}
    assert all(g.lowered == 1 for g in be.graphs), be.summary()  # each graph lowered once, whole
    if name in ("llama", "llama-gqa", "t5"):
        assert be.unlowered_ops == {}, be.summary()  # nothing of the forward or the backward left in PyTorch
    groups = {n.attrs.get("groups") for g in imported for n in g.nodes if n.op.startswith("Attention")}
    if name == "llama-gqa":  # k and v reached the backend with 2 heads for q's 4, forward and backward
        assert groups == {2} and sum(n.op == "AttentionBackwardKey" for g in imported for n in g.nodes) == 2
    if target == "metal":
        assert be.graphs[1].replaced >= 1, be.summary()  # the backward ops run as metal's expansions
        # no backward aten op is left to PyTorch (attention's included: the sdpa flash kernel's backward)
        backward = [g for g in be.graphs if g.kind == "backward"]
        assert backward and all(g.status == "lowered" and not g.unlowered_ops for g in backward), be.summary()


# The vision models whose steps broke where a lowered piece met PyTorch code: MobileNetV2's
# TF-style padding crops with a negative constant_pad_nd in its backward, Swin's window shifts
# and adaptive pooling hand PyTorch code (roll, index, as_strided) the lowered pieces' results.
# The ops that cut them stay in PyTorch (`keep_in_pytorch`), so the boundaries stay tested once the
# ops are mapped. In float64, so that a wrong layout shows as an error far above rounding: in
# float32 these steps differ from eager by their own rounding amplified (batch norm over two
# values a channel), and the compiled step is, if anything, closer to float64 than eager's.
_CUT_BY = {
    "mobilenet_v2": ("aten.constant_pad_nd",),
    "swin": ("aten.roll", "aten.index", "aten.index_put", "aten.as_strided", "aten.as_strided_scatter",
             "aten.copy"),
}


def _vision(name: str) -> Any:
    if name == "mobilenet_v2":
        cfg = transformers.MobileNetV2Config(image_size=32, depth_multiplier=0.25, classifier_dropout_prob=0.0,
                                             num_labels=4)
        return transformers.MobileNetV2ForImageClassification(cfg), 32
    cfg = transformers.SwinConfig(image_size=16, patch_size=2, embed_dim=8, depths=[1, 1], num_heads=[1, 2],
                                  window_size=2, num_labels=4, hidden_dropout_prob=0.0,
                                  attention_probs_dropout_prob=0.0, drop_path_rate=0.0)
    return transformers.SwinForImageClassification(cfg), 16


@pytest.mark.parametrize(("name", "target", "layout"), [
    ("mobilenet_v2", "metal", "channels_last"), ("mobilenet_v2", "wgpu", "contiguous"),
    ("swin", "metal", "contiguous"), ("swin", "wgpu", "channels_last")])
def test_vision_models_train_as_eager_across_piece_boundaries(name: str, target: str, layout: str) -> None:
    torch.manual_seed(0)
    eager, size = _vision(name)
    eager = eager.double().train()
    x, labels = torch.randn(2, 3, size, size, dtype=torch.float64), torch.tensor([1, 3])
    if layout == "channels_last":
        eager, x = eager.to(memory_format=torch.channels_last), x.to(memory_format=torch.channels_last)
    compiled = copy.deepcopy(eager)
    be = elt.backend(target, keep_in_pytorch=_CUT_BY[name])

    def step(m: Any) -> Any:
        loss = m(pixel_values=x, labels=labels).loss
        loss.backward()
        return loss

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = torch.compile(step, backend=be, dynamic=False)(compiled)
    want = step(eager)
    torch.testing.assert_close(got, want, rtol=1e-9, atol=1e-12)
    for (pname, p), q in zip(compiled.named_parameters(), eager.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-7, atol=1e-9, msg=lambda m: f"{pname}: {m}")
    failed = [str(w.message) for w in caught if "runs in PyTorch as it is" in str(w.message)]
    assert not failed, be.summary()
    assert sum(g.replaced for g in be.graphs) >= 2, be.summary()  # lowered pieces on both sides of the cuts
