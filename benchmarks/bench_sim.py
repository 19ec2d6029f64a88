"""Simulator performance: simulated reasoning steps per CPU-second, and how run time grows with
steps and with concurrency. CPU time (time.process_time) is reported because the machines are
shared; wall time is printed beside it.

    .venv/bin/python benchmarks/bench_sim.py            # ~1-2 CPU-minutes
    .venv/bin/python benchmarks/bench_sim.py --sweep    # + a real 100-point, 1,000-request sweep
    .venv/bin/python benchmarks/bench_sim.py --json     # one JSON object

Writes benchmarks/results/sim.{json,md} (`--out`), quoted in the README. Run it alone: CPU
seconds are steadier than wall time on a shared machine, but not immune to a neighbour.

Workload: the shipped h100-paper scenario (R1-Distill-32B TP=2 / 1.5B draft, 60 steps of ~40
tokens per request, alpha1 = 0.63), lr-async depth 4 unless stated.
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.write import cpu_name, sim_modules, write_results  # noqa: E402
from lrsim import native  # noqa: E402

# the simulator as `make` leaves it: its compiled modules, built now if missing or stale (before
# lrsim.sim is imported: it picks them up at import); LRSIM_PURE=1 measures plain Python
if __name__ == "__main__" and not os.environ.get("LRSIM_PURE"):
    native.build(if_stale=True, quiet=True)

from lrsim.sim import scenario  # noqa: E402
from lrsim.sim.config import Config  # noqa: E402
from lrsim.sim.runner import run  # noqa: E402
from lrsim.sim.stage_fast import stage_speedup  # noqa: E402


def _timed(cfg):
    c0, w0 = time.process_time(), time.perf_counter()
    s, world = run(cfg)
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    # SimPy gives every scheduled event the next id of this counter (lrsim/sim/kernel.py keeps
    # that for its bare and cancelled timers too): events scheduled in the run
    events = next(world.env._eid)
    return s, cpu, wall, events


def _h100(policy="lr-async", requests=1, steps=60, rate=None, **kw):
    cfg = scenario.load("h100-paper")
    cfg.policy = policy
    for k, v in kw.items():
        setattr(cfg, k, v)
    cfg.workload.n_requests, cfg.workload.steps, cfg.workload.rate = requests, steps, rate
    return cfg


def bench(sweep: bool, repeats: int = 3) -> dict:
    out: dict = {"cpu_count": os.cpu_count(), "repeats": repeats}
    rows = []

    def record(name, cfg):
        # the median of `repeats` runs: CPU seconds on this shared VM vary by tens of percent
        runs = sorted((_timed(copy.deepcopy(cfg)) for _ in range(repeats)), key=lambda t: t[1])
        s, cpu, wall, events = runs[len(runs) // 2]
        r = {"case": name, "steps": s["steps"], "cpu_s": round(cpu, 3), "wall_s": round(wall, 3),
             "steps_per_cpu_s": round(s["steps"] / cpu) if cpu > 0 else None,
             "events_per_step": round(events / s["steps"], 2)}
        rows.append(r)
        print(f"{name:48s} {r['steps']:>8d} steps {cpu:8.2f} CPU-s {wall:8.2f} wall-s "
              f"{r['steps_per_cpu_s']:>9} steps/CPU-s", flush=True)
        return r

    print("-- growth with steps (single request, lr-async depth 4)")
    for n in (500, 1000, 2000, 4000):
        record(f"single lr-async, {n} steps", _h100(steps=n))
    print("-- growth with concurrency (60 steps each, all arrive at t=0, lr-async)")
    for n in (1, 16, 64, 256):
        record(f"lr-async, {n} concurrent", _h100(requests=n))
    print("-- lr+sd (lr-async depth 4, SD k2 = 4): one request, and 256 concurrent")
    record("lr+sd k2=4, single, 2000 steps", _h100(steps=2000, k2=4))
    record("lr+sd k2=4, 256 concurrent", _h100(requests=256, k2=4))
    print("-- 64 concurrent requests, each policy")
    for pol, kw in (("ar", {}), ("sd", {"k2": 4}), ("lr-sync", {"k1": 3}), ("lr-async", {}),
                    ("lr-stage", {"k1": 3})):
        record(f"{pol}, 64 concurrent", _h100(pol, requests=64, **kw))
    print("-- stage model under --ideal: event simulation vs vectorised fast path")
    cfg = Config.ideal_setup("lr-stage", 0.63, 0.1, k1=6, steps=2000, requests=16)
    ev = record("lr-stage --ideal, event simulation", cfg)
    c0 = time.process_time()
    est = stage_speedup(0.63, 0.1, 6, steps=2000, requests=16)
    fast_cpu = time.process_time() - c0
    print(f"{'lr-stage --ideal, numpy fast path':48s} {32000:>8d} steps {fast_cpu:8.4f} CPU-s "
          f"(speedup {est.mean:.4f} ± {est.stderr:.4f}; {ev['cpu_s'] / max(fast_cpu, 1e-9):.0f}x faster)")
    out["stage_fast_cpu_s"] = fast_cpu
    print("-- one point of a 1,000-request sweep (Poisson 2 req/s, 60 steps each)")
    point = record("lr-async depth 4, 1000 requests", _h100(requests=1000, rate=2.0))
    base = record("ar baseline, 1000 requests", _h100("ar", requests=1000, rate=2.0))
    workers = min(2, os.cpu_count() or 1)
    proj = (100 * point["cpu_s"] + base["cpu_s"]) / workers
    print(f"projected 100-point lr-async sweep on {workers} cores: {proj / 60:.1f} min")
    out["projected_100_point_sweep_min"] = round(proj / 60, 2)
    out["rows"] = rows
    if sweep:
        with tempfile.TemporaryDirectory() as d:
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", "import cli; cli.main()", "sweep", "--policy", "lr-async",
                            "--depth", "1-10", "--k2", "1-10", "--requests", "1000", "--rate", "2",
                            "--out", f"{d}/s.json", "--json"], check=True, stdout=subprocess.DEVNULL,
                           cwd=Path(__file__).resolve().parents[1])
            out["sweep_100_points_wall_min"] = round((time.perf_counter() - t0) / 60, 2)
            print(f"real 100-point sweep (depth 1-10 x k2 1-10, 1000 requests): "
                  f"{out['sweep_100_points_wall_min']} min wall")
    return out


def render(res: dict) -> str:
    lines = ["| case (h100-paper, lr-async depth 4 unless named) | simulated steps | CPU-s | steps per CPU-second | events per step |",
             "|---|---|---|---|---|"]
    for r in res["rows"]:
        lines.append(f"| {r['case']} | {r['steps']:,} | {r['cpu_s']:.2f} | {r['steps_per_cpu_s']:,} | "
                     f"{r['events_per_step']:.1f} |")
    lines += ["", f"Projected 100-point lr-async sweep of 1,000 Poisson requests on "
              f"{min(2, res['cpu_count'] or 1)} cores: {res['projected_100_point_sweep_min']:.1f} min "
              f"(load average {res['load_before']:.2f} before the run, {res['cpu_count']} CPUs; "
              f"each case the median of {res.get('repeats', 1)} runs by CPU time)."]
    if "modules" in res:
        lines.append(f"Simulator modules: {res['modules']}; CPU: {res['cpu']}.")
    if "sweep_100_points_wall_min" in res:
        lines.append(f"Real 100-point sweep: {res['sweep_100_points_wall_min']} min wall.")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sweep", action="store_true", help="also run a real 100-point sweep")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--repeats", type=int, default=3, help="runs per case; the median CPU time is reported")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" / "sim.json"))
    a = ap.parse_args()
    load_before = os.getloadavg()[0]
    res = bench(a.sweep, max(1, a.repeats)) | {
        "load_before": load_before, "cpu": cpu_name(), "compiled": native.in_use(),
        "modules": sim_modules()}
    write_results(a.out, res, render)
    if a.json:
        print(json.dumps(res))


if __name__ == "__main__":
    main()
