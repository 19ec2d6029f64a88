"""The 14 presets' simulated speedups beside the paper's Table 1 (what `lr plan --paper-table` prints).

    .venv/bin/python benchmarks/bench_paper_table.py [--jobs 2] [--out benchmarks/results/paper_table.json]
    .venv/bin/python benchmarks/bench_paper_table.py --latency roofline   # -> paper_table_roofline.*

Every preset (2 model pairs x 7 data sets, lrsim/data/table1.json) is simulated single-stream with
the shipped H100 latency table (or, with --latency roofline, the bandwidth roofline), seeds added until every speedup's 95% interval is within +-2%
(lrsim/plan/table1.py, CI_TARGET). Writes the rows (simulated speedups, intervals, the paper's
values where the reference has them, sim / paper ratios) to --out as JSON and the table beside
it as markdown (.md), which the README's Table 1 section quotes verbatim (benchmarks/quote.py).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lrsim.plan.table1 import CI_TARGET, SPEEDUPS, compare_table1, format_rows  # noqa: E402
from lrsim.theory.inverse import implied_c1  # noqa: E402


def implied(rows: list[dict]) -> list[dict]:
    """Where the paper reports LR: the c1 its own async ceiling (S1 = 1 / (c1 + (1 - c1)(1 -
    alpha1)), App. B Theorem 2, k1 unbounded) needs to give the paper's LR speedup, and the
    simulator's, beside the preset's cost ratio c1: what the overheads (judge, prefill of each
    draft step, late drafts, cancelled work) add to the drafting cost."""
    return [{"preset": r["preset"], "c1": r["c1"],
             "paper": implied_c1(r["alpha1"], r["paper"]["lr"]),
             "sim": implied_c1(r["alpha1"], r["sim"]["lr"])}
            for r in rows if r["paper"]["lr"] is not None]


def summary(rows: list[dict]) -> dict:
    """Worst |sim / paper - 1| per mode over the rows the paper reports, and the product ratio range."""
    worst = {}
    for m in SPEEDUPS:
        errs = [abs(r["ratio"][m] - 1) for r in rows if r["ratio"][m] is not None]
        worst[m] = {"rows": len(errs), "max_rel_error": max(errs) if errs else None}
    prod = [r["product_ratio"] for r in rows]
    return {"vs_paper": worst, "product_ratio": [min(prod), max(prod)]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--latency", choices=("table", "roofline"), default="table",
                    help="table: the shipped H100 latency table; roofline: bandwidth-derived")
    ap.add_argument("--out", default=None, help="default benchmarks/results/paper_table.json "
                    "(--latency roofline: paper_table_roofline.json)")
    a = ap.parse_args()
    roofline = a.latency == "roofline"
    a.out = a.out or str(ROOT / "benchmarks/results" /
                         ("paper_table_roofline.json" if roofline else "paper_table.json"))
    t0, c0 = time.time(), time.process_time()
    rows = compare_table1(jobs=a.jobs, ci_target=CI_TARGET, latency_file="roofline" if roofline else None)
    doc = {"about": "lr plan --paper-table: simulated speedup over AR vs the paper's Table 1 "
                    "(benchmarks/bench_paper_table.py)", "latency": a.latency,
           "ci_target": CI_TARGET, "confidence": 0.95, "rows": rows, "summary": summary(rows),
           "implied_c1": implied(rows),
           "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                       "loadavg_start": list(os.getloadavg())},
           "wall_s": time.time() - t0, "parent_cpu_s": time.process_time() - c0,
           "finished": time.strftime("%Y-%m-%d %H:%M:%S")}
    Path(a.out).write_text(json.dumps(doc, indent=1) + "\n")
    header = ["preset", "a1", "a2", "c1", "LR sim/paper", "SD sim/paper", "LR+SD sim/paper", "h/(f*g)"]
    md = lambda cells: "| " + " | ".join(cells) + " |"  # noqa: E731
    lines = [md(header), md(["---"] * len(header))] + [md(cells) for cells in format_rows(rows)]
    s = doc["summary"]
    lines.append("")
    lines.append("max |sim/paper - 1| where the paper reports the speedup: " + ", ".join(
        f"{m} {v['max_rel_error']:.1%} ({v['rows']} rows)" for m, v in s["vs_paper"].items()
        if v["max_rel_error"] is not None))
    lines.append(f"LR+SD / (LR x SD): {s['product_ratio'][0]:.2f}-{s['product_ratio'][1]:.2f}; "
                 f"{doc['wall_s']:.0f} s wall on {a.jobs} processes")
    f2 = lambda x: "-" if x is None else f"{x:.2f}"  # noqa: E731
    lines.append("c1 implied by the LR speedup under the async ceiling S1 (App. B Theorem 2), "
                 "paper / simulator, beside the preset's c1: " + "; ".join(
                     f"{i['preset']} {f2(i['paper'])} / {f2(i['sim'])} ({i['c1']:.2f})"
                     for i in doc["implied_c1"]))
    Path(a.out).with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
