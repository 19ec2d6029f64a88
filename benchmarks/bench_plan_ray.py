"""bench_plan's sweep on a Ray cluster of one and then two worker nodes: how the plan scales
across nodes (`lr plan --ray-address`, lrsim/plan/parallel.py).

    .venv/bin/python benchmarks/bench_plan_ray.py [--points 100] [--requests 1000]
        [--out benchmarks/results/plan_ray.json]

A private local Ray (ray.cluster_utils.Cluster: a head node with no CPUs of its own, then worker
nodes of one CPU each, each a raylet of its own as on separate machines) runs bench_plan's grid
and workload with one worker node, then again after a second joins. Efficiency = wall with one
node / (2 x wall with two): 1 = the second node halves the sweep. Both runs must rank and price
every configuration the same (the simulator is deterministic), which the output checks. On this
2-core machine the two nodes share one host, so this measures Ray's scheduling and transfer
overhead across raylets, not a network. Run it alone: it is a timing.
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_plan import grid, sweep_args  # noqa: E402
from benchmarks.write import cpu_name, sim_modules, write_results  # noqa: E402

from lrsim.plan import planner  # noqa: E402
from lrsim.plan.sources import PresetSource  # noqa: E402


def sweep(address: str, cands, load, preset: str) -> tuple[float, list]:
    t0 = time.perf_counter()
    res = planner.plan(PresetSource(preset), cands, planner.Hardware(), load, ray_address=address)
    return time.perf_counter() - t0, [(r["label"], r["mean_latency_s"]) for r in res.rows]


def measure(points: int, requests: int, steps: int, rate: float, preset: str) -> dict:
    import ray
    from ray.cluster_utils import Cluster

    cands = grid(points)
    load = planner.Load(rate=rate, requests=requests, steps=steps, samples=1)
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
    try:
        cluster.add_node(num_cpus=1)
        ray.init(address=cluster.address, log_to_driver=False)
        cluster.wait_for_nodes()
        one, rows_one = sweep(cluster.address, cands, load, preset)
        cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        two, rows_two = sweep(cluster.address, cands, load, preset)
        nodes = sum(1 for n in ray.nodes() if n["Alive"] and n["Resources"].get("CPU"))
    finally:
        ray.shutdown()
        cluster.shutdown()
    return {"points": len(cands), "requests": requests, "steps": steps, "rate": rate, "preset": preset,
            "cores": os.cpu_count(), "worker_nodes": nodes, "ray_version": ray.__version__,
            "wall_s_one_node": one, "wall_s_two_nodes": two, "speedup": one / two,
            "efficiency": one / (2 * two), "same_results": rows_one == rows_two,
            "loadavg_after": list(os.getloadavg()), "cpu": cpu_name(), "modules": sim_modules()}


def render(doc: dict) -> str:
    return "\n".join([
        f"{doc['points']} configurations x {doc['requests']} requests ({doc['steps']} steps each, "
        f"{doc['rate']:g} req/s, preset {doc['preset']}) on a private local Ray {doc['ray_version']} "
        f"(worker nodes of 1 CPU each, {doc['cores']} cores in all):", "",
        "| worker nodes | sweep wall time |", "|---|---|",
        f"| 1 | {doc['wall_s_one_node']:.1f} s |",
        f"| 2 | {doc['wall_s_two_nodes']:.1f} s |", "",
        f"Two nodes against one: {doc['speedup']:.2f}x, efficiency {100 * doc['efficiency']:.0f}%; "
        f"same ranking and latencies on both: {'yes' if doc['same_results'] else 'NO'}. "
        f"1-min load average after the run {doc['loadavg_after'][0]:.2f}.", *(
            [f"CPU: {doc['cpu']}; simulator modules: {doc['modules']}.", ""] if "cpu" in doc else [])])


def main(argv=None) -> dict:
    a = sweep_args(__doc__, "benchmarks/results/plan_ray.json").parse_args(argv)
    if a.points < 1 or a.requests < 1 or a.steps < 1 or not a.rate > 0:
        sys.exit("bench_plan_ray: --points, --requests and --steps must be >= 1, --rate > 0")
    doc = measure(a.points, a.requests, a.steps, a.rate, a.preset)
    path = write_results(a.out, doc, render)
    print(path.with_suffix(".md").read_text(), end="")
    return doc


if __name__ == "__main__":
    main()
