"""`lr plan`: what-if capacity planning for a preset, a calibrated profile or a scenario.

Ranges and combinations are checked in planner.py / sources.py (one-line UserError, exit 2).
"""
from __future__ import annotations

from pathlib import Path

import typer

from lrsim import jsonout

from ..sim.build import MAX_WORKLOAD

MAX_DEVICES = 4096   # devices in one plan: far above any single deployment
MAX_SAMPLES = 1000   # workload seeds pooled per candidate


def plan_cmd(
    preset: str = typer.Option(None, "--preset", help="A paper setup: r1-gsm8k, r1-aime24, qwen3-gsm8k, qwen3-aime24 (default r1-gsm8k)."),
    profile: Path = typer.Option(None, "--profile", help="A calibrated profile (lr calibrate -o ...)."),
    scenario: str = typer.Option(None, "--scenario", help="A simulator scenario (TOML file or shipped name)."),
    latency: str = typer.Option("auto", "--latency", help="Presets: auto (shipped H100 table if present, else roofline) | roofline | PATH to a GPU latency table."),
    devices: int = typer.Option(None, "--devices", min=1, max=MAX_DEVICES, help="Devices available (default: one dedicated LR replica's, 4 for the presets)."),
    device_kind: str = typer.Option(None, "--device-kind", help="H100, H200, A100, B200, L40S (latencies scale by HBM bandwidth)."),
    tp_efficiency: float = typer.Option(None, "--tp-efficiency", help="Equal-resources baseline: bandwidth kept per doubling of TP (default 0.9; lower = TP scales worse)."),
    placement: str = typer.Option("dedicated,shared", "--placement", help="Draft/judge placement: dedicated devices and/or shared with the target."),
    budget: int = typer.Option(None, "--budget", "-M", help="M: keep candidates whose target parallelism (tree size x k2) <= M."),
    concurrency: int = typer.Option(None, "--concurrency", min=1, max=MAX_WORKLOAD, help="Requests in flight (closed batch; default 1)."),
    rate: float = typer.Option(None, "--rate", help="Poisson arrivals, requests/s (open loop)."),
    requests: int = typer.Option(None, "--requests", min=1, max=MAX_WORKLOAD, help="--rate: requests simulated over the fleet (default 64)."),
    steps: int = typer.Option(None, "--steps", min=1, max=MAX_WORKLOAD, help="Reasoning steps per request (default: the source's)."),
    samples: int = typer.Option(2, "--samples", min=1, max=MAX_SAMPLES, help="Workload seeds pooled per candidate (noise vs time)."),
    seed: int = typer.Option(0, "--seed", min=0, help="Workload seed."),
    slo_ms: float = typer.Option(None, "--slo-ms", help="Latency SLO in ms (per output token, or per request with --slo-metric latency)."),
    slo_metric: str = typer.Option("tpot", "--slo-metric", help="tpot (ms per output token, end to end) | latency (ms per request)."),
    modes: str = typer.Option("sd,lr,lr+sd", "--modes", help="Candidate modes: sd, lr, lr+sd, lr-sync, lr-sync+sd (AR baselines always included)."),
    depth: str = typer.Option("1-4", "--depth", help="lr / lr+sd depths, e.g. '1-6'."),
    k1: str = typer.Option("2-5", "--k1", help="lr-sync k1 values."),
    k2: str = typer.Option("3,5,9", "--k2", help="SD positions per verify pass (drafted + 1) for SD modes."),
    width: str = typer.Option("1", "--width", help="lr tree widths, e.g. '1,2'."),
    objective: str = typer.Option(None, "--objective", help="speedup | goodput | throughput (default: goodput with --slo-ms, else speedup)."),
    jobs: int = typer.Option(0, "--jobs", help="Local worker processes (0 = all cores)."),
    ray_address: str = typer.Option(None, "--ray-address", help="Run the sweep on a Ray cluster ('auto', 'ray://host:10001', or 'local')."),
    top: int = typer.Option(15, "--top", min=1, help="Rows shown in the table (baselines always shown)."),
    list_presets: bool = typer.Option(False, "--list-presets", help="List the paper presets and exit."),
    paper_table: bool = typer.Option(False, "--paper-table", help="Compare the presets' simulated speedups with the paper's Table 1."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object on stdout."),
):
    """Rank configurations (mode, depth/k1, k2, width, placement) for hardware and load, against the
    reference AR and the equal-resources baseline; prints a recommendation."""
    from ..sim.sweep import check_knobs, parse_values
    from . import planner, sources

    if list_presets:
        return _list_presets(as_json)
    if paper_table:
        return _paper_table(samples, jobs, as_json, latency)
    grid = {name: parse_values(f"--{name}", text) for name, text in
            (("depth", depth), ("k1", k1), ("k2", k2), ("width", width))}
    check_knobs(grid)
    src = sources.resolve(preset, profile, scenario, latency)
    cands = planner.candidates(
        [m.strip() for m in modes.split(",") if m.strip()], grid["depth"], grid["k1"], grid["k2"],
        grid["width"], [p.strip() for p in placement.split(",") if p.strip()], budget)
    load = planner.Load(concurrency, rate, requests, steps, seed, samples, slo_ms, slo_metric)
    res = planner.plan(src, cands, planner.Hardware(devices, device_kind, tp_efficiency), load, objective, jobs, ray_address)
    if as_json:
        print(jsonout.dumps({**res.meta, "candidates": res.rows}))
        return
    _print_plan(res, top)


def _list_presets(as_json: bool) -> None:
    from .presets import PRESETS

    rows = [p.describe() for p in PRESETS.values()]
    if as_json:
        print(jsonout.dumps({"presets": rows}))
        return
    _print_presets(rows)


def _print_presets(rows: list[dict]) -> None:
    from ..tables import console, table

    t = table("Paper presets (lr plan --preset NAME)", ("name", "pair / data", "alpha1", "steps x tokens"),
              text=("name", "pair / data"))
    for r in rows:
        t.add_row(r["name"], f"{r['pair']} / {r['dataset']}", f"{r['alpha1']:.2f}",
                  f"{r['steps']} x {r['step_mean']:.0f}")
    c = console()
    c.print(t)
    # Hardware and latency source are long and (today) the same for every preset: one line each
    # under the table, naming the presets when they differ.
    for key in ("hardware", "latency"):
        values = list(dict.fromkeys(r[key] for r in rows))
        if len(values) == 1:
            c.print(f"{key}: {values[0]}", markup=False)
        else:
            for v in values:
                names = ", ".join(r["name"] for r in rows if r[key] == v)
                c.print(f"{key} ({names}): {v}", markup=False)


def _paper_table(samples: int, jobs: int, as_json: bool, latency: str) -> None:
    from .sources import resolve
    from .table1 import compare_table1

    src = resolve(None, None, None, latency)
    rows = compare_table1(seeds=max(1, samples), jobs=jobs, latency_file=src.latency_file)
    if as_json:
        print(jsonout.dumps({"rows": rows}))
        return
    _print_paper_table(rows)


def _print_paper_table(rows: list[dict]) -> None:
    from ..tables import console, table
    from .table1 import format_rows

    # Terminal form of table1.TABLE_HEADER (the HTML report keeps the long headers): the speedup
    # cells "sim/paper" without spaces and the product ratio as h/(f*g) fit 80 columns (speedups
    # below 10x; the paper's are 1.12-2.11x).
    t = table("Simulated (presets) vs the paper's Table 1: speedup over AR, single stream",
              ("preset", "alpha1", "c1", "LR", "SD", "LR+SD", "h/(f*g)"), text=("preset",))
    for cells in format_rows(rows, sep="/"):
        t.add_row(*cells)
    c = console()
    c.print(t)
    c.print("LR, SD, LR+SD: simulated/paper speedup; h/(f*g): simulated LR+SD / (LR x SD), "
            "1.00 = the two speedups multiply")
    c.print(f"latency: {rows[0]['latency']}. Why they differ: docs/planning.md", markup=False)


def _f(v, fmt="{:.2f}"):
    return "-" if v is None else fmt.format(v)


def _print_plan(res, top: int) -> None:
    """Two tables, the same rows in the same order: the ranking (speedups, throughput), then
    latency and goodput. All of it in one table needs about 125 columns."""
    from ..tables import console, table

    m = res.meta
    slo = bool(m["load"]["slo_ms"])
    shown = [r for r in res.rows if r["rank"] <= top or r["role"]]
    styles = ["bold" if r["rank"] == 1 else ("cyan" if r["role"] else None) for r in shown]
    names = [r["label"] + (" [reference]" if r["role"] == "reference" else "") for r in shown]

    t = table(f"lr plan: {m['source']}, {m['hardware']['devices']}x {m['hardware']['kind']}, "
              f"{m['load_text']} (ranked by {m['objective']}, {m['elapsed_s']:.1f} s)",
              ("#", "configuration", "dev", "speedup", "vs eq-res", "tok/s", "accept"),
              text=("configuration",))
    for r, name, style in zip(shown, names, styles):
        t.add_row(str(r["rank"]), name, f"{r['devices_per_replica']}x{r['replicas']}", f"{r['speedup']:.2f}",
                  _f(r["speedup_vs_equal"]), f"{r['tokens_per_s']:.0f}", _f(r["step_acceptance_rate"]),
                  style=style)
    cols = ("#", "configuration") + (("goodput", "SLO ok") if slo else ()) + ("p90 s", "p90 ms/tok")
    t2 = table("latency (p90 over requests)" + (" and SLO" if slo else ""), cols, text=("configuration",))
    for r, name, style in zip(shown, names, styles):
        cells = [str(r["rank"]), name]
        if slo:
            cells += [f"{r['goodput_tokens_per_s']:.0f}", f"{r['slo_attainment']:.0%}"]
        cells += [f"{r['latency_s']['p90']:.2f}", f"{r['ms_per_token']['p90']:.1f}"]
        t2.add_row(*cells, style=style)
    c = console()
    c.print(t)
    c.print("dev: devices per replica x replicas; vs eq-res: speedup over AR given the same devices "
            "(equal resources); tok/s: output tokens/s of all replicas; accept: step acceptance rate")
    c.print(t2)
    if m["skipped"]:
        c.print(f"skipped (not enough devices): {', '.join(r['label'] for r in m['skipped'])}", markup=False)
    c.print(m["recommendation"], markup=False)


def register(app: typer.Typer) -> None:
    app.command("plan")(plan_cmd)
