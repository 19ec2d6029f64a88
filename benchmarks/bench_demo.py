"""What `make demo` predicts and then measures on this machine, and how long it takes.

    .venv/bin/python benchmarks/bench_demo.py [--problem 0] [--out benchmarks/results/demo.json]
    .venv/bin/python benchmarks/bench_demo.py --render    # demo.md from the committed demo.json

Runs the demo's whole loop (`python -m analysis.demo`: theory, calibrate on the shipped corpus,
probe this machine, predict, measure ar and lr depth 2 for real, compare, plan, report) into a
fresh temporary folder, so an earlier live run is never reused (`make demo` itself resumes
out/live.jsonl), and writes the demo's summary with the wall time to benchmarks/results/demo.json
and the paragraph the README quotes to demo.md (`--render` rewrites demo.md from demo.json alone).
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
sys.path.insert(0, str(ROOT))

from benchmarks.write import parse_or_render, write_results  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--problem", type=int, default=0)
    ap.add_argument("--out", default=str(ROOT / "benchmarks/results/demo.json"))
    a = parse_or_render(ap, render, "runs")
    if a is None:
        return
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
    write_results(a.out, res, render)
    for r in res["comparison"] or []:
        print({k: r.get(k) for k in ("config", "predicted_s", "measured_s", "diff_pct", "pred_speedup",
                                     "meas_speedup", "correct")})
    print(f"demo: {wall / 60:.1f} min; written to {a.out}")


def render(res: dict) -> str:
    """The README's paragraph on the last run: time, machine speed, predicted vs measured."""
    pf = res.get("probe_factors") or {}
    dec = (pf.get("target") or {}).get("decode")
    speed = (f"on a machine the probe found {abs(1 - dec):.0%} {'faster' if dec < 1 else 'slower'} than the "
             f"corpus's reference (target decode x{dec:.2f})" if dec else "without a machine probe")
    cmp = {r["config"]: r for r in res.get("comparison") or []}
    parts = []
    for cfg, name in (("ar", "AR"), ("lr-d2", "LR depth 2")):
        r = cmp.get(cfg)
        if r:
            parts.append(f"{name} predicted {r['predicted_s']:.1f} s / measured {r['measured_s']:.1f} s "
                         f"({r['diff_pct']:+.1f}%)")
    lr = cmp.get("lr-d2")
    text = (f"{res['wall_s'] / 60:.1f} minutes with the models already converted. That run, {speed}: "
            + ", ".join(parts))
    if lr:
        text += (f", so {lr['pred_speedup']:.3f}x AR predicted and {lr['meas_speedup']:.3f}x measured; "
                 + ("both answers right" if all(r.get("correct") for r in cmp.values()) else "not every answer right")
                 + (", and the same text as the corpus records" if all(r.get("same_text") for r in cmp.values())
                    else ""))
    return text + ".\n"


if __name__ == "__main__":
    main()
