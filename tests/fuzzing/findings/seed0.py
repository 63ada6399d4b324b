"""The nine kinds of failure that `python bench/fuzz_torch.py --steps 2000 --seed 0` found at 3f5c422
(docs/reliability.md has the figures), each as its program shrunk by hypothesis: the kind, the steps of
each target it failed on, and the target it was shrunk for. Not collected by pytest; each becomes a
regression test in tests/test_torch_fuzz_regressions.py when it is fixed.

    PYTHONPATH=.:tests python -m fuzzing.findings.seed0 [N]        # run finding N (all without N)
    PYTHONPATH=.:tests python -m fuzzing.findings.seed0 N --script # print N as a standalone reproducer
"""

from __future__ import annotations

import sys
from typing import NamedTuple

from fuzzing.program import Program, program_of


class Finding(NamedTuple):
    kind: str
    failed_on: dict[str, int]
    target: str
    program: Program


def _finding(kind: str, failed_on: dict[str, int], target: str, dtype: str, keep: tuple[str, ...],
             body: str) -> Finding:
    """A finding from its model and make() (`body`), the program's header and step added as the fuzzer
    writes them (in float64 no step is compared with a float64 one)."""
    return Finding(kind, failed_on, target, program_of(dtype, keep, body, reference=dtype != "float64"))


FINDINGS: tuple[Finding, ...] = (
    _finding('differed aliasing: "is', {'wgpu': 15, 'metal': 7}, 'wgpu', 'bfloat16', (), '''
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.m1 = nn.Embedding(1, 1, padding_idx=None, dtype=torch.bfloat16)
        self.p4 = nn.Parameter(torch.randn((1, 1, 1), dtype=torch.bfloat16))

    def forward(self, x0, x1, x2):
        h2 = self.m1(x0)
        h3 = F.gelu(x1)
        h5 = h3 * self.p4
        loss6 = h5.sum()
        return (loss6, h3, h3.detach(),)


def make():
    torch.manual_seed(0)
    model = Model()

    x0 = torch.randint(0, 1, (1, 1))
    x1 = torch.randn((1, 1, 1)).to(torch.bfloat16)
    x2 = torch.rand((1, 1, 1)) > 0.5
    return model, (x0, x1, x2,)
'''),
    _finding("raised RuntimeError: Expected a proper Tensor but got None (or an undefined Tensor in C++) for argument #N '...'", {'metal': 9, 'wgpu': 9}, 'metal', 'float32', (), '''
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.m1 = nn.LayerNorm([1], elementwise_affine=False, bias=True, dtype=torch.float32)
        self.p3 = nn.Parameter(torch.randn((1,), dtype=torch.float32))
        self.register_buffer('b6', torch.zeros((), dtype=torch.int64))

    def forward(self, x0):
        h2 = self.m1(x0)
        h2.add_(1.0)
        h4 = h2 * self.p3
        loss5 = h4.sum()
        self.b6 += 1
        return (loss5, h4.detach(), h4[0], h4[0],)


def make():
    torch.manual_seed(0)
    model = Model()

    x0 = torch.randn((1,)).to(torch.float32)
    return model, (x0,)
'''),
    _finding('differed gradient: values', {'wgpu': 6, 'metal': 6}, 'wgpu', 'float16', ('aten.mul.Tensor',), '''
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.m1 = nn.Embedding(2, 1, padding_idx=None, dtype=torch.float16)

    def forward(self, x0, x1):
        h2 = self.m1(x0)
        loss3 = F.mse_loss(h2, x1, reduction='mean')
        return (loss3,)


def make():
    torch.manual_seed(0)
    model = Model()

    x0 = torch.randint(0, 2, (2, 2))
    x1 = torch.randn((2, 2, 1)).to(torch.float16)
    return model, (x0, x1,)
'''),
    _finding("differed aliasing: 'is", {'wgpu': 4}, 'wgpu', 'float32', (), '''
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.p6 = nn.Parameter(torch.randn((2, 5), dtype=torch.float32))

    def forward(self, x0, x1):
        h1 = x0.masked_fill(torch.arange(5) >= 1, float('-inf')).softmax(-1)
        h2 = torch.relu(h1)
        h3 = torch.relu(h2)
        h4 = torch.relu(h3)
        h5 = torch.relu(h4)
        h7 = h5 * self.p6
        loss8 = h7.sum()
        return (loss8, h7.detach(), h4, h7.detach(),)


def make():
    torch.manual_seed(0)
    model = Model()

    x0 = torch.randn((5, 2)).to(torch.float32).transpose(-1, -2)
    x1 = torch.rand((2, 5)) > 0.5
    return model, (x0, x1,)
'''),
    _finding('differed buffer b11: values, gradient: tensor([0.,, result: strides', {'metal': 2, 'wgpu': 2}, 'metal', 'float64', ('aten._native_batch_norm_legit_no_training', 'aten.nll_loss_forward'), '''
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.m2 = nn.BatchNorm1d(4, momentum=0.5, affine=True, dtype=torch.float64).eval()
        self.m7 = nn.BatchNorm1d(4, momentum=0.1, affine=True, dtype=torch.float64)
        self.register_buffer('b10', torch.zeros((), dtype=torch.int64))
        self.register_buffer('b11', torch.ones((), dtype=torch.float64))

    def forward(self, x0, x1):
        h1 = x0.as_strided((4, 4), (1, 4))
        h3 = self.m2(h1)
        h3.relu_()
        h4 = torch.clamp(h3, -1.0, 1.0)
        h5 = h4 + torch.arange(4, dtype=torch.float64)
        h6 = h1.masked_fill(torch.arange(4) >= 3, float('-inf')).softmax(-1)
        h8 = self.m7(x0)
        loss9 = F.cross_entropy(h8, x1, label_smoothing=0.0)
        self.b10 += 1
        self.b11.mul_(0.9)
        self.b11.add_(h8.detach().mean() * 0.1)
        return (loss9, h1.argmax(-1), h3, x0.argmax(-1),)


def make():
    torch.manual_seed(2)
    model = Model()
    model.m2.running_mean.uniform_(-1, 1)
    model.m2.running_var.uniform_(0.5, 2)
    x0 = torch.randn((9, 4)).to(torch.float64)[1::2].requires_grad_()
    x1 = torch.randint(0, 4, (4,))
    return model, (x0, x1,)
'''),
    _finding('differed result: shape,', {'metal': 1, 'wgpu': 1}, 'metal', 'bfloat16', ('aten._native_batch_norm_legit_no_training', 'aten.view'), '''
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.m1 = nn.BatchNorm2d(4, momentum=0.5, affine=True, dtype=torch.bfloat16).eval()
        self.m3 = nn.GroupNorm(1, 4, affine=False, dtype=torch.bfloat16)
        self.m6 = nn.Conv1d(4, 1, 1, stride=2, padding=1, dilation=2, groups=1, bias=False, dtype=torch.bfloat16)
        self.register_buffer('b9', torch.ones((), dtype=torch.bfloat16))

    def forward(self, x0, x1):
        h2 = self.m1(x0)
        h4 = self.m3(h2)
        h5 = h4.flatten(2, 3)
        h7 = self.m6(h5)
        h7.mul_(0.5)
        loss8 = F.mse_loss(h7, x1, reduction='mean')
        self.b9.mul_(0.9)
        self.b9.add_(h7.detach().mean() * 0.1)
        return (loss8, x1, h2.detach(), h2.transpose(0, 1),)


def make():
    torch.manual_seed(2)
    model = Model()
    model.m1.running_mean.uniform_(-1, 1)
    model.m1.running_var.uniform_(0.5, 2)
    x0 = torch.randn((4, 4, 1, 3)).to(torch.bfloat16).transpose(-1, -2).requires_grad_()
    x1 = torch.randn((9, 1, 3)).to(torch.bfloat16)[1::2]
    return model, (x0, x1,)
'''),
    _finding('differed result: values', {'wgpu': 1}, 'wgpu', 'float32', (), '''
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.m3 = nn.GroupNorm(1, 1, affine=False, dtype=torch.float32)
        self.m5 = nn.Conv2d(1, 4, 3, padding=1, dtype=torch.float32)
        self.m7 = nn.GroupNorm(2, 4, dtype=torch.float32)
        self.m10 = nn.BatchNorm2d(4, momentum=0.5, affine=False, dtype=torch.float32).eval()
        self.m12 = nn.GroupNorm(1, 4, affine=True, dtype=torch.float32)
        self.register_buffer('b15', torch.ones((), dtype=torch.float32))

    def forward(self, x0):
        h1 = x0.view(2, 2, 1, 4, 5)
        h2 = h1.mean(4, keepdim=False)
        h4 = self.m3(x0)
        h6 = self.m5(h4)
        h8 = self.m7(h6)
        h9 = torch.relu(h8)
        h11 = self.m10(h9)
        h11.sigmoid_()
        h13 = self.m12(h11)
        h13.mul_(0.5)
        loss14 = h13.sum()
        self.b15.mul_(0.9)
        self.b15.add_(h13.detach().mean() * 0.1)
        return (loss14, h11.detach(), h11 > 0,)


def make():
    torch.manual_seed(0)
    model = Model()
    model.m10.running_mean.uniform_(-1, 1)
    model.m10.running_var.uniform_(0.5, 2)
    x0 = torch.randn((1, 1, 4, 5)).to(torch.float32).expand((4, 1, 4, 5))
    return model, (x0,)
'''),
    _finding('differed result: strides', {'metal': 1}, 'metal', 'bfloat16', ('aten.mul.Tensor',), '''
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.m1 = nn.BatchNorm1d(3, momentum=0.5, affine=True, dtype=torch.bfloat16).eval()
        self.m3 = nn.BatchNorm1d(3, momentum=0.5, affine=True, dtype=torch.bfloat16)
        self.register_buffer('b6', torch.zeros((), dtype=torch.int64))
        self.register_buffer('b7', torch.ones((), dtype=torch.bfloat16))

    def forward(self, x0, x1):
        h2 = self.m1(x0)
        h4 = self.m3(h2)
        loss5 = F.mse_loss(h4, x1, reduction='sum')
        self.b6 += 1
        self.b7.mul_(0.9)
        self.b7.add_(h4.detach().mean() * 0.1)
        return (loss5, x0 > 0, x0, h2 > 0,)


def make():
    torch.manual_seed(2)
    model = Model()
    model.m1.running_mean.uniform_(-1, 1)
    model.m1.running_var.uniform_(0.5, 2)
    x0 = torch.randn((3, 4)).to(torch.bfloat16).transpose(-1, -2)
    x1 = torch.randn((4, 3)).to(torch.bfloat16)
    return model, (x0, x1,)
'''),
    _finding('differed gradient: values, result: strides', {'wgpu': 1}, 'wgpu', 'bfloat16', ('aten.mul.Tensor',), '''
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.m1 = nn.BatchNorm1d(3, momentum=0.5, affine=True, dtype=torch.bfloat16).eval()
        self.m3 = nn.BatchNorm1d(3, momentum=0.5, affine=True, dtype=torch.bfloat16)
        self.register_buffer('b6', torch.zeros((), dtype=torch.int64))
        self.register_buffer('b7', torch.ones((), dtype=torch.bfloat16))

    def forward(self, x0, x1):
        h2 = self.m1(x0)
        h4 = self.m3(h2)
        loss5 = F.mse_loss(h4, x1, reduction='sum')
        self.b6 += 1
        self.b7.mul_(0.9)
        self.b7.add_(h4.detach().mean() * 0.1)
        return (loss5, x0 > 0, x0, h2 > 0,)


def make():
    torch.manual_seed(2)
    model = Model()
    model.m1.running_mean.uniform_(-1, 1)
    model.m1.running_var.uniform_(0.5, 2)
    x0 = torch.randn((3, 4)).to(torch.bfloat16).transpose(-1, -2)
    x1 = torch.randn((4, 3)).to(torch.bfloat16)
    return model, (x0, x1,)
'''),
)


def main(argv: list[str]) -> int:
    from fuzzing.check import check

    picked = [int(argv[0])] if argv and argv[0].isdigit() else range(1, len(FINDINGS) + 1)
    for n in picked:
        f = FINDINGS[n - 1]
        if "--script" in argv:
            print(f.program.reproducer(f.target))
            continue
        outcome = check(f.program, f.target)
        print(f"finding {n} on {f.target}: {outcome.status} ({f.kind})")
        print("\n".join(f"  {d}" for d in outcome.detail))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
