"""Simulator speed against an earlier commit, side by side: the same workloads run by
this tree's simulator (B) and by a git worktree of `--base` (A), in turn A B A B ..., each run a
fresh process timed by its own CPU seconds around the simulation (imports excluded), with the
ratio A/B pair by pair, so a comparison holds while the shared machine's speed drifts.

    .venv/bin/python benchmarks/bench_sim_ab.py [--base 4fc3b39] [--pairs 7]
    .venv/bin/python benchmarks/bench_sim_ab.py --base pure     # compiled against plain Python

Default base: 4fc3b39, main just before the simulator speed pass was merged (be418c7). `--base
pure` compares this tree with itself: the base runs the plain-Python modules (LRSIM_PURE=1), the
head the compiled ones (lrsim/native.py; built first if stale). Each run also prints a digest
of its summary, so the table says whether the two sides' outputs are the same, bit for bit, on
every workload. A base commit with compiled modules (lrsim/native.py) runs them, built in its
worktree first (`--base acf257a --out benchmarks/results/sim_ab_acf257a.json`: the lighter job
events, planned prefills and three more compiled modules against the compiled simulator before
them). Run it alone (no test suite or engine beside it). Writes
benchmarks/results/sim_ab.{json,md} (`--base pure`: sim_native.{json,md}).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.write import cpu_name, write_results  # noqa: E402

BASE = "4fc3b39"
# each tree runs (and builds) its own compiled modules, in its own lrsim/_native
ENV = {k: v for k, v in os.environ.items() if k != "LRSIM_NATIVE_ROOT"}
# (name, policy, requests, steps, rate, extra Config fields): bench_sim.py's h100-paper cases
WORKLOADS = [
    ("lr-async, 1 request, 2000 steps", "lr-async", 1, 2000, None, {}),
    ("lr-async, 64 concurrent", "lr-async", 64, 60, None, {}),
    ("lr-async, 256 concurrent", "lr-async", 256, 60, None, {}),
    ("lr+sd k2=4, 1 request, 2000 steps", "lr-async", 1, 2000, None, {"k2": 4}),
    ("lr+sd k2=4, 256 concurrent", "lr-async", 256, 60, None, {"k2": 4}),
    ("lr-sync k1=3, 64 concurrent", "lr-sync", 64, 60, None, {"k1": 3}),
    ("lr-async, 300 Poisson requests at 2/s", "lr-async", 300, 60, 2.0, {}),
]

# Run in the tree under test (its own lrsim on sys.path): only APIs both trees have.
CHILD = r"""
import copy, hashlib, json, sys, time
sys.path.insert(0, ".")
from lrsim.sim import scenario
from lrsim.sim.runner import run
name, policy, n, steps, rate, extra = json.loads(sys.argv[1])
cfg = scenario.load("h100-paper")
cfg.policy = policy
for k, v in extra.items():
    setattr(cfg, k, v)
cfg.workload.n_requests, cfg.workload.steps, cfg.workload.rate = n, steps, rate
again = copy.deepcopy(cfg)
c0 = time.process_time()
s, world = run(cfg)
cpu = time.process_time() - c0
c0 = time.process_time()                # the same run again in this process: no first-run costs
s2, _ = run(again)
cpu_warm = time.process_time() - c0
digest, digest2 = (hashlib.sha256(json.dumps(x, sort_keys=True, default=str).encode()).hexdigest()[:16]
                   for x in (s, s2))
assert digest2 == digest, "the second run's summary differs from the first's"
try:
    from lrsim.native import in_use
    compiled = in_use()
except ImportError:                     # a tree from before the compiled modules
    compiled = False
print(json.dumps({"cpu_s": cpu, "cpu_warm_s": cpu_warm, "steps": s["steps"], "digest": digest,
                  "compiled": compiled}))
"""


def one(tree: Path, workload: tuple, pure: bool = False) -> dict:
    env = {**ENV, "LRSIM_PURE": "1" if pure else ""}
    out = subprocess.run([sys.executable, "-c", CHILD, json.dumps(workload)], cwd=tree,
                         capture_output=True, text=True, check=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def bench(base: str, pairs: int) -> dict:
    rows = []
    load_before = os.getloadavg()[0]
    pure = base == "pure"
    with tempfile.TemporaryDirectory() as d:
        tree_a = ROOT if pure else Path(d) / "base"
        if pure:
            subprocess.run([sys.executable, "-m", "lrsim.native", "build", "--if-stale"], cwd=ROOT,
                           check=True, capture_output=True, env=ENV)
        else:
            subprocess.run(["git", "worktree", "add", "--detach", str(tree_a), base], cwd=ROOT,
                           check=True, capture_output=True)
        try:
            if not pure and (tree_a / "lrsim" / "native.py").exists():   # a base with compiled
                subprocess.run([sys.executable, "-m", "lrsim.native", "build"],   # modules: built
                               cwd=tree_a, check=True, capture_output=True, env=ENV)
            commit_a = "plain Python (LRSIM_PURE=1)" if pure else subprocess.run(
                ["git", "rev-parse", "--short", "HEAD"], cwd=tree_a,
                capture_output=True, text=True, check=True).stdout.strip()
            for w in WORKLOADS:
                one(tree_a, w, pure), one(ROOT, w)              # warm-up (file caches)
                a_runs, b_runs = [], []
                for _ in range(pairs):
                    a_runs.append(one(tree_a, w, pure))
                    b_runs.append(one(ROOT, w))
                ratios = [a["cpu_s"] / b["cpu_s"] for a, b in zip(a_runs, b_runs)]
                warm = [a["cpu_warm_s"] / b["cpu_warm_s"] for a, b in zip(a_runs, b_runs)]
                med = lambda runs: statistics.median(r["cpu_s"] for r in runs)  # noqa: E731
                r = {"case": w[0], "steps": b_runs[0]["steps"], "base_cpu_s": round(med(a_runs), 3),
                     "head_cpu_s": round(med(b_runs), 3),
                     "head_steps_per_cpu_s": round(b_runs[0]["steps"] / med(b_runs)),
                     "ratio_median": round(statistics.median(ratios), 3),
                     "ratio_min": round(min(ratios), 3), "ratio_max": round(max(ratios), 3),
                     "head_warm_steps_per_cpu_s": round(
                         b_runs[0]["steps"] / statistics.median(r["cpu_warm_s"] for r in b_runs)),
                     "warm_ratio_median": round(statistics.median(warm), 3),
                     "warm_ratio_min": round(min(warm), 3), "warm_ratio_max": round(max(warm), 3),
                     "same_output": len({r["digest"] for r in a_runs + b_runs}) == 1,
                     "head_compiled": all(r.get("compiled") for r in b_runs),
                     "base_compiled": all(r.get("compiled") for r in a_runs)}
                rows.append(r)
                print(f"{r['case']:40s} base {r['base_cpu_s']:7.2f} head {r['head_cpu_s']:7.2f} CPU-s "
                      f"ratio {r['ratio_median']:.2f} ({r['ratio_min']:.2f}-{r['ratio_max']:.2f}) "
                      f"same output: {r['same_output']}", flush=True)
        finally:
            if not pure:
                subprocess.run(["git", "worktree", "remove", "--force", str(tree_a)], cwd=ROOT,
                               capture_output=True)
    return {"base": commit_a, "pairs": pairs, "rows": rows, "load_before": load_before,
            "load_after": os.getloadavg()[0], "cpu": cpu_name()}


def render(doc: dict) -> str:
    compiled = all(r.get("head_compiled") for r in doc["rows"])
    lines = [f"Simulator CPU seconds, this tree (head{', compiled modules' if compiled else ''}) "
             f"against {doc['base']} (base"
             f"{', compiled modules' if any(r.get('base_compiled') for r in doc['rows']) else ''}), "
             "run in turn "
             f"base, head, ... {doc['pairs']} pairs per workload after a warm-up pair, each a fresh "
             "process timed around the simulation (h100-paper scenario, lr-async depth 4 unless "
             "named). Ratio = base / head CPU-s, pair by pair: median (min-max). Each process "
             "runs the workload twice: the first run, and the second (warm: the same run again, "
             "after the first run's one-time costs).", "",
             "| workload | steps | base CPU-s | head CPU-s | head steps per CPU-s | ratio | "
             "warm: head steps per CPU-s | warm ratio | same output |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in doc["rows"]:
        warm = (f"{r['head_warm_steps_per_cpu_s']:,} | {r['warm_ratio_median']:.2f} "
                f"({r['warm_ratio_min']:.2f}-{r['warm_ratio_max']:.2f})"
                if "warm_ratio_median" in r else "- | -")
        lines.append(f"| {r['case']} | {r['steps']:,} | {r['base_cpu_s']:.2f} | {r['head_cpu_s']:.2f} | "
                     f"{r['head_steps_per_cpu_s']:,} | {r['ratio_median']:.2f} "
                     f"({r['ratio_min']:.2f}-{r['ratio_max']:.2f}) | {warm} | "
                     f"{'yes' if r['same_output'] else 'NO'} |")
    if "cpu" in doc:
        lines += ["", f"CPU: {doc['cpu']}; load average {doc['load_before']:.2f} before the run, "
                      f"{doc['load_after']:.2f} after."]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", default=BASE, help="the commit to compare against, or 'pure': this "
                    "tree on plain Python (default %(default)s)")
    ap.add_argument("--pairs", type=int, default=7, help="timed pairs per workload (default %(default)s)")
    ap.add_argument("--out", default=None, help="default benchmarks/results/sim_ab.json "
                    "(--base pure: sim_native.json)")
    a = ap.parse_args()
    if a.out is None:
        a.out = str(ROOT / "benchmarks" / "results" / ("sim_native.json" if a.base == "pure"
                                                       else "sim_ab.json"))
    if a.pairs < 1:
        sys.exit("bench_sim_ab: --pairs takes a positive integer")
    try:
        doc = bench(a.base, a.pairs)
    except subprocess.CalledProcessError as e:
        sys.exit(f"bench_sim_ab: {' '.join(map(str, e.cmd[:3]))} failed: "
                 f"{(e.stderr or '').strip().splitlines()[-1:] or e.returncode}")
    write_results(a.out, doc, render)
    print(render(doc))


if __name__ == "__main__":
    main()
