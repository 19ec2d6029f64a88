"""Why the equal-resources pairs are not probe-corrected: a single block's probe of the idle draft
spreads as widely within one collector run as a change of machine.

    .venv/bin/python benchmarks/bench_equal_pairs.py [--out benchmarks/results/equal_pairs.json] [--json]

lrsim/calib/equal.py measures AR on every core against AR on the target's cores as a ratio of raw
tokens/s of two blocks (ar-er and ar, same problems, same load). If the two blocks ran on
machines of different speeds (a collection resumed in another session: traces/load-cold-epyc-f23's
round 0), the ratio holds the machines' speed too. A correction would need a clock both blocks
read alike: the target's probe cannot be it (its cores differ between the blocks, by the very
speedup measured), so the only candidate is the draft's idle probe (the draft loaded but unused,
on core 1 in both blocks; in ar-er that core is also one of the target's). Here, per corpus,
round and level: the raw speedup, the ratio of the two blocks' draft probes (decode pass, ar-er
over ar; 1 = the same machine speed), the hours between the blocks' start probes and whether they
started in one collector run (collection.log). Reads the ar and ar-er traces only (seconds).
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.write import bench_main  # noqa: E402

CORPORA = ("traces/load", "traces/load-heldout", "traces/load-cold-epyc-all", "traces/load-cold-epyc-side",
           "traces/load-cold-epyc-side12", "traces/load-cold-epyc-side3", "traces/load-cold-xeon-side",
           "traces/load-cold-xeon-2", "traces/load-cold-epyc-f23")


def invocations(corpus: str) -> list[float]:
    """The start times (unix) of the collector runs its collection.log lists, in order; the log's
    times are the collecting machine's local time (collect_load.py: time.strftime), read here as
    this machine's (every machine here runs on UTC)."""
    from datetime import datetime

    log = ROOT / corpus / "collection.log"
    starts = []
    for line in (log.read_text().splitlines() if log.is_file() else []):
        parts = line.split()
        if line.startswith("# ") and len(parts) > 3 and parts[3] == "collect_load":
            t = datetime.strptime(f"{parts[1]} {parts[2]}", "%Y-%m-%d %H:%M:%S")
            starts.append(t.timestamp())
    return sorted(starts)


def invocation(starts: list[float], t: float | None) -> int | None:
    """Which collector run (index into `starts`) a block starting at `t` belongs to."""
    if t is None or not starts:
        return None
    return max((i for i, s in enumerate(starts) if s <= t), default=None)


def draft_decode(probe: dict) -> float | None:
    """The draft's idle decode pass over a record's probes (physical.record_probe: before and
    after it; a load block's start probe), None where it has none."""
    v = [e["decode_s"] for s in ("before", "after")
         if (e := ((probe.get(s) or {}).get("engines") or {}).get("draft") or {}).get("decode_s")]
    return sum(v) / len(v) if v else None


def rows(corpus: str) -> list[dict]:
    from lrsim.calib.calibrate import read_records
    from lrsim.calib.equal import pair_key, pairs, tps
    from lrsim.calib.physical import record_probe

    recs = [r for f in sorted((ROOT / corpus).glob("**/ar*.jsonl")) for r in read_records(f)]
    starts = invocations(corpus)
    by: dict[tuple, list] = {}
    for base, er in pairs(recs):
        pa, pb = record_probe(base), record_probe(er)
        a, b, da, db = tps(base), tps(er), draft_decode(pa), draft_decode(pb)
        if None in (a, b, da, db):
            continue
        ta, tb = ((p.get("before") or {}).get("t") for p in (pa, pb))
        runs = {invocation(starts, ta), invocation(starts, tb)}
        by.setdefault((er["run"]["flags"].get("load_round", 0), pair_key(er)[2]), []).append(
            (math.log(b / a), db / da, None if None in (ta, tb) else abs(tb - ta) / 3600,
             None if None in runs else len(runs) > 1))
    out = []
    for (rnd, n), v in sorted(by.items()):
        hours = sorted(x[2] for x in v if x[2] is not None)
        runs = {x[3] for x in v}
        out.append({"corpus": corpus, "round": rnd, "in_flight": n, "pairs": len(v),
                    "speedup": math.exp(sum(x[0] for x in v) / len(v)),
                    "draft_probe_ratio": sum(x[1] for x in v) / len(v),
                    "hours_apart": hours[len(hours) // 2] if hours else None,
                    # the two blocks started in different collector runs (collection.log); None:
                    # a block the log does not place
                    "across_runs": None if None in runs else True in runs})
    return out


def measure(corpora) -> dict:
    blocks = [r for c in corpora for r in rows(c)]
    same = [r["draft_probe_ratio"] for r in blocks if r["across_runs"] is False]
    cross = [r["draft_probe_ratio"] for r in blocks if r["across_runs"]]
    span = lambda xs: {"n": len(xs), "min": min(xs), "max": max(xs),  # noqa: E731
                       "outside_15pct": sum(abs(x - 1) > 0.15 for x in xs)} if xs else None
    return {"blocks": blocks, "one_run": span(same), "across_runs": span(cross)}


def render(out: dict) -> str:
    f = lambda v, fmt="{:.2f}": "-" if v is None else fmt.format(v)  # noqa: E731
    lines = ["Equal-resources pairs: AR on both cores over AR on the target's core (geometric mean of the "
             "block's problem pairs), and the draft's idle decode probe of the ar-er block over the ar "
             "block's (the only engine bound alike in both; 1 = the same machine speed).", "",
             "| corpus | round | in flight | pairs | speedup | draft probe ratio | hours apart | collector runs |",
             "|---|---|---|---|---|---|---|---|"]
    for r in out["blocks"]:
        lines.append(f"| {r['corpus']} | {r['round']} | {r['in_flight']} | {r['pairs']} | {f(r['speedup'])} | "
                     f"{f(r['draft_probe_ratio'])} | {f(r['hours_apart'], '{:.1f}')} | "
                     f"{ {True: 'two', False: 'one', None: '?'}[r['across_runs']]} |")
    s, c = out["one_run"], out["across_runs"]
    if s:
        lines += ["", f"Pairs of blocks of one collector run: draft probe ratio {s['min']:.2f}-{s['max']:.2f} over "
                  f"{s['n']} (round, level) blocks, {s['outside_15pct']} of them more than 15% from 1."]
    if c:
        lines.append(f"Pairs of blocks of two collector runs (collection.log): {c['min']:.2f}-{c['max']:.2f} over "
                     f"{c['n']}, {c['outside_15pct']} more than 15% from 1.")
    lines.append("A single block's probe ratio as far from 1 as a change of machine occurs within one "
                 "collector run, so a block's probe can neither tell a change of machine nor correct "
                 "for it: equal.py pairs records within one machine boot (run.hardware.boot_id) instead.")
    return "\n".join(lines) + "\n"


def main() -> None:
    bench_main(__doc__, "equal_pairs", lambda: measure(CORPORA), render, "trace reading")


if __name__ == "__main__":
    main()
