"""The collector's stall in every committed load corpus (results/collector_stalls.{json,md}).

Until lrreal/load_corpus.py opened one trace writer per block, each finished record reopened the
block's trace file and re-validated every record in it inside the event loop, so at a request's
end the block's other requests could start no job (docs/load.md, "Open loop"). Which corpora, levels
and configurations that touched, and by how much, is measured here from the records themselves:
benchmarks/open_loop_diagnosis.stall_summary (collector_stalls, the target engine idle over 1 s
right after a request's end while another was in flight, over each block: the records of one
load round of a trace file), and the request-seconds those stalls held as a share of the
measured latency.

    .venv/bin/python benchmarks/bench_stalls.py        # reads traces/load*/, seconds
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.open_loop_diagnosis import stall_summary  # noqa: E402
from benchmarks.write import run_and_write  # noqa: E402
from lrcore.traces import read_traces  # noqa: E402

# every load corpus, in the order it was collected; load-open-v2 is the first after the fix
CORPORA = ("load", "load-heldout", "load-transfer", "load-adaptive", "load-open", "load-open-v2")
OUT = ROOT / "benchmarks" / "results" / "collector_stalls.json"


def blocks(path: Path) -> list[list[dict]]:
    """A trace file's records by load round: each round of a file is one block."""
    by: dict[int, list[dict]] = {}
    for r in read_traces(path):
        by.setdefault(int(r["run"]["flags"]["load_round"]), []).append(r)
    return [by[k] for k in sorted(by)]


def file_row(path: Path) -> dict:
    """One trace file (a level's configuration): request ends with another in flight, their mean
    stall and the largest, and the request-seconds held as a share of the records' latency."""
    bs = blocks(path)
    summary = {k: v for k, v in stall_summary(bs).items() if k != "by_round_mean_s"}
    return {"blocks": len(bs), "records": sum(map(len, bs))} | summary


def bench() -> dict:
    t0 = time.perf_counter()
    corpora = {}
    for name in CORPORA:
        root = ROOT / "traces" / name
        corpora[name] = {str(p.relative_to(root)): file_row(p) for p in sorted(root.glob("*/*/*.jsonl"))}
    return {"benchmark": "bench_stalls", "corpora": corpora, "wall_s": time.perf_counter() - t0}


def render(doc: dict) -> str:
    """One row per corpus and level (a trace folder): its configurations' request ends with
    another in flight, their mean and largest stall, and the configuration whose latency the
    stalls held the largest share of (every file's row is in the JSON)."""
    over = []   # (corpus, level, {config: share}) where some configuration's share is over 1%
    lines = ["The collector's stall in each load corpus (`benchmarks/bench_stalls.py`: the target engine idle "
             "over 1 s right after a request's end while another was in flight; by level, over its "
             "configurations: the ends, the mean and largest stall, and the largest share of a "
             "configuration's measured latency the stalls held):", "",
             "| corpus | level | configurations | ends with another in flight | mean s | max s | largest share of latency |",
             "|---|---|---|---|---|---|---|"]
    for name, files in doc["corpora"].items():
        levels: dict[str, dict] = {}
        for f, r in files.items():
            levels.setdefault(f.rsplit("/", 1)[0], {})[f.rsplit("/", 1)[1].removesuffix(".jsonl")] = r
        for level, cfgs in levels.items():
            ends = sum(r["ends"] for r in cfgs.values())
            mean = sum(r["mean_s"] * r["ends"] for r in cfgs.values()) / ends if ends else 0.0
            top = max(cfgs, key=lambda c: cfgs[c]["share_of_latency"])
            share = cfgs[top]["share_of_latency"]
            lines.append(f"| {name} | {level} | {len(cfgs)} | {ends} | {mean:.1f} | "
                         f"{max(r['max_s'] for r in cfgs.values()):.1f} | "
                         + (f"{100 * share:.1f}% ({top})" if share else "0.0%") + " |")
            if share > 0.01:
                over.append(f"{name} {level}: " + ", ".join(
                    f"{c} {100 * r['share_of_latency']:.1f}%" for c, r in sorted(cfgs.items())))
    if over:
        lines += ["", "Every configuration's share where one is over 1%: " + "; ".join(over) + "."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    run_and_write(OUT, bench, render)
