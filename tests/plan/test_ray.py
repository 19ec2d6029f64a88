"""`lr plan --ray-address`: the same plan on a private local Ray instance started by the test.

Ray's start-up costs ~30 s on 2 cores, so this is marked slow (still inside the suite's budget).
"""
from __future__ import annotations

import pytest

from lrsim.plan import planner
from lrsim.plan.planner import Candidate, Hardware, Load
from lrsim.plan.sources import PresetSource

pytestmark = pytest.mark.slow


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
