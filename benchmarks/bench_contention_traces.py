"""The side-by-side probes a corpus recorded, against the contention the fit finds in it.

    .venv/bin/python benchmarks/bench_contention_traces.py [--corpus traces/load-cold-epyc-side ...]
        [--out benchmarks/results/contention_traces.json] [--json]

A rescale may carry a profile's contention (each engine's fractional slowdown while the other runs
a pass: lrsim/calib/physical.py; opt-in, --carry-contention) to another machine or sitting by c now over c of the profile's
reference, c being the side-by-side probe's decode pass beside the other engine over alone, minus
1 (lrsim/calib/rescale.contention_scales). That holds if c moves with the fitted contention.
benchmarks/bench_contention_probe.py set a live probe beside a corpus of another sitting; here
both come from one corpus: the probe before every block (lrreal/probe.side_by_side; the
equal-resources blocks' are left out, their target runs on both cores) and the fit on its levels
1-2, per round and for all rounds together. Reads the traces only (seconds).
"""
from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.write import corpus_args, table_head, write_results  # noqa: E402

ENGINES = ("target", "draft")
CORPORA = ("traces/load-cold-epyc-side", "traces/load-cold-epyc-side12", "traces/load-cold-epyc-side3",
           "traces/load-cold-xeon-side")


def probes_c(records: list[dict], passes: dict | None = None) -> dict[str, list[float]]:
    """Each engine's c over the records' distinct side-by-side probes (a block's start probe once);
    `passes`, when given, gets each counted probe's passes beside the other engine, per engine."""
    from lrsim.calib.equal import is_equal_resources
    from lrsim.calib.physical import _distinct_probes
    from lrsim.calib.rescale import probe_contention

    out: dict[str, list[float]] = {r: [] for r in ENGINES}
    for pr in _distinct_probes([r for r in records if not is_equal_resources(r)]):
        for role in ENGINES:
            e = (pr.get("engines") or {}).get(role)
            c = probe_contention(e)
            if c is not None:
                out[role].append(c)
                if passes is not None:
                    passes.setdefault(role, []).append(e.get("contended_passes"))
    return out


def quartiles(xs: list[float]) -> tuple[float, float] | None:
    """The 25th and 75th percentiles (statistics.quantiles, inclusive), None under 2 values."""
    if len(xs) < 2:
        return None
    q = statistics.quantiles(xs, n=4, method="inclusive")
    return q[0], q[2]


def fitted(corpus: Path, rounds: set[int] | None) -> dict:
    """The physical model's contention per engine, fitted on the corpus's levels 1-2 (of `rounds`)."""
    from benchmarks.load_replay import CALIB_CONFIGS, calib_paths
    from lrsim.calib.calibrate import calibrate

    with tempfile.TemporaryDirectory() as tmp:
        paths = calib_paths(corpus, rounds, Path(tmp))
        fit = calibrate(paths, configs=set(CALIB_CONFIGS), select_placement=False) if paths else {"latency": {}}
    out = {}
    for role in ENGINES:
        lat = fit["latency"].get(role) or {}
        out[role] = {"contention": lat.get("contention"),
                     "fixed": bool((lat.get("fit") or {}).get("fixed", {}).get("contention"))}
    return out


def measure(corpora: list[str]) -> dict:
    from benchmarks.load_replay import load_corpus

    t0 = time.perf_counter()
    out = {"corpora": {}}
    for name in corpora:
        corpus = load_corpus(ROOT / name)
        recs = [r for lv in corpus.values() for rs in lv.values() for r in rs]
        rounds = sorted({int(r["run"]["flags"]["load_round"]) for r in recs})
        rows = {}
        for sel in [None] + [{k} for k in rounds]:
            mine = [r for r in recs if sel is None or int(r["run"]["flags"]["load_round"]) in sel]
            beside: dict = {}
            cs, fit = probes_c(mine, beside), fitted(ROOT / name, sel)
            rows["all" if sel is None else f"round {min(sel)}"] = {
                role: {"c": cs[role], "c_median": statistics.median(cs[role]) if cs[role] else None,
                       "c_quartiles": quartiles(cs[role]),
                       # passes beside the other engine behind each probe's c (the target's: 4 before
                       # lrreal/probe.SIDE_TARGET_PASSES, 12 after)
                       "passes_median": statistics.median(p for p in beside[role] if p is not None)
                       if any(p is not None for p in beside.get(role, [])) else None,
                       "fitted_contention": fit[role]["contention"], "fitted_fixed": fit[role]["fixed"]}
                for role in ENGINES}
        out["corpora"][name] = {"records": len(recs), "rows": rows}
    out["elapsed_s"] = time.perf_counter() - t0
    return out


def render(out: dict) -> str:
    lines = table_head("Side-by-side probes recorded in a corpus (one per block, equal-resources "
                       "blocks left out) against the contention the physical model fits on the same "
                       "corpus's levels 1-2.", "corpus", "rounds", "engine", "probes",
                       "passes beside, median", "c: median (min-max)", "c: p25-p75", "fitted contention")
    for name, doc in out["corpora"].items():
        for sel, row in doc["rows"].items():
            for role, e in row.items():
                c, q, pm = e["c"], e.get("c_quartiles"), e.get("passes_median")
                fit = "-" if e["fitted_contention"] is None else f"{e['fitted_contention']:.3f}"
                lines.append(f"| {name.removeprefix('traces/')} | {sel} | {role} | {len(c)} | "
                             f"{'-' if pm is None else f'{pm:g}'} | "
                             + (f"{e['c_median']:.3f} ({min(c):.3f}-{max(c):.3f})" if c else "-")
                             + f" | {'-' if not q else f'{q[0]:.3f}-{q[1]:.3f}'}"
                             + f" | {fit}{' (not identified)' if e['fitted_fixed'] else ''} |")
    lines += ["", "c = the decode pass beside the other engine's over the alone one, minus 1 "
              "(lrsim/calib/rescale.probe_contention; at least 2 passes beside); fitted contention: the "
              "fractional slowdown of a pass wholly beside the other engine's (lrsim/calib/physical.py). "
              f"Reads the traces only: {out['elapsed_s']:.0f} s."]
    return "\n".join(lines) + "\n"


def main() -> None:
    a = corpus_args(__doc__, "contention_traces", CORPORA)
    corpora = a.corpus
    for c in corpora:
        if not (ROOT / c / "gsm8k").is_dir():
            raise SystemExit(f"bench_contention_traces: --corpus {c}: no gsm8k/ load traces there")
    out = measure(corpora)
    write_results(ROOT / a.out, out, render)
    print(json.dumps(out, indent=1) if a.json else render(out))


if __name__ == "__main__":
    main()
