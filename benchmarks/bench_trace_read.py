"""Reading trace files with and without the compiled fast schema check (lrcore/fastschema.py),
side by side: CPU-seconds per record, interleaved runs, the median of each (results/trace_read.md).

Without it every record went through jsonschema's node-by-node walk, the cost of every trace
read (calibration, replay, benchmarks, `--resume`) and of the collector's pause after each
request's end while it validated the finished record. Both ways give the same records (checked
here) and the same verdicts (tests/reliability/test_fastschema.py).

    .venv/bin/python benchmarks/bench_trace_read.py      # alone: a timing (about a minute)
"""
from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.write import run_and_write  # noqa: E402
from lrcore import traces as tr  # noqa: E402

# a single-request corpus file, a closed-load file and an open-loop file (its records hold
# every forward pass of their lifetime: the largest records we write)
FILES = ("traces/corpus/gsm8k/lr-d2-emb.jsonl", "traces/load/gsm8k/c8/lr-d2-emb.jsonl",
         "traces/load-open/gsm8k/rate0.025-n8/lr-d2-emb.jsonl")
RUNS = 3
OUT = ROOT / "benchmarks" / "results" / "trace_read.json"


def cpu_read(path: Path, fast: bool) -> tuple[float, list[dict]]:
    real = tr._passes_fast_check
    if not fast:
        tr._passes_fast_check = lambda rec: False     # every record through jsonschema, as before
    try:
        c0 = time.process_time()
        recs = tr.read_traces(path)
        return time.process_time() - c0, recs
    finally:
        tr._passes_fast_check = real


def bench() -> dict:
    rows = {}
    load0 = os.getloadavg()[0]
    for f in FILES:
        path = ROOT / f
        times = {"jsonschema": [], "fast": []}
        for _ in range(RUNS):                         # interleaved: the machine's drift hits both
            for way in ("jsonschema", "fast"):
                t, recs = cpu_read(path, way == "fast")
                times[way].append(t)
                rows.setdefault(f, {"records": len(recs), "bytes": path.stat().st_size})
                rows[f].setdefault("first", recs)
                assert recs == rows[f]["first"], f
        rows[f].pop("first")
        rows[f] |= {k: statistics.median(v) for k, v in times.items()} | {"runs": times}
    return {"benchmark": "bench_trace_read", "files": rows, "runs": RUNS,
            "load_before": load0, "load_after": os.getloadavg()[0], "cpus": os.cpu_count()}


def render(doc: dict) -> str:
    lines = ["| trace file | records | MiB | CPU-s jsonschema only | CPU-s fast check first | ratio |",
             "|---|---|---|---|---|---|"]
    for f, r in doc["files"].items():
        lines.append(f"| {f} | {r['records']} | {r['bytes'] / 2 ** 20:.1f} | {r['jsonschema']:.2f} | "
                     f"{r['fast']:.2f} | {r['jsonschema'] / r['fast']:.1f}x |")
    lines += ["", f"Median of {doc['runs']} interleaved runs each, CPU time of `read_traces` (parse, schema, "
              f"cross-field rules); the same records both ways. Load average {doc['load_before']:.2f} before "
              f"and {doc['load_after']:.2f} after, {doc['cpus']} CPUs."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    run_and_write(OUT, bench, render)
