"""Lowering time of a ResNet-18-sized training graph of convolutions, built in code.

The graph: ResNet-18's 20 convolutions (7x7 stem, four stages of two basic blocks, 1x1
downsampling at stages 2-4) on a [8, 3, 224, 224] batch, each followed by ReLU (the
blocks' residual Adds included), then the backward pass: ReluBackward, and per
convolution Conv2dBackwardInput (all but the stem), Conv2dBackwardWeight and the bias
gradient (Reduce Sum). Each backend is lowered in a fresh process (`egraph-lower lower`),
wall time and peak memory measured; the stage seconds are those of its --report. A second
table counts, per backend, the expansions extraction chose for the input and weight gradients
(`egraph-lower explore`'s per-convolution report, each backend on its own, as `lower` runs it).

    python bench/conv.py [--backends metal,tpu,mlx,cpu]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import lower_cmd, measure  # noqa: E402
from egraph_lower.build import GraphBuilder  # noqa: E402
from egraph_lower.explore import explore  # noqa: E402
from egraph_lower.graph import Graph  # noqa: E402


def resnet18_step(batch: int = 8) -> Graph:
    b = GraphBuilder("resnet18_conv_step")
    convs: list[tuple[int, int, int, dict[str, object]]] = []  # (x, w, y, attrs) in forward order

    def conv(x: int, cout: int, k: int, stride: int) -> int:
        cin = b.meta(x)[0][1]
        a = {"stride": [stride, stride], "padding": [k // 2, k // 2], "dilation": [1, 1], "groups": 1}
        w = b.param(f"w{len(convs)}", [cout, cin, k, k])
        y = b.op("Conv2d", x, w, **a)
        convs.append((x, w, y, a))
        return y

    x = b.input("x", [batch, 3, 224, 224])
    h = b.act("Relu", conv(x, 64, 7, 2))
    for stage, cout in enumerate((64, 128, 256, 512)):
        for block in range(2):
            stride = 2 if stage and not block else 1
            y = b.act("Relu", conv(h, cout, 3, stride))
            y = conv(y, cout, 3, 1)
            skip = conv(h, cout, 1, stride) if stride == 2 else h
            h = b.act("Relu", b.binary("Add", y, skip))
    grads: list[int] = []
    dy = b.input("dy", b.meta(h)[0])
    for x_in, w, y, a in reversed(convs):  # one backward per convolution, dy shaped like its output
        g = b.relu_backward(y, b.input(f"dy{len(grads)}", b.meta(y)[0]))
        grads.append(b.op("Conv2dBackwardWeight", x_in, g, weight_shape=list(b.meta(w)[0]), **a))
        grads.append(b.reduce("Sum", g, [0, 2, 3]))
        if x_in != x:
            grads.append(b.op("Conv2dBackwardInput", g, w, input_shape=list(b.meta(x_in)[0]), **a))
    grads.append(b.relu_backward(h, dy))
    return b.build(grads)


def expansions(graph: Graph, backend: str) -> dict[str, Counter[str]]:
    """Per gradient op, how many of its nodes took each expansion on `backend` (explore's names: the rules
    in the order they applied, "as is" for a node kept; with the rules an expansion takes besides there)."""
    out: dict[str, Counter[str]] = {}
    for conv in explore(graph, backend).convolutions():
        if conv["op"] != "Conv2d":
            (st,) = conv["backends"].values()
            name = st["chosen"] or "-"
            extra = [r for r in st["rules"] if r not in name.split(" + ")]
            out.setdefault(conv["op"], Counter())[name + (f" (with {', '.join(extra)})" if extra else "")] += 1
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backends", default="metal,tpu,mlx,cpu")
    args = ap.parse_args()
    graph = resnet18_step()
    print(f"{len(graph.nodes)} nodes, {graph.op_counts().get('Conv2d', 0)} convolutions")
    print("| backend | nodes out | wall s | peak MB | read | load | saturate | extract | convert | check | write |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "resnet18.json"
        src.write_text(graph.to_json())
        for backend in args.backends.split(","):
            stem = Path(backend).stem  # a built-in name or a backend file's path
            out, rep = Path(tmp) / f"{stem}.json", Path(tmp) / f"{stem}.report.json"
            m = measure(lower_cmd(src, backend, out, rep))
            if m.returncode:
                print(f"| {stem} | failed: {m.stderr.strip()[:200]} |")
                continue
            r = json.loads(rep.read_text())
            s = r["seconds"]
            stages = " | ".join(f"{s[k]:.3f}" for k in ("read", "load", "saturate", "extract", "convert", "check",
                                                          "write"))
            print(f"| {stem} | {r['after']['nodes']} | {m.seconds:.2f} | {m.peak_mb:.0f} | {stages} |")
    print()
    print("| backend | input gradients | weight gradients |")
    print("|---|---|---|")
    for backend in args.backends.split(","):
        stem, per = Path(backend).stem, expansions(graph, backend)
        cells = [", ".join(f"{k} x{v}" for k, v in sorted(per.get(op, Counter()).items()))
                 for op in ("Conv2dBackwardInput", "Conv2dBackwardWeight")]
        print(f"| {stem} | {cells[0]} | {cells[1]} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
