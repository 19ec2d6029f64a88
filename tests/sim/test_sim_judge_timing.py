"""When lr-async judges a draft (Config.judge_timing), and the score verifier's cost.

eager (the reference): a child's draft is judged as soon as it and its parent's target step are
done, wherever the parent is; deferred: only once the parent is the root, so every verdict of a
run of accepted drafts is paid in series. A trace replays the timing its run used
(run.flags.judge_timing; older records were deferred). The score verifier (the target scores the
drafted step) runs its one-token judgement on the target's engine.
"""
from __future__ import annotations

import json
import types

import pytest
import simpy

from lrcore.errors import UserError
from lrsim.calib.models import FittedRoofline
from lrsim.calib.replay import ReplayWorkload
from lrsim.sim import scenario
from lrsim.sim.config import Config, Placement
from lrsim.sim.engine import Engine
from lrsim.sim.runner import run
from lrsim.sim.verifier import JUDGE_TEMPLATE_TOKENS, SCORE_TEMPLATE_TOKENS, VerifierCost
from lrsim.sim.world import World


# --- eager vs deferred on the ideal world -----------------------------------------------------
def _ideal(timing, verifier, steps=40):
    """Perfect acceptance, one request: every position is decided by a verdict."""
    cfg = Config.ideal_setup("lr-async", 1.0, 0.1, depth=4, steps=steps, seed=3)
    cfg.verifier = verifier
    cfg.judge_timing = timing
    return run(cfg)


def test_eager_judging_takes_the_verdicts_off_the_critical_path():
    """A target step is 32 units, a draft step 3.2, a verdict 20. Deferred: a node's child is
    judged only once the node is the root, so the 40 verdicts run one after another (the first
    after the first target step): at least 32 + 40 x 20 units. Eager: a draft is judged while the
    positions before it are still being decided, ~11 units per step (draft + target + verdict
    over depth + 1 positions in flight)."""
    eager, _ = _ideal("eager", VerifierCost("constant", 20.0))
    deferred, _ = _ideal("deferred", VerifierCost("constant", 20.0))
    for s in (eager, deferred):
        assert s["steps_from_draft"] == 40 and s["unready_drafts"] == 0   # same work, same verdicts
    assert deferred["wall_s"] >= 32 + 40 * 20 - 1e-6
    assert eager["wall_s"] < 0.7 * deferred["wall_s"]


def test_eager_judging_is_faster_on_real_shaped_hardware():
    """The paper's H100 setup with a slow (1 s) verifier and perfect acceptance: deferred pays
    one verdict per step in series (>= 1 s a step); eager overlaps them with the drafting and
    target work of the positions behind."""
    out = {}
    for timing in ("eager", "deferred"):
        cfg = scenario.load("h100-paper", seed=5)
        cfg.workload.n_requests, cfg.workload.steps, cfg.workload.alpha1 = 1, 30, 1.0
        cfg.verifier = VerifierCost("constant", 1.0)
        cfg.judge_timing = timing
        summary, _ = run(cfg)
        assert summary["steps"] == 30
        out[timing] = summary
    deferred = out["deferred"]
    # width 1: every position whose draft was ready in time was decided by a verdict
    judged = deferred["proposed_steps"] - deferred["unready_drafts"]
    assert judged >= 20 and deferred["wall_s"] >= judged * 1.0
    # (eager decisions can catch up with the depth-limited drafter: a few late drafts, each a
    # rejection, are the price; the margin leaves room for them)
    assert out["eager"]["wall_s"] < 0.85 * deferred["wall_s"]


@pytest.mark.parametrize("name,knobs", [("h100-paper", dict(width=2, depth=3)),
                                        ("cpu-2core", dict(width=1, depth=2))])
def test_a_free_verdict_gives_identical_runs_under_both_timings(name, knobs):
    """kind = "none": nothing to overlap, so eager and deferred are the same simulation."""
    out = []
    for timing in ("eager", "deferred"):
        cfg = scenario.load(name, seed=7)
        for k, v in knobs.items():
            setattr(cfg, k, v)
        cfg.workload.n_requests, cfg.workload.steps, cfg.workload.rate = 6, 15, 2.0
        cfg.verifier = VerifierCost("none")
        cfg.judge_timing = timing
        summary, _ = run(cfg)
        out.append(json.dumps(summary, sort_keys=True))
    assert out[0] == out[1]


def test_bad_judge_timing_is_a_user_error(tmp_path):
    cfg = Config.ideal_setup("lr-async", 0.5, 0.1, steps=5)
    cfg.judge_timing = "later"
    with pytest.raises(UserError, match="judge_timing"):
        cfg.validate()
    text = scenario.resolve_path("h100-paper").read_text()
    for value, ok in (('"deferred"', True), ('"soon"', False)):
        p = tmp_path / "s.toml"
        p.write_text(text.replace("[policy]\n", f"[policy]\njudge_timing = {value}\n", 1))
        if ok:
            assert scenario.load(str(p)).judge_timing == "deferred"
        else:
            with pytest.raises(UserError, match="policy.judge_timing"):
                scenario.load(str(p))
    assert scenario.load("h100-paper").judge_timing == "eager"       # the default


# --- a trace replays the timing its run used ----------------------------------------------------
def _step(i, tokens=10):
    return {"index": i, "source": "draft", "tokens": tokens, "text": f"Step {i}.\n\n",
            "draft": {"start": 0.0, "end": 1.0, "tokens": tokens},
            "target": {"start": 0.0, "end": 1.0, "tokens": tokens},
            "verify": {"verdict": True}, "cancelled": [], "discarded": []}


def _record(timing=None, steps=8):
    """A recorded lr run whose every step was an accepted draft ending on a blank line."""
    flags = {"depth": 2}
    if timing is not None:
        flags["judge_timing"] = timing
    return {"mode": "lr", "problem_id": "p/0", "sample": 0, "prompt_tokens": 100,
            "run": {"flags": flags},
            "step_acceptance": {"proposed": 0, "accepted": 0, "by_depth": {}},
            "steps": [_step(i) for i in range(steps)], "output_tokens": 10 * steps}


def _replay(rec, cfg_timing="eager"):
    """Target 0.4 s a token (4 s a step), draft 0.1 s (1 s a step), 30 s a verdict."""
    cfg = Config(policy="lr-async", depth=2, devices={"dev0": "cpu", "dev1": "cpu"},
                 target=Placement("target", FittedRoofline(base_s=0.4, prefill_per_token_s=0.03), ["dev0"]),
                 draft=Placement("draft", FittedRoofline(base_s=0.1, prefill_per_token_s=0.01), ["dev1"]),
                 verifier=VerifierCost("constant", 30.0), judge_timing=cfg_timing,
                 workload=ReplayWorkload([rec]))
    summary, _ = run(cfg)
    assert summary["steps"] == 8
    return summary["wall_s"]


def test_the_recorded_judge_timing_is_read_per_record():
    wl = ReplayWorkload([_record(None), _record("deferred"), _record("eager")])
    assert [wl.judge_timing(r) for r in wl.requests()] == ["deferred", "deferred", "eager"]


def test_a_trace_recorded_deferred_is_replayed_deferred():
    """Whatever the Config says, a record made with deferred judging (or before the flag
    existed) is replayed deferred: its 8 verdicts of 30 s run in series (each draft is done
    long before its parent becomes the root); one made eager overlaps them."""
    old, deferred, eager = (_replay(_record(t)) for t in (None, "deferred", "eager"))
    assert old == deferred >= 8 * 30.0
    assert deferred == _replay(_record("deferred"), cfg_timing="deferred")
    assert eager < 0.75 * deferred
    assert eager == _replay(_record("eager"), cfg_timing="deferred")


# --- the score verifier ----------------------------------------------------------------------------
class _Recorder:
    """An engine that only records what is submitted to it."""

    def __init__(self):
        self.jobs = []

    def submit(self, job):
        self.jobs.append(job)
        return job


def _world(kind):
    target, judge = _Recorder(), _Recorder()
    cfg = types.SimpleNamespace(verifier=VerifierCost(kind))
    return World(simpy.Environment(), cfg, None, target, None, judge, None), target, judge


def test_score_verdict_is_a_target_job_and_llm_verdict_a_judge_job():
    world, target, judge = _world("score")
    ev = world.verdict_delay(40, 45)
    assert judge.jobs == [] and len(target.jobs) == 1
    job = target.jobs[0]
    # one scoring token after a prefill of the score template and the drafted step (alone: the
    # real score prompt shows no history, so nothing of the request is cached)
    assert ev is job.done and job.total == 1
    assert job.prefill == SCORE_TEMPLATE_TOKENS + 40 and job.ctx == 0.0
    world, target, judge = _world("llm")
    world.verdict_delay(40, 45)
    assert target.jobs == [] and len(judge.jobs) == 1
    assert judge.jobs[0].prefill == JUDGE_TEMPLATE_TOKENS + 40 + 45


@pytest.mark.pure_python
def test_score_verifier_judges_on_the_target_engine_in_a_run(monkeypatch):
    """Every verdict of a score run is a 1-token job on the target's engine (the policies tag
    each draft and target step job with its node; a verdict job has no tag)."""
    seen = []
    submit = Engine.submit

    def spy(self, job):
        seen.append((self, job, job.prefill))     # the engine zeroes prefill once it has run it
        return submit(self, job)

    monkeypatch.setattr(Engine, "submit", spy)
    for kind in ("none", "score"):
        seen.clear()
        cfg = scenario.load("h100-paper", seed=5)
        cfg.workload.n_requests, cfg.workload.steps = 1, 20
        cfg.verifier = VerifierCost(kind)
        summary, world = run(cfg)
        verdicts = [(e, j, prefill) for e, j, prefill in seen if j.tag is None]
        if kind == "none":
            assert verdicts == []
            continue
        lens = set(cfg.workload.requests()[0].step_tokens)
        assert all(e is world.target for e, _, _ in verdicts)          # not the judge's engine
        assert all(j.total == 1 and prefill - SCORE_TEMPLATE_TOKENS in lens for _, j, prefill in verdicts)
        # at least one verdict for every position decided by a ready draft
        assert len(verdicts) >= summary["proposed_steps"] - summary["unready_drafts"] > 0


def test_score_kind_in_a_scenario_and_a_bad_kind(tmp_path):
    text = scenario.resolve_path("h100-paper").read_text()
    p = tmp_path / "s.toml"
    p.write_text(text.replace('kind = "constant"', 'kind = "score"', 1))
    cfg = scenario.load(str(p))
    assert cfg.verifier.kind == "score"
    cfg.workload.steps = 10
    summary, _ = run(cfg)
    assert summary["steps"] == 10
    p.write_text(text.replace('kind = "constant"', 'kind = "scores"', 1))
    with pytest.raises(UserError, match="verifier.kind"):
        scenario.load(str(p))
    with pytest.raises(UserError, match="llm, score, got 'scores'"):    # it lists the kinds
        VerifierCost("scores")
