"""Extraction quality and time: the tree pass alone, the default greedy (new-work pricing +
DAG-aware local search) and the exact integer program, on e-graphs where sharing matters.

    python bench/extractors.py
    python bench/extractors.py --timing 100000    # tree against greedy time on a 100k-op chain

The set: joint forward + backward MLPs (forward values the backward can reuse) for
metal, tpu and wgpu (wgpu lowers two levels: backward ops, then Gelu/Silu/Erf),
a wide graph sharing one x, a dear-sigmoid backend where the tree pass is misled, and
ResNet-18's convolution gradients (bench/conv.py), where on wgpu a weight gradient's
cheapest form pays off only once the convolution it needs is unfolded differently (a
compound switch of the local search).
`proven`: whether the solver proved the exact extractor's choice optimal.
"""

from __future__ import annotations

import argparse
import time

from common import ROOT  # noqa: F401  (sets up the import path)
from conv import resnet18_step
from generate import chain, mlp, wide

import egraph_lower as el
from egraph_lower.backends import from_dict
from egraph_lower.lower import extract_for, saturate_graph

DEAR_SIGMOID = from_dict({
    "name": "dear-sigmoid", "ops": ["Input", "Param", "Constant", "Activation", "Binary", "Compare", "Where",
                                    "MatMul", "Transpose", "Reduce", "Reshape", "Expand", "Cast"],
    "activation_kinds": "all",
    "cost": {"launch": 1.0, "byte": 0.0, "flop": 1.0, "view": 0.0, "weights": {"Activation.Sigmoid": 30.0}}})


def cases() -> list[tuple[str, el.Graph, el.Backend]]:
    out = []
    for backend in ("metal", "tpu", "wgpu"):
        b = el.load_backend(backend)
        out += [(f"mlp4 {backend}", mlp(4, batch=16, width=32), b),
                (f"mlp8 {backend}", mlp(8, batch=16, width=32, kinds=("Gelu", "Silu", "Sigmoid", "Tanh")), b),
                (f"wide64 {backend}", wide(64), b),
                (f"chain200 {backend}", chain(200), b)]
    out.append(("mlp4 dear-sigmoid", mlp(4, batch=16, width=32, kinds=("Sigmoid", "Silu")), DEAR_SIGMOID))
    out += [(f"resnet18 {b}", resnet18_step(), el.load_backend(b)) for b in ("metal", "wgpu")]
    return out


def timing(n: int, backend: str = "metal") -> None:
    """Extraction time, tree against greedy, in-process on one saturated chain of n ops."""
    b = el.load_backend(backend)
    s = saturate_graph(chain(n), [b])
    print(f"chain of {n:,} ops for {backend}: {s.tables.n_nodes:,} e-nodes")
    secs = {}
    for method in ("greedy", "tree"):  # greedy first: the tables' lazy views are built on its clock
        t0 = time.perf_counter()
        cost = extract_for(s, b, method)[0].cost
        secs[method] = time.perf_counter() - t0
        print(f"  {method:<7} {secs[method]:7.3f} s   DAG cost {cost:,.2f}")
    print(f"  greedy/tree time: {secs['greedy'] / secs['tree']:.2f}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--timing", type=int, metavar="N", help="time tree against greedy on a chain of N ops instead")
    args = p.parse_args()
    if args.timing:
        timing(args.timing)
        return
    print(f"{'case':<22} {'e-nodes':>8} {'tree':>11} {'greedy':>11} {'exact':>11} {'greedy/exact':>12}"
          f" {'t tree':>7} {'t greedy':>8} {'t exact':>8} {'proven':>6}")
    worst = 1.0
    for name, graph, backend in cases():
        s = saturate_graph(graph, [backend])
        cost, secs, proven = {}, {}, False
        for method in ("tree", "greedy", "exact"):
            t0 = time.perf_counter()
            ex = extract_for(s, backend, method)[0]
            secs[method] = time.perf_counter() - t0
            cost[method], proven = ex.cost, ex.optimal  # (the exact extractor's is the one shown)
        ratio = cost["greedy"] / cost["exact"]
        worst = max(worst, ratio)
        print(f"{name:<22} {s.tables.n_nodes:>8,} {cost['tree']:>11.2f} {cost['greedy']:>11.2f} {cost['exact']:>11.2f}"
              f" {ratio:>12.4f} {secs['tree']:>7.3f} {secs['greedy']:>8.3f} {secs['exact']:>8.3f} {'yes' if proven else 'NO':>6}")
    print(f"worst greedy/exact: {worst:.4f}")


if __name__ == "__main__":
    main()
