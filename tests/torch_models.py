"""The training steps of issues 11 and 12, as a user writes them: small models with random weights.

Each `Case` builds a model and its example batch and says how a step's loss is computed; the
tests (`tests/test_torch_models.py`) compile the steps, `bench/models.py` records and lowers
their graphs. Dropout is on where a model has it; its mask is drawn from torch's generator, so
a compiled and an eager step agree under the same seed.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from egraph_lower.graph import Graph


class Mlp(nn.Module):
    """Linear, LayerNorm, GELU, Dropout, Linear: the logits of a classifier."""

    def __init__(self, d_in: int = 12, hidden: int = 32, classes: int = 5, p: float = 0.2) -> None:
        super().__init__()
        self.fc1, self.norm, self.drop = nn.Linear(d_in, hidden), nn.LayerNorm(hidden), nn.Dropout(p)
        self.fc2 = nn.Linear(hidden, classes)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc2(self.drop(F.gelu(self.norm(self.fc1(x)))))


class CausalSelfAttention(nn.Module):
    """Eager-style attention: one projection to q, k, v, scores masked above the diagonal (with the
    dtype's lowest value, as transformers does, or `fill`: nanoGPT fills -inf), softmax. `masked` makes the
    mask from the causal buffer (default: its negation)."""

    def __init__(self, d: int, heads: int, max_len: int, p: float, fill: float | None = None,
                 masked: Callable[[Tensor], Tensor] = torch.logical_not) -> None:
        super().__init__()
        self.fill, self.masked = fill, masked
        self.heads, self.qkv, self.proj = heads, nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.attn_drop, self.resid_drop = nn.Dropout(p), nn.Dropout(p)
        self.register_buffer("causal", torch.tril(torch.ones(max_len, max_len, dtype=torch.bool)))

    def forward(self, x: Tensor) -> Tensor:
        b, n, d = x.shape
        q, k, v = (t.view(b, n, self.heads, d // self.heads).transpose(1, 2) for t in self.qkv(x).split(d, dim=2))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(d // self.heads)
        fill = torch.finfo(scores.dtype).min if self.fill is None else self.fill
        scores = scores.masked_fill(self.masked(self.causal[:n, :n]), fill)
        out = self.attn_drop(scores.softmax(-1)) @ v
        return self.resid_drop(self.proj(out.transpose(1, 2).reshape(b, n, d)))


class Gpt2Block(nn.Module):
    """GPT-2 in one block: token and position embeddings, pre-LayerNorm attention and GELU(tanh) MLP with
    residuals, a final LayerNorm and an LM head tied to the token embedding."""

    def __init__(self, vocab: int = 48, d: int = 32, heads: int = 2, max_len: int = 16, p: float = 0.1,
                 **attention: Any) -> None:
        super().__init__()
        self.wte, self.wpe, self.drop = nn.Embedding(vocab, d), nn.Embedding(max_len, d), nn.Dropout(p)
        self.ln1, self.attn = nn.LayerNorm(d), CausalSelfAttention(d, heads, max_len, p, **attention)
        self.ln2, self.ln_f = nn.LayerNorm(d), nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(approximate="tanh"), nn.Linear(4 * d, d), nn.Dropout(p))
        self.head = nn.Linear(d, vocab, bias=False)
        self.head.weight = self.wte.weight  # tied

    def forward(self, ids: Tensor) -> Tensor:
        pos = torch.arange(ids.shape[1], device=ids.device)
        h = self.drop(self.wte(ids) + self.wpe(pos))
        h = h + self.attn(self.ln1(h))
        h = h + self.mlp(self.ln2(h))
        return self.head(self.ln_f(h))


class BertBlock(nn.Module):
    """BERT in one block: word, position and token-type embeddings, post-LayerNorm bidirectional attention
    under a padding mask, a GELU MLP, a pooler (token 0, Linear, tanh) and a classifier."""

    def __init__(self, vocab: int = 48, d: int = 32, heads: int = 2, max_len: int = 16, classes: int = 3,
                 p: float = 0.1) -> None:
        super().__init__()
        self.heads = heads
        self.words, self.positions, self.types = nn.Embedding(vocab, d), nn.Embedding(max_len, d), nn.Embedding(2, d)
        self.ln_emb, self.drop = nn.LayerNorm(d), nn.Dropout(p)
        self.qkv, self.out, self.ln_attn = nn.Linear(d, 3 * d), nn.Linear(d, d), nn.LayerNorm(d)
        self.attn_drop = nn.Dropout(p)
        self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d), nn.Dropout(p))
        self.ln_mlp = nn.LayerNorm(d)
        self.pooler, self.classifier = nn.Linear(d, d), nn.Linear(d, classes)

    def forward(self, ids: Tensor, types: Tensor, keep: Tensor) -> Tensor:
        b, n = ids.shape
        pos = torch.arange(n, device=ids.device)
        h = self.drop(self.ln_emb(self.words(ids) + self.positions(pos) + self.types(types)))
        d = h.shape[-1]
        q, k, v = (t.view(b, n, self.heads, d // self.heads).transpose(1, 2) for t in self.qkv(h).split(d, dim=2))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(d // self.heads)
        scores = scores.masked_fill(~keep[:, None, None, :], -1e4)  # padded keys get (almost) no weight
        att = (self.attn_drop(scores.softmax(-1)) @ v).transpose(1, 2).reshape(b, n, d)
        h = self.ln_attn(h + self.drop(self.out(att)))
        h = self.ln_mlp(h + self.mlp(h))
        return self.classifier(torch.tanh(self.pooler(h[:, 0])))


def rotate(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """Rotary position embedding, the halves form: x*cos + (-x2, x1)*sin."""
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin


class LlamaBlock(nn.Module):
    """LLaMA in one block: RMSNorm, causal attention with rotary embeddings, a SwiGLU MLP, an untied head."""

    def __init__(self, vocab: int = 48, d: int = 32, heads: int = 2, max_len: int = 16, hidden: int = 48) -> None:
        super().__init__()
        self.heads = heads
        self.embed, self.norm1, self.norm2, self.norm_f = (nn.Embedding(vocab, d), nn.RMSNorm(d, eps=1e-6),
                                                           nn.RMSNorm(d, eps=1e-6), nn.RMSNorm(d, eps=1e-6))
        self.q, self.k, self.v, self.o = (nn.Linear(d, d, bias=False) for _ in range(4))
        self.gate, self.up = nn.Linear(d, hidden, bias=False), nn.Linear(d, hidden, bias=False)
        self.down, self.head = nn.Linear(hidden, d, bias=False), nn.Linear(d, vocab, bias=False)
        dh = d // heads
        freq = 1.0 / (10000.0 ** (torch.arange(0, dh, 2).float() / dh))
        angle = torch.outer(torch.arange(max_len).float(), freq)
        angle = torch.cat((angle, angle), dim=-1)
        self.register_buffer("cos", angle.cos())
        self.register_buffer("sin", angle.sin())
        self.register_buffer("causal", torch.tril(torch.ones(max_len, max_len, dtype=torch.bool)))

    def attention(self, x: Tensor) -> Tensor:
        b, n, d = x.shape
        q, k, v = (p(x).view(b, n, self.heads, d // self.heads).transpose(1, 2) for p in (self.q, self.k, self.v))
        cos, sin = self.cos[:n], self.sin[:n]
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(d // self.heads)
        scores = scores.masked_fill(~self.causal[:n, :n], torch.finfo(scores.dtype).min)
        return self.o((scores.softmax(-1) @ v).transpose(1, 2).reshape(b, n, d))

    def forward(self, ids: Tensor) -> Tensor:
        h = self.embed(ids)
        h = h + self.attention(self.norm1(h))
        x = self.norm2(h)
        h = h + self.down(F.silu(self.gate(x)) * self.up(x))
        return self.head(self.norm_f(h))


class SdpaAttention(nn.Module):
    """Multi-head attention by `F.scaled_dot_product_attention` (torch's flash kernel on CPU)."""

    def __init__(self, d: int, heads: int, causal: bool) -> None:
        super().__init__()
        self.heads, self.causal = heads, causal
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)

    def forward(self, x: Tensor) -> Tensor:
        b, n, d = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
        return self.proj(y.transpose(1, 2).reshape(b, n, d))


class PreNormBlock(nn.Module):
    """Pre-norm transformer block: LayerNorm, multi-head attention, residual, LayerNorm, GELU MLP."""

    def __init__(self, d: int, heads: int, causal: bool = False) -> None:
        super().__init__()
        self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = SdpaAttention(d, heads, causal)
        self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))

    def forward(self, x: Tensor) -> Tensor:
        x = x + self.attn(self.n1(x))
        return x + self.mlp(self.n2(x))


class ViT(nn.Module):
    """A small vision transformer: 4x4 patches of an 8x8 image by a strided Conv2d, a class token and
    position embeddings, 2 blocks, a linear head on the class token."""

    def __init__(self, d: int = 16, heads: int = 2, classes: int = 5) -> None:
        super().__init__()
        self.patch = nn.Conv2d(3, d, 4, stride=4)
        self.cls = nn.Parameter(torch.randn(1, 1, d) * 0.1)
        self.pos = nn.Parameter(torch.randn(1, 5, d) * 0.1)
        self.blocks = nn.Sequential(PreNormBlock(d, heads), PreNormBlock(d, heads))
        self.norm, self.head = nn.LayerNorm(d), nn.Linear(d, classes)

    def forward(self, x: Tensor) -> Tensor:
        p = self.patch(x).flatten(2).transpose(1, 2)
        h = torch.cat([self.cls.expand(x.shape[0], -1, -1), p], dim=1) + self.pos
        return self.head(self.norm(self.blocks(h))[:, 0])


def _conv_bn(cin: int, cout: int, k: int = 3, stride: int = 1) -> list[nn.Module]:
    return [nn.Conv2d(cin, cout, k, stride=stride, padding=k // 2, bias=False), nn.BatchNorm2d(cout)]


class Cnn(nn.Module):
    """(Conv2d, BatchNorm2d, ReLU, MaxPool2d) twice, then Linear (a 10x10 image: the second pooling drops
    the last row and column of its 5x5 map)."""

    def __init__(self, classes: int = 5) -> None:
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                                      nn.Conv2d(8, 12, 3, padding=1), nn.BatchNorm2d(12), nn.ReLU(), nn.MaxPool2d(2))
        self.fc = nn.Linear(12 * 2 * 2, classes)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc(self.features(x).flatten(1))


class ResidualCnn(nn.Module):
    """A stem, one residual block (two 3x3 convolutions with BatchNorm, the first strided, a strided 1x1
    downsample on the skip path), AdaptiveAvgPool2d to 2x2 (overlapping windows on a 5x5 map; to 1x1
    torch would compute a mean instead), Linear."""

    def __init__(self, classes: int = 5) -> None:
        super().__init__()
        self.stem = nn.Sequential(*_conv_bn(3, 8), nn.ReLU())
        self.branch = nn.Sequential(*_conv_bn(8, 12, stride=2), nn.ReLU(), *_conv_bn(12, 12))
        self.down = nn.Sequential(*_conv_bn(8, 12, k=1, stride=2))
        self.pool, self.fc = nn.AdaptiveAvgPool2d(2), nn.Linear(12 * 2 * 2, classes)

    def forward(self, x: Tensor) -> Tensor:
        h = self.stem(x)
        h = torch.relu(self.branch(h) + self.down(h))
        return self.fc(self.pool(h).flatten(1))


Loss = Callable[[nn.Module, tuple[Tensor, ...]], Tensor]


def _classify(model: nn.Module, batch: tuple[Tensor, ...]) -> Tensor:
    *inputs, labels = batch
    return F.cross_entropy(model(*inputs), labels)


def _next_token(model: nn.Module, batch: tuple[Tensor, ...]) -> Tensor:
    (ids,) = batch
    logits = model(ids)[:, :-1]  # predict token t+1 from tokens up to t
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))


@dataclass(frozen=True)
class Case:
    """One of the issues' models: how to build it, its batch, its loss, and whether it trains in eval mode."""

    name: str
    make: Callable[[], nn.Module]
    batch: Callable[[torch.Generator], tuple[Tensor, ...]]
    loss: Loss
    eval_mode: bool = False

    def model(self, seed: int = 0) -> nn.Module:
        torch.manual_seed(seed)
        m = self.make()
        return m.eval() if self.eval_mode else m.train()

    def data(self, seed: int = 1) -> tuple[Tensor, ...]:
        return self.batch(torch.Generator().manual_seed(seed))


def _tokens(g: torch.Generator) -> tuple[Tensor, ...]:
    return (torch.randint(0, 48, (2, 12), generator=g),)


def _bert_batch(g: torch.Generator) -> tuple[Tensor, ...]:
    ids = torch.randint(0, 48, (3, 10), generator=g)
    types = (torch.arange(10) >= 6).long().expand(3, 10).contiguous()
    keep = torch.arange(10) < torch.tensor([[10], [7], [4]])  # padding at the end of rows 2 and 3
    return ids, types, keep, torch.randint(0, 3, (3,), generator=g)


def _images(g: torch.Generator) -> tuple[Tensor, ...]:
    return torch.randn(4, 3, 10, 10, generator=g), torch.randint(0, 5, (4,), generator=g)


CASES: dict[str, Case] = {c.name: c for c in (
    Case("mlp", Mlp, lambda g: (torch.randn(6, 12, generator=g), torch.randint(0, 5, (6,), generator=g)), _classify),
    Case("gpt2", Gpt2Block, _tokens, _next_token),
    Case("bert", BertBlock, _bert_batch, _classify),
    Case("llama", LlamaBlock, _tokens, _next_token),
    Case("cnn", Cnn, _images, _classify),
    Case("cnn_eval", Cnn, _images, _classify, eval_mode=True),
    Case("resnet", ResidualCnn, _images, _classify),
    Case("vit", ViT, lambda g: (torch.randn(4, 3, 8, 8, generator=g), torch.randint(0, 5, (4,), generator=g)),
         _classify),
)}


def step_of(case: Case, model: nn.Module, compile_loss: Callable[[Callable[..., Tensor]], Any] | None = None,
            seed: int = 100) -> Callable[[tuple[Tensor, ...], Any], Tensor]:
    """One training step of `model` on a batch (compiled when `compile_loss` is given), called as
    `step(batch, None)` (`tests/torch_steps.train`'s `step(x, y)`): the generator seeded before each
    forward, `seed`, `seed + 1`, ..., so dropout draws the same masks eager and compiled; loss.backward()."""
    def loss_of(*batch: Tensor) -> Tensor:
        return case.loss(model, batch)

    run = compile_loss(loss_of) if compile_loss else loss_of
    calls = [0]

    def step(batch: tuple[Tensor, ...], _: Any = None) -> Tensor:
        torch.manual_seed(seed + calls[0])
        calls[0] += 1
        loss = run(*batch)
        loss.backward()
        return loss.detach()

    return step


def hf_cases() -> list[Case]:
    """transformers' GPT-2 and BERT in small configs with random weights (dropout as shipped), when
    transformers is installed; else none."""
    try:
        import transformers
    except ImportError:
        return []
    transformers.logging.set_verbosity_error()

    def gpt2() -> nn.Module:
        cfg = transformers.GPT2Config(n_layer=2, n_head=2, n_embd=64, vocab_size=128, n_positions=64)
        model = transformers.GPT2LMHeadModel(cfg)
        model.loss_type = "ForCausalLM"  # else a warning call splits the forward graph
        return model

    def bert() -> nn.Module:
        cfg = transformers.BertConfig(num_hidden_layers=2, num_attention_heads=2, hidden_size=64,
                                      intermediate_size=128, vocab_size=128, max_position_embeddings=64, num_labels=3)
        cfg.problem_type = "single_label_classification"  # set before the first call, or dynamo recompiles
        return transformers.BertForSequenceClassification(cfg)

    return [
        Case("hf_gpt2", gpt2, lambda g: (torch.randint(0, 128, (2, 16), generator=g),),
             lambda m, b: m(input_ids=b[0], labels=b[0]).loss),
        Case("hf_bert", bert, lambda g: (torch.randint(0, 128, (2, 16), generator=g),
                                         torch.randint(0, 3, (2,), generator=g)),
             lambda m, b: m(input_ids=b[0], labels=b[1]).loss),
    ]


def recorded_graphs(case: Case, target: str = "cpu", strict: bool = True) -> dict[str, Graph]:
    """The format graphs of one compiled training step of `case`, by FX graph ("forward0", "backward0", ...),
    each named `<case>_<graph>`: as the torch backend lowered them for `target` (on `cpu`, which runs every op, the graphs
    as imported). `strict`: raise when an op is not mapped; else the graphs hold the ops that are (the
    pieces between unmapped ones, as one graph: what the backend lowers)."""
    import egraph_lower.torch as elt

    torch._dynamo.reset()
    record: list[Graph] = []
    be = elt.backend(target, record=record, strict=strict)
    model = case.model()
    with warnings.catch_warnings():
        if not strict:
            warnings.simplefilter("ignore")  # each unmapped op's warning: the caller asked for what maps
        step_of(case, model, lambda f: torch.compile(f, backend=be, dynamic=False))(case.data())
    torch._dynamo.reset()
    if len(record) != len(be.graphs):
        raise RuntimeError(f"{case.name}: {len(be.graphs)} FX graphs gave {len(record)} format graphs")
    return {g.name: dataclasses.replace(r, name=f"{case.name}_{g.name}") for g, r in zip(be.graphs, record)}


# ---- issue 20's convolution and pooling models (ops-convpool)

def _gn_block(cin: int, cout: int, groups: int = 4) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.GroupNorm(groups, cout), nn.SiLU())


class UNet(nn.Module):
    """A one-level UNet: (Conv2d, GroupNorm, SiLU) at full size, AvgPool2d down, the same block at half
    size, a stride-2 ConvTranspose2d up (kernel 3, padding 1, output padding 1: back to the full size),
    the skip concatenated with it, a block, a 1x1 Conv2d head."""

    def __init__(self, c: int = 8) -> None:
        super().__init__()
        self.inc, self.down, self.mid = _gn_block(3, c), nn.AvgPool2d(2), _gn_block(c, 2 * c)
        self.up = nn.ConvTranspose2d(2 * c, c, 3, stride=2, padding=1, output_padding=1)
        self.out, self.head = _gn_block(2 * c, c), nn.Conv2d(c, 2, 1)

    def forward(self, x: Tensor) -> Tensor:
        skip = self.inc(x)
        h = self.up(self.mid(self.down(skip)))
        return self.head(self.out(torch.cat([h, skip], dim=1)))


def _regress(model: nn.Module, batch: tuple[Tensor, ...]) -> Tensor:
    *inputs, target = batch
    return F.mse_loss(model(*inputs), target)


def _unet_batch(g: torch.Generator) -> tuple[Tensor, ...]:
    return torch.randn(2, 3, 8, 8, generator=g), torch.randn(2, 2, 8, 8, generator=g)


class AudioCnn(nn.Module):
    """A 1-D audio classifier: (Conv1d, GroupNorm, exact GELU, max_pool1d) twice, a mean over time, a
    Linear head."""

    def __init__(self, c: int = 8, classes: int = 4) -> None:
        super().__init__()
        self.conv1, self.norm1 = nn.Conv1d(1, c, 5, padding=2), nn.GroupNorm(2, c)
        self.conv2, self.norm2 = nn.Conv1d(c, 2 * c, 3, padding=1), nn.GroupNorm(4, 2 * c)
        self.head = nn.Linear(2 * c, classes)

    def forward(self, wave: Tensor) -> Tensor:
        h = F.max_pool1d(F.gelu(self.norm1(self.conv1(wave))), 2)
        h = F.max_pool1d(F.gelu(self.norm2(self.conv2(h))), 2)
        return self.head(h.mean(-1))


def _audio_batch(g: torch.Generator) -> tuple[Tensor, ...]:
    return torch.randn(3, 1, 32, generator=g), torch.randint(0, 4, (3,), generator=g)


class DetectionHead(nn.Module):
    """A detection head on a feature map: a Conv2d trunk with LeakyReLU, then per location class logits
    (ELU branch), four box offsets (Softplus with beta) and an objectness logit."""

    def __init__(self, c: int = 8, classes: int = 5) -> None:
        super().__init__()
        self.trunk = nn.Conv2d(3, c, 3, padding=1)
        self.cls = nn.Sequential(nn.Conv2d(c, c, 1), nn.ELU(alpha=0.7), nn.Conv2d(c, classes, 1))
        self.box = nn.Conv2d(c, 4, 1)
        self.obj = nn.Conv2d(c, 1, 1)

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        h = F.leaky_relu(self.trunk(x), 0.1)
        return self.cls(h), F.softplus(self.box(h), beta=2.0), self.obj(h)


def _detection_batch(g: torch.Generator) -> tuple[Tensor, ...]:
    x = torch.randn(2, 3, 6, 6, generator=g)
    labels = torch.randint(0, 5, (2, 6, 6), generator=g)
    boxes = torch.rand(2, 4, 6, 6, generator=g) * 2
    prior = torch.softmax(torch.randn(2, 5, 6, 6, generator=g), dim=1)  # a teacher's class distribution
    objectness = (torch.rand(2, 1, 6, 6, generator=g) > 0.7).float()
    return x, labels, boxes, prior, objectness


def _detection_loss(model: nn.Module, batch: tuple[Tensor, ...]) -> Tensor:
    x, labels, boxes, prior, objectness = batch
    cls, box, obj = model(x)
    return (F.cross_entropy(cls, labels, label_smoothing=0.1)
            + F.smooth_l1_loss(box, boxes, beta=0.5)
            + F.kl_div(F.log_softmax(cls, dim=1), prior, reduction="batchmean")
            + F.binary_cross_entropy_with_logits(obj, objectness, pos_weight=torch.tensor([3.0])))


class DiffusionBlock(nn.Module):
    """A diffusion model's up block: GroupNorm, SiLU, a conv, a timestep embedding (sinusoidal, through a
    Linear) added per channel, GroupNorm, SiLU, nearest upsampling x2 (F.interpolate), a conv, and a residual
    (the upsampled input through a 1x1 conv)."""

    def __init__(self, c: int = 8, t_dim: int = 16) -> None:
        super().__init__()
        self.t_dim = t_dim
        self.norm1, self.conv1 = nn.GroupNorm(4, c), nn.Conv2d(c, c, 3, padding=1)
        self.temb = nn.Linear(t_dim, c)
        self.norm2, self.conv2 = nn.GroupNorm(4, c), nn.Conv2d(c, c, 3, padding=1)
        self.skip = nn.Conv2d(c, c, 1)

    def forward(self, x: Tensor, t: Tensor) -> Tensor:
        half = self.t_dim // 2
        freqs = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=x.dtype, device=x.device) / half)
        angles = t[:, None] * freqs[None]
        emb = self.temb(F.silu(torch.cat([angles.sin(), angles.cos()], dim=-1)))
        h = self.conv1(F.silu(self.norm1(x))) + emb[:, :, None, None]
        h = F.interpolate(F.silu(self.norm2(h)), scale_factor=2, mode="nearest")
        return self.conv2(h) + self.skip(F.interpolate(x, scale_factor=2, mode="nearest"))


def _diffusion_batch(g: torch.Generator) -> tuple[Tensor, ...]:
    return (torch.randn(2, 8, 4, 4, generator=g), torch.tensor([3.0, 250.0]),
            torch.randn(2, 8, 8, 8, generator=g))


# name -> (case, the aten ops that stay in PyTorch: none)
CONVPOOL_CASES: dict[str, tuple[Case, tuple[str, ...]]] = {
    "unet": (Case("unet", UNet, _unet_batch, _regress), ()),
    "audio_cnn": (Case("audio_cnn", AudioCnn, _audio_batch, _classify), ()),
    "detection_head": (Case("detection_head", DetectionHead, _detection_batch, _detection_loss), ()),
    "diffusion_block": (Case("diffusion_block", DiffusionBlock, _diffusion_batch, _regress), ()),
}
