"""How fast is the exact optimiser? Prints the time of `optimize` for several budgets M and the
wall time of the whole CLI call `lr theory optimize --budget 1024` (process start included).

Target: M = 1024 answers in under a second.
Run: .venv/bin/python benchmarks/bench_theory.py [--json]
"""
from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

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
    rows = []
    for mode in ("sync", "async"):
        p = HybridParams(PARAMS.alpha1, PARAMS.c1, PARAMS.alpha2, PARAMS.c2, mode)
        for budget in (16, 1024, 65_536, 1_048_576):
            s = time_call(lambda: check_theorem(optimize(p, budget)), 3 if budget > 70_000 else REPEATS)
            rows.append({"what": f"optimize+theorem {mode}", "M": budget, "seconds": s})
    cli = [sys.executable, "-m", "cli", "theory", "optimize", "--alpha1", "0.63", "--c1", "0.05",
           "--alpha2", "0.6", "--c2", "0.05", "--budget", "1024", "--json"]
    root = Path(__file__).resolve().parents[1]
    s = time_call(lambda: subprocess.run(cli, cwd=root, check=True, capture_output=True), 5)
    rows.append({"what": "CLI process `lr theory optimize`", "M": 1024, "seconds": s})
    if "--json" in sys.argv:
        print(json.dumps(rows))
        return
    print(f"{'what':40s} {'M':>9s} {'median time':>12s}")
    for r in rows:
        print(f"{r['what']:40s} {r['M']:>9d} {r['seconds'] * 1e3:>9.2f} ms")


if __name__ == "__main__":
    main()
