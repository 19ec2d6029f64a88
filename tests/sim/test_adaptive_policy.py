"""The lr-adaptive simulator policy: it runs lrcore.adaptive's decisions on the lr-async
tree, records them, and the mode vocabulary, planner and workload carry it."""
import json

import numpy as np
import pytest

from lrcore import adaptive
from lrcore.errors import UserError
from lrcore.modes import ADAPTIVE_MODES, MODES, SIM_MODE_POLICY
from lrsim.sim import scenario
from lrsim.sim.config import Config
from lrsim.sim.policies import lr_adaptive
from lrsim.sim.runner import run, simulate
from lrsim.sim.workload import Synthetic


def _cfg(requests=1, steps=60, **kw):
    cfg = scenario.load("h100-paper", seed=5)
    cfg.policy = "lr-adaptive"
    for k, v in kw.items():
        setattr(cfg, k, v)
    cfg.workload.n_requests = requests
    cfg.workload.steps = steps
    return cfg


def test_decisions_are_counted_and_logged_within_bounds():
    s, world = run(_cfg(requests=3, steps=80, depth=3, width=2))
    a = s["adaptive"]
    assert a["decisions"] == sum(a["by_depth"].values()) == sum(a["by_width"].values()) \
        == sum(a["by_k2"].values())
    assert a["decisions"] == sum(sum(c.values()) for c in a["by_request"].values())
    assert set(a["by_request"]) == {"0", "1", "2"}
    assert all(0 <= int(d) <= 3 for d in a["by_depth"]) and set(a["by_width"]) <= {"1", "2"}
    assert a["by_k2"] == {"1": a["decisions"]}
    assert 3 <= len(a["log"]) <= 2 * lr_adaptive.LOG_HALF     # every request's first decision
    for e in a["log"]:                                          # the trace's Decision record
        d = adaptive.Decision.from_dict({k: v for k, v in e.items() if k not in ("request", "position")})
        assert d.reason and d.estimates.load >= 1
    json.dumps(s, allow_nan=False)


def test_the_log_stays_bounded_on_a_long_run():
    log = lr_adaptive.DecisionLog()
    ctl = adaptive.Controller(adaptive.AdaptiveConfig(max_depth=2, margin=0.0, explore_every=0))
    for i in range(500):        # alternate the estimates: a switch at every decision
        est = (adaptive.Estimates(alpha_by_depth=(0.9,), draft_step_s=0.01) if i % 2 else
               adaptive.Estimates(alpha_by_depth=(0.0,), verify_s=0.5))
        log.add(0, i, ctl.decide(est))
    s = log.summary()
    assert s["decisions"] == 500 and s["switches"] == 499
    assert len(s["log"]) == 2 * lr_adaptive.LOG_HALF
    assert s["log"][-1]["position"] == 499 and s["log"][0]["position"] == 0


def test_conservation_and_determinism():
    cfg = _cfg(requests=6, steps=30)
    s1, world = run(cfg)
    for rec, req in zip(world.records, cfg.workload.requests()):
        assert len(rec.steps) == req.steps and rec.tokens == req.output_tokens
    assert s1["steps_from_draft"] == s1["accepted_steps"]
    s2, _ = run(_cfg(requests=6, steps=30))
    assert s1 == s2


def test_the_run_shares_its_step_costs_and_no_prompt_prefill_is_a_step_cost(monkeypatch):
    """What the engines cost is learned run-wide, from every request on them (as the real
    backend's RunEstimates), and acceptance per request; a request's first step, which holds its
    prompt's prefill, is observed for its tokens but not timed."""
    seen = []
    observe = lr_adaptive.AdaptiveLookahead.observe_target

    def spy(self, job, k2, sd, timed=True, launched=False, stream_start=False):
        seen.append((self, job.tag.position, timed))
        observe(self, job, k2, sd, timed, launched, stream_start)
    monkeypatch.setattr(lr_adaptive.AdaptiveLookahead, "observe_target", spy)
    s, world = run(_cfg(requests=3, steps=20, depth=2))
    lrs = {id(lr): lr for lr, _, _ in seen}.values()
    assert len(lrs) == 3
    costs = world.adaptive_costs
    for lr in lrs:
        assert lr.est is not costs and lr.est.target is costs.target and lr.est.draft is costs.draft
        assert lr.est.verify is costs.verify and lr.est.load is costs.load
        assert lr.est.step_tokens is costs.step_tokens and lr.est.launch is costs.launch
        assert all(a is not b for a in lr.est.alpha for b in costs.alpha)
    assert all(timed == (pos > 0) for _, pos, timed in seen)
    assert sum(not timed for _, _, timed in seen) == 3
    assert costs.launch.weight > 0                # tree steps' launches were measured


def test_it_learns_to_stop_speculating_when_drafts_are_never_accepted():
    # the paper's hardware (a 13 ms verdict per step), acceptance 0: from the neutral prior (0.5)
    # it speculates, learns that nothing is accepted, and stops (the theory's free world, with no
    # verifier cost, would have nothing to stop for: speculation is free there). It did not while
    # the prior's weight was permanent (believed acceptance >= 0.045: 0.95x AR); the prior now
    # ages (AdaptiveConfig.prior_ages) and a gain below the margin switches after `dwell`
    from lrsim.plan import presets
    cfg = presets.get("r1-gsm8k").to_config("lr-adaptive", steps=200, seed=1)
    cfg.workload.alpha1 = 0.0
    s = simulate(cfg)
    assert s["adaptive"]["by_depth"]["0"] > 0.8 * s["adaptive"]["decisions"]
    assert s["speedup"] >= 0.97


def test_it_speculates_deep_when_drafts_are_always_accepted():
    cfg = Config.ideal_setup("lr-adaptive", alpha1=0.95, c1=0.05, depth=4, steps=400)
    s = simulate(cfg)
    assert s["adaptive"]["by_depth"].get("4", 0) > 0.8 * s["adaptive"]["decisions"]
    static = simulate(Config.ideal_setup("lr-async", alpha1=0.95, c1=0.05, depth=4, steps=400))
    assert s["speedup"] >= 0.97 * static["speedup"]


def test_config_bounds_and_override():
    cfg = _cfg(depth=3, width=2, k2=5)
    a = lr_adaptive.adaptive_config(cfg)
    assert (a.max_depth, a.widths, a.k2s, a.mode) == (3, (1, 2), (1, 3, 5), "async")
    assert lr_adaptive.neutral_prior(a).alpha2 == 0.5
    own = adaptive.AdaptiveConfig(max_depth=1, widths=(1,), k2s=(1,), explore_every=0)
    cfg.adaptive = own
    s, _ = run(cfg)
    assert set(s["adaptive"]["by_depth"]) <= {"0", "1"} and s["adaptive"]["by_k2"].keys() == {"1"}


def test_sd_lengths_on_offer():
    # 1 (no SD), the Config's k2 and lr plan's shorter grid lengths below it
    assert lr_adaptive.sd_lengths(9) == (1, 3, 5, 9)
    assert lr_adaptive.sd_lengths(5) == (1, 3, 5)
    assert lr_adaptive.sd_lengths(4) == (1, 3, 4)
    assert lr_adaptive.sd_lengths(2) == (1, 2)
    assert lr_adaptive.sd_lengths(1) == (1,)


def test_sd_with_adaptive_depth_runs_every_step_with_sd():
    s, _ = run(_cfg(steps=40, k2=5))
    assert s["sd"] is not None and s["sd"]["drafted"] > 0
    by_k2 = s["adaptive"]["by_k2"]
    assert "1" not in by_k2 and set(by_k2) <= {"3", "5"}
    assert sum(by_k2.values()) == s["adaptive"]["decisions"]


def test_other_policies_have_no_adaptive_summary():
    cfg = _cfg(steps=10)
    cfg.policy = "lr-async"
    s, _ = run(cfg)
    assert "adaptive" not in s


def test_adaptive_modes_are_simulator_and_real_modes():
    for m, base in ADAPTIVE_MODES.items():
        assert m in MODES                         # lr collect --mode lr-adaptive runs them too
        assert SIM_MODE_POLICY[m] == ("lr-adaptive", SIM_MODE_POLICY[base][1])
    from lrreal.scheduler.config import SchedulerConfig
    assert SchedulerConfig(mode="lr-adaptive").mode == "lr-adaptive"


def test_planner_prices_adaptive_as_one_candidate_per_k2():
    from lrsim.plan import planner
    cands = planner.candidates(["lr-adaptive", "lr+sd-adaptive"], [1, 2, 3], [2], [1, 9], [1, 2],
                               ["dedicated"], None)
    mine = [c for c in cands if c.mode in ADAPTIVE_MODES]
    assert [(c.mode, c.depth, c.width, c.k2) for c in mine] == [
        ("lr-adaptive", 3, 2, 1), ("lr+sd-adaptive", 3, 2, 9)]
    assert mine[0].label == "lr-adaptive depth<=3 width<=2" and mine[0].policy == "lr-adaptive"


def test_phase_change_workload():
    wl = Synthetic(steps=100, alpha1=1.0, phase_alpha1=0.0, phase_at=0.3)
    req = wl.requests()[0]
    assert all(wl.step_accept(req, p, 1) for p in range(30))
    assert not any(wl.step_accept(req, p, 1) for p in range(30, 100))
    with pytest.raises(UserError, match="phase_alpha1"):
        Synthetic(phase_alpha1=1.5)
    with pytest.raises(UserError, match="phase_at"):
        Synthetic(phase_alpha1=0.3, phase_at=2.0)
    # one phase (the default) draws exactly as before
    a, b = Synthetic(alpha1=0.6, seed=3), Synthetic(alpha1=0.6, seed=3, phase_at=0.1)
    ra, rb = a.requests()[0], b.requests()[0]
    assert [a.step_accept(ra, p, 1) for p in range(50)] == [b.step_accept(rb, p, 1) for p in range(50)]


def test_phase_change_in_a_scenario_file(tmp_path):
    text = (scenario.resolve_path("h100-paper")).read_text()
    assert "\n[workload]\n" in text
    p = tmp_path / "phase.toml"
    p.write_text(text.replace("\n[workload]\n", "\n[workload]\nphase_alpha1 = 0.3\nphase_at = 0.25\n", 1))
    wl = scenario.load(str(p)).workload
    assert (wl.phase_alpha1, wl.phase_at) == (0.3, 0.25)


def test_in_flight_counts_every_arrived_request_before_its_process_starts():
    from lrsim.sim.runner import _world
    from lrsim.sim.world import RequestRecord
    cfg = _cfg(requests=3, steps=5)
    cfg, world = _world(cfg, stream=None)
    assert world.in_flight() == 0                     # no arrivals known, no records
    world.arrivals = [0.0, 0.0, 5.0]
    assert world.in_flight() == 2                     # t = 0: two arrived, no process started
    world.records.append(RequestRecord(0, 0.0, 5, 200))
    assert world.in_flight() == 2                     # one started: counted once
    world.records[0].finish = 0.0
    assert world.in_flight() == 1
    # in a run: every request of 16 arriving at t = 0 is counted from the first decision on
    s, w = run(_cfg(requests=16, steps=8))
    first = [e for e in s["adaptive"]["log"] if e["position"] == 0]
    assert first and all(e["estimates"]["in_flight"] == 16 for e in first)


def test_the_theorys_free_engine_puts_every_batch_within_reach():
    cfg = Config.ideal_setup("lr-adaptive", alpha1=0.95, c1=0.05, depth=4, steps=60, requests=16)
    assert lr_adaptive.adaptive_config(cfg).batch_floor >= 1e15
    s = simulate(cfg)
    assert s["adaptive"]["by_depth"].get("4", 0) > 0.9 * s["adaptive"]["decisions"]


def test_a_load_ramp_rescales_each_gap_to_the_rate_at_its_index(tmp_path):
    flat, ramp = Synthetic(n_requests=5, rate=1.0, seed=2), Synthetic(n_requests=5, rate=1.0,
                                                                     rate_end=3.0, seed=2)
    gaps = np.diff([r.arrival for r in flat.requests()])
    ramped = np.diff([r.arrival for r in ramp.requests()])
    # request i arrives at rate 1 + 2 i / 4: its gap is the flat draw's over that rate
    assert ramped == pytest.approx(gaps / np.array([1.5, 2.0, 2.5, 3.0]), rel=1e-12)
    assert [r.step_tokens for r in ramp.requests()] == [r.step_tokens for r in flat.requests()]
    # streamed in chunks as drawn at once
    assert [r.arrival for r in ramp.iter_requests(chunk=2)] == pytest.approx(
        [r.arrival for r in ramp.requests()], rel=1e-12, abs=1e-12)
    with pytest.raises(UserError, match="rate_end"):
        Synthetic(rate_end=2.0)
    with pytest.raises(UserError, match="rate_end"):
        Synthetic(rate=1.0, rate_end=0.0)
    text = (scenario.resolve_path("h100-paper")).read_text()
    p = tmp_path / "ramp.toml"
    p.write_text(text.replace("\n[workload]\n", "\n[workload]\nrate = 0.5\nrate_end = 4.0\n", 1))
    wl = scenario.load(str(p)).workload
    assert (wl.rate, wl.rate_end) == (0.5, 4.0)


def test_cli_simulate_lr_adaptive(run_lr):
    code, out, _ = run_lr("simulate", "--policy", "lr-adaptive", "--steps", "30", "--json")
    assert code == 0
    d = json.loads(out)
    assert d["policy"] == "lr-adaptive" and d["adaptive"]["decisions"] >= 1
    code, out, _ = run_lr("simulate", "--policy", "lr-adaptive", "--steps", "30")
    assert code == 0 and "adaptive decisions by depth" in out
