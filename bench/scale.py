"""Time and peak memory of `egraph-lower lower`, whole process and per stage, as graphs grow.

    python bench/scale.py                       # chains of 1k, 10k, 100k backward ops for metal
    python bench/scale.py --sizes 1000000       # the 1M-node point (about a minute)
    python bench/scale.py --kind mlp --sizes 10 100 1000 --backend wgpu

Each size is generated first (not timed), then lowered in a fresh process:
the wall time and peak RSS are that process's, the stages come from --report.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from common import lower_cmd, measure
from generate import GENERATORS

STAGES = ("read", "load", "saturate", "extract", "convert", "check", "write")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kind", choices=sorted(GENERATORS), default="chain")
    p.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    p.add_argument("--backend", default="metal")
    args = p.parse_args()
    print(f"{args.kind} graphs lowered for {args.backend}: whole process, then stages (seconds)")
    header = f"{'size':>9} {'nodes':>9} {'out':>9} {'e-nodes':>10} {'wall s':>7} {'peak MB':>8}  " + " ".join(
        f"{s:>8}" for s in STAGES)
    print(header)
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        previous = None
        for n in args.sizes:
            graph = GENERATORS[args.kind](n)
            gpath, out, rep = d / "g.json", d / "out.json", d / "report.json"
            gpath.write_text(graph.to_json())
            m = measure(lower_cmd(gpath, args.backend, out, rep))
            if m.returncode != 0:
                print(f"{n:>9} failed: {m.stderr.strip()}")
                continue
            r = json.loads(rep.read_text())
            secs = r["seconds"]
            print(f"{n:>9} {r['before']['nodes']:>9,} {r['after']['nodes']:>9,} {r['enodes']:>10,} {m.seconds:>7.2f}"
                  f" {m.peak_mb:>8.0f}  " + " ".join(f"{secs.get(s, 0.0):>8.3f}" for s in STAGES))
            if previous:
                pn, ps = previous
                print(f"{'':>9} x{n / pn:.0f} nodes -> x{m.seconds / ps:.1f} time")
            previous = (n, m.seconds)


if __name__ == "__main__":
    main()
