"""Validation against the closed forms (lrsim.theory) under the theory's assumptions (--ideal).

Speedup = sum of AR latencies / sum of policy latencies over independent requests (the same
steps), with a delta-method standard error (lrsim.theory.montecarlo.ratio_estimate). Seeds are
fixed, so each check is deterministic; the tolerance is 3 standard errors.
"""
from __future__ import annotations

import math

import pytest

from lrsim.sim.config import Config
from lrsim.sim.runner import simulate
from lrsim.theory import async_s1, async_s2, depth_limit, f_sync, geometric_sum, sd_speedup

REQUESTS, STEPS = 16, 600      # ~10k steps per point: SE ~0.5-1%, truncation bias << SE


def _speedup(policy, alpha1, c1, seed=1, **kw):
    s = simulate(Config.ideal_setup(policy, alpha1, c1, steps=STEPS, requests=REQUESTS, seed=seed, **kw))
    return s["latency_speedup"], s["latency_speedup_se"], s


def _assert_within(sim, se, exact, n_se=3.0):
    assert se > 0
    assert abs(sim - exact) <= n_se * se, f"simulated {sim:.4f} ± {se:.4f}, exact {exact:.4f}"


GRID = [(0.4, 0.05), (0.63, 0.1), (0.8, 0.2)]


@pytest.mark.parametrize("alpha1,c1", GRID)
@pytest.mark.parametrize("k1", [2, 4])
def test_lr_sync_matches_f_sync(alpha1, c1, k1):
    sim, se, s = _speedup("lr-sync", alpha1, c1, k1=k1)
    _assert_within(sim, se, float(f_sync(alpha1, c1, k1)))
    # the step acceptance the simulator saw is the one it was given
    assert abs(s["step_acceptance_rate"] - alpha1) < 0.03


@pytest.mark.parametrize("alpha1,c1,k1", [(0.4, 0.05, 2), (0.63, 0.1, 6), (0.8, 0.2, 3),
                                          (0.63, 0.2, 5), (0.8, 0.2, 8), (0.5, 0.3, 4)])
def test_lr_stage_matches_s1_s2(alpha1, c1, k1):
    sim, se, _ = _speedup("lr-stage", alpha1, c1, k1=k1)
    exact = float(async_s1(alpha1, c1) if k1 >= depth_limit(c1) else async_s2(alpha1, c1, k1))
    _assert_within(sim, se, exact)


def test_lr_stage_example_value():
    """App. B Theorem 2's S2 at alpha1 = 0.63, k1 = 6, c1 = 0.1 is 2.2580 (test_identities.py)."""
    sim, se, _ = _speedup("lr-stage", 0.63, 0.1, k1=6)
    assert float(async_s2(0.63, 0.1, 6)) == pytest.approx(2.2580, abs=1e-4)
    _assert_within(sim, se, 2.2580)


@pytest.mark.parametrize("alpha2,c2,k2", [(0.3, 0.0, 3), (0.7, 0.05, 4), (0.8, 0.1, 6)])
def test_sd_matches_g(alpha2, c2, k2):
    sim, se, s = _speedup("sd", 0.0, 0.0, k2=k2, alpha2=alpha2, c2=c2)
    _assert_within(sim, se, float(sd_speedup(alpha2, c2, k2)))
    # tokens per verification pass (bonus included) = (1 - alpha2^k2) / (1 - alpha2)
    assert s["sd"]["mean_accepted_length"] == pytest.approx(float(geometric_sum(alpha2, k2)), rel=0.02)


@pytest.mark.parametrize("alpha1,c1,k1,alpha2,c2,k2", [(0.63, 0.1, 3, 0.7, 0.05, 4),
                                                       (0.5, 0.05, 2, 0.3, 0.0, 3)])
def test_lr_sync_with_sd_matches_product(alpha1, c1, k1, alpha2, c2, k2):
    sim, se, _ = _speedup("lr-sync", alpha1, c1, k1=k1, k2=k2, alpha2=alpha2, c2=c2)
    _assert_within(sim, se, float(f_sync(alpha1, c1, k1) * sd_speedup(alpha2, c2, k2)))


@pytest.mark.parametrize("alpha1,c1,depth", [(0.63, 0.1, 2), (0.63, 0.1, 4), (0.5, 0.2, 2), (0.8, 0.05, 3)])
def test_lr_async_pipeline_between_s2_depth_and_s2_depth_plus_1(alpha1, c1, depth):
    """The event-level pipeline lands between S2(D) and S2(D+1), a few per cent below S2(D+1)."""
    sim, se, s = _speedup("lr-async", alpha1, c1, depth=depth)
    lo = float(async_s2(alpha1, c1, depth))
    hi = float(async_s2(alpha1, c1, depth + 1)) if depth + 1 < depth_limit(c1) else float(async_s1(alpha1, c1))
    assert lo - 3 * se <= sim <= hi + 3 * se, f"{sim:.4f} ± {se:.4f} not in [{lo:.4f}, {hi:.4f}]"
    assert sim >= 0.95 * hi           # close to the upper form (measured gap: see docs/simulator.md)
    assert s["unready_drafts"] == 0    # under --ideal a draft (c1 < 1) is always ready in time


def test_lr_async_approaches_s1_as_depth_grows():
    alpha1, c1 = 0.7, 0.2                      # depth limit ceil(1/c1) = 5
    s1 = float(async_s1(alpha1, c1))
    gaps = []
    for depth in (1, 3, 8):
        sim, se, _ = _speedup("lr-async", alpha1, c1, depth=depth)
        gaps.append(s1 - sim)
    assert gaps[0] > gaps[1] > gaps[2] - 0.02
    assert abs(gaps[2]) < 0.03 * s1


def test_free_batching_budget_limits_parallelism():
    """With budget M = 2 a k1 = 4 cycle needs two target iterations per token: slower than M = inf.
    One request (the budget is per engine: concurrent requests would share it)."""
    free, _, _ = _speedup("lr-sync", 0.8, 0.05, k1=4)
    s = simulate(Config.ideal_setup("lr-sync", 0.8, 0.05, k1=4, steps=4000, requests=1, seed=3, budget=2))
    capped = s["latency_speedup"]
    assert capped < free
    # the budget doubles the target pass: cycle = 3 c1 T + 2 T
    a, c = 0.8, 0.05
    exact = (1 - a ** 4) / (1 - a) / (3 * c + 2)
    assert math.isclose(capped, exact, rel_tol=0.03)


@pytest.mark.parametrize("alpha1,c1,k1", [(0.63, 0.1, 6), (0.8, 0.2, 8), (0.5, 0.05, 3)])
def test_stage_fast_path_matches_theory_and_event_simulation(alpha1, c1, k1):
    from lrsim.sim.stage_fast import stage_speedup
    fast = stage_speedup(alpha1, c1, k1, steps=2000, requests=64, seed=5)
    exact = float(async_s1(alpha1, c1) if k1 >= depth_limit(c1) else async_s2(alpha1, c1, k1))
    assert fast.within(exact, 3.0), (fast, exact)
    ev, se, _ = _speedup("lr-stage", alpha1, c1, k1=k1)
    assert abs(ev - fast.mean) <= 3 * math.hypot(se, fast.stderr)


def test_the_committed_validation_tables_hold_what_the_docs_say():
    """docs/simulator.md quotes benchmarks/results/validation.md (bench_validation.py): every exact
    form within 3 SE, every lr-async row between S2(D) and S2(D+1) and below it by a gap that
    shrinks with depth at a1 = 0.63, lr-sync + SD on the product within 3 SE, lr-async + SD below."""
    import json
    from pathlib import Path

    doc = json.loads((Path(__file__).resolve().parents[2] / "benchmarks" / "results"
                      / "validation.json").read_text())
    assert all(abs(r["z"]) < 3 for r in doc["exact"])
    assert all(r["s2_d"] - 3 * r["se"] <= r["simulated"] <= r["s2_d1"] + 3 * r["se"] for r in doc["async"])
    gaps = [r["gap_vs_s2_d1"] for r in doc["async"] if r["params"].startswith("a1=0.63 c1=0.1")]
    assert len(gaps) == 4 and gaps == sorted(gaps) and gaps[-1] > -0.01
    sync = [r for r in doc["product"] if r["policy"] == "lr-sync+SD"]
    assert sync and all(abs(r["ratio"] - 1) < 3 * r["se"] for r in sync)
    assert all(r["ratio"] < 1 for r in doc["product"] if r["policy"] == "lr-async+SD")
