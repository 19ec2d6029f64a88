"""Simulator fidelity on the shipped real traces: calibrate, replay, compare per mode.

    .venv/bin/python benchmarks/bench_fidelity.py [TRACES...] [--seeds 5] [--json]

Default traces: traces/samples/*.jsonl, else tests/data/calib/*.jsonl. Prints, per mode:
  in-sample   calibrate on all problems, replay all of them (how well the model *can* fit);
  held-out    calibrate on half the problems, replay the other half, over --seeds splits
              (the honest number: nothing of the validated problems was seen by the fit);
  ablations   in-sample with one modelling choice removed (pooled latency instead of per-mode,
              no per-step scheduling overhead, the other placement), to show what limits it.
"""
from __future__ import annotations

import argparse
import copy
import glob
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lrcore.errors import UserError  # noqa: E402
from lrsim.calib.calibrate import calibrate, read_records, split_problems  # noqa: E402
from lrsim.calib.profile import Profile, validate_doc  # noqa: E402
from lrsim.calib.replay import replay  # noqa: E402


def default_traces() -> list[str]:
    """Every shipped real trace file (each is one `lr collect` setup: calibrated on its own)."""
    found = [p for p in sorted(glob.glob(str(ROOT / "traces/samples/*.jsonl"))) if Path(p).stat().st_size]
    own = [str(ROOT / f"tests/data/calib/{n}.jsonl") for n in ("cpu-gsm8k", "cpu-gsm8k-b")]
    return found + [p for p in own if Path(p).is_file()]


def ablate(doc: dict, what: str) -> dict:
    d = copy.deepcopy(doc)
    if what == "pooled latency":
        d["latency"] = {k: v for k, v in d["latency"].items() if "@" not in k}
    elif what == "no per-step overhead":
        d["overheads"]["per_step_s"] = 0.0
    elif what == "no per-request overhead":
        d["overheads"]["per_request_s"] = 0.0
        d["overheads"]["per_request_s_by_mode"] = {}
    elif what == "other placement":
        d["placement"]["shared"] = not d["placement"]["shared"]
    return d


def row(out: dict) -> dict:
    return {m: {"mape": e["mape"], "pearson_r": e["pearson_r"],
                "mean_diff_pct": e["latency"]["mean"]["diff_pct"],
                "p90_diff_pct": e["latency"]["p90"]["diff_pct"],
                "tps_meas": e["tokens_per_s"]["measured"], "tps_pred": e["tokens_per_s"]["predicted"],
                "speedup_meas": (e["speedup"] or {}).get("measured"),
                "speedup_pred": (e["speedup"] or {}).get("predicted")}
            for m, e in out["modes"].items()} | {"all": {"mape": out["mape"], "pearson_r": out["pearson_r"]}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("traces", nargs="*")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--holdout", type=float, default=0.5)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    groups = [a.traces] if a.traces else [[p] for p in default_traces()]
    if not groups:
        sys.exit("no traces: record some with `lr collect` (traces/samples/ or tests/data/calib/)")
    results, usable = [], []
    for paths in groups:
        try:
            results.append(evaluate(paths, a))
            usable.append(paths)
        except UserError as e:            # e.g. a file still being recorded, too few records
            print(f"skipped {', '.join(paths)}: {e}", file=sys.stderr)
    cross = cross_run(usable) if len(usable) > 1 else []
    if a.json:
        print(json.dumps({"files": results, "cross_run": cross} if len(results) > 1 else results[0]))


def cross_run(groups) -> list[dict]:
    """Calibrate on one run's file, replay another run's: does a profile transfer between runs
    of the same setup recorded at different times (different machine load)?"""
    out = []
    for cal in groups:
        prof = Profile(validate_doc(calibrate(cal)))
        for val in groups:
            if val is cal:
                continue
            recs = [x for p in val for x in read_records(p)
                    if prof.has("draft") or x["mode"] in ("ar", "sd")]   # LR needs a fitted draft
            if not recs:
                continue
            r = replay(prof, recs)
            out.append({"calibrated_on": Path(cal[0]).name, "validated_on": Path(val[0]).name,
                        "mape": r["mape"], "modes": {m: e["mape"] for m, e in r["modes"].items()}})
    print("cross-run (calibrate on one file, replay another): per-mode MAPE")
    for c in out:
        modes = "  ".join(f"{m} {100 * v:.1f}%" for m, v in c["modes"].items())
        print(f"  {c['calibrated_on']} -> {c['validated_on']}: {modes}  (all {100 * c['mape']:.1f}%)")
    return out


def evaluate(paths: list[str], a) -> dict:
    t0 = time.perf_counter()
    records = [r for p in paths for r in read_records(p)]
    doc = calibrate(paths)
    prof = Profile(validate_doc(doc))
    result = {"traces": [str(Path(p).relative_to(ROOT)) if Path(p).is_relative_to(ROOT) else p for p in paths],
              "records": len(records), "modes": doc["source"]["modes"],
              "fits": {k: v["fit"] for k, v in doc["latency"].items()},
              "in_sample": row(replay(prof, records))}
    held = []
    for seed in range(a.seeds):
        try:
            calib_ids, val_ids = split_problems([r["problem_id"] for r in records], a.holdout, seed)
        except UserError as e:
            result["held_out_error"] = str(e)
            break
        p = Profile(validate_doc(calibrate(paths, problems=calib_ids)))
        held.append(row(replay(p, [r for r in records if r["problem_id"] in val_ids], seed)))
    if held:
        modes = sorted({m for h in held for m in h})
        result["held_out"] = {m: {"mape_mean": float(np.mean([h[m]["mape"] for h in held if m in h])),
                                  "mape_max": float(np.max([h[m]["mape"] for h in held if m in h])),
                                  "splits": sum(m in h for h in held)} for m in modes}
    result["ablations"] = {w: row(replay(Profile(validate_doc(ablate(doc, w))), records))
                           for w in ("pooled latency", "no per-step overhead",
                                     "no per-request overhead", "other placement")}
    result["seconds"] = round(time.perf_counter() - t0, 1)
    if not a.json:
        report(result, a, held)
    return result


def report(result: dict, a, held) -> None:
    print(f"traces: {', '.join(result['traces'])}  ({result['records']} records: {result['modes']})")
    print("latency fits (on their own points):")
    for k, f in result["fits"].items():
        print(f"  {k:12s} {f['source']:16s} n={f['points']:4d}  RMSE {1e3 * f['rmse_s']:7.1f} ms  MAPE {100 * f['mape']:5.1f}%")
    print(f"\n{'':36s}{'MAPE':>7s}{'r':>7s}{'mean':>8s}{'P90':>8s}{'tok/s m':>9s}{'tok/s p':>9s}{'spd m':>7s}{'spd p':>7s}")

    def show(label, r):
        for m, e in r.items():
            if m == "all":
                print(f"  {label:24s}{'all':10s}{100 * e['mape']:6.1f}%{(e['pearson_r'] or float('nan')):7.3f}")
                continue
            f = lambda x, s="{:7.2f}": s.format(x) if x is not None else "      -"  # noqa: E731
            print(f"  {label:24s}{m:10s}{100 * e['mape']:6.1f}%{(e['pearson_r'] or float('nan')):7.3f}"
                  f"{e['mean_diff_pct']:+7.1f}%{e['p90_diff_pct']:+7.1f}%{e['tps_meas']:9.2f}{e['tps_pred']:9.2f}"
                  f"{f(e['speedup_meas'])}{f(e['speedup_pred'])}")
    show("in-sample", result["in_sample"])
    for w, r in result["ablations"].items():
        show(w, r)
    if held:
        print(f"\nheld-out ({a.holdout:.0%} of problems, {len(held)} seeded splits): per-mode MAPE mean / max")
        for m, e in result["held_out"].items():
            print(f"  {m:10s} {100 * e['mape_mean']:6.1f}% / {100 * e['mape_max']:6.1f}%  ({e['splits']} splits)")
    elif "held_out_error" in result:
        print(f"\nheld-out: {result['held_out_error']}")
    print(f"\n({result['seconds']} s)\n")


if __name__ == "__main__":
    main()
