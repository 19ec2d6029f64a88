"""What each adaptive corpus's own profile charges a larger batch, beside its replay's miss at 4 in flight.

    .venv/bin/python benchmarks/profile_terms.py [--out benchmarks/results/profile_terms.json]

bench_load.py calibrates the replay's profile on a corpus's levels 1-2 (lrsim/calib: the physical
model's line per engine, a pass costing base_s + per_token_s x positions + per_seq_s x sequences
+ per_ctx_token_s x context tokens). At 1 and 2 problems in flight the sequences and the context
tokens of a pass rise together, so the fit can put a larger batch's cost on either; 4 in flight
(lr-d2: up to about 12 target and 8 draft sequences) tells them apart. This fits the same profile
of every adaptive corpus of adaptive_replay_summary.py (load_replay.calib_paths, the same
configurations) and sets its terms beside static lr-d2's replay error at 4 in flight, read from
benchmarks/results/adaptive_replay_<cpu>.json (each calibrated on its own levels 1-2). Priced at
a batch of 8 sequences of 300 context tokens each: the share of one sequence's pass that the
seven others add, by the terms that grow with the sequences (per_token_s + per_seq_s: one decode
position each) and by the per-context term. A diagnosis, not a fix.
Writes --out (JSON) and its .md twin.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.adaptive_replay_summary import CORPORA  # noqa: E402
from benchmarks.write import table_head, write_results  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
BATCH, CTX = 8, 300     # a draft batch at 4 in flight (4 problems x a depth-2 tree), ~300-token contexts
TERMS = ("base_s", "per_token_s", "per_seq_s", "per_ctx_token_s", "contention")


def terms(corpus: str) -> dict:
    from benchmarks.load_replay import PROFILE_CONFIGS, calib_paths
    from lrsim.calib.calibrate import calibrate
    from lrsim.calib.profile import validate_doc

    doc = validate_doc(calibrate(calib_paths(ROOT / corpus), configs=set(PROFILE_CONFIGS),
                                 select_placement=False))
    out = {}
    for role in ("target", "draft"):
        lat = doc["latency"][role]
        t = {k: float(lat.get(k) or 0.0) for k in TERMS}
        one = t["base_s"] + t["per_token_s"] + t["per_seq_s"] + t["per_ctx_token_s"] * CTX
        t["seq_share"] = (BATCH - 1) * (t["per_token_s"] + t["per_seq_s"]) / one  # a decode position each
        t["ctx_share"] = (BATCH - 1) * t["per_ctx_token_s"] * CTX / one
        out[role] = t
    return out


def lr_d2_error(tag: str, level: str = "4") -> float | None:
    rec = json.loads((RESULTS / f"adaptive_replay_{tag}.json").read_text())
    row = rec["levels"].get(level, {}).get("lr-d2") or {}
    if not row.get("predicted_speedup_vs_ar") or not row.get("speedup_vs_ar"):
        return None
    return row["predicted_speedup_vs_ar"] / row["speedup_vs_ar"] - 1


def render(o: dict) -> str:
    lines = table_head(
        "Each adaptive corpus's own profile (levels 1-2, as bench_load.py fits it): the share of a "
        f"pass that {BATCH - 1} more sequences of {CTX} context tokens add, by the terms that grow with "
        "the sequences (a decode position and a sequence each) and by the per-context-token term, per engine; and static lr-d2's replayed speedup error "
        f"at 4 in flight with that profile (benchmarks/profile_terms.py; {o['elapsed_s']:.0f} s).",
        "CPU", "target: per sequence", "target: per context", "draft: per sequence",
        "draft: per context", "lr-d2 at 4, replay error")
    for r in o["rows"]:
        t, d = r["target"], r["draft"]
        err = "-" if r["lr_d2_error_at_4"] is None else f"{r['lr_d2_error_at_4']:+.1%}"
        lines.append(f"| {r['cpu']} | {t['seq_share']:.1%} | {t['ctx_share']:.1%} | "
                     f"{d['seq_share']:.1%} | {d['ctx_share']:.1%} | {err} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(RESULTS / "profile_terms.json"))
    a = ap.parse_args()
    t0 = time.perf_counter()
    rows = []
    for tag, corpus, cpu in CORPORA:
        rows.append({"tag": tag, "corpus": corpus, "cpu": cpu, **terms(corpus),
                     "lr_d2_error_at_4": lr_d2_error(tag)})
        print(f"{tag:10s} target seq {rows[-1]['target']['seq_share']:.1%} ctx {rows[-1]['target']['ctx_share']:.1%}"
              f"  draft seq {rows[-1]['draft']['seq_share']:.1%} ctx {rows[-1]['draft']['ctx_share']:.1%}"
              f"  lr-d2@4 {rows[-1]['lr_d2_error_at_4']}", flush=True)
    out = {"batch": BATCH, "context_tokens": CTX, "rows": rows, "elapsed_s": time.perf_counter() - t0}
    write_results(a.out, out, render)


if __name__ == "__main__":
    main()
