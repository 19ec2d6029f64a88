"""Fleet-scale simulation: cost and memory of one configuration from 1k requests up,
streamed (`lr simulate --stream`, lrsim/sim/stream.py) and, where affordable, in full.

    .venv/bin/python benchmarks/bench_fleet.py               # ~15 CPU-minutes
    .venv/bin/python benchmarks/bench_fleet.py --quick       # small sizes only (a smoke run)

One configuration: the shipped h100-paper scenario (R1-Distill-32B TP=2 / 1.5B draft, 60 steps
of ~40 tokens per request, alpha1 = 0.63), lr-async depth 4, Poisson arrivals at 1 request/s (a
load it sustains: ~50-70 requests in flight whatever the count; at bench_sim.py's 2/s its queue
grows without end, 587 in flight after 1k requests, 2,149 after 4k), at 1k, 4k, 16k and 64k
requests; the AR baseline of the same workload up to 1M requests. bench_sim.py's 1,000-request
point (2/s, a full run) is rerun once beside them, for scale against results/sim.md on whatever
machine runs this. Every point runs in a fresh child process
(`--point`), which reports its CPU seconds (time.process_time, the run alone) and its peak memory
(ru_maxrss) less its resident memory before the run (the interpreter and imports): the run's own
memory. Each point is the median of --repeats runs by CPU time (the biggest points: one run).
Fitted exponents: log-log least squares of CPU-s and of memory on requests. The streamed
percentiles are compared with a full run's (np.percentile on every request) at the sizes a full
run affords.

Writes benchmarks/results/fleet.{json,md} (`--out`), quoted in the README. Run it alone: CPU
seconds are steadier than wall time on a shared machine, but not immune to a neighbour (the load
average before and after is recorded).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.write import cpu_name, parse_or_render, sim_modules, write_results  # noqa: E402

RATE = 1.0
STEPS = 60
LR_SIZES = (1_000, 4_000, 16_000, 64_000)
AR_SIZES = (1_000, 4_000, 16_000, 64_000, 256_000, 1_000_000)
EXACT_SIZES = (1_000, 4_000, 16_000)          # full runs too: memory and percentile error
SINGLE_RUN_FROM = 16_000                      # points this big run once (CPU-minutes each)
PCT = ("latency_s", "ttft_s", "tpot_s")
COUNTERS = ("requests", "steps", "output_tokens", "accepted_steps", "proposed_steps",
            "steps_from_draft", "cancelled_jobs", "engine_iterations", "wall_s")


def _rss_kib() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * (os.sysconf("SC_PAGE_SIZE") // 1024)


def point(policy: str, requests: int, stream: bool, rate: float = RATE) -> dict:
    """One run in this (fresh) process: the policy alone over `requests` Poisson requests."""
    from lrsim.sim import scenario
    from lrsim.sim.runner import run

    cfg = scenario.load("h100-paper")
    cfg.policy, cfg.depth, cfg.stream = policy, 4, stream
    cfg.workload.n_requests, cfg.workload.steps, cfg.workload.rate = requests, STEPS, rate
    import ddsketch  # noqa: F401  (imported before the baseline, as the imports above)

    base = _rss_kib()
    c0, w0 = time.process_time(), time.perf_counter()
    s, world = run(cfg)
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss       # KiB on Linux
    return {"policy": policy, "requests": requests, "stream": stream, "cpu_s": cpu, "wall_s": wall,
            "steps": s["steps"], "mem_mib": max(0, peak - base) / 1024, "rss_before_mib": base / 1024,
            "peak_in_flight": (s.get("stream") or {}).get("peak_in_flight"),
            "summary": {k: s[k] for k in PCT + COUNTERS}}


def _child(policy: str, requests: int, stream: bool, rate: float = RATE) -> dict:
    arg = json.dumps({"policy": policy, "requests": requests, "stream": stream, "rate": rate})
    out = subprocess.run([sys.executable, __file__, "--point", arg], check=True, capture_output=True,
                         text=True, cwd=Path(__file__).resolve().parents[1])
    return json.loads(out.stdout.splitlines()[-1])


def _measure(policy, requests, stream, repeats) -> dict:
    n = 1 if requests >= SINGLE_RUN_FROM else repeats
    runs = sorted((_child(policy, requests, stream) for _ in range(n)), key=lambda r: r["cpu_s"])
    r = runs[len(runs) // 2] | {"runs": n}
    print(f"{policy:9s} {'stream' if stream else 'full':6s} {requests:>9,d} requests "
          f"{r['steps']:>11,d} steps {r['cpu_s']:8.2f} CPU-s {r['mem_mib']:8.1f} MiB "
          f"(median of {n})", flush=True)
    return r


def fit(xs, ys) -> float | None:
    """The exponent b of y ~ a x^b, least squares on logs (points with y > 0)."""
    import numpy as np

    pts = [(x, y) for x, y in zip(xs, ys) if y and y > 0]
    if len(pts) < 2:
        return None
    lx, ly = np.log([p[0] for p in pts]), np.log([p[1] for p in pts])
    return float(np.polyfit(lx, ly, 1)[0])


def _pct_error(streamed: dict, exact: dict) -> float:
    """The largest relative difference of a streamed percentile from the full run's."""
    return max(abs(streamed[m][p] - exact[m][p]) / abs(exact[m][p])
               for m in PCT for p in ("p50", "p90", "p99") if exact[m][p])


def bench(repeats: int, quick: bool) -> dict:
    from lrsim.sim.stream import RELATIVE_ACCURACY

    lr_sizes = LR_SIZES[:2] if quick else LR_SIZES
    ar_sizes = AR_SIZES[:3] if quick else AR_SIZES
    exact_sizes = EXACT_SIZES[:2] if quick else EXACT_SIZES
    rows, exact = [], {}
    print(f"-- lr-async depth 4, h100-paper, Poisson {RATE} requests/s, {STEPS} steps each")
    for n in lr_sizes:
        rows.append(_measure("lr-async", n, True, repeats))
    for n in exact_sizes:
        exact[n] = _measure("lr-async", n, False, repeats)
    print("-- the AR baseline of the same workload")
    for n in ar_sizes:
        rows.append(_measure("ar", n, True, repeats))
    ref = _child("lr-async", 1000, False, 2.0)
    print(f"bench_sim's 1,000-request point (2/s, full): {ref['cpu_s']:.2f} CPU-s, "
          f"{ref['steps'] / ref['cpu_s']:,.0f} steps/CPU-s", flush=True)
    sim = json.loads((Path(__file__).resolve().parent / "results" / "sim.json").read_text())
    sim_rate = next(r["steps_per_cpu_s"] for r in sim["rows"] if r["case"] == "lr-async depth 4, 1000 requests")
    out = {"rate": RATE, "reference": {"cpu_s": ref["cpu_s"], "steps": ref["steps"],
                                       "sim_md_steps_per_cpu_s": sim_rate}, "steps_per_request": STEPS, "repeats": repeats,
           "relative_accuracy": RELATIVE_ACCURACY, "rows": rows, "full": list(exact.values())}
    lr = [r for r in rows if r["policy"] == "lr-async"]
    ar = [r for r in rows if r["policy"] == "ar"]
    full = list(exact.values())
    out["exponents"] = {
        "lr_async_cpu": fit([r["requests"] for r in lr], [r["cpu_s"] for r in lr]),
        "lr_async_memory": fit([r["requests"] for r in lr], [r["mem_mib"] for r in lr]),
        "ar_cpu": fit([r["requests"] for r in ar], [r["cpu_s"] for r in ar]),
        "ar_memory": fit([r["requests"] for r in ar], [r["mem_mib"] for r in ar]),
        "full_lr_async_cpu": fit([r["requests"] for r in full], [r["cpu_s"] for r in full]),
        "full_lr_async_memory": fit([r["requests"] for r in full], [r["mem_mib"] for r in full]),
    }
    errs = {}
    for n, e in exact.items():
        s = next(r for r in lr if r["requests"] == n)
        same = all(s["summary"][k] == e["summary"][k] for k in COUNTERS)
        errs[str(n)] = {"max_percentile_rel_error": _pct_error(s["summary"], e["summary"]),
                        "counters_equal": same}
    out["percentile_error"] = errs
    big = lr[-1]
    rate = big["steps"] / big["cpu_s"]
    b = out["exponents"]["lr_async_cpu"] or 1.0
    proj = big["cpu_s"] * (1_000_000 / big["requests"]) ** b
    need = 1_000_000 * STEPS / 300.0                 # steps per CPU-second for 1M requests in 5 min
    out["projection"] = {"lr_async_1m_cpu_min": proj / 60, "lr_async_steps_per_cpu_s": rate,
                         "needed_steps_per_cpu_s": need, "needed_factor": need / rate}
    print(f"exponents: {out['exponents']}")
    print(f"1M lr-async requests projected: {proj / 60:.1f} CPU-min ({rate:,.0f} steps/CPU-s; "
          f"5 min needs {need:,.0f}, {need / rate:.1f}x)")
    return out


def _mib(v) -> str:
    return f"{v:.1f}"


def render(res: dict) -> str:
    e, p = res["exponents"], res["projection"]
    lines = [f"| run (h100-paper, Poisson arrivals {res['rate']:g}/s, {res['steps_per_request']} steps "
             "each) | requests | simulated steps | CPU-s | steps per CPU-second | memory (MiB) | "
             "in flight at most |", "|---|---|---|---|---|---|---|"]
    for r in res["rows"] + res["full"]:
        name = f"{r['policy']}{', depth 4' if r['policy'] == 'lr-async' else ''}, " + (
            "streamed" if r["stream"] else "full (every request kept)")
        flight = "-" if r["peak_in_flight"] is None else f"{r['peak_in_flight']:,}"
        lines.append(f"| {name} | {r['requests']:,} | {r['steps']:,} | {r['cpu_s']:.2f} | "
                     f"{r['steps'] / r['cpu_s']:,.0f} | {_mib(r['mem_mib'])} | {flight} |")

    def b(v):
        return "-" if v is None else f"{v:.2f}"
    errs = res["percentile_error"]
    worst = max(v["max_percentile_rel_error"] for v in errs.values())
    lines += ["",
              f"Cost exponent (CPU-s ~ requests^b, log-log least squares): lr-async streamed "
              f"b = {b(e['lr_async_cpu'])}, AR streamed b = {b(e['ar_cpu'])}, lr-async full "
              f"b = {b(e['full_lr_async_cpu'])}. Memory exponent: lr-async streamed "
              f"{b(e['lr_async_memory'])}, AR streamed {b(e['ar_memory'])}, lr-async full "
              f"{b(e['full_lr_async_memory'])} (memory: peak RSS of the run's own process less its "
              "RSS before the run).",
              f"Streamed vs full percentiles (latency, TTFT, TPOT at p50/p90/p99) at "
              f"{', '.join(f'{int(n):,}' for n in errs)} requests: largest relative difference "
              f"{worst:.3%} (DDSketch guarantee {res['relative_accuracy']:.1%} of the sample at the "
              "rank; np.percentile interpolates between two); counters equal: "
              f"{'yes' if all(v['counters_equal'] for v in errs.values()) else 'NO'}.",
              f"1M lr-async requests projected from the largest point: {p['lr_async_1m_cpu_min']:.1f} "
              f"CPU-minutes at {p['lr_async_steps_per_cpu_s']:,.0f} steps per CPU-second; the 5-minute "
              f"target needs {p['needed_steps_per_cpu_s']:,.0f} ({p['needed_factor']:.1f}x). For scale: "
              f"bench_sim's 1,000-request lr-async point (2 requests/s, full run) took "
              f"{res['reference']['cpu_s']:.2f} CPU-s here "
              f"({res['reference']['steps'] / res['reference']['cpu_s']:,.0f} steps per CPU-second; "
              f"results/sim.md: {res['reference']['sim_md_steps_per_cpu_s']:,}).",
              f"Load average {res['load_before']:.2f} before the run and {res['load_after']:.2f} "
              f"after, {res['cpu_count']} CPUs ({res['machine']}); each point the median of "
              f"{res['repeats']} runs by CPU time, points of {SINGLE_RUN_FROM:,} requests and more "
              "one run."]
    if "modules" in res:
        lines.append(f"Simulator modules: {res['modules']}.")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--point", help=argparse.SUPPRESS)
    ap.add_argument("--repeats", type=int, default=3, help="runs per point; the median CPU time is reported")
    ap.add_argument("--quick", action="store_true", help="small sizes only")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" / "fleet.json"))
    a = parse_or_render(ap, render, "runs")
    if a is None:
        return
    if a.point:
        p = json.loads(a.point)
        print(json.dumps(point(p["policy"], int(p["requests"]), bool(p["stream"]), float(p["rate"]))))
        return
    load_before = os.getloadavg()[0]
    t0 = time.perf_counter()
    res = bench(max(1, a.repeats), a.quick)
    res |= {"load_before": load_before, "load_after": os.getloadavg()[0], "cpu_count": os.cpu_count(),
            "machine": f"{platform.machine()}, Python {platform.python_version()}, {cpu_name()}",
            "modules": sim_modules(),
            "elapsed_min": round((time.perf_counter() - t0) / 60, 2)}
    write_results(a.out, res, render)
    if a.json:
        print(json.dumps(res))


if __name__ == "__main__":
    main()
