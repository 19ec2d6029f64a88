"""How fast is the exact optimiser? Prints the time of `optimize` for several budgets M and the
wall time of the whole CLI call `lr theory optimize --budget 1024` (process start included).

Target: M = 1024 answers in under a second.
Run alone (a timing benchmark): .venv/bin/python benchmarks/bench_theory.py [--json]
    [--out benchmarks/results/theory.json]
Writes the rows as JSON and a markdown table beside it (.md), which the README quotes verbatim.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.write import write_results  # noqa: E402
from lrsim.theory import HybridParams, optimize  # noqa: E402
from lrsim.theory.theorems import check_theorem  # noqa: E402

PARAMS = HybridParams(alpha1=0.63, c1=0.05, alpha2=0.6, c2=0.05, mode="sync")
REPEATS = 7


def time_call(fn, repeats=REPEATS) -> float:
    """Median wall seconds of fn() over `repeats` runs (the machines are noisy)."""
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" / "theory.json"))
    a = ap.parse_args()
    rows = []
    for mode in ("sync", "async"):
        p = HybridParams(PARAMS.alpha1, PARAMS.c1, PARAMS.alpha2, PARAMS.c2, mode)
        for budget in (16, 1024, 65_536, 1_048_576):
            s = time_call(lambda: check_theorem(optimize(p, budget)), 3 if budget > 70_000 else REPEATS)
            rows.append({"what": f"optimise + theorem check, {mode}", "M": budget, "seconds": s})
    cli = [sys.executable, "-m", "cli", "theory", "optimize", "--alpha1", "0.63", "--c1", "0.05",
           "--alpha2", "0.6", "--c2", "0.05", "--budget", "1024", "--json"]
    root = Path(__file__).resolve().parents[1]
    s = time_call(lambda: subprocess.run(cli, cwd=root, check=True, capture_output=True), 5)
    rows.append({"what": "whole `lr theory optimize --budget 1024` process (start-up included)",
                 "M": 1024, "seconds": s})
    doc = {"rows": rows, "params": {"alpha1": PARAMS.alpha1, "c1": PARAMS.c1, "alpha2": PARAMS.alpha2,
                                    "c2": PARAMS.c2},
           "machine": {"cpus": os.cpu_count(), "loadavg_1min_after": os.getloadavg()[0]}}
    write_results(a.out, doc, render)
    print(json.dumps(doc, indent=1) if a.json else render(doc), end="")


def render(doc: dict) -> str:
    def t(s: float) -> str:
        return f"{s:.2f} s" if s >= 0.1 else f"{s * 1e3:.2g} ms" if s >= 1e-3 else f"{s * 1e6:.0f} us"

    p = doc["params"]
    lines = [f"Median wall time (alpha1 = {p['alpha1']}, c1 = {p['c1']}, alpha2 = {p['alpha2']}, "
             f"c2 = {p['c2']}; {doc['machine']['cpus']} cores):", "",
             "| what | M | time |", "|---|---|---|"]
    lines += [f"| {r['what']} | {r['M']:,} | {t(r['seconds'])} |" for r in doc["rows"]]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
