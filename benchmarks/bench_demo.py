"""What `make demo` predicts and then measures on this machine, and how long it takes.

    .venv/bin/python benchmarks/bench_demo.py [--problem 0] [--out benchmarks/results/demo.json]

Runs the demo's whole loop (`python -m analysis.demo`: theory, calibrate on the shipped corpus,
probe this machine, predict, measure ar and lr depth 2 for real, compare, plan, report) into a
fresh temporary folder, so an earlier live run is never reused (`make demo` itself resumes
out/live.jsonl), and writes the demo's summary with the wall time to benchmarks/results/demo.json.
The models must be prepared (`lr models prepare`); run it alone, with nothing else on the cores.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--problem", type=int, default=0)
    ap.add_argument("--out", default=str(ROOT / "benchmarks/results/demo.json"))
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="lr-demo-") as tmp:
        t0 = time.perf_counter()
        p = subprocess.run([sys.executable, "-m", "analysis.demo", "--out", tmp, "--problem", str(a.problem)],
                           cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
        wall = time.perf_counter() - t0
        if p.returncode != 0:
            sys.exit(f"bench_demo: the demo exited {p.returncode}")
        summary = json.loads((Path(tmp) / "demo_summary.json").read_text())
    load = os.getloadavg()
    res = {"problem": f"gsm8k/{a.problem}", "wall_s": round(wall, 1), "load_after": [round(x, 2) for x in load],
           "probe_factors": summary.get("probe_factors"), "prediction": summary.get("prediction"),
           "comparison": summary.get("comparison"), "corpus": summary.get("corpus")}
    Path(a.out).write_text(json.dumps(res, indent=1) + "\n")
    for r in res["comparison"] or []:
        print({k: r.get(k) for k in ("config", "predicted_s", "measured_s", "diff_pct", "pred_speedup",
                                     "meas_speedup", "correct")})
    print(f"demo: {wall / 60:.1f} min; written to {a.out}")


if __name__ == "__main__":
    main()
