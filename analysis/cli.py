"""`lr plot`: figures of theory vs simulation vs measurement, and one self-contained HTML report."""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from lrcore import jsonout
from lrcore.cliopts import JSON
from lrsim.sim.build import MAX_WORKLOAD

MAX_HEATMAP_BUDGET = 1024   # the (k1, k2) heatmap evaluates an M x M grid


def plot_cmd(
    preset: str = typer.Option(None, "--preset", help="Add a section simulating a paper setup (r1-gsm8k, r1-aime24, qwen3-gsm8k, qwen3-aime24); the default when nothing else is given is r1-gsm8k."),
    profile: Path = typer.Option(None, "--profile", help="This machine: a calibrated profile (lr calibrate) for the theory and simulation curves of the measured section."),
    scenario: str = typer.Option(None, "--scenario", help="Add a section simulating a scenario (TOML file or shipped name)."),
    latency: str = typer.Option("auto", "--latency", help="Presets: auto | roofline | PATH to a GPU latency table."),
    traces: Optional[List[Path]] = typer.Option(None, "--traces", help="Measured trace file(s) (JSONL) of this machine, or a directory of them (e.g. traces/corpus/gsm8k); repeat the flag for several. Without --profile, a profile is calibrated from them."),
    out: Path = typer.Option(Path("out/report"), "--out", help="Directory for the PNGs and report.html."),
    budget: int = typer.Option(16, "--budget", "-M", min=2, max=MAX_HEATMAP_BUDGET, help="M for the (k1, k2) heatmaps."),
    samples: int = typer.Option(2, "--samples", min=1, max=1000, help="Workload seeds pooled per simulated point."),
    steps: int = typer.Option(None, "--steps", min=1, max=MAX_WORKLOAD, help="Reasoning steps per simulated request (default: the source's)."),
    quick: bool = typer.Option(False, "--quick", help="Few points, 8-step requests: a first look in seconds."),
    paper: bool = typer.Option(True, "--paper-table/--no-paper-table", help="Presets: add the Table 1 comparison to the report."),
    jobs: int = typer.Option(0, "--jobs", min=0, help="Local worker processes (0 = all cores)."),
    as_json: bool = JSON,
):
    """Theory vs simulation vs measurement, one section per setup: this machine (--profile
    and/or --traces: the profile's closed forms and simulation with the traces' measured
    configurations on the same axes) and reference setups (--preset, --scenario: simulated only,
    never with measurements). Figures: speedup vs depth and vs k2, the (k1, k2) heatmap under a
    budget, acceptance by depth, latency breakdown, speedup vs load; PNGs and a self-contained
    report.html."""
    import time

    from lrcore.errors import UserError
    from lrsim.plan.sources import resolve

    from . import measured
    from .report import Settings, calibrated_source, machine_section, reference_section, write_html

    from lrcore.outputs import check_output_dir, distinct_inputs
    from lrsim.sim.scenario import resolve_path

    traces = distinct_inputs(measured.expand(traces or []), "--traces")
    machine = profile is not None or bool(traces)
    # the report folder: never a file, `/` or a system folder; no input among what it writes
    # (report.html, profile.json when calibrating from --traces, the figures' sub-folders)
    check_output_dir(out, "--out", inputs=[*traces, profile, resolve_path(scenario) if scenario else None],
                     writes=["report.html", "*/"] + (["profile.json"] if traces and profile is None else []))
    if preset is None and scenario is None and not machine:
        preset = "r1-gsm8k"
    if latency not in (None, "auto") and preset is None:
        raise UserError("--latency applies to presets only (profiles and scenarios carry their own)")
    refs = ([resolve(preset, None, None, latency)] if preset else []) + \
           ([resolve(None, None, scenario)] if scenario else [])
    kw = {"budget": budget, "jobs": jobs} | ({"samples": samples} if not quick else {}) | \
         ({"steps": steps} if steps is not None else {})
    st = Settings.quick(**kw) if quick else Settings(**kw)
    t0 = time.perf_counter()
    sections = []
    if machine:
        if traces:
            measured.load(traces)              # a bad file: its one-line error, before any fit
        source = resolve(None, profile, None) if profile is not None else calibrated_source(traces, out)
        sections.append(machine_section(source, traces, st, out))
    sections += [reference_section(src, st, out, paper) for src in refs]
    elapsed = time.perf_counter() - t0
    html = write_html(sections, out / "report.html", elapsed)
    first = sections[0]
    res = {"report": str(html),
           "sections": [{"key": s.key, "title": s.title, "source": s.meta["source"],
                         "theory": s.meta["theory"], "records": s.meta["records"],
                         "notes": s.meta.get("notes", []),
                         "measured_speedups": s.meta["measured_speedups"],
                         "figures": {f.key: str(f.path) for f in s.figures}} for s in sections],
           "figures": {f"{s.key}/{f.key}": str(f.path) for s in sections for f in s.figures},
           "source": first.meta["source"], "theory": first.meta["theory"],
           "records": first.meta["records"], "measured_speedups": first.meta["measured_speedups"],
           "elapsed_s": elapsed}
    if as_json:
        print(jsonout.dumps(res))
        return
    from lrcore.tables import plain   # titles carry names from files: no control characters

    for s in sections:
        print(plain(s.title))
        for f in s.figures:
            print(plain(f"  {f.title:32s} {f.path}"))
        for n in s.meta.get("notes", []):
            print(plain(f"  not measured: {n}"))
    print(plain(f"report: {html} ({elapsed:.1f} s)"))


def register(app: typer.Typer) -> None:
    app.command("plot")(plot_cmd)
