"""Lowering time of the training graphs of the issues' models (tests/torch_models.py), and of
transformers' GPT-2 and BERT in small configs when transformers is installed.

Each model's training step is compiled once with the torch backend for `cpu`, which runs every
op, so the graphs it records are the forward and backward graphs as imported (dropout on, its
masks graph inputs; of a graph with ops outside the mapping, the mapped pieces, as the backend
lowers them). That happens in a child process, so this one stays small: a process it starts
inherits its peak memory. Each graph is written as JSON and lowered with `egraph-lower lower`
in a fresh process per backend: nodes in and out, wall time and peak memory of that process
(Python's start and imports included), and the stage seconds of its --report.

    python bench/models.py [--models mlp,gpt2,...] [--backends metal,wgpu,tpu,mlx,cpu] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import lower_cmd, measure  # noqa: E402

STAGES = ("read", "load", "saturate", "extract", "convert", "check", "write")
MANIFEST = "graphs.json"


def record(models: str, into: Path) -> int:
    """Record the models' graphs into `into` (one JSON document each) and list them in its manifest."""
    sys.path.insert(0, str(ROOT / "tests"))
    from torch_models import CASES, hf_cases, recorded_graphs

    cases = {**CASES, **{c.name: c for c in hf_cases()}}
    names = list(cases) if models == "all" else models.split(",")
    unknown = [m for m in names if m not in cases]
    if unknown:
        print(f"unknown model(s) {', '.join(unknown)}: use some of {', '.join(cases)}", file=sys.stderr)
        return 2
    listed = []
    for name in names:
        for fx_name, graph in recorded_graphs(cases[name], strict=False).items():
            path = into / f"{graph.name}.json"
            path.write_text(graph.to_json())
            listed.append({"model": name, "graph": fx_name, "path": str(path), "nodes": len(graph.nodes)})
    (into / MANIFEST).write_text(json.dumps(listed))
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="all", help="comma-separated names of tests/torch_models.py's cases "
                    "(hf_gpt2, hf_bert with transformers), or all")
    ap.add_argument("--backends", default="metal,wgpu,tpu,mlx,cpu")
    ap.add_argument("--keep", type=Path, help="write the recorded graphs (and the lowered ones) into this directory")
    ap.add_argument("--record-into", type=Path, help=argparse.SUPPRESS)  # the child's part
    args = ap.parse_args()
    if args.record_into:
        return record(args.models, args.record_into)
    with tempfile.TemporaryDirectory() as tmp:
        where = args.keep or Path(tmp)
        where.mkdir(parents=True, exist_ok=True)
        child = subprocess.run([sys.executable, __file__, "--models", args.models, "--record-into", str(where)])
        if child.returncode:
            return child.returncode
        print("| model | graph | nodes in | backend | nodes out | wall s | peak MB | "
              + " | ".join(STAGES) + " | total |")
        print("|---|---|---:|---|---:|---:|---:|" + "---:|" * (len(STAGES) + 1))
        results: dict[tuple[str, str, int], dict[str, str]] = {}  # (model, graph, nodes in) -> backend -> cell
        for item in json.loads((where / MANIFEST).read_text()):
            src = Path(item["path"])
            row = results.setdefault((item["model"], item["graph"], item["nodes"]), {})
            for backend in args.backends.split(","):
                stem = Path(backend).stem  # a built-in name or a backend file's path
                out, rep = src.with_suffix(f".{stem}.json"), src.with_suffix(f".{stem}.report.json")
                m = measure(lower_cmd(src, backend, out, rep))
                head = f"| {item['model']} | {item['graph']} | {item['nodes']} | {stem} |"
                if m.returncode:
                    print(f"{head} failed: {m.stderr.strip()[:200]} |")
                    row[stem] = "failed"
                    continue
                r = json.loads(rep.read_text())
                s = r["seconds"]
                stages = " | ".join(f"{s[k]:.3f}" for k in (*STAGES, "total"))
                print(f"{head} {r['after']['nodes']} | {m.seconds:.2f} | {m.peak_mb:.0f} | {stages} |", flush=True)
                row[stem] = f"{r['after']['nodes']} / {s['total']:.3f}"
    stems = [Path(b).stem for b in args.backends.split(",")]
    print("\nnodes out / lowering seconds (the report's total) per backend:\n")
    print("| model | graph | nodes in | " + " | ".join(stems) + " |")
    print("|---|---|---:|" + "---:|" * len(stems))
    for (model, fx_name, nodes), row in results.items():
        print(f"| {model} | {fx_name} | {nodes} | " + " | ".join(row.get(b, "") for b in stems) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
