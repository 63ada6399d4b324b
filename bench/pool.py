"""Lowering time of pooling training steps (issue 12 item 2), whole process and per stage.

    python bench/pool.py                      # for metal and wgpu
    python bench/pool.py --backends cpu metal

Each graph is a pooling stage's forward and backward, built in code: MaxPool2d (with its
indices), AvgPool2d, AdaptiveAvgPool2d to 1 x 1, then the three backward ops in turn.
`small-cnn` is [8, 16, 32, 32] with 2 x 2 max pooling; `resnet18` is ResNet-18's stem
pooling ([32, 64, 112, 112], 3 x 3 stride 2 padding 1) and its final adaptive pooling, at
batch 32. Each is generated first (not timed), then lowered in a fresh process.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from common import ROOT, lower_cmd, measure

sys.path.insert(0, str(ROOT))

from egraph_lower.build import GraphBuilder  # noqa: E402
from egraph_lower.graph import Graph  # noqa: E402

STAGES = ("read", "load", "saturate", "extract", "convert", "check", "write")
GRAPHS: dict[str, tuple[tuple[int, ...], dict[str, Any]]] = {
    "small-cnn": ((8, 16, 32, 32), {"kernel": [2, 2], "stride": [2, 2], "padding": [0, 0], "dilation": [1, 1]}),
    "resnet18": ((32, 64, 112, 112), {"kernel": [3, 3], "stride": [2, 2], "padding": [1, 1], "dilation": [1, 1],
                                      "ceil_mode": False}),
}


def pool_step(shape: tuple[int, ...], max_attrs: dict[str, Any]) -> Graph:
    b = GraphBuilder("pool step")
    x = b.input("x", list(shape))
    y = b.op("MaxPool2d", x, **max_attrs)
    idx = b.op("MaxPool2dIndices", x, **max_attrs)
    avg = {"kernel": [2, 2], "stride": [2, 2], "padding": [1, 1], "ceil_mode": True, "count_include_pad": False}
    a = b.op("AvgPool2d", y, **avg)
    g = b.op("AdaptiveAvgPool2d", a, output_size=[1, 1])
    dg = b.input("dg", list(b.meta(g)[0]))
    da = b.op("AdaptiveAvgPool2dBackward", dg, input_shape=list(b.meta(a)[0]))
    dy = b.op("AvgPool2dBackward", da, **avg, input_shape=list(b.meta(y)[0]))
    dx = b.op("MaxPool2dBackward", dy, idx, **max_attrs, input_shape=list(shape))
    return b.build([g, dx])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backends", nargs="+", default=["metal", "wgpu"])
    args = p.parse_args()
    print("| graph | backend | nodes out | max-pool expansion | wall s | peak MB | " + " | ".join(STAGES) + " |")
    print("|---|---|---:|---|---:|---:|" + "---:|" * len(STAGES))
    with tempfile.TemporaryDirectory() as tmp:
        for name, (shape, attrs) in GRAPHS.items():
            src = Path(tmp) / f"{name}.json"
            src.write_text(pool_step(shape, attrs).to_json())
            for backend in args.backends:
                out, report = Path(tmp) / "out.json", Path(tmp) / "report.json"
                m = measure(lower_cmd(src, backend, out, report))
                if m.returncode != 0:
                    raise SystemExit(f"{name} on {backend}: {m.stderr.strip()}")
                r = json.loads(report.read_text())
                ops = {n["op"] for n in json.loads(out.read_text())["nodes"]}
                form = ("kept" if "MaxPool2dBackward" in ops else
                        "separable" if "MatMul" in ops and "Reshape" not in ops else "one-hot")
                stages = " | ".join(f"{r['seconds'][s]:.3f}" for s in STAGES)
                print(f"| {name} | {backend} | {r['after']['nodes']} | {form} | {m.seconds:.2f} | {m.peak_mb:.0f} | "
                      f"{stages} |")


if __name__ == "__main__":
    main()
