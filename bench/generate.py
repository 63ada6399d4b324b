"""Graph generators for the benchmarks: chains, joint forward/backward MLPs, wide graphs.

    python bench/generate.py chain 100000 -o chain_100k.json
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from egraph_lower.build import GraphBuilder  # noqa: E402
from egraph_lower.graph import Graph, Node  # noqa: E402

CHAIN_KINDS = ("Relu", "Sigmoid", "Tanh", "Gelu")


def chain(n: int, shape: tuple[int, ...] = (8, 16), dtype: str = "f32") -> Graph:
    """n backward ops in turn (relu, sigmoid, tanh, gelu), each taking the previous
    gradient as both its input and its incoming gradient: nothing can be shared."""
    nodes = [Node(0, "Input", (), shape, dtype, {"name": "x"})]
    for i in range(n):
        kind = CHAIN_KINDS[i % 4]
        if kind == "Relu":
            nodes.append(Node(i + 1, "ReluBackward", (i, i), shape, dtype))
        else:
            nodes.append(Node(i + 1, "ActivationBackward", (i, i), shape, dtype, {"kind": kind}))
    return Graph(nodes, [n], f"chain_{n}")


def chain_shared(n: int, shape: tuple[int, ...] = (8, 16), dtype: str = "f32") -> Graph:
    """n backward ops in turn (relu, sigmoid, tanh, gelu), all at one input x, each taking the
    previous gradient as its incoming gradient: what a backward pass through one point looks like,
    and the expansions share every value computed from x."""
    nodes = [Node(0, "Input", (), shape, dtype, {"name": "x"}), Node(1, "Input", (), shape, dtype, {"name": "dy"})]
    for i in range(n):
        kind, nid = CHAIN_KINDS[i % 4], i + 2
        if kind == "Relu":
            nodes.append(Node(nid, "ReluBackward", (0, nid - 1), shape, dtype))
        else:
            nodes.append(Node(nid, "ActivationBackward", (0, nid - 1), shape, dtype, {"kind": kind}))
    return Graph(nodes, [n + 1], f"chain_shared_{n}")


def mlp(layers: int, batch: int = 32, width: int = 64, kinds: tuple[str, ...] = ("Gelu", "Silu", "Tanh")) -> Graph:
    """A joint forward + backward graph of an MLP: forward values are shared with the backward."""
    b = GraphBuilder(f"mlp_{layers}")
    h = b.input("x", [batch, width])
    saved = []
    for i in range(layers):
        w = b.param(f"w{i}", [width, width])
        bias = b.param(f"b{i}", [width])
        z = b.binary("Add", b.matmul(h, w), bias)
        kind = kinds[i % len(kinds)]
        h = b.act(kind, z)
        saved.append((h, z, w, kind))
    g = b.input("dy", [batch, width])
    grads = []
    for h_out, z, w, kind in reversed(saved):
        dz = b.act_backward(kind, z, g)
        grads.append(b.reduce("Sum", dz, [0]))
        g = b.matmul(dz, b.transpose(w, [1, 0]))
    return b.build([h, g, *grads], validate=False)


def wide(n: int, shape: tuple[int, ...] = (8, 16)) -> Graph:
    """n independent backward ops over one x and dy: the widest graph, maximal sharing."""
    nodes = [Node(0, "Input", (), shape, "f32", {"name": "x"}), Node(1, "Input", (), shape, "f32", {"name": "dy"})]
    outs = []
    for i in range(n):
        nid = i + 2
        kind = CHAIN_KINDS[i % 4]
        x_in = 0 if i % 2 == 0 else 1
        nodes.append(Node(nid, "ActivationBackward", (x_in, 1 - x_in), shape, "f32", {"kind": kind})
                     if kind != "Relu" else Node(nid, "ReluBackward", (x_in, 1 - x_in), shape, "f32"))
        outs.append(nid)
    return Graph(nodes, outs, f"wide_{n}")


GENERATORS = {"chain": chain, "chain_shared": chain_shared, "mlp": mlp, "wide": wide}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("kind", choices=sorted(GENERATORS))
    p.add_argument("n", type=int)
    p.add_argument("-o", "--output", required=True)
    args = p.parse_args()
    Path(args.output).write_text(GENERATORS[args.kind](args.n).to_json())


if __name__ == "__main__":
    main()
