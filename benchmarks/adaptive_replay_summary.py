"""Replaying real lr-adaptive runs: with the decisions each run recorded, and deciding afresh.

    .venv/bin/python benchmarks/adaptive_replay_summary.py [--json]

An adaptive record holds every decision its run made (depth, width, k2 at each root). `lr replay`
and bench_load.py replay it with those decisions (lrsim/sim/traces.py, `recorded_choice`), as
they replay its verdicts and step lengths: what the simulator then predicts is the timing of what
the run did. `--adaptive-afresh` lets the simulator's own lr-adaptive decide instead, from its
neutral prior, each request learning its acceptance alone, within the recorded bounds: what the
replay did before. `--adaptive-afresh --afresh-as-run` decides afresh as the real backend does:
one Estimator for a block's requests (acceptance included, its price checked against their
commits: Config.adaptive_scope "run"), starting from the estimates the recorded run held at the
block's first decision (the real backend carries them from problem to problem). All three, on
the adaptive corpus of each CPU (each corpus calibrated on its own levels 1-2, bench_load.py's
default):

    bench_load.py --load traces/<corpus> --out benchmarks/results/adaptive_replay_<cpu>.json
    bench_load.py --load traces/<corpus> --adaptive-afresh \
        --out benchmarks/results/adaptive_replay_<cpu>_afresh.json
    bench_load.py --load traces/<corpus> --adaptive-afresh --afresh-as-run \
        --out benchmarks/results/adaptive_replay_<cpu>_run.json

Reads those results (no simulation runs here) and writes
benchmarks/results/adaptive_replay_summary.{json,md}: per CPU and level, lr-adaptive's measured
speedup over ar, both replays and their errors, and static lr-d2's replay error beside them.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
sys.path.insert(0, str(ROOT))

from benchmarks.write import write_results  # noqa: E402

# (result tag, corpus, the CPU as docs/adaptive.md names it)
CORPORA = (
    ("v3", "traces/load-adaptive-v3", "the first CPU (AMD EPYC, traces/load-adaptive-v3)"),
    ("f25m17", "traces/load-adaptive-f25m17-paid", "AMD EPYC family 25 model 17"),
    ("f23m1", "traces/load-adaptive-f23m1", "AMD EPYC family 23 model 1"),
    ("f26m2", "traces/load-adaptive-f26m2", "AMD EPYC family 26 model 2"),
    ("f26m2u", "traces/load-adaptive-f26m2-unit", "AMD EPYC family 26 model 2, again (one cost unit)"),
    ("f26m2_3", "traces/load-adaptive-f26m2-3", "AMD EPYC family 26 model 2, a third time (the prior in the Estimator's unit)"),
    ("f6m167", "traces/load-adaptive-f6m167", "Intel Xeon family 6 model 167"),
    ("f6m207", "traces/load-adaptive-f6m207", "Intel Xeon family 6 model 207"),
)
ADAPTIVE, STATIC = "lr-adaptive-d2", "lr-d2"
TARGET = 0.10                     # bench_load.py's: a replayed speedup within 10% of the measured


def _err(pred: float | None, meas: float | None) -> float | None:
    return None if pred is None or not meas else pred / meas - 1.0


def summarize() -> dict:
    rows = []
    for tag, corpus, cpu in CORPORA:
        rec = json.loads((RESULTS / f"adaptive_replay_{tag}.json").read_text())
        fresh = json.loads((RESULTS / f"adaptive_replay_{tag}_afresh.json").read_text())
        as_run = json.loads((RESULTS / f"adaptive_replay_{tag}_run.json").read_text())
        for level in sorted(rec["levels"], key=int):
            a, f = rec["levels"][level].get(ADAPTIVE), fresh["levels"][level].get(ADAPTIVE)
            g = (as_run["levels"].get(level) or {}).get(ADAPTIVE) or {}
            if not a or a.get("speedup_vs_ar") is None:
                continue
            s = rec["levels"][level].get(STATIC) or {}
            meas = a["speedup_vs_ar"]
            rows.append({"cpu": cpu, "tag": tag, "corpus": corpus, "in_flight": int(level),
                         "measured": meas,
                         "recorded": a.get("predicted_speedup_vs_ar"),
                         "afresh": (f or {}).get("predicted_speedup_vs_ar"),
                         "recorded_error": _err(a.get("predicted_speedup_vs_ar"), meas),
                         "afresh_error": _err((f or {}).get("predicted_speedup_vs_ar"), meas),
                         "as_run": g.get("predicted_speedup_vs_ar"),
                         "as_run_error": _err(g.get("predicted_speedup_vs_ar"), meas),
                         "static_error": _err(s.get("predicted_speedup_vs_ar"), s.get("speedup_vs_ar"))})

    def within(key):
        errs = [r[key] for r in rows if r[key] is not None]
        return {"within": sum(abs(e) <= TARGET for e in errs), "of": len(errs),
                "largest": max(map(abs, errs)) if errs else None,
                "mean_abs": sum(map(abs, errs)) / len(errs) if errs else None}
    return {"rows": rows, "target": TARGET, "recorded": within("recorded_error"),
            "afresh": within("afresh_error"), "as_run": within("as_run_error"),
            "static": within("static_error")}


def render(d: dict) -> str:
    pct = lambda v: "-" if v is None else f"{v:+.1%}"  # noqa: E731
    num = lambda v: "-" if v is None else f"{v:.2f}"  # noqa: E731
    lines = ["lr-adaptive's real speedup over ar (tokens/s of blocks of N problems started together), "
             "replayed by the simulator with the decisions each record's run made, with the "
             "simulator's lr-adaptive deciding afresh (each request from the neutral prior), and "
             "deciding afresh as the real backend does (one Estimator for a block's requests, its "
             "price checked against their commits, from the estimates the recorded run held at the "
             "block's first decision); each corpus calibrated on its own levels 1-2 "
             "(bench_load.py; benchmarks/adaptive_replay_summary.py).", "",
             "| CPU | in flight | measured | replayed, recorded decisions (error) | replayed, "
             "deciding afresh (error) | afresh as the real backend (error) | static lr-d2's replay error |",
             "|---|---|---|---|---|---|---|"]
    for r in d["rows"]:
        lines.append(f"| {r['cpu']} | {r['in_flight']} | {num(r['measured'])} | "
                     f"{num(r['recorded'])} ({pct(r['recorded_error'])}) | "
                     f"{num(r['afresh'])} ({pct(r['afresh_error'])}) | "
                     f"{num(r['as_run'])} ({pct(r['as_run_error'])}) | {pct(r['static_error'])} |")
    lines.append("")
    for key, name in (("recorded", "Recorded decisions"), ("afresh", "Deciding afresh"),
                      ("as_run", "Deciding afresh as the real backend"),
                      ("static", "Static lr-d2, same replays")):
        w = d[key]
        lines.append(f"{name}: within {d['target']:.0%} of measured at {w['within']} of {w['of']} "
                     f"(CPU, level) pairs, largest error {w['largest']:.1%}, mean absolute error {w['mean_abs']:.1%}.")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--out", default=str(RESULTS / "adaptive_replay_summary.json"))
    a = ap.parse_args()
    d = summarize()
    write_results(a.out, d, render)
    print(json.dumps(d, indent=1) if a.json else render(d))


if __name__ == "__main__":
    main()
