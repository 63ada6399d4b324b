"""egraph-lower against PyTorch's decompositions on the same math, whole process each.

    python bench/torch_compare.py --torch-python /path/to/python-with-torch [--n 1000] [--rounds 3]

Both sides lower a chain of n backward ops (relu, sigmoid of sigmoid(x), tanh of
tanh(x), gelu in turn; shape [8, 16]): PyTorch with torch._decomp through make_fx
(bench/torch_side.py), this project with `egraph-lower lower --backend metal`.
They alternate `rounds` times; primitive ops count every computing node
(PyTorch: call_function nodes; here: nodes other than Input and scalar Constants).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from common import ROOT, lower_cmd, measure
from egraph_lower.build import GraphBuilder  # noqa: F401  (PYTHONPATH set by common)
from egraph_lower.document import load_graph
from egraph_lower.graph import Graph, Node


def torch_chain(n: int, shape: tuple[int, ...] = (8, 16)) -> Graph:
    """The same chain as bench/torch_side.py, in the format (the output forms where PyTorch uses them)."""
    nodes = [Node(0, "Input", (), shape, "f32", {"name": "x"})]
    g = 0
    for i in range(n):
        k = i % 4
        nid = len(nodes)
        if k == 0:
            nodes.append(Node(nid, "ReluBackward", (g, g), shape, "f32"))
        elif k in (1, 2):
            kind = "Sigmoid" if k == 1 else "Tanh"
            nodes.append(Node(nid, "Activation", (g,), shape, "f32", {"kind": kind}))
            nodes.append(Node(nid + 1, "ActivationBackward", (nid, g), shape, "f32", {"kind": kind, "wrt": "output"}))
        else:
            nodes.append(Node(nid, "ActivationBackward", (g, g), shape, "f32", {"kind": "Gelu"}))
        g = len(nodes) - 1
    return Graph(nodes, [g], f"torch_chain_{n}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--torch-python", default=sys.executable, help="a Python that has torch==2.13.0")
    p.add_argument("--n", type=int, default=1000)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        graph, out, rep = d / "g.json", d / "out.json", d / "r.json"
        graph.write_text(torch_chain(args.n).to_json())
        ours, theirs = [], []
        for r in range(args.rounds):
            m = measure(lower_cmd(graph, "metal", out, rep))
            assert m.returncode == 0, m.stderr
            ours.append(m.seconds)
            t = measure([args.torch_python, str(ROOT / "bench" / "torch_side.py"), str(args.n)])
            assert t.returncode == 0, t.stderr
            theirs.append(t.seconds)
            print(f"round {r + 1}: egraph-lower {m.seconds:.2f} s ({m.peak_mb:.0f} MB)   "
                  f"torch._decomp {t.seconds:.2f} s ({t.peak_mb:.0f} MB)")
        lowered = load_graph(out)
        our_ops = sum(1 for n in lowered.nodes if n.op not in ("Input", "Param") and not
                      (n.op == "Constant" and n.shape == ()))
        side = subprocess.run([args.torch_python, str(ROOT / "bench" / "torch_side.py"), str(args.n)],
                              capture_output=True, text=True, check=True).stdout.split()
        their_ops = int(side[0])
        ms, ts = statistics.median(ours), statistics.median(theirs)
        print(f"median: egraph-lower {ms:.2f} s, torch._decomp {ts:.2f} s  (ratio {ms / ts:.3f})")
        print(f"primitive ops: egraph-lower {our_ops}, torch._decomp {their_ops}")
        print(json.dumps({"n": args.n, "ours_s": ours, "torch_s": theirs, "ours_ops": our_ops,
                          "torch_ops": their_ops}))


if __name__ == "__main__":
    main()
