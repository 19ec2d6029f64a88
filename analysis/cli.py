"""`lr plot`: figures of theory vs simulation vs measurement, and one self-contained HTML report."""
from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional

import typer

from lrsim.sim.build import MAX_WORKLOAD

MAX_HEATMAP_BUDGET = 1024   # the (k1, k2) heatmap evaluates an M x M grid


def plot_cmd(
    preset: str = typer.Option(None, "--preset", help="Simulate a paper setup (default r1-gsm8k): r1-gsm8k, r1-aime24, qwen3-gsm8k, qwen3-aime24."),
    profile: Path = typer.Option(None, "--profile", help="Simulate a calibrated profile (lr calibrate)."),
    scenario: str = typer.Option(None, "--scenario", help="Simulate a scenario (TOML file or shipped name)."),
    latency: str = typer.Option("auto", "--latency", help="Presets: auto | roofline | PATH to a GPU latency table."),
    traces: Optional[List[Path]] = typer.Option(None, "--traces", help="Measured trace file(s) (JSONL); repeat the flag for several."),
    out: Path = typer.Option(Path("out/report"), "--out", help="Directory for the PNGs and report.html."),
    budget: int = typer.Option(16, "--budget", "-M", max=MAX_HEATMAP_BUDGET, help="M for the (k1, k2) heatmaps."),
    samples: int = typer.Option(2, "--samples", max=1000, help="Workload seeds pooled per simulated point."),
    steps: int = typer.Option(None, "--steps", max=MAX_WORKLOAD, help="Reasoning steps per simulated request (default: the source's)."),
    quick: bool = typer.Option(False, "--quick", help="Few points, 8-step requests: a first look in seconds."),
    paper: bool = typer.Option(True, "--paper-table/--no-paper-table", help="Presets: add the Table 1 comparison to the report."),
    jobs: int = typer.Option(0, "--jobs", help="Local worker processes (0 = all cores)."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object on stdout."),
):
    """Draw speedup vs depth and vs k2 (closed forms, simulation, measurement), the (k1, k2)
    heatmap under a budget, acceptance by depth, latency breakdown and speedup vs load; write
    PNGs and report.html (self-contained)."""
    from lrsim.errors import UserError
    from lrsim.plan.sources import resolve

    from .report import Settings, collect, paper_table, write_html

    if budget < 2:
        raise UserError(f"--budget must be >= 2 (k1 x k2 positions), got {budget}")
    if samples < 1:
        raise UserError(f"--samples must be >= 1, got {samples}")
    if steps is not None and steps < 1:
        raise UserError(f"--steps must be >= 1, got {steps}")
    if jobs < 0:
        raise UserError(f"--jobs must be >= 0, got {jobs}")
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out}: exists and is not a directory")
    source = resolve(preset, profile, scenario, latency)
    kw = {"budget": budget, "jobs": jobs} | ({"samples": samples} if not quick else {}) | \
         ({"steps": steps} if steps is not None else {})
    st = Settings.quick(**kw) if quick else Settings(**kw)
    rep = collect(source, list(traces or []), st, out)
    extra = [t for t in ([paper_table(source)] if paper else []) if t]
    html = write_html(rep, out / "report.html", extra)
    res = {"report": str(html), "figures": {f.key: str(f.path) for f in rep.figures},
           "source": rep.meta["source"], "theory": rep.meta["theory"], "records": rep.meta["records"],
           "measured_speedups": rep.meta["measured_speedups"], "elapsed_s": rep.meta["elapsed_s"]}
    if as_json:
        print(json.dumps(res))
        return
    for f in rep.figures:
        print(f"{f.title:32s} {f.path}")
    print(f"report: {html} ({rep.meta['elapsed_s']:.1f} s)")


def register(app: typer.Typer) -> None:
    app.command("plot")(plot_cmd)
