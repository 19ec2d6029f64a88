"""The side-by-side probe on this machine, against the contention the fit finds in a corpus of it.

    .venv/bin/python benchmarks/bench_contention_probe.py --corpus traces/load-cold-epyc-more
        [--repeats 5] [--out benchmarks/results/contention_probe.json] [--json]

The physical model prices a pass (1 + contention * o) times its alone time when the other engine
ran for a fraction o of it (lrsim/calib/physical.py), and that contention is the host's: a
profile carried to a slower host by the alone probe priced its LR runs slow (docs/load.md, "A host four
times slower"). The side-by-side probe (lrreal/probe.side_by_side) times each engine's decode pass
beside the other's, c = beside / alone - 1, and a rescale may multiply the profile's contention by c
now over c of its reference (lrsim/calib/rescale.contention_scales; opt-in, --carry-contention). That needs c to move with the
fitted contention. Here, on one host: start the engines as `lr collect` does (target on core 0,
draft on core 1; lrreal/probe.probe_machine), probe them --repeats times, and set each engine's c
(per probe; the median) beside the contention fitted on the corpus's levels 1-2 and the corpus's
median alone probe (is the machine running at the corpus's speed now?). Run alone, with no other
engine job: about 5 minutes on 2 cores, mostly the engines' start.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.write import write_results  # noqa: E402

ENGINES = ("target", "draft")


def measure(corpus: str, repeats: int) -> dict:
    from benchmarks.load_replay import CALIB_CONFIGS, calib_paths
    from lrreal.binding import hardware
    from lrreal.probe import machine_load, probe_machine
    from lrsim.calib.calibrate import calibrate
    from lrsim.calib.rescale import probe_contention

    fit = calibrate(calib_paths(ROOT / corpus), configs=set(CALIB_CONFIGS), select_placement=False)
    t0 = time.perf_counter()
    before = machine_load()
    p = probe_machine(repeats=repeats, keep=True)
    out = {"corpus": corpus, "repeats": repeats, "engines": {},
           "hardware": {k: v for k, v in hardware().items()
                        if k in ("cpu_model", "cpu_id", "cpu_isa", "platform", "cpus")},
           "load_before": before, "load_after": machine_load(), "elapsed_s": time.perf_counter() - t0}
    for role in ENGINES:
        each = [pr["engines"].get(role) or {} for pr in p["each"]]
        cs = [c for c in map(probe_contention, each) if c is not None]
        lat = fit["latency"].get(role) or {}
        out["engines"][role] = {
            "alone_decode_s": [e.get("decode_s") for e in each],
            "beside_decode_s": [e.get("contended_decode_s") for e in each],
            "beside_passes": [e.get("contended_passes") for e in each],
            "c": cs, "c_median": statistics.median(cs) if cs else None,
            "fitted_contention": lat.get("contention"),
            "fitted_fixed": (lat.get("fit") or {}).get("fixed", {}).get("contention"),
            "corpus_probe_decode_s": (fit.get("probe") or {}).get(role, {}).get("decode_s")}
    return out


def render(out: dict) -> str:
    hw = dict(out["hardware"])
    if isinstance(hw.get("cpu_isa"), list):
        hw["cpu_isa"] = " ".join(hw["cpu_isa"])
    lines = [f"Side-by-side probe on this machine ({hw.get('cpu_model')}, {hw.get('cpu_id', '?')}, "
             f"{hw.get('cpu_isa', '?')}; {out['repeats']} probes after the engines' start) against "
             f"the contention the physical model fits on {out['corpus']}'s levels 1-2.", "",
             "| engine | alone decode ms, median | beside ms, median | c per probe: median (min-max) "
             "| fitted contention | corpus's alone probe ms |", "|---|---|---|---|---|---|"]
    for role, e in out["engines"].items():
        al = [x for x in e["alone_decode_s"] if x]
        bs = [x for x in e["beside_decode_s"] if x]
        c = e["c"]
        fitted = ("-" if e["fitted_contention"] is None else f"{e['fitted_contention']:.3f}") + \
            (" (not identified)" if e["fitted_fixed"] else "")
        corpus = e["corpus_probe_decode_s"]
        lines.append(f"| {role} | {(f'{1e3 * statistics.median(al):.0f}' if al else '-')} | "
                     f"{(f'{1e3 * statistics.median(bs):.0f}' if bs else '-')} | "
                     + (f"{e['c_median']:.3f} ({min(c):.3f}-{max(c):.3f})" if c else "-")
                     + f" | {fitted} | {(f'{1e3 * corpus:.0f}' if corpus else '-')} |")
    lb, la = out["load_before"].get("loadavg"), out["load_after"].get("loadavg")
    lines += ["", "c = the decode pass beside the other engine's over the alone one, minus 1 "
              "(lrsim/calib/rescale.probe_contention); fitted contention: the fractional slowdown of "
              "a pass wholly beside the other engine's (lrsim/calib/physical.py). Load average "
              f"{lb[0] if lb else '?'} before, {la[0] if la else '?'} after; "
              f"{out['elapsed_s']:.0f} s in all."]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default="traces/load-cold-epyc-more")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", default="benchmarks/results/contention_probe.json")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    if not 1 <= a.repeats <= 50:
        raise SystemExit("bench_contention_probe: --repeats must be 1-50")
    if not (ROOT / a.corpus / "gsm8k").is_dir():
        raise SystemExit(f"bench_contention_probe: --corpus {a.corpus}: no gsm8k/ load traces there")
    out = measure(a.corpus, a.repeats)
    write_results(ROOT / a.out, out, render)
    print(json.dumps(out, indent=1) if a.json else render(out))


if __name__ == "__main__":
    main()
