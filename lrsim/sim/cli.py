"""`lr simulate` and `lr sweep`: the simulator's command line (registered by the top-level cli.py).

A flag's closed range is Typer's (min=/max=; cli.py turns its usage error into one line, exit 2).
build.py checks the same ranges again on every Options, whoever builds it (a scenario file, a
benchmark, `lr sweep`'s grid), plus what Typer cannot say: open bounds (--rate > 0), NaN, and
combinations.
"""
from __future__ import annotations

from enum import Enum
from pathlib import Path

import typer

from lrcore import jsonout
from lrcore.cliopts import JSON
from lrcore.errors import UserError
from lrcore.limits import MAX_NUM_SEQS

from .build import MAX_KNOB, MAX_KV_TOKENS, MAX_REPLICAS, MAX_WORKLOAD
from .kvcache import BLOCK_TOKENS

DEFAULT_RATE_REQUESTS = 100   # --rate without --requests: this many Poisson arrivals


class Policy(str, Enum):
    ar = "ar"
    sd = "sd"
    lr_sync = "lr-sync"
    lr_async = "lr-async"
    lr_stage = "lr-stage"
    lr_adaptive = "lr-adaptive"


class AdaptiveScope(str, Enum):
    request = "request"
    run = "run"


# The options both commands share that default to None; each one's flag is its name, dashed.
_HELP = {
    "alpha1": "Step acceptance probability.",
    "c1": "Draft/target time per step (overrides the scenario's draft speed).",
    "alpha2": "Per-token acceptance of token-level SD.",
    "c2": "SD drafter/target time per token (0 = n-gram).",
    "requests": "Requests (all at t=0, or Poisson with --rate).",
    "rate": "Poisson arrival rate, requests/s (100 requests unless --requests).",
    "steps": "Reasoning steps per request.",
    "scenario": "TOML scenario file or shipped name (h100-paper, cpu-2core, ...).",
    # what-if overrides on a scenario or paper preset (lrsim/plan/whatif.py)
    "preset": "A paper setup instead of a scenario (lr plan --list-presets), e.g. qwen3-aime24.",
    "verifier_seconds": "Seconds per judgement, as measured on the simulated devices (never rescaled).",
    "accept_by_width": "Acceptance per position measured by tree width, e.g. '1:0.63,8:0.83' (sets alpha1 and the sibling correlation).",
    "device_kind": "H100, H200, A100, L40S, B200, cpu-2core (presets: rebuilt there; scenarios: rescaled, except what was measured there).",
    "device_file": "JSON of extra device kinds (docs/planning.md).",
    "kv_cache_tokens": "The target's KV cache in tokens (blocks of 16): jobs wait or are preempted when it is full (default: the scenario's; unlimited if none).",
    "max_num_seqs": "Sequences per engine pass, target and draft (vLLM's flag): more wait for a slot (default: the scenario's, 256 if none).",
}


# Closed ranges of the shared options, checked by Typer (build.py checks them again for Options).
_RANGES = {
    "alpha1": (0.0, 1.0), "c1": (0.0, 1.0), "alpha2": (0.0, 1.0), "c2": (0.0, 1.0),
    "requests": (1, MAX_WORKLOAD), "steps": (1, MAX_WORKLOAD),
    "kv_cache_tokens": (BLOCK_TOKENS, MAX_KV_TOKENS), "verifier_seconds": (0.0, 86400.0),
    "max_num_seqs": (1, MAX_NUM_SEQS),
}


def _opts():
    opts = {name: typer.Option(None, "--" + name.replace("_", "-"), help=text,
                               **dict(zip(("min", "max"), _RANGES.get(name, ()))))
            for name, text in _HELP.items()}
    return dict(
        opts,
        seed=typer.Option(0, "--seed", min=0, help="Seed of the workload."),
        ideal=typer.Option(False, "--ideal", help="The theory's world: free batching up to M, zero verifier cost, equal steps, i.i.d. acceptance."),
        budget=typer.Option(None, "--budget", "-M", min=1.0, help="M: free batching up to M positions (--ideal)."),
        equal_resources=typer.Option(False, "--equal-resources", help="AR baseline gets the draft's and judge's devices as extra TP."),
        as_json=JSON,
    )


def _whatif(verifier_seconds, accept_by_width, device_kind, device_file):
    if verifier_seconds is None and accept_by_width is None and device_kind is None and device_file is None:
        return None
    from ..plan.whatif import WhatIf

    return WhatIf.from_flags(verifier_seconds=verifier_seconds, accept_by_width=accept_by_width,
                             device_kind=device_kind, device_file=device_file)


O = _opts()


def simulate(
    policy: Policy = typer.Option(None, "--policy", help="ar | sd | lr-sync | lr-async | lr-stage | lr-adaptive (depth, width, k2 chosen online within --depth, --width, --k2)."),
    alpha1: float = O["alpha1"], c1: float = O["c1"],
    k1: int = typer.Option(None, "--k1", min=1, max=MAX_KNOB, help="Target steps in parallel (drafts + 1)."),
    depth: int = typer.Option(None, "--depth", min=1, max=MAX_KNOB, help="lr-async: drafts ahead of the committed step (lr-adaptive: the most)."),
    width: int = typer.Option(None, "--width", min=1, max=MAX_KNOB, help="lr-async: sibling drafts per node (lr-adaptive: the most)."),
    k2: int = typer.Option(None, "--k2", min=1, max=MAX_KNOB, help="Token-level SD positions per verify pass (drafted + 1)."),
    alpha2: float = O["alpha2"], c2: float = O["c2"], ideal: bool = O["ideal"], budget: float = O["budget"],
    requests: int = O["requests"], rate: float = O["rate"], steps: int = O["steps"], seed: int = O["seed"],
    scenario: str = O["scenario"], equal_resources: bool = O["equal_resources"], as_json: bool = O["as_json"],
    preset: str = O["preset"], verifier_seconds: float = O["verifier_seconds"],
    accept_by_width: str = O["accept_by_width"], device_kind: str = O["device_kind"],
    device_file: str = O["device_file"], kv_cache_tokens: int = O["kv_cache_tokens"],
    max_num_seqs: int = O["max_num_seqs"],
    stream: bool = typer.Option(None, "--stream/--no-stream", help="Streaming summaries: each finished request folded into fixed-size accumulators and dropped (bounded memory; percentiles from a DDSketch, within 0.5%; work cap 400M positions). Default: automatic above 10,000 requests."),
    adaptive_scope: AdaptiveScope = typer.Option(None, "--adaptive-scope", help="--policy lr-adaptive: request (an Estimator per request, sharing the engines' step costs; the default) | run (one for every request, acceptance included, its price checked against the commits: as the real backend)."),
    replicas: int = typer.Option(None, "--replicas", min=1, max=MAX_REPLICAS, help="A fleet: this many copies of the configuration, the requests and the rate split between them, each simulated (streamed) in a worker process and merged into one summary (1: one streamed replica)."),
    jobs: int = typer.Option(None, "--jobs", min=0, help="--replicas: worker processes (0 = all cores, the default)."),
    ray_address: str = typer.Option(None, "--ray-address", help="--replicas: one Ray task per replica on a cluster ('auto', 'ray://host:10001', or 'local'), as lr plan."),
):
    """Simulate one policy and AR on the same hardware: speedup, tokens/s, latency, acceptance."""
    from .build import Options, build
    from .runner import simulate as run_sim

    if rate is not None and requests is None:
        requests = DEFAULT_RATE_REQUESTS
    cfg = build(Options(policy=policy.value if policy else None, alpha1=alpha1, c1=c1, k1=k1,
                        depth=depth, width=width, k2=k2, alpha2=alpha2, c2=c2, ideal=ideal,
                        budget=budget, requests=requests, rate=rate, steps=steps, seed=seed,
                        scenario=scenario, equal_resources=equal_resources, preset=preset,
                        whatif=_whatif(verifier_seconds, accept_by_width, device_kind, device_file),
                        kv_cache_tokens=kv_cache_tokens, max_num_seqs=max_num_seqs, stream=stream,
                        adaptive_scope=adaptive_scope.value if adaptive_scope else None))
    if replicas is not None:
        from .fleet import simulate_fleet
        from .runner import _params

        out = _params(simulate_fleet(cfg, replicas, jobs or 0, ray_address), cfg)
    elif ray_address or jobs is not None:
        raise UserError(f"{'--ray-address' if ray_address else '--jobs'} runs a fleet's replicas: "
                        "add --replicas R")
    else:
        out = run_sim(cfg)
    if as_json:
        print(jsonout.dumps(out))
        return
    _print_summary(out)


def _fmt(v, nd=3):
    return "-" if v is None else (f"{v:.{nd}f}" if isinstance(v, float) else str(v))


def _print_summary(s: dict) -> None:
    from lrcore.tables import console, kv_table

    unit = "units" if s["params"]["ideal"] else "s"
    p = s["params"]
    rows = [
        ("speedup vs AR", f"{s['speedup']:.4f}" + (f" ± {s['latency_speedup_se']:.4f}" if s.get("latency_speedup_se") else "")),
        ("throughput / latency speedup", f"{_fmt(s['throughput_speedup'], 4)} / {_fmt(s['latency_speedup'], 4)}"),
        (f"tokens/{unit} (AR)", f"{s['tokens_per_s']:.2f} ({s['ar_tokens_per_s']:.2f})"),
        ("knobs", f"k1={p['k1']} depth={p['depth']} width={p['width']} k2={p['k2']} c1={p['c1']:.3f}"),
        ("requests / steps / tokens", f"{s['requests']} / {s['steps']} / {s['output_tokens']}"),
        (f"latency p50/p90/p99 ({unit})", " / ".join(_fmt(s["latency_s"][k]) for k in ("p50", "p90", "p99"))),
        (f"TTFT p50/p99 ({unit})", " / ".join(_fmt(s["ttft_s"][k]) for k in ("p50", "p99"))),
        (f"TPOT p50/p99 ({unit})", " / ".join(_fmt(s["tpot_s"][k], 4) for k in ("p50", "p99"))),
        ("steps accepted / proposed", f"{s['accepted_steps']} / {s['proposed_steps']} "
                                      f"({_fmt(s['step_acceptance_rate'])})"),
        ("steps from draft / target", f"{s['steps_from_draft']} / {s['steps_from_target']}"),
        ("mean steps per cycle", _fmt(s["mean_steps_per_cycle"])),
        ("unready drafts (rejected)", str(s["unready_drafts"])),
        ("cancelled jobs draft/target", f"{s['cancelled_jobs']['draft']} / {s['cancelled_jobs']['target']}"),
    ]
    if s["sd"]:
        rows += [("SD token acceptance", _fmt(s["sd"]["acceptance_rate"])),
                 ("SD mean accepted length", _fmt(s["sd"]["mean_accepted_length"]))]
    a = s.get("adaptive")
    if a:
        rows.append(("adaptive decisions by depth", f"{a['decisions']}: " + " ".join(
            f"d{k}={v}" for k, v in a["by_depth"].items()) + f" ({a['switches']} switches)"))
    # "gpu0 99%" kept together ("gpu0=99%") so that a long list wraps between devices
    rows.append(("utilisation", " ".join(f"{k}={v:.0%}" for k, v in s["utilisation"].items())))
    for name, k in (s.get("kv") or {}).items():
        rows += [(f"KV cache {name}", f"peak {k['peak_fraction']:.0%} of {k['capacity_tokens']:,} tokens"),
                 ("  preempted / queue blocked", f"{k['preemptions']} / {k['blocked_s']:.3g} {unit}")]
    st = s.get("stream")
    if st:
        rows.append(("streamed (DDSketch)", f"percentiles within {st['relative_accuracy']:.1%} "
                     f"(AR's exact); {st['peak_in_flight']:,} in flight at most"))
    f = s.get("fleet")
    if f:
        lo, hi = f["requests_per_replica"]
        where = f"{f['workers']} worker(s)" if f["workers"] else f["backend"]
        rows.append(("fleet", f"{f['replicas']:,} replicas of {lo:,}" + (f"-{hi:,}" if hi != lo else "")
                     + f" requests, {where}"))
    if "ar_kv_preemptions" in s:
        rows.append(("KV cache (AR): peak / preempted", f"{s['ar_kv_peak_fraction']:.0%} / "
                                                       f"{s['ar_kv_preemptions']}"))
    console().print(kv_table(f"lr simulate: {s['policy']} on {s['scenario']}", rows))


def sweep(
    policy: Policy = typer.Option(Policy.lr_async, "--policy"),
    alpha1: float = O["alpha1"], c1: float = O["c1"],
    k1: str = typer.Option(None, "--k1", help="k1 values: '1-8' or '2,4,6' (lr-sync, lr-stage)."),
    depth: str = typer.Option(None, "--depth", help="depth values (lr-async), e.g. '1-6'."),
    width: str = typer.Option("1", "--width", help="width values (lr-async)."),
    k2: str = typer.Option("1", "--k2", help="k2 values, e.g. '1-6'."),
    alpha2: float = O["alpha2"], c2: float = O["c2"], ideal: bool = O["ideal"],
    budget: int = typer.Option(None, "--budget", "-M", min=1, help="Keep points whose target parallelism x k2 <= M."),
    requests: int = O["requests"], rate: float = O["rate"], steps: int = O["steps"], seed: int = O["seed"],
    scenario: str = O["scenario"], equal_resources: bool = O["equal_resources"],
    jobs: int = typer.Option(0, "--jobs", min=0, help="Worker processes (0 = all cores)."),
    out: Path = typer.Option(None, "--out", help="Write the full results as JSON here."),
    as_json: bool = O["as_json"],
    preset: str = O["preset"], verifier_seconds: float = O["verifier_seconds"],
    accept_by_width: str = O["accept_by_width"], device_kind: str = O["device_kind"],
    device_file: str = O["device_file"], kv_cache_tokens: int = O["kv_cache_tokens"],
    max_num_seqs: int = O["max_num_seqs"],
):
    """Simulate a grid of (k1 | depth, k2, width) under a budget; print a table, write JSON."""
    from .build import Options
    from .sweep import parse_values, run_sweep

    if rate is not None and requests is None:
        requests = DEFAULT_RATE_REQUESTS
    if out is not None:
        from lrcore.outputs import check_output
        from .scenario import resolve_path

        check_output(out, "--out", inputs=[resolve_path(scenario) if scenario else None])

    base = Options(policy=policy.value, alpha1=alpha1, c1=c1, alpha2=alpha2, c2=c2, ideal=ideal,
                   requests=requests, rate=rate, steps=steps, seed=seed, scenario=scenario,
                   equal_resources=equal_resources, preset=preset,
                   whatif=_whatif(verifier_seconds, accept_by_width, device_kind, device_file),
                   kv_cache_tokens=kv_cache_tokens, max_num_seqs=max_num_seqs)
    grid = {"k1": parse_values("--k1", k1), "depth": parse_values("--depth", depth),
            "width": parse_values("--width", width), "k2": parse_values("--k2", k2)}
    res = run_sweep(base, grid, budget, jobs)
    if out is not None:
        from lrcore.outputs import write_atomic

        write_atomic(out, jsonout.dumps(res, indent=1), "--out")
    if as_json:
        print(jsonout.dumps(res))
        return
    _print_sweep(res)


def _print_sweep(res: dict) -> None:
    from lrcore.tables import console, table

    t = table(f"lr sweep: {res['policy']} ({len(res['points'])} points, {res['elapsed_s']:.1f} s)",
              ("k1", "depth", "width", "k2", "parallel", "speedup", "tokens/s", "accept"))
    for p in sorted(res["points"], key=lambda p: -p["speedup"]):
        t.add_row(*(str(p[k]) for k in ("k1", "depth", "width", "k2", "parallel")),
                  f"{p['speedup']:.4f}", f"{p['tokens_per_s']:.2f}", _fmt(p["step_acceptance_rate"]))
    c = console()
    c.print(t)
    if res["best"]:
        b = res["best"]
        c.print(f"best: k1={b['k1']} depth={b['depth']} width={b['width']} k2={b['k2']} "
                f"speedup {b['speedup']:.4f}")


def register(app: typer.Typer) -> None:
    app.command("simulate")(simulate)
    app.command("sweep")(sweep)
