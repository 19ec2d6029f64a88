"""`lr plan`: what-if capacity planning for a preset, a calibrated profile or a scenario.

A flag's closed range is Typer's (min=/max=; cli.py turns its usage error into one line, exit 2).
planner.py / whatif.py / sources.py check the same again for callers in code, plus open bounds
(--rate, --slo-ms > 0), NaN and combinations (one-line UserError, exit 2).
"""
from __future__ import annotations

from pathlib import Path

import typer

from lrcore import jsonout
from lrcore.cliopts import JSON

from ..sim.build import MAX_WORKLOAD

MAX_DEVICES = 4096   # devices in one plan: far above any single deployment
MAX_SAMPLES = 1000   # workload seeds pooled per candidate


def plan_cmd(
    preset: str = typer.Option(None, "--preset", help="A paper setup, PAIR-DATA: pairs r1, qwen3; data gsm8k, aime24, amc23, humaneval, lcb, gpqa, mtbench (default r1-gsm8k; --list-presets)."),
    profile: Path = typer.Option(None, "--profile", help="A calibrated profile (lr calibrate -o ...)."),
    scenario: str = typer.Option(None, "--scenario", help="A simulator scenario (TOML file or shipped name)."),
    latency: str = typer.Option("auto", "--latency", help="Presets: auto (the shipped table measured on the device kind, H100 or H200, where it applies, else roofline) | roofline | PATH to a GPU latency table."),
    devices: int = typer.Option(None, "--devices", min=1, max=MAX_DEVICES, help="Devices available (default: one dedicated LR replica's, 4 for the presets)."),
    device_kind: str = typer.Option(None, "--device-kind", help="H100, H200, A100, L40S, B200, cpu-2core or one from --device-file (presets: rebuilt there; others: rescaled by bandwidth, except what was measured there)."),
    device_file: str = typer.Option(None, "--device-file", help="JSON of extra device kinds {NAME: {memory_gib, hbm_tb_s, bf16_tflops, link_gb_s}} (docs/planning.md)."),
    target_model: str = typer.Option(None, "--target-model", help="Presets: the target's Hugging Face config.json (file, model folder or shipped name)."),
    draft_model: str = typer.Option(None, "--draft-model", help="Presets: the draft's config.json."),
    judge_model: str = typer.Option(None, "--judge-model", help="Presets: the judge's config.json (shared placement prices its passes)."),
    target_tp: int = typer.Option(None, "--target-tp", min=1, max=4096, help="Presets: the target's tensor parallelism (paper: 2)."),
    alpha1: float = typer.Option(None, "--alpha1", min=0.0, max=1.0, help="What-if: step acceptance per judged draft."),
    alpha2: float = typer.Option(None, "--alpha2", min=0.0, max=1.0, help="What-if: n-gram acceptance per drafted token."),
    verifier_seconds: float = typer.Option(None, "--verifier-seconds", min=0.0, max=86400.0, help="What-if: seconds per judgement, as measured on the planned devices (never rescaled)."),
    accept_by_width: str = typer.Option(None, "--accept-by-width", help="What-if: acceptance per position measured by tree width, e.g. '1:0.63,8:0.83' (sets alpha1 and the sibling correlation)."),
    max_num_seqs: str = typer.Option(None, "--max-num-seqs", help="What-if: sequences per engine pass, each engine (vLLM's flag; more wait), or 'recorded': a profile's engines as its traces ran them (default: the simulator's 256)."),
    tp_efficiency: float = typer.Option(None, "--tp-efficiency", min=0.1, max=1.0, help="Equal-resources baseline: bandwidth kept per doubling of TP (default: the profile's measurement when its traces include --equal-resources AR, else 0.9; lower = TP scales worse)."),
    placement: str = typer.Option("dedicated,shared", "--placement", help="Draft/judge placement: dedicated devices and/or shared with the target."),
    budget: int = typer.Option(None, "--budget", "-M", min=1, help="M: keep candidates whose target parallelism (tree size x k2) <= M."),
    concurrency: int = typer.Option(None, "--concurrency", min=1, max=MAX_WORKLOAD, help="Requests in flight (closed batch; default 1)."),
    rate: float = typer.Option(None, "--rate", help="Poisson arrivals, requests/s (open loop)."),
    requests: int = typer.Option(None, "--requests", min=1, max=MAX_WORKLOAD, help="--rate: requests simulated over the fleet (default 64)."),
    steps: int = typer.Option(None, "--steps", min=1, max=MAX_WORKLOAD, help="Reasoning steps per request (default: the source's)."),
    samples: int = typer.Option(None, "--samples", min=1, max=MAX_SAMPLES, help="Workload seed blocks per candidate: alone, exactly this many; default: 4, then more until --ci-target."),
    ci_target: float = typer.Option(None, "--ci-target", min=0.0, max=1.0, help="Add seed blocks until each speedup's 95%% interval is within this fraction of it (default 0.02 unless --samples is given; 0 = off)."),
    max_samples: int = typer.Option(64, "--max-samples", min=2, max=MAX_SAMPLES, help="Seed blocks per candidate at most, with --ci-target."),
    seed: int = typer.Option(0, "--seed", min=0, help="Workload seed."),
    slo_ms: float = typer.Option(None, "--slo-ms", help="Latency SLO in ms (per output token, or per request with --slo-metric latency)."),
    slo_metric: str = typer.Option("tpot", "--slo-metric", help="tpot (ms per output token, end to end) | latency (ms per request)."),
    modes: str = typer.Option("sd,lr,lr+sd", "--modes", help="Candidate modes: sd, lr, lr+sd, lr-sync, lr-sync+sd, lr-adaptive, lr+sd-adaptive (AR baselines always included; adaptive: one candidate choosing within the largest --depth and --width)."),
    depth: str = typer.Option("1-4", "--depth", help="lr / lr+sd depths, e.g. '1-6'."),
    k1: str = typer.Option("2-5", "--k1", help="lr-sync k1 values."),
    k2: str = typer.Option("3,5,9", "--k2", help="SD positions per verify pass (drafted + 1) for SD modes."),
    width: str = typer.Option("1", "--width", help="lr tree widths, e.g. '1,2'."),
    objective: str = typer.Option(None, "--objective", help="speedup | goodput | throughput (default: goodput with --slo-ms, else speedup; --find-break-even searches speedup, the mean-latency ratio, or throughput, the tokens/s ratio)."),
    jobs: int = typer.Option(0, "--jobs", min=0, help="Local worker processes (0 = all cores)."),
    ray_address: str = typer.Option(None, "--ray-address", help="Run the sweep on a Ray cluster ('auto', 'ray://host:10001', or 'local')."),
    top: int = typer.Option(15, "--top", min=1, help="Rows shown in the table (baselines always shown)."),
    find_break_even: bool = typer.Option(False, "--find-break-even", help="Search load for where each speculative configuration stops beating AR and the equal-resources baseline (bisection; range 1..--concurrency, default 64, or --rate/64..--rate)."),
    list_presets: bool = typer.Option(False, "--list-presets", help="List the paper presets and exit."),
    paper_table: bool = typer.Option(False, "--paper-table", help="Compare the 14 presets' simulated speedups with the paper's Table 1."),
    paper_file: str = typer.Option(None, "--paper-file", help="A Table 1 file like lrsim/data/table1.json (your own values for its nulls)."),
    as_json: bool = JSON,
):
    """Rank configurations (mode, depth/k1, k2, width, placement) for hardware and load, against the
    reference AR and the equal-resources baseline; prints a recommendation."""
    from ..sim.sweep import check_knobs, parse_values
    from . import planner, sources
    from .whatif import WhatIf

    samples, ci = _sampling(samples, ci_target)
    whatif = WhatIf.from_flags(alpha1, alpha2, verifier_seconds, accept_by_width, None, target_model,
                               draft_model, judge_model, target_tp, device_file, max_num_seqs)
    if find_break_even and (list_presets or paper_table):
        from lrcore.errors import UserError

        raise UserError("--find-break-even searches one plan's load: drop --list-presets / --paper-table")
    if list_presets:
        return _list_presets(as_json, paper_file)
    if paper_table:
        return _paper_table(samples, ci, max_samples, jobs, as_json, latency, paper_file, whatif, device_kind)
    grid = {name: parse_values(f"--{name}", text) for name, text in
            (("depth", depth), ("k1", k1), ("k2", k2), ("width", width))}
    check_knobs(grid)
    if device_kind is not None:
        from . import catalog

        device_kind = catalog.get(device_kind, device_file).name
    src = sources.resolve(preset, profile, scenario, latency, whatif, paper_file)
    cands = planner.candidates(
        [m.strip() for m in modes.split(",") if m.strip()], grid["depth"], grid["k1"], grid["k2"],
        grid["width"], [p.strip() for p in placement.split(",") if p.strip()], budget)
    load = planner.Load(concurrency, rate, requests, steps, seed, samples, slo_ms, slo_metric, ci, max_samples)
    if find_break_even:
        return _break_even(src, cands, planner.Hardware(devices, device_kind, tp_efficiency), load,
                           objective, jobs, ray_address, as_json)
    res = planner.plan(src, cands, planner.Hardware(devices, device_kind, tp_efficiency), load, objective, jobs, ray_address)
    if as_json:
        print(jsonout.dumps({**res.meta, "candidates": res.rows}))
        return
    _print_plan(res, top)


DEFAULT_SAMPLES = 4          # first round of seed blocks when the interval decides the rest
DEFAULT_CI_TARGET = 0.02     # relative half-width of every speedup's 95% interval


def _sampling(samples: int | None, ci_target: float | None) -> tuple[int, float | None]:
    """--samples alone: exactly that many blocks; otherwise DEFAULT_SAMPLES, then more until the
    interval target (--ci-target 0: off)."""
    from lrcore.errors import UserError

    if ci_target is not None and not (ci_target == 0 or 0 < ci_target < 1):
        raise UserError(f"--ci-target must be 0 (off) or a fraction in (0, 1), got {ci_target}")
    if ci_target is None:
        return (samples, None) if samples is not None else (DEFAULT_SAMPLES, DEFAULT_CI_TARGET)
    return (samples or DEFAULT_SAMPLES), (ci_target or None)


def _list_presets(as_json: bool, paper_file: str | None = None) -> None:
    from .presets import build_presets

    rows = [p.describe() for p in build_presets(paper_file).values()]
    if as_json:
        print(jsonout.dumps({"presets": rows}))
        return
    _print_presets(rows)


def _print_presets(rows: list[dict]) -> None:
    from lrcore.tables import console, table

    t = table("Paper presets (lr plan --preset NAME)",
              ("name", "pair / data", "a1/\ndraft", "a2/\ntoken", "steps x\ntokens"),
              text=("name", "pair / data"))
    for r in rows:
        star = "" if r["paper"]["alpha1"] is not None else "*"
        t.add_row(r["name"], f"{r['pair']} / {r['dataset']}", f"{r['alpha1']:.2f}{star}",
                  f"{r['alpha2']:.2f}", f"{r['steps']} x {r['step_mean']:.0f}")
    c = console()
    c.print(t)
    c.print("a1/draft: step acceptance per judged draft (Table 1; * = not in the reference, "
            "assumed: the pair's mean); a2/token: n-gram acceptance per drafted token (implied by "
            "Table 1's SD speedup, else interpolated by answer length); lrsim/data/table1.json",
            markup=False)
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


def _paper_table(samples: int, ci: float | None, max_samples: int, jobs: int, as_json: bool,
                 latency: str, paper_file: str | None, whatif, device_kind: str | None) -> None:
    from lrcore.errors import UserError
    from .sources import resolve
    from .table1 import compare_table1

    if whatif.describe() or device_kind:
        raise UserError("--paper-table compares the presets as published: what-if flags (--alpha1, "
                        "--device-kind, --target-model, ...) apply to one plan (--preset NAME)")
    src = resolve(None, None, None, latency, table1=paper_file)
    rows = compare_table1(seeds=max(1, samples), jobs=jobs, latency_file=src.latency_file,
                          ci_target=ci, max_seeds=max(max_samples, samples), table1=paper_file)
    if as_json:
        print(jsonout.dumps({"rows": rows, "ci_target": ci, "confidence": 0.95}))
        return
    _print_paper_table(rows)


def _print_paper_table(rows: list[dict]) -> None:
    from lrcore.tables import console, table
    from .table1 import format_rows, max_halfwidth

    # Terminal form of table1.TABLE_HEADER (the HTML report keeps the long headers): the speedup
    # cells "sim/paper" without spaces, c1 under the table, the product ratio as h/(f*g): fits 80
    # columns (speedups below 10x; the paper's are 1.12-2.11x).
    t = table("Presets vs the paper's Table 1: speedup over AR, single stream",
              ("preset", "a1/\ndraft", "a2/\ntoken", "LR", "SD", "LR+SD", "h/\n(f*g)"), text=("preset",))
    c1s = {}
    for r, cells in zip(rows, format_rows(rows, sep="/")):
        t.add_row(cells[0], cells[1], cells[2], *cells[4:])
        c1s.setdefault(r["pair"], r["c1"])
    c = console()
    c.print(t)
    hw = max_halfwidth(rows)
    seeds = sorted({r.get("seeds") for r in rows if r.get("seeds")})
    n = f"{seeds[0]}" if len(seeds) == 1 else f"{seeds[0]}-{seeds[-1]}"
    c.print("LR, SD, LR+SD: simulated/paper speedup ('-': not in the reference); a1/draft: step "
            "acceptance per judged draft (* assumed); a2/token: n-gram acceptance per drafted token; "
            "h/(f*g): simulated LR+SD / (LR x SD), 1.00 = the speedups multiply", markup=False)
    if hw is not None:
        c.print(f"95% intervals: every simulated speedup within +-{hw:.1%} ({n} seeds per preset; "
                "--json has them)", markup=False)
    c.print("c1: " + ", ".join(f"{k} {v:.3f}" for k, v in c1s.items()) + f"; latency: {rows[0]['latency']}. "
            "Why they differ: docs/planning.md", markup=False)


def _break_even(src, cands, hard, load, objective, jobs, ray_address, as_json) -> None:
    from lrcore.errors import UserError
    from . import breakeven

    if objective not in (None, "speedup", "throughput"):
        raise UserError("--find-break-even searches the speedup (mean latency) or the throughput "
                        "(tokens/s) over AR: --objective speedup|throughput")
    res = breakeven.find(src, cands, hard, load, jobs, ray_address, objective or "speedup")
    if as_json:
        print(jsonout.dumps(res))
        return
    _print_break_even(res)


def _print_break_even(res: dict) -> None:
    from lrcore.tables import console, table
    from .breakeven import Range, cell

    rng = Range(res["axis"], *res["range"])
    lo = rng.text(rng.lo)
    hw_ = res["hardware"] or {}
    t = table(f"lr plan --find-break-even: {res['source']}, {hw_.get('devices')}x {hw_.get('kind')}, "
              f"{lo}-{rng.text(rng.hi)} {rng.unit} ({res['elapsed_s']:.1f} s)",
              ("configuration", f"speedup\nat {lo}", "stops\nbeating AR", "stops beating\neq-res AR"),
              text=("configuration",))
    for r in res["rows"]:
        t.add_row(r["label"], _f(r["speedup_at_lo"]), cell(r["vs_ar"], rng), cell(r["vs_equal"], rng))
    c = console()
    c.print(t)
    c.print(f"stops beating: the lowest load ({rng.unit}) at which the speedup over the baseline is "
            f"<= 1; >{rng.text(rng.hi)}: still wins there; never: loses at {lo} already; eq-res AR: "
            f"the target given the draft's and judge's devices. {res['plans']} plans at "
            f"{len(res['levels_evaluated'])} loads (--json has every curve)", markup=False)
    for note in res.get("notes", ()):
        c.print(f"not measured: {note}", markup=False)
    c.print(res["sentence"], markup=False)


def _f(v, fmt="{:.2f}"):
    return "-" if v is None else fmt.format(v)


def _ci(r) -> str:
    ci = r.get("speedup_ci")
    return "-" if not ci else f"{ci[0]:.2f}-{ci[1]:.2f}"


def _print_plan(res, top: int) -> None:
    """Two tables, the same rows in the same order: the ranking (speedups, throughput), then
    latency, goodput, the speedup's interval and acceptance per position. All of it in one table
    needs about 140 columns."""
    from lrcore.tables import console, table

    m = res.meta
    slo = bool(m["load"]["slo_ms"])
    shown = [r for r in res.rows if r["rank"] <= top or r["role"]]
    styles = ["bold" if r["rank"] == 1 else ("cyan" if r["role"] else None) for r in shown]
    names = [r["label"] + (" [reference]" if r["role"] == "reference" else "")
             + (" [kv]" if r.get("kv_full") else "") for r in shown]

    t = table(f"lr plan: {m['source']}, {m['hardware']['devices']}x {m['hardware']['kind']}, "
              f"{m['load_text']} (ranked by {m['objective']}, {m['elapsed_s']:.1f} s)",
              ("#", "configuration", "dev", "speedup", "vs eq-res", "tok/s", "acc/\ndraft"),
              text=("configuration",))
    for r, name, style in zip(shown, names, styles):
        t.add_row(str(r["rank"]), name, f"{r['devices_per_replica']}x{r['replicas']}", f"{r['speedup']:.2f}",
                  _f(r["speedup_vs_equal"]), f"{r['tokens_per_s']:.0f}", _f(r["step_acceptance_rate"]),
                  style=style)
    st = m.get("statistics") or {}
    cols = ("#", "configuration") + (("goodput", "SLO ok") if slo else ()) + \
        ("p90 s", "p90\nms/tok", f"speedup\n{st.get('confidence', 0.95):.0%} CI", "acc/\npos")
    t2 = table("latency (p90 over requests)" + (" and SLO" if slo else "") + ", error bars",
               cols, text=("configuration",))
    for r, name, style in zip(shown, names, styles):
        cells = [str(r["rank"]), name]
        if slo:
            cells += [f"{r['goodput_tokens_per_s']:.0f}", f"{r['slo_attainment']:.0%}"]
        cells += [f"{r['latency_s']['p90']:.2f}", f"{r['ms_per_token']['p90']:.1f}", _ci(r),
                  _f(r.get("position_acceptance_rate"))]
        t2.add_row(*cells, style=style)
    c = console()
    c.print(t)
    c.print("dev: devices per replica x replicas; vs eq-res: speedup over AR given the same devices "
            "(equal resources); tok/s: output tokens/s of all replicas; acc/draft: accepted / judged "
            "draft steps", markup=False)
    c.print(t2)
    n = (f"{st['samples_min']}" if st.get("samples_min") == st.get("samples_max")
         else f"{st.get('samples_min')}-{st.get('samples_max')}")
    c.print(f"speedup CI: Student-t interval over {n} paired seed blocks per configuration"
            + (f" (target +-{st['ci_target']:.0%})" if st.get("ci_target") else "")
            + "; acc/pos: positions where some draft was accepted / positions with a draft "
            "judged in time (acc/draft counts a late draft as a rejection)", markup=False)
    full = [r for r in shown if r.get("kv_full")]
    if full:
        worst = max(full, key=lambda r: (r["kv_blocked_s"], r["kv_preemptions"]))
        c.print(f"[kv]: ran out of KV cache: requests waited for blocks or were preempted and "
                f"recomputed (worst, {worst['label']}: {worst['kv_blocked_s']:.1f} s waiting, "
                f"{worst['kv_preemptions']:.1f} preemptions per replica run; --json: kv_full, "
                "kv_preemptions, kv_blocked_s, kv_peak_fraction)", markup=False)
    if m.get("overrides"):
        c.print("what-if: " + ", ".join(f"{k}={v}" for k, v in m["overrides"].items()), markup=False)
    for note in m.get("notes", ()):
        c.print(f"not measured: {note}", markup=False)
    if m["skipped"]:
        for why, test in (("not enough devices", lambda r: "KV cache" not in r["why"]),
                          ("no memory left for a KV cache", lambda r: "KV cache" in r["why"])):
            names = [r["label"] for r in m["skipped"] if test(r)]
            if names:
                c.print(f"skipped ({why}): {', '.join(names)}", markup=False)
    c.print(m["recommendation"], markup=False)


def register(app: typer.Typer) -> None:
    app.command("plan")(plan_cmd)
