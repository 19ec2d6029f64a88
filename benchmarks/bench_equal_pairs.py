"""Why the equal-resources pairs are not probe-corrected: the one engine bound alike in both blocks
is too noisy a clock.

    .venv/bin/python benchmarks/bench_equal_pairs.py [--out benchmarks/results/equal_pairs.json] [--json]

lrsim/calib/equal.py measures AR on every core against AR on the target's cores as a ratio of raw
tokens/s of two blocks (ar-er and ar, same problems, same load). If the two blocks ran on
machines of different speeds (a collection resumed in another session: traces/load-cold-epyc-f23's
round 0), the ratio holds the machines' speed too. A correction would need a clock both blocks
read alike: the target's probe cannot be it (its cores differ between the blocks, by the very
speedup measured), so the only candidate is the draft's idle probe (the draft bound to the same
core in both blocks, loaded but unused). Here, per corpus, round and level: the raw speedup, the
ratio of the two blocks' draft probes (decode pass, ar-er over ar; 1 = the same machine speed)
and the hours between the blocks' start probes. Reads the traces only (seconds).
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.write import parse_or_render, write_results  # noqa: E402

CORPORA = ("traces/load", "traces/load-heldout", "traces/load-cold-epyc-all", "traces/load-cold-epyc-side",
           "traces/load-cold-epyc-side12", "traces/load-cold-epyc-side3", "traces/load-cold-xeon-side",
           "traces/load-cold-xeon-2", "traces/load-cold-epyc-f23")


def invocations(corpus: str) -> list[float]:
    """The start times (unix, UTC) of the collector runs its collection.log lists, in order."""
    from datetime import datetime, timezone

    log = ROOT / corpus / "collection.log"
    starts = []
    for line in (log.read_text().splitlines() if log.is_file() else []):
        parts = line.split()
        if line.startswith("# ") and len(parts) > 3 and parts[3] == "collect_load":
            t = datetime.strptime(f"{parts[1]} {parts[2]}", "%Y-%m-%d %H:%M:%S")
            starts.append(t.replace(tzinfo=timezone.utc).timestamp())
    return sorted(starts)


def invocation(starts: list[float], t: float | None) -> int | None:
    """Which collector run (index into `starts`) a block starting at `t` belongs to."""
    if t is None or not starts:
        return None
    return max((i for i, s in enumerate(starts) if s <= t), default=None)


def draft_decode(rec: dict) -> float | None:
    """The draft's idle decode pass over the record's probes (before and after; a load block's
    start probe), None where it has none."""
    from lrsim.calib.physical import record_probe

    p = record_probe(rec)
    v = [e["decode_s"] for s in ("before", "after")
         if (e := ((p.get(s) or {}).get("engines") or {}).get("draft") or {}).get("decode_s")]
    return sum(v) / len(v) if v else None


def block_start(rec: dict) -> float | None:
    p = (rec.get("run") or {}).get("probe_at_start") or (rec.get("probe") or {}).get("before") or {}
    return p.get("t")


def rows(corpus: str) -> list[dict]:
    from lrsim.calib.equal import _key, _pairs, _tps

    recs = [json.loads(line) for f in sorted((ROOT / corpus).glob("**/*.jsonl"))
            for line in f.read_text().splitlines() if line.strip()]
    starts = invocations(corpus)
    by: dict[tuple, list] = {}
    for base, er in _pairs(recs):
        a, b, da, db = _tps(base), _tps(er), draft_decode(base), draft_decode(er)
        if None in (a, b, da, db):
            continue
        key = (er["run"]["flags"].get("load_round", 0), _key(er)[2])
        ta, tb = block_start(base), block_start(er)
        runs = {invocation(starts, ta), invocation(starts, tb)}
        by.setdefault(key, []).append((math.log(b / a), db / da, None if None in (ta, tb) else (tb - ta) / 3600,
                                       None if None in runs else len(runs) > 1))
    out = []
    for (rnd, n), v in sorted(by.items()):
        hours = [x[2] for x in v if x[2] is not None]
        out.append({"corpus": corpus, "round": rnd, "in_flight": n, "pairs": len(v),
                    "speedup": math.exp(sum(x[0] for x in v) / len(v)),
                    "draft_probe_ratio": sum(x[1] for x in v) / len(v),
                    "hours_apart": abs(hours[0]) if hours else None,
                    # the two blocks started in different collector runs (collection.log)
                    "across_runs": any(x[3] for x in v)})
    return out


def measure(corpora) -> dict:
    blocks = [r for c in corpora for r in rows(c)]
    same = [r["draft_probe_ratio"] for r in blocks if not r["across_runs"]]
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
                     f"{'two' if r['across_runs'] else 'one'} |")
    s, c = out["one_run"], out["across_runs"]
    if s:
        lines += ["", f"Pairs of blocks of one collector run: draft probe ratio {s['min']:.2f}-{s['max']:.2f} over "
                  f"{s['n']} (round, level) blocks, {s['outside_15pct']} of them more than 15% from 1."]
    if c:
        lines.append(f"Pairs of blocks of two collector runs (collection.log): {c['min']:.2f}-{c['max']:.2f} over "
                     f"{c['n']}, {c['outside_15pct']} more than 15% from 1.")
    lines.append("A probe ratio as far from 1 as a change of machine occurs within one collector run, so "
                 "the probe can neither tell a change of machine nor correct for it: equal.py pairs "
                 "records within one machine boot (run.hardware.boot_id) instead.")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "equal_pairs.json"))
    ap.add_argument("--json", action="store_true")
    a = parse_or_render(ap, render, "trace reading")
    if a is None:
        return
    out = measure(CORPORA)
    write_results(a.out, out, render)
    print(json.dumps(out, indent=1) if a.json else render(out), end="")


if __name__ == "__main__":
    main()
