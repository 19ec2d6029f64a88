"""What the shipped scenarios predict: the tables of docs/simulator.md and the README's simulator
section, each row one `lr simulate ... --json` run.

    .venv/bin/python benchmarks/bench_scenarios.py [--out benchmarks/results/scenarios.json]

Single request on `h100-paper` (1,000 steps, alpha1 = 0.63, n-gram alpha2 = 0.3: the paper's
R1-Distill 32B/1.5B GSM8K setup) for every policy, the equal-resources baseline, tree width
1/2/4/8 at depth 2 on `h100-measured` and `h100-llm-judge-aime` (400 steps), speedup under
Poisson load, and eager vs deferred judging. Seeded: the numbers only move when the simulator or
a scenario changes. Writes the rows as JSON and markdown tables beside it (.md), which the README
and docs/simulator.md quote verbatim (benchmarks/quote.py).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SINGLE = [  # (label, flags on top of --scenario h100-paper --steps 1000)
    ("sd, k2 = 4", ["--policy", "sd", "--k2", "4"]),
    ("sd, k2 = 7", ["--policy", "sd", "--k2", "7"]),
    ("lr-sync, k1 = 3", ["--policy", "lr-sync", "--k1", "3"]),
    ("lr-async, depth 4", ["--policy", "lr-async", "--depth", "4"]),
    ("lr-async, depth 2, width 2", ["--policy", "lr-async", "--depth", "2", "--width", "2"]),
    ("lr-async depth 4 + SD k2 = 4", ["--policy", "lr-async", "--depth", "4", "--k2", "4"]),
    ("lr-stage, k1 = 5", ["--policy", "lr-stage", "--k1", "5"]),
    ("lr-async, equal resources", ["--policy", "lr-async", "--depth", "4", "--equal-resources"]),
    ("lr-async + SD k2 = 4, equal resources",
     ["--policy", "lr-async", "--depth", "4", "--k2", "4", "--equal-resources"]),
]
WIDTH_SCENARIOS = ("h100-measured", "h100-llm-judge-aime")
WIDTHS = (1, 2, 4, 8)
# Judge timing (lr-async depth 4, the scenario's own policy): eager (the default, as the reference)
# vs deferred, with a constant 13 ms judge (h100-paper) and an LLM judge batched on its own GPU
# (h100-llm-judge-aime), alone and under 16 concurrent requests (eager judges drafts that a
# rejection then cancels: more work for the judge).
# Under load: Poisson arrivals (100 requests of the scenario's 60 steps) at rising rates.
LOAD_RATES = ("0.5", "1", "2", "4", "8")
LOAD_POLICIES = (("lr-async, depth 4", ["--policy", "lr-async", "--depth", "4"]),
                 ("sd, k2 = 4", ["--policy", "sd", "--k2", "4"]),
                 ("lr-async depth 4 + SD k2 = 4", ["--policy", "lr-async", "--depth", "4", "--k2", "4"]))
TIMING_SCENARIOS = (("h100-paper", "1000"), ("h100-llm-judge-aime", "400"))
TIMING_REQUESTS = ("1", "16")


def with_timing(scenario: str, timing: str, tmp: Path) -> str:
    """A copy of a shipped scenario whose [policy] sets judge_timing."""
    text = (ROOT / "lrsim/scenarios" / f"{scenario}.toml").read_text()
    assert "\n[policy]\n" in text, scenario
    path = tmp / f"{scenario}-{timing}.toml"
    path.write_text(text.replace("\n[policy]\n", f'\n[policy]\njudge_timing = "{timing}"\n', 1))
    return str(path)


def simulate(*flags: str) -> dict:
    p = subprocess.run([sys.executable, str(ROOT / "cli.py"), "simulate", *flags, "--json"],
                       capture_output=True, text=True, cwd=ROOT, timeout=600)
    if p.returncode:
        raise SystemExit(f"lr simulate {' '.join(flags)}: {p.stderr.strip()}")
    return json.loads(p.stdout)


def row(label: str, flags: list[str], out: dict) -> dict:
    util = out.get("utilisation") or {}
    return {"label": label, "flags": flags, "speedup": out["speedup"],
            "tokens_per_s": out.get("tokens_per_s"), "ar_tokens_per_s": out.get("ar_tokens_per_s"),
            "position_acceptance": out.get("position_acceptance_rate"),
            "step_acceptance": out.get("step_acceptance_rate"),
            "unready_drafts": out.get("unready_drafts"), "utilisation": util}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(ROOT / "benchmarks/results/scenarios.json"))
    a = ap.parse_args()
    t0 = time.time()
    single = []
    for label, flags in SINGLE:
        f = ["--scenario", "h100-paper", "--steps", "1000", *flags]
        single.append(row(label, f, simulate(*f)))
    width = []
    for scen in WIDTH_SCENARIOS:
        for w in WIDTHS:
            f = ["--scenario", scen, "--steps", "400", "--policy", "lr-async", "--depth", "2",
                 "--width", str(w)]
            width.append(row(f"{scen} W={w}", f, simulate(*f)) | {"scenario": scen, "width": w})
    load = []
    for label, flags in LOAD_POLICIES:
        for rate in LOAD_RATES:
            f = ["--scenario", "h100-paper", "--rate", rate, *flags]
            load.append(row(f"{label} at {rate}/s", f, simulate(*f)) | {"policy": label, "rate": float(rate)})
    timing = []
    with tempfile.TemporaryDirectory() as tmp:
        for scen, steps in TIMING_SCENARIOS:
            for n in TIMING_REQUESTS:
                for jt in ("eager", "deferred"):
                    f = ["--scenario", with_timing(scen, jt, Path(tmp)), "--steps", steps, "--requests", n]
                    timing.append(row(f"{scen} {n} request(s) {jt}", f[2:], simulate(*f))
                                  | {"scenario": scen, "requests": int(n), "judge_timing": jt})
    doc = {"about": "lr simulate on the shipped scenarios (benchmarks/bench_scenarios.py)",
           "single_request": single, "width": width, "load": load, "judge_timing": timing,
           "wall_s": time.time() - t0,
           "finished": time.strftime("%Y-%m-%d %H:%M:%S")}
    Path(a.out).write_text(json.dumps(doc, indent=1) + "\n")
    md = ["| policy (h100-paper, 1 request, 1,000 steps) | speedup | position acceptance | late drafts |",
          "|---|---|---|---|"]
    for r in single:
        acc = "-" if r["position_acceptance"] is None else f"{r['position_acceptance']:.2f}"
        md.append(f"| {r['label']} | {r['speedup']:.3f} | {acc} | {r['unready_drafts'] or 0} |")
    md += ["", "| scenario (lr-async depth 2, 400 steps): speedup / position acceptance | "
           + " | ".join(f"W = {w}" for w in WIDTHS) + " |", "|---" * (len(WIDTHS) + 1) + "|"]
    for scen in WIDTH_SCENARIOS:
        cells = [f"{r['speedup']:.2f} / {r['position_acceptance']:.2f}" for r in width if r["scenario"] == scen]
        md.append(f"| {scen} | " + " | ".join(cells) + " |")
    md += ["", "| h100-paper under Poisson load: speedup at requests/s | "
           + " | ".join(LOAD_RATES) + " |", "|---" * (len(LOAD_RATES) + 1) + "|"]
    for label, _ in LOAD_POLICIES:
        md.append(f"| {label} | " + " | ".join(f"{r['speedup']:.2f}" for r in load if r["policy"] == label) + " |")
    md += ["", "| judge timing (lr-async depth 4) | requests | eager | deferred |", "|---|---|---|---|"]
    for scen, _ in TIMING_SCENARIOS:
        for n in TIMING_REQUESTS:
            sp = {r["judge_timing"]: r["speedup"] for r in timing
                  if r["scenario"] == scen and r["requests"] == int(n)}
            md.append(f"| {scen} | {n} | {sp['eager']:.3f} | {sp['deferred']:.3f} |")
    Path(a.out).with_suffix(".md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
