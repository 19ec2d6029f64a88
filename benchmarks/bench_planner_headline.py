"""The planner's headline for deployers: `lr plan --preset r1-gsm8k` (the paper's 4x H100 setup)
at two TP efficiencies and four loads, through the CLI as a user runs it.

    .venv/bin/python benchmarks/bench_planner_headline.py     # about 2 minutes on 2 cores

Writes benchmarks/results/planner_headline.{json,md}, and plan_example.md: the terminal output
(80 columns) of the docs' example `lr plan --preset r1-gsm8k --devices 8 --concurrency 16
--slo-ms 14`. README.md and docs/planning.md quote them (benchmarks/quote.py). Per row: the best step-level configuration (lr / lr+sd on dedicated
GPUs), the best LR alone, the best token-level SD on the same 2 GPUs, and the equal-resources
baselines (the target given the draft's and judge's GPUs as extra TP: AR and n-gram SD), all as
speedup over AR at TP=2 (the planner's reference) at the same load.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "planner_headline"
PRESET = "r1-gsm8k"
TP_EFFICIENCIES = (0.9, 0.6)      # the roofline's TP scaling per doubling, and a pessimistic one
LOADS = (1, 8, 16, 32)            # requests in flight (tp-efficiency 0.9)
EXAMPLE = ("--devices", "8", "--concurrency", "16", "--slo-ms", "14")  # docs/planning.md's example


def plan(*args: str, as_json: bool = True) -> dict | str:
    cmd = [str(ROOT / ".venv" / "bin" / "lr"), "plan", "--preset", PRESET, *args]
    env = {**os.environ, "COLUMNS": "80", "NO_COLOR": "1"}   # the width the docs promise
    r = subprocess.run(cmd + (["--json"] if as_json else []), cwd=ROOT, env=env,
                       capture_output=True, text=True, check=True)
    return json.loads(r.stdout) if as_json else r.stdout


def best(cands: list[dict], pick) -> dict | None:
    rows = [c for c in cands if c.get("feasible", True) and pick(c)]
    return max(rows, key=lambda c: c["speedup"]) if rows else None


def summary(d: dict) -> dict:
    c = d["candidates"]
    dedicated = lambda c, modes: c["placement"] == "dedicated" and c["mode"] in modes  # noqa: E731
    rows = {
        "step_level": best(c, lambda x: dedicated(x, ("lr", "lr+sd"))),
        "lr_alone": best(c, lambda x: dedicated(x, ("lr",))),
        "sd_tp2": best(c, lambda x: dedicated(x, ("sd",))),
        "ar_equal": best(c, lambda x: x["placement"] == "equal-resources" and x["mode"] == "ar"),
        "sd_equal": best(c, lambda x: x["placement"] == "equal-resources" and x["mode"] == "sd"),
    }
    return {k: (None if v is None else {"label": v["label"], "speedup": round(v["speedup"], 3)})
            for k, v in rows.items()} | {"best": d["best"]["label"],
                                         "best_placement": d["best"]["placement"]}


def main() -> None:
    t0 = time.perf_counter()
    tp = {str(e): summary(plan("--tp-efficiency", str(e))) for e in TP_EFFICIENCIES}
    load = {str(n): summary(plan("--concurrency", str(n))) for n in LOADS}
    example = plan(*EXAMPLE, as_json=False)
    text = "\n".join(line.rstrip() for line in example.rstrip().splitlines())
    (OUT.parent / "plan_example.md").write_text(
        f"```text\n$ lr plan --preset {PRESET} {' '.join(EXAMPLE)}\n{text}\n```\n")
    res = {"preset": PRESET, "tp_efficiency": tp, "concurrency": load,
           "seconds": round(time.perf_counter() - t0, 1)}
    OUT.with_suffix(".json").write_text(json.dumps(res, indent=2) + "\n")

    def x(r):
        return "-" if r is None else f"{r['speedup']:.2f}x"

    md = [f"`lr plan --preset {PRESET}` (4x H100; speedup over AR at TP=2, same load)", "",
          "| TP efficiency | best step-level (dedicated) | SD, TP=2 | AR, TP=4 | SD, TP=4 | best |",
          "|---|---|---|---|---|---|"]
    for e, s in tp.items():
        md.append(f"| {e} | {s['step_level']['label']} {x(s['step_level'])} | {x(s['sd_tp2'])} | "
                  f"{x(s['ar_equal'])} | {x(s['sd_equal'])} | {s['best']} |")
    md += ["", "| requests in flight | best step-level | LR alone | AR, TP=4 | SD, TP=4 |",
           "|---|---|---|---|---|"]
    for n, s in load.items():
        md.append(f"| {n} | {s['step_level']['label']} {x(s['step_level'])} | {x(s['lr_alone'])} | "
                  f"{x(s['ar_equal'])} | {x(s['sd_equal'])} |")
    md += ["", f"{res['seconds']:.0f} s wall (`benchmarks/bench_planner_headline.py`)"]
    OUT.with_suffix(".md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    sys.exit(main())
