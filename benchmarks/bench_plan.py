"""Time a capacity-planning sweep: 100 candidate configurations, each simulated on a 1,000-request
open-loop workload (paper preset r1-gsm8k, 4x H100), on local worker processes.

    .venv/bin/python benchmarks/bench_plan.py [--points 100] [--requests 1000] [--jobs 2]
        [--out benchmarks/results/plan.json]

Prints the wall time of the sweep, the per-point simulation times, the implied serial time and
the parallel efficiency (sum of per-point times / (wall x workers)), then the top of the ranking;
writes them to --out (JSON) and its .md twin, which the README and docs/planning.md quote.
Requests are short (--steps 8, ~360 tokens) so that 100 x 1,000 requests stay in minutes on 2 cores.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.write import cpu_name, sim_modules, write_results  # noqa: E402

from lrsim.plan import planner  # noqa: E402
from lrsim.plan.sources import PresetSource  # noqa: E402


def grid(points: int) -> list[planner.Candidate]:
    cands = planner.candidates(["sd", "lr", "lr+sd", "lr-sync", "lr-sync+sd"], depths=[1, 2, 3, 4, 5, 6],
                               k1s=[2, 3, 4, 5, 6, 7], k2s=[3, 5, 9], widths=[1],
                               placements=["dedicated", "shared"], budget=None)
    return cands[:points]          # the baselines come first and are always kept


def sweep_args(doc: str, out: str) -> argparse.ArgumentParser:
    """The sweep's flags (grid size, workload, preset, --out), shared with bench_plan_ray.py."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--points", type=int, default=100)
    ap.add_argument("--requests", type=int, default=1000)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--rate", type=float, default=2.0, help="requests/s over the 4-GPU fleet")
    ap.add_argument("--preset", default="r1-gsm8k")
    ap.add_argument("--out", default=out)
    return ap


def main(argv=None) -> dict:
    ap = sweep_args(__doc__, "benchmarks/results/plan.json")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args(argv)
    cands = grid(args.points)
    load = planner.Load(rate=args.rate, requests=args.requests, steps=args.steps, samples=1)
    print(f"bench_plan: {len(cands)} configurations x {args.requests} requests ({args.steps} steps each, "
          f"{args.rate:g} req/s) on preset {args.preset}, {args.jobs} local worker processes, "
          f"{os.cpu_count()} cores")
    t0 = time.perf_counter()
    res = planner.plan(PresetSource(args.preset), cands, planner.Hardware(), load, jobs=args.jobs)
    wall = time.perf_counter() - t0
    sims = [r["sim_s"] for r in res.rows]
    cpu = [r["cpu_s"] for r in res.rows]
    serial = sum(sims)
    out = {"points": len(cands), "requests": args.requests, "wall_s": wall, "workers": args.jobs,
           "sim_s_mean": serial / len(sims), "sim_s_max": max(sims), "serial_s": serial,
           "cpu_s": sum(cpu), "parallel_efficiency": serial / (wall * args.jobs),
           "cpu_s_mean": sum(cpu) / len(cpu), "cpu_s_max": max(cpu), "cores": os.cpu_count(),
           "steps": args.steps, "rate": args.rate, "preset": args.preset,
           "load_average": os.getloadavg()[0], "cpu": cpu_name(), "modules": sim_modules()}
    print(f"sweep wall time        {wall:8.1f} s   (1-min load average at the end: {out['load_average']:.1f})")
    print(f"per point (mean / max) {out['sim_s_mean']:8.2f} s / {out['sim_s_max']:.2f} s wall, "
          f"{sum(cpu) / len(cpu):.2f} s / {max(cpu):.2f} s CPU")
    print(f"implied serial time    {serial:8.1f} s  -> {serial / wall:.2f}x with {args.jobs} workers "
          f"(efficiency {out['parallel_efficiency']:.0%}); total CPU {sum(cpu):.1f} s "
          f"(the wall time on 2 idle cores is ~ CPU / 2)")
    print("\ntop 5 by speedup (mean request latency vs AR TP=2 on the same 4 GPUs):")
    for r in res.rows[:5]:
        print(f"  {r['rank']:3d}. {r['label']:34s} {r['speedup']:.2f}x  {r['tokens_per_s']:7.0f} tok/s  "
              f"p90 {r['latency_s']['p90']:.1f} s")
    eq = res.meta["equal_resources_baseline"]
    print(f"  equal-resources AR (TP={eq['tp']}): rank {eq['rank']}, {eq['speedup']:.2f}x")
    print(f"\n{res.meta['recommendation']}")
    if args.out:
        write_results(args.out, out, render)
    return out


def render(o: dict) -> str:
    """The results as the docs quote them."""
    tail = f"\nCPU: {o['cpu']}; simulator modules: {o['modules']}.\n" if "cpu" in o else ""
    return (f"{o['points']} configurations x {o['requests']} requests ({o['steps']} steps each, "
            f"{o['rate']:g} req/s, preset {o['preset']}) on {o['workers']} local worker processes, "
            f"{o['cores']} cores:\n\n"
            f"| measure | value |\n|---|---|\n"
            f"| sweep wall time | {o['wall_s']:.1f} s (1-min load average at the end {o['load_average']:.1f}) |\n"
            f"| CPU per point (mean / max) | {o['cpu_s_mean']:.2f} s / {o['cpu_s_max']:.2f} s |\n"
            f"| total CPU | {o['cpu_s']:.1f} s |\n"
            f"| wall per point (mean / max) | {o['sim_s_mean']:.2f} s / {o['sim_s_max']:.2f} s |\n"
            f"| parallel efficiency | {o['parallel_efficiency']:.0%} |\n" + tail)


if __name__ == "__main__":
    main()
