"""The simulator against the closed forms under --ideal (lrsim/sim/validation.py): lr-sync vs
f_sync, lr-stage vs S1/S2, sd vs g, LR + SD vs the product of its parts, and the lr-async
pipeline between S2(D) and S2(D+1). Seeded: the numbers only move when the simulator changes.

    .venv/bin/python benchmarks/bench_validation.py [--out benchmarks/results/validation.json]

Writes the rows as JSON and the markdown tables beside it (.md), which docs/simulator.md quotes
verbatim (benchmarks/quote.py); tests/sim/test_sim_validation.py checks the same forms within 3
standard errors on a larger grid.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.write import write_results  # noqa: E402
from lrsim.sim.validation import measure, render  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "validation.json"))
    a = ap.parse_args()
    c0 = time.process_time()
    doc = measure()
    doc["cpu_s"] = round(time.process_time() - c0, 1)
    write_results(a.out, doc, render)
    print(render(doc), end="")


if __name__ == "__main__":
    main()
