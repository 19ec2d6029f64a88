"""`lr plan --ray-address`: the same plan on a private local Ray instance started by the test.

Ray's start-up costs ~30 s on 2 cores, so the run is marked slow (still inside the suite's
budget); the committed scaling run's check reads files only.
"""
from __future__ import annotations

import pytest

from lrsim.plan import planner
from lrsim.plan.planner import Candidate, Hardware, Load
from lrsim.plan.sources import PresetSource


@pytest.mark.slow
def test_plan_on_local_ray_matches_local_processes():
    pytest.importorskip("ray")
    src = PresetSource("r1-gsm8k")
    cands = [Candidate("ar", role="reference"), Candidate("lr", k1=3, depth=2), Candidate("sd", k2=3)]
    load = Load(concurrency=1, steps=6, samples=1)
    local = planner.plan(src, cands, Hardware(), load, jobs=1)
    remote = planner.plan(src, cands, Hardware(), load, ray_address="local")
    assert remote.meta["backend"] == "ray (local)"
    assert [r["label"] for r in remote.rows] == [r["label"] for r in local.rows]
    for a, b in zip(local.rows, remote.rows):
        assert a["mean_latency_s"] == pytest.approx(b["mean_latency_s"])   # deterministic simulator


def test_the_committed_ray_scaling_run():
    """README (Planning): benchmarks/results/plan_ray.* is one bench_plan_ray.py run, rendered:
    two worker nodes ran bench_plan's full grid with the same answers as one, and the efficiency
    is the two wall times' ratio (not marked slow: it reads the committed files only)."""
    import json
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    sys.path.insert(0, str(root / "benchmarks"))
    import bench_plan_ray

    res = root / "benchmarks" / "results" / "plan_ray.json"
    doc = json.loads(res.read_text())
    assert res.with_suffix(".md").read_text() == bench_plan_ray.render(doc)
    assert doc["worker_nodes"] == 2 and doc["same_results"] is True
    assert (doc["points"], doc["requests"]) == (100, 1000)
    assert doc["efficiency"] == pytest.approx(doc["wall_s_one_node"] / (2 * doc["wall_s_two_nodes"]))
