"""The measured batch-latency curve of each load corpus: a plain decode pass's time by the number
of sequences in it.

    .venv/bin/python benchmarks/bench_batch_curve.py [--out benchmarks/results/batch_curve.json] [--json]

lrsim/calib/physical.py prices a decode pass of B sequences on a line, t = w + s * (B - 1) (plus
context and contention terms), fitted on the passes of levels 1-2 and extrapolated to 4 and 8 in
flight. That holds where a CPU's time per pass rises with B. Here, per corpus and engine role, the
median of every distinct plain decode pass (no prefill, no SD verification positions: one position
per sequence) at each batch size B, pooled over configurations and levels, and the same within the
lr-d2-emb blocks at 2 in flight alone: those blocks ran passes of several sizes side by side, in
one machine state, so a dip there is the engine's, not a change of machine between blocks. The
equal-resources records (ar-er: the target on every core) are left out, as `lr calibrate` leaves
them out of the split machine's fit (lrsim/calib/calibrate.py).

A pass is shared by the records in flight beside it (traces/README.md); it is counted once per
file and round (its duration, batch size, scheduled and cached tokens as its key). Reads traces only
(seconds).
"""
from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.write import bench_main  # noqa: E402

CORPORA = ("traces/load-cold-epyc-side", "traces/load-cold-epyc-side12", "traces/load-cold-epyc-side3",
           "traces/load-cold-xeon-side", "traces/load-cold-xeon-2", "traces/load-cold-epyc-f23",
           "traces/load-cold-epyc-f25m17", "traces/load-cold-epyc-f25m17-2")
ROLES = ("target", "draft")
MIN_PASSES = 20        # a batch size with fewer distinct passes is listed but not read as a point
SAME_BLOCKS = ("lr-d2-emb", 2)   # (configuration, in flight) whose blocks hold several batch sizes


def passes(corpus: str, role: str, only: tuple | None = None) -> dict[int, list[float]]:
    """Seconds of every distinct plain decode pass of `role`, by batch size."""
    from lrsim.calib.equal import is_equal_resources

    by: dict[int, list[float]] = {}
    for f in sorted((ROOT / corpus).glob("gsm8k/c*/*.jsonl")):
        if only and (f.stem, f"c{only[1]}") != (only[0], f.parent.name):
            continue
        seen = set()
        for line in f.read_text().splitlines():
            if not line.strip():
                continue
            rec = json.loads(line)
            if is_equal_resources(rec):
                continue
            rnd = ((rec.get("run") or {}).get("flags") or {}).get("load_round", 0)
            for p in ((rec.get("engine_stats") or {}).get(role) or {}).get("forward_passes") or ():
                B = int(p.get("batch_size", 1))
                if p.get("prefill_tokens", 0) or int(p.get("tokens_scheduled", 0)) != B:
                    continue
                key = (rnd, p["duration_s"], B, p.get("kv_tokens"))
                if key in seen:
                    continue
                seen.add(key)
                by.setdefault(B, []).append(float(p["duration_s"]))
    return by


def curve(by: dict[int, list[float]]) -> list[dict]:
    return [{"batch": B, "passes": len(v), "median_ms": 1000 * statistics.median(v)}
            for B, v in sorted(by.items())]


def dip(points: list[dict]) -> float | None:
    """The fastest batch of more than two sequences over the single sequence's pass (medians, each
    of at least MIN_PASSES passes): below 1, more sequences per pass cost less time per pass."""
    one = next((p for p in points if p["batch"] == 1 and p["passes"] >= MIN_PASSES), None)
    more = [p["median_ms"] for p in points if p["batch"] > 2 and p["passes"] >= MIN_PASSES]
    return min(more) / one["median_ms"] if one and more else None


def measure(corpora) -> dict:
    rows = []
    for c in corpora:
        if not (ROOT / c).is_dir():
            continue
        for role in ROLES:
            pooled, same = curve(passes(c, role)), curve(passes(c, role, SAME_BLOCKS))
            rows.append({"corpus": c, "role": role, "pooled": pooled, "same_blocks": same,
                         "dip_pooled": dip(pooled), "dip_same_blocks": dip(same)})
    return {"min_passes": MIN_PASSES, "same_blocks": list(SAME_BLOCKS), "rows": rows}


def render(out: dict) -> str:
    n = out["min_passes"]
    cfg, lvl = out["same_blocks"]
    f = lambda v: "-" if v is None else f"{v:.2f}"  # noqa: E731
    pts = lambda ps: ", ".join(f"{p['batch']}: {p['median_ms']:.0f}" for p in ps if p["passes"] >= n)  # noqa: E731
    lines = [f"Plain decode passes (no prefill, one position per sequence), median ms by sequences in the "
             f"pass (batch sizes with at least {n} distinct passes); pooled over every configuration and "
             f"level, and within the {cfg} blocks at {lvl} in flight alone (one machine state). Dip: the "
             "fastest pass of more than two sequences over the one-sequence pass (below 1: a pass of "
             "more sequences took less time).", "",
             "| corpus | role | pooled: batch: ms | dip | same blocks: batch: ms | dip |",
             "|---|---|---|---|---|---|"]
    for r in out["rows"]:
        lines.append(f"| {r['corpus']} | {r['role']} | {pts(r['pooled'])} | {f(r['dip_pooled'])} | "
                     f"{pts(r['same_blocks'])} | {f(r['dip_same_blocks'])} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    bench_main(__doc__, "batch_curve", lambda: measure(CORPORA), render, "trace reading")


if __name__ == "__main__":
    main()
