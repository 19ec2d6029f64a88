"""A plan written down before the runs it predicts: `lr plan` on profiles calibrated on a load
corpus's 1-2 in flight, at levels that corpus never ran, committed before a held-out corpus at those
levels is collected (benchmarks/collect_load.py --levels 3,6 --first-problem N).

    .venv/bin/python benchmarks/preregister_load.py --calibrate-on traces/load-f6m207 \\
        --levels 3,6 --for traces/load-f6m207-36 --out benchmarks/results/prereg_f6m207_36.json
    .venv/bin/python benchmarks/preregister_load.py --check benchmarks/results/prereg_f6m207_36.json \\
        --against benchmarks/results/load_f6m207_36_heldout.json

The first form plans (bench_load.py's plan side: load_plan.plan_at and search, the same profiles,
one per verifier) and records the commit, the time and whether the corpus it is for already had
records (it must not). No probe of the future corpus exists yet, so nothing is rescaled: the
speedups are ratios of one host's prices. `--check` reads a bench_load.py result on that corpus and
puts each pre-registered speedup beside the measured one (relative error, the 10% target) and the
pre-registered break-evens beside the measured ones; it never changes the pre-registration.
"""
from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import load_replay  # noqa: E402
from benchmarks.load_plan import (PLAN_PROFILES, break_even, plan_at, plan_profile, search,  # noqa: E402
                                  wanted_profiles)
from benchmarks.load_replay import calib_paths, levels_said, load_corpus, parse_levels  # noqa: E402
from benchmarks.write import batch_curves, write_results  # noqa: E402
from lrsim.calib.profile import save_profile  # noqa: E402

TARGET = 0.10                  # relative error of a predicted speedup we aim for (bench_load.py)


def records_under(folder: Path) -> int:
    """Every record line of every trace file under `folder` (any data set, any level)."""
    return sum(1 for f in folder.rglob("*.jsonl") for line in f.read_text().splitlines() if line.strip())


def planning_code_dirty(root: Path) -> bool:
    """Whether files under benchmarks/ (but for its results/), lrsim/ or lrcore/ differ from the
    commit or are new. Results are not planning code: a plan written beside another one's
    uncommitted output (the line's, then the curve's) is not dirty for it
    (prereg_f6m207_transfer_36_curve.json was marked so before this rule)."""
    out = subprocess.run(["git", "status", "--porcelain", "--", "benchmarks", "lrsim", "lrcore",
                          ":(exclude)benchmarks/results"], capture_output=True, text=True, cwd=root, check=True)
    return bool(out.stdout.strip())


def preregister(cal: str, levels: list[int], future: str, curves: dict[str, str],
                batch_factors: bool = False, cal_levels: tuple[int, ...] = (1, 2),
                max_num_seqs: int | str | None = None) -> dict:
    already = records_under(ROOT / future) if (ROOT / future).exists() else 0
    if already:
        sys.exit(f"preregister_load: {future} already holds {already} records: a plan written after "
                 "its runs started is not a pre-registration")
    git = lambda *a: subprocess.run(["git", *a], capture_output=True, text=True, cwd=ROOT).stdout.strip()  # noqa: E731
    commit = git("rev-parse", "HEAD")
    dirty = planning_code_dirty(ROOT)
    saved = load_replay.BATCH_CURVES, load_replay.MAX_NUM_SEQS
    load_replay.BATCH_CURVES = {r: str(ROOT / c) for r, c in curves.items()}
    load_replay.MAX_NUM_SEQS = max_num_seqs
    try:
        planned, searched = _plan(cal, levels, batch_factors, cal_levels)
    finally:
        load_replay.BATCH_CURVES, load_replay.MAX_NUM_SEQS = saved
    return {"calibrated_on": cal, "for": future, "levels": levels, "commit": commit,
            # the planning code differs from that commit (files changed or new under benchmarks/
            # but for its results/, lrsim/, lrcore/; the first plan's: this script, committed with it)
            "dirty": dirty,
            "written_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S"),
            "records_of_future_corpus_then": already, "batch_curves": curves or None,
            **({"batch_factors": True} if batch_factors else {}),
            # the calibration corpora's levels the profiles were fit on (absent: 1 and 2)
            **({"calibrate_levels": list(cal_levels)} if tuple(cal_levels) != (1, 2) else {}),
            # each engine's sequences per pass in the plans, lr plan --max-num-seqs (absent: 256)
            **({"max_num_seqs": max_num_seqs} if max_num_seqs is not None else {}),
            "planned": planned, "searched_break_even": searched}


def _plan(cal: str, levels: list[int], batch_factors: bool = False,
          cal_levels: tuple[int, ...] = (1, 2)) -> tuple[dict, dict]:
    """The plan at `levels` from profiles of `cal` (comma-separated: corpora pooled) at `cal_levels`."""
    names = [c.strip() for c in cal.split(",") if c.strip()]
    if len({(ROOT / c).resolve() for c in names}) < len(names):
        sys.exit(f"preregister_load: --calibrate-on {cal}: a corpus named twice")
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for i, c in enumerate(names):     # each corpus must hold some: none is left out unsaid
            got = calib_paths(ROOT / c, None, Path(tmp) / f"cal{i}", tuple(cal_levels))
            if not got:
                sys.exit(f"preregister_load: no level {levels_said(cal_levels, ',')} traces under {c} to calibrate on")
            paths += got
        profiles = {name: save_profile(plan_profile(paths, PLAN_PROFILES[name][0], None, batch_factors=batch_factors), Path(tmp) / f"prereg-{name}.json")
                    for name in wanted_profiles({Path(p).stem for p in paths})}
        return {str(n): plan_at(profiles, n) for n in levels}, search(profiles, max(levels))


def check(prereg: dict, result: dict) -> dict:
    """Each pre-registered speedup vs ar beside the measured one on the same levels."""
    if sorted(result["levels"], key=int) != [str(n) for n in prereg["levels"]]:
        sys.exit(f"preregister_load: the result measured levels {', '.join(sorted(result['levels'], key=int))}, "
                 f"the plan was for {', '.join(map(str, prereg['levels']))}")
    rows, errs = [], []
    for n in map(str, prereg["levels"]):
        measured = result["levels"].get(n, {})
        for cfg, p in sorted(prereg["planned"][n].items()):
            m = measured.get(cfg, {}).get("speedup_vs_ar")
            if m is None:
                continue
            err = p["speedup_vs_ar"] / m - 1
            if cfg != "ar-er":          # the equal-resources baseline is shown, not counted
                errs.append(abs(err))
            rows.append({"level": int(n), "config": cfg, "preregistered": p["speedup_vs_ar"],
                         "measured": m, "rel_error": err,
                         # the engines `lr plan` warned of (absent: planned before the warning)
                         **({"beyond_measured": p["beyond_measured"]} if "beyond_measured" in p else {})})
    # the plan's break-even at the measured levels (the first at which the speedup is <= 1), as
    # bench_load.py's planned column; the search's level (any level up to the highest) beside it
    planned = {int(n): t for n, t in prereg["planned"].items()}
    be = {cfg: {"preregistered": break_even(planned, "speedup_vs_ar", cfg),
                "searched": prereg["searched_break_even"].get(cfg, {}).get("vs_ar", "-"),
                "measured": b["measured_vs_ar"]}
          for cfg, b in sorted(result["break_even"].items())
          if cfg != "ar-er" and cfg in prereg["planned"][str(prereg["levels"][0])]}
    # the warning against the outcome: of the counted speedups lr plan warned of (and not), how
    # many were within the target (a warning is useful where it goes with the misses)
    warn = {}
    for r in rows:
        if r["config"] != "ar-er" and "beyond_measured" in r:
            w = warn.setdefault("warned" if r["beyond_measured"] else "not_warned", {"within_target": 0, "compared": 0})
            w["compared"] += 1
            w["within_target"] += abs(r["rel_error"]) <= TARGET
    return {"rows": rows, "within_target": sum(e <= TARGET for e in errs), "compared": len(errs),
            "break_even": be, "break_even_right": sum(v["preregistered"] == v["measured"] for v in be.values()),
            **({"by_warning": warn} if warn else {})}


def render(doc: dict) -> str:
    # the warning's column, where the plan recorded it (plans written before it have none)
    col = ((" lr plan: not measured |", "---|")
           if any("beyond_measured" in r for t in doc["planned"].values() for r in t.values()) else ("", ""))
    head = [f"Pre-registered plan for {doc['for']}, written {doc['written_utc']} UTC at commit "
            f"{doc['commit'][:7]}, when {doc['for']} held "
            f"{doc['records_of_future_corpus_then']} records: `lr plan` on profiles calibrated on "
            f"{doc['calibrated_on']}'s "
            + ("levels " if doc.get("calibrate_levels") else "") + levels_said(doc.get("calibrate_levels"))
            + " in flight (one per verifier, not rescaled)"
            + (", the line shaped by " + ", ".join(f"{r}: {c}" for r, c in doc["batch_curves"].items())
               if doc.get("batch_curves") else "")
            + (", the line's plain decode passes priced by the batch factors its traces measured "
               "(`lr calibrate --batch-factors`)" if doc.get("batch_factors") else "")
            + (f", each engine's sequences per pass capped (`lr plan --max-num-seqs {doc['max_num_seqs']}`)"
               if doc.get("max_num_seqs") is not None else "") + ".", "",
            "| in flight | config | planned speedup vs ar | vs ar-er |" + col[0], "|---|---|---|---|" + col[1]]
    for n, rows in doc["planned"].items():
        for cfg, r in sorted(rows.items()):
            er = r.get("speedup_vs_ar-er")
            head.append(f"| {n} | {cfg} | {r['speedup_vs_ar']:.2f} | {'-' if er is None else f'{er:.2f}'} |"
                        + (f" {warned(r)} |" if col[0] else ""))
    head += ["", "Break-even searched (`lr plan --find-break-even --objective throughput`): "
             + ", ".join(f"{c} {s['vs_ar']}" for c, s in sorted(doc["searched_break_even"].items())) + "."]
    if doc.get("check"):
        c = doc["check"]
        head += ["", f"Against the measured corpus ({doc['checked_against']}): "
                 f"{c['within_target']}/{c['compared']} pre-registered speedups of speculative configurations within "
                 f"{TARGET:.0%} of measured; break-evens right {c['break_even_right']}/{len(c['break_even'])}.", "",
                 "| in flight | config | pre-registered | measured | error |" + col[0], "|---|---|---|---|---|" + col[1]]
        head += [f"| {r['level']} | {r['config']} | {r['preregistered']:.2f} | {r['measured']:.2f} | "
                 f"{r['rel_error']:+.1%} |" + (f" {warned(r)} |" if col[0] else "") for r in c["rows"]]
        for k, w in c.get("by_warning", {}).items():
            what = ("`lr plan` warned of (passes past the traces' largest)" if k == "warned"
                    else "`lr plan` did not warn of")
            head += ["", f"Speedups {what}: {w['within_target']}/{w['compared']} within {TARGET:.0%}."]
        head += ["", "| config | break-even pre-registered | searched | measured |", "|---|---|---|---|"]
        head += [f"| {cfg} | {v['preregistered']} | {v['searched']} | {v['measured']} |"
                 for cfg, v in c["break_even"].items()]
    return "\n".join(head) + "\n"


def warned(r: dict) -> str:
    """The engines whose passes `lr plan` said it priced past what its traces measured ('-': none;
    '?': a plan written before the warning existed)."""
    return "?" if "beyond_measured" not in r else (", ".join(r["beyond_measured"]) or "-")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calibrate-on", default="traces/load-f6m207")
    ap.add_argument("--levels", default="3,6")
    ap.add_argument("--for", dest="future", default="traces/load-f6m207-36",
                    help="the corpus this plan predicts (must hold no records yet)")
    ap.add_argument("--out", default="benchmarks/results/prereg_f6m207_36.json")
    ap.add_argument("--target-batch-curve", metavar="PATH")
    ap.add_argument("--draft-batch-curve", metavar="PATH")
    ap.add_argument("--batch-factors", action="store_true",
                    help="lr calibrate --batch-factors: the traces' own plain decode passes price each batch size")
    ap.add_argument("--calibrate-levels", default="1,2",
                    help="calibrate on these levels in flight (bench_load.py --calibrate-levels); "
                         "--calibrate-on may name several corpora, comma-separated, pooled")
    ap.add_argument("--max-num-seqs", metavar="N|recorded",
                    help="lr plan --max-num-seqs: each engine's sequences per pass ('recorded': as the "
                         "calibration traces ran them); default: the simulator's 256")
    ap.add_argument("--check", metavar="PREREG", help="a pre-registration to compare (writes its .check.md)")
    ap.add_argument("--against", metavar="RESULT", help="with --check: bench_load.py's result on the corpus")
    a = ap.parse_args()
    if a.check:
        if (a.batch_factors or a.target_batch_curve or a.draft_batch_curve or a.max_num_seqs
                or parse_levels(a.calibrate_levels, "preregister_load") != (1, 2)):
            sys.exit("preregister_load: --check compares a plan as it was written; --batch-factors, "
                     "the batch curves, --max-num-seqs and --calibrate-levels shape a new plan only")
        if not a.against:
            sys.exit("preregister_load: --check needs --against RESULT (bench_load.py's json)")
        try:
            doc = json.loads(Path(a.check).read_text())
            result = json.loads(Path(a.against).read_text())
        except (OSError, ValueError) as e:
            sys.exit(f"preregister_load: {e}")
        doc = doc | {"check": check(doc, result), "checked_against": a.against}
        out = Path(a.check).with_suffix(".check.json")
        write_results(out, doc, render)
        print(render(doc))
        return
    try:
        levels = sorted({int(x) for x in a.levels.split(",")})
    except ValueError:
        sys.exit(f"preregister_load: --levels {a.levels!r}: comma-separated request counts")
    curves = batch_curves(a, ROOT, "preregister_load")
    if curves and a.batch_factors:
        sys.exit("preregister_load: --batch-factors or a batch curve, not both")
    cal_levels = parse_levels(a.calibrate_levels, "preregister_load")
    doc = preregister(a.calibrate_on, levels, a.future, curves, a.batch_factors, cal_levels,
                      load_replay.max_num_seqs_arg(a.max_num_seqs, "preregister_load"))
    write_results(a.out, doc, render)
    print(render(doc))


if __name__ == "__main__":
    main()
