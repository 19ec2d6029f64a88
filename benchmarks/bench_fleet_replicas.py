"""A fleet of replicas simulated in parallel (`lr simulate --replicas R --jobs J`, lrsim/sim/fleet.py):
wall and CPU seconds on this machine's cores, against the same fleet on one worker.

    .venv/bin/python benchmarks/bench_fleet_replicas.py             # ~15 minutes on 2 cores
    .venv/bin/python benchmarks/bench_fleet_replicas.py --no-hour   # without the fleet-hour (~3 min)

bench_fleet.py's configuration (the shipped h100-paper scenario, lr-async depth 4, 60 steps of ~40
tokens per request, Poisson arrivals at 1 request/s) as a fleet: R replicas at R requests/s in
all, so that each replica carries the load bench_fleet.py's one configuration does (50-70
requests in flight). Points: 64 replicas x 1,000 requests on 1 worker and on 2 (the whole
summaries compared, all but the fleet block: the workers must not change them), and a
fleet-hour: 256 replicas (1,024 GPUs) at 256 requests/s, 1,000,000 requests, about 70 simulated minutes, on 2 workers. Each
point runs `simulate_fleet` in a fresh process (`--point`): wall seconds, CPU seconds of that
process and of its workers (RUSAGE_CHILDREN once the pool has exited), the policy's simulated
steps (the AR baseline of every replica runs too, as `simulate` does: its steps are in the CPU
seconds, not in the count). Parallel efficiency = one worker's wall / (workers x their wall).

Writes benchmarks/results/fleet_replicas.{json,md} (`--out`). Run it alone.
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

from benchmarks.write import cpu_name, parse_or_render, sim_modules, table_head, write_results  # noqa: E402

RATE = 1.0          # requests/s per replica: bench_fleet.py's sustainable load
STEPS = 60
HOUR = 1_000_000    # a fleet-hour's requests
HOUR_REPLICAS = 256
TARGET_S = 300.0    # the 5-minute target for a fleet-hour on 2 cores


def point(replicas: int, requests: int, workers: int) -> dict:
    """One fleet in this (fresh) process."""
    from lrsim.sim import scenario
    from lrsim.sim.fleet import simulate_fleet

    cfg = scenario.load("h100-paper")
    cfg.policy, cfg.depth, cfg.stream = "lr-async", 4, True
    cfg.workload.n_requests, cfg.workload.steps, cfg.workload.rate = requests, STEPS, RATE * replicas
    c0, w0 = time.process_time(), time.perf_counter()
    s = simulate_fleet(cfg, replicas, workers)
    wall = time.perf_counter() - w0
    own = time.process_time() - c0
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"replicas": replicas, "requests": requests, "workers": s["fleet"]["workers"],
            "wall_s": wall, "cpu_s": own + kids.ru_utime + kids.ru_stime, "steps": s["steps"],
            "simulated_s": s["wall_s"], "summary": {k: v for k, v in s.items() if k != "fleet"}}


def _child(replicas: int, requests: int, workers: int) -> dict:
    arg = json.dumps({"replicas": replicas, "requests": requests, "workers": workers})
    out = subprocess.run([sys.executable, __file__, "--point", arg], check=True, capture_output=True,
                         text=True, cwd=Path(__file__).resolve().parents[1])
    r = json.loads(out.stdout.splitlines()[-1])
    print(f"{replicas:5d} replicas {requests:>9,d} requests {r['workers']} worker(s): "
          f"{r['wall_s']:8.1f} s wall {r['cpu_s']:8.1f} CPU-s "
          f"{r['steps'] / r['wall_s']:>9,.0f} steps/s wall", flush=True)
    return r


def bench(hour: bool) -> dict:
    one = _child(64, 64_000, 1)
    two = _child(64, 64_000, 2)
    rows = [one, two]
    same = one["summary"] == two["summary"]
    out = {"rate_per_replica": RATE, "steps_per_request": STEPS, "rows": rows,
           "same_summary_1_vs_2_workers": same,
           "parallel_efficiency": one["wall_s"] / (two["workers"] * two["wall_s"])}
    if hour:
        h = _child(HOUR_REPLICAS, HOUR, 2)
        rows.append(h)
        out["fleet_hour"] = {"wall_s": h["wall_s"], "cpu_s": h["cpu_s"], "target_s": TARGET_S,
                             "simulated_min": h["simulated_s"] / 60,
                             "needed_steps_per_wall_s": h["steps"] / TARGET_S,
                             "steps_per_wall_s": h["steps"] / h["wall_s"]}
        out["fleet_hour"]["elsewhere"] = elsewhere(out)
    return out


def elsewhere(out: dict) -> dict:
    """The fleet-hour on the machine results/fleet.json was measured on, projected: its 64k-request
    lr-async and AR streamed runs' CPU seconds per step (the policy and its baseline, as here) for
    every step of the fleet-hour, over 2 workers at this run's parallel efficiency. A projection
    from another run's rate, not a measurement."""
    fleet = json.loads((Path(__file__).resolve().parent / "results" / "fleet.json").read_text())
    big = max(r["requests"] for r in fleet["rows"] if r["policy"] == "lr-async" and r["stream"])
    cpu = sum(r["cpu_s"] for r in fleet["rows"] if r["stream"] and r["requests"] == big
              and r["policy"] in ("lr-async", "ar"))
    steps = next(r["steps"] for r in fleet["rows"] if r["policy"] == "lr-async" and r["stream"]
                 and r["requests"] == big)
    h = out["rows"][-1]
    wall = h["steps"] * cpu / steps / (2 * out["parallel_efficiency"])
    return {"machine": fleet["machine"].split(", ")[-1], "steps_per_cpu_s": steps / cpu,
            "requests": big, "projected_wall_s": wall}


def render(o: dict) -> str:
    lines = table_head(
        f"A fleet of h100-paper replicas (lr-async depth 4, {o['steps_per_request']} steps per request, "
        f"Poisson {o['rate_per_replica']:g} request/s per replica), each replica streamed in a worker "
        "process and merged (`lr simulate --replicas R --jobs J`; benchmarks/bench_fleet_replicas.py). "
        "CPU-s: the process and its workers; steps: the policy's (each replica's AR baseline runs too).",
        "fleet", "requests", "workers", "wall s", "CPU-s", "policy steps", "steps per wall second",
        "simulated time")
    for r in o["rows"]:
        lines.append(f"| {r['replicas']} replicas at {r['replicas'] * o['rate_per_replica']:g}/s | "
                     f"{r['requests']:,} | {r['workers']} | {r['wall_s']:.1f} | {r['cpu_s']:.1f} | "
                     f"{r['steps']:,} | {r['steps'] / r['wall_s']:,.0f} | {r['simulated_s'] / 60:.0f} min |")
    lines += ["", f"Parallel efficiency (one worker's wall over 2 workers' x 2), 64 replicas: "
                  f"{o['parallel_efficiency']:.2f}; the summaries on 1 and 2 workers (all but the fleet block) the same, field "
                  f"by field: {'yes' if o['same_summary_1_vs_2_workers'] else 'NO'}."]
    h = o.get("fleet_hour")
    if h:
        met = h["wall_s"] <= h["target_s"]
        lines.append(f"Fleet-hour (1M requests, {h['simulated_min']:.0f} simulated minutes): "
                     f"{h['wall_s'] / 60:.1f} min wall, {h['cpu_s'] / 60:.1f} CPU-min on 2 workers; the "
                     f"{h['target_s'] / 60:.0f}-minute target {'met' if met else 'not met'} here "
                     f"({h['steps_per_wall_s']:,.0f} policy steps per wall second; it needs "
                     f"{h['needed_steps_per_wall_s']:,.0f}).")
        e = h.get("elsewhere")
        if e:
            lines.append(f"Projected on the CPU of benchmarks/results/fleet.json ({e['machine']}: "
                         f"{e['steps_per_cpu_s']:,.0f} lr-async steps per CPU-second with their AR "
                         f"baseline, at {e['requests']:,} streamed requests), 2 workers at this "
                         f"efficiency: {e['projected_wall_s'] / 60:.1f} min (a projection from "
                         "another run's rate, not a measurement).")
    lines.append(f"Load average {o['load_before']:.2f} before the run and {o['load_after']:.2f} after, "
                 f"{o['cpu_count']} CPUs ({o['machine']}); simulator modules: {o['modules']}.")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--point", help=argparse.SUPPRESS)
    ap.add_argument("--no-hour", action="store_true", help="skip the 1M-request fleet-hour")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" / "fleet_replicas.json"))
    a = parse_or_render(ap, render, "runs")
    if a is None:
        return
    if a.point:
        p = json.loads(a.point)
        print(json.dumps(point(int(p["replicas"]), int(p["requests"]), int(p["workers"]))))
        return
    load_before = os.getloadavg()[0]
    t0 = time.perf_counter()
    res = bench(not a.no_hour)
    res |= {"load_before": load_before, "load_after": os.getloadavg()[0], "cpu_count": os.cpu_count(),
            "machine": f"{platform.machine()}, Python {platform.python_version()}, {cpu_name()}",
            "modules": sim_modules(), "elapsed_min": round((time.perf_counter() - t0) / 60, 2)}
    write_results(a.out, res, render)
    print(render(res), end="")


if __name__ == "__main__":
    main()
