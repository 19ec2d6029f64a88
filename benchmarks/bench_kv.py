"""Memory under load: what a full KV cache does to LR, in the simulator and in `lr plan`.

    .venv/bin/python benchmarks/bench_kv.py      # about a minute on 2 cores

Two questions, through the CLI as a user asks them:

  simulate   `lr simulate --policy lr-async --depth 4 --requests 32 --steps 60` on the default
             h100-paper scenario, with room for every request and with a 60,000-token target
             cache (`--kv-cache-tokens`): LR's speedup over AR on the same cache, preemptions and
             the peak share of the cache used (the paper's caveat: LR may cut throughput on a
             saturated GPU).
  plan       `lr plan --preset r1-gsm8k` on 40 GiB H100s (a device file) at 32 requests in flight:
             the KV cache the presets size from memory, and which configurations run out of it.

Writes benchmarks/results/kv.{json,md}; README.md quotes kv.md (benchmarks/quote.py).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "kv"
SIM = ("simulate", "--policy", "lr-async", "--depth", "4", "--requests", "32", "--steps", "60")
CACHE_TOKENS = 60_000             # small enough that AR itself preempts at 32 requests
PLAN = ("plan", "--preset", "r1-gsm8k", "--device-kind", "H100-40", "--concurrency", "32",
        "--modes", "lr,sd")
# an H100 with 40 GiB of memory instead of 80 (same bandwidth and compute): a device file
SMALL_H100 = {"H100-40": {"memory_gib": 40, "hbm_tb_s": 3.35, "bf16_tflops": 989, "link_gb_s": 450}}


def lr(*args: str) -> dict:
    cmd = [str(ROOT / ".venv" / "bin" / "lr"), *args, "--json"]
    r = subprocess.run(cmd, cwd=ROOT, env={**os.environ, "NO_COLOR": "1"}, capture_output=True,
                       text=True, timeout=1800)
    if r.returncode != 0:
        raise SystemExit(f"bench_kv: {' '.join(args)} failed: {r.stderr.strip()}")
    return json.loads(r.stdout)


def sim_row(s: dict) -> dict:
    return {"speedup": s["speedup"], "kv_preemptions": s.get("kv_preemptions"),
            "kv_peak_fraction": s.get("kv_peak_fraction"),
            "ar_kv_preemptions": s.get("ar_kv_preemptions"),
            "ar_kv_peak_fraction": s.get("ar_kv_peak_fraction")}


def main() -> None:
    t0 = time.perf_counter()
    sim = {"unlimited": sim_row(lr(*SIM)),
           f"{CACHE_TOKENS}": sim_row(lr(*SIM, "--kv-cache-tokens", str(CACHE_TOKENS)))}
    with tempfile.TemporaryDirectory() as tmp:
        dev = Path(tmp) / "small.json"
        dev.write_text(json.dumps(SMALL_H100))
        p = lr(*PLAN, "--device-file", str(dev))
    rows = [{"label": c["label"], "placement": c["placement"], "speedup": c["speedup"],
             "kv_full": c.get("kv_full"), "kv_preemptions": c.get("kv_preemptions"),
             "kv_peak_fraction": c.get("kv_peak_fraction")}
            for c in p["candidates"] if c.get("feasible", True)]
    res = {"simulate": {"command": "lr " + " ".join(SIM), "runs": sim},
           "plan": {"command": "lr " + " ".join(PLAN) + " --device-file small.json",
                    "device": SMALL_H100, "rows": rows,
                    "skipped": [c["label"] for c in p.get("skipped", [])]},
           "seconds": round(time.perf_counter() - t0, 1)}
    OUT.with_suffix(".json").write_text(json.dumps(res, indent=1) + "\n")
    md = render(res)
    OUT.with_suffix(".md").write_text(md)
    print(md, end="")


def render(res: dict) -> str:
    f = lambda v, fmt: "-" if v is None else format(v, fmt)  # noqa: E731
    s = res["simulate"]
    md = [f"`{s['command']}` (h100-paper scenario):", "",
          "| target KV cache (tokens) | LR speedup vs AR | LR preempted / peak | AR preempted / peak |",
          "|---|---|---|---|"]
    for cap, r in s["runs"].items():
        md.append(f"| {cap} | {r['speedup']:.2f}x | {f(r['kv_preemptions'], 'g')} / "
                  f"{f(r['kv_peak_fraction'], '.0%')} | {f(r['ar_kv_preemptions'], 'g')} / "
                  f"{f(r['ar_kv_peak_fraction'], '.0%')} |")
    p = res["plan"]
    md += ["", f"`{p['command']}` (40 GiB H100s):", "",
           "| configuration | placement | speedup | out of KV cache | preempted | peak |",
           "|---|---|---|---|---|---|"]
    for r in sorted(p["rows"], key=lambda r: -r["speedup"]):
        md.append(f"| {r['label']} | {r['placement']} | {r['speedup']:.2f}x | "
                  f"{'yes' if r['kv_full'] else 'no'} | {f(r['kv_preemptions'], '.1f')} | "
                  f"{f(r['kv_peak_fraction'], '.0%')} |")
    if p["skipped"]:
        md += ["", f"Skipped (no memory left for a KV cache): {', '.join(p['skipped'])}."]
    md += ["", f"{res['seconds']:.0f} s wall (`benchmarks/bench_kv.py`)"]
    return "\n".join(md) + "\n"


if __name__ == "__main__":
    sys.exit(main())
