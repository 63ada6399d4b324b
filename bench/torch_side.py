"""The PyTorch side of the comparison, run as its own process (needs torch==2.13.0).

Decomposes a chain of n backward ops -- threshold_backward, sigmoid_backward of
sigmoid(x), tanh_backward of tanh(x), gelu_backward, in turn, each taking the
previous gradient as both x and grad, like `generate.chain` -- with
torch._decomp through make_fx, and prints the number of primitive ops.

    python bench/torch_side.py 1000
"""

from __future__ import annotations

import sys

import torch
from torch._decomp import get_decompositions
from torch.fx.experimental.proxy_tensor import make_fx

aten = torch.ops.aten
OPS = [aten.threshold_backward, aten.sigmoid_backward, aten.tanh_backward, aten.gelu_backward]


def chain(n: int):  # type: ignore[no-untyped-def]
    def f(x: torch.Tensor) -> torch.Tensor:
        g = x
        for i in range(n):
            k = i % 4
            if k == 0:
                g = aten.threshold_backward(g, g, 0.0)
            elif k == 1:
                g = aten.sigmoid_backward(g, aten.sigmoid(g))
            elif k == 2:
                g = aten.tanh_backward(g, aten.tanh(g))
            else:
                g = aten.gelu_backward(g, g)
        return g

    return f


def main() -> None:
    n = int(sys.argv[1])
    gm = make_fx(chain(n), decomposition_table=get_decompositions(OPS))(torch.randn(8, 16))
    ops = [node for node in gm.graph.nodes if node.op == "call_function"]
    left = sorted({str(node.target) for node in ops if node.target in OPS})
    print(len(ops), ",".join(left))


if __name__ == "__main__":
    main()
