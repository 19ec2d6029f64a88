"""Judge timing in the async LR scheduler: eager judging, as the reference does, starts a
draft's judgement as soon as the draft and its parent's target step both exist; deferred judging
waits until the parent is the root. Fake engines, no models."""
from __future__ import annotations

import json

import pytest

from harness.fake_engine import MARKER, ExactVerifier, FakeEngine
from lrcore.errors import UserError
from lrreal import collect as collect_mod
from lrreal.scheduler import Problem, SchedulerConfig, run_problem

SCRIPT = [f"Step {i}: compute part {i} of the answer." for i in range(6)] + ["The answer is \\boxed{42}."]
PROMPT = "Question: what is six times seven?\n" + MARKER
FULL = "\n\n".join(SCRIPT)


def engines(wrong_steps=(), draft_tok=0.0005, target_tok=0.002):
    return (FakeEngine("target", SCRIPT, per_token_s=target_tok),
            FakeEngine("draft", SCRIPT, per_token_s=draft_tok,
                       wrong=lambda step, seed: step in wrong_steps))


def run(cfg, target, draft, verifier):
    import asyncio

    return asyncio.run(run_problem(cfg, Problem("p1", 0, PROMPT), target, draft, verifier))


def validate(res, mode):
    """The result must form a valid trace record (schema + cross-field rules)."""
    from lrcore.traces import validate_record

    validate_record({"schema_version": 1, "run": {"flags": {}, "models": {}, "vllm_version": None,
                                                  "hardware": {}, "seeds": {}},
                     "mode": mode, "problem_id": "p1", "sample": 0, "wall_time_s": res.wall_time_s,
                     "output_tokens": res.output_tokens, "correct": None, "steps": res.steps,
                     "engine_stats": {}, "sd": None, "step_acceptance": res.step_acceptance})


def lr(timing, **kw):
    return SchedulerConfig(**(dict(mode="lr", depth=3, max_tokens=500, judge_timing=timing) | kw))


def test_bad_judge_timing_is_refused():
    with pytest.raises(UserError, match="--judge-timing 'soon': use one of eager, deferred"):
        SchedulerConfig(judge_timing="soon")


@pytest.mark.parametrize("timing", ["eager", "deferred"])
def test_both_timings_commit_the_target_text_and_record_when_pairs_were_ready(timing):
    target, draft = engines(wrong_steps={2, 4})
    res = run(lr(timing), target, draft, ExactVerifier(latency_s=0.01))
    assert res.text == FULL and res.finish_reason == "eos"
    validate(res, "lr")
    judged = [s for s in res.steps if s["verify"] and s["verify"]["method"] == "exact"]
    assert judged
    for s in judged:  # `ready`: both compared steps existed; the judge starts no earlier
        v = s["verify"]
        assert v["ready"] == pytest.approx(max(s["draft"]["end"], s["target"]["end"]), abs=1e-9)
        assert v["start"] >= v["ready"] - 1e-6
    n = res.step_acceptance["judgements"]
    assert n["started"] >= n["used"] == len(judged)
    if timing == "deferred":  # width 1: only the root's children are judged, and all decide
        assert n["started"] == n["used"]
    assert target.active == 0 and draft.active == 0


def test_eager_judges_before_the_parent_is_the_root_and_deferred_never_does():
    """Step i's draft was judged against node i's target step. Node i became the root only when
    position i - 1 was decided, after its verdict came in: a deferred judgement of step i starts
    after that; an eager one can start before."""
    def early(res):
        s = res.steps
        return [i for i in range(1, len(s)) if s[i]["verify"] and s[i - 1]["verify"]
                and s[i]["verify"]["start"] < s[i - 1]["verify"]["end"] - 1e-6]

    # a fast drafter and a slow target: deeper target steps finish while the root's still runs
    mk = lambda: (FakeEngine("target", SCRIPT, per_token_s=0.004),  # noqa: E731
                  FakeEngine("draft", SCRIPT, per_token_s=0.0002))
    eager = run(lr("eager"), *mk(), ExactVerifier(latency_s=0.02))
    deferred = run(lr("deferred"), *mk(), ExactVerifier(latency_s=0.02))
    assert eager.text == deferred.text == FULL
    assert early(deferred) == []
    assert early(eager), [s["verify"] for s in eager.steps]


def test_eager_takes_a_slow_judge_off_the_critical_path():
    """Every draft is right and the judge takes 0.15 s: deferred pays it once per level after the
    root's target step; eager overlaps it with the deeper steps still running."""
    mk = lambda: engines(draft_tok=0.0002, target_tok=0.002)  # noqa: E731
    deferred = run(lr("deferred"), *mk(), ExactVerifier(latency_s=0.15))
    eager = run(lr("eager"), *mk(), ExactVerifier(latency_s=0.15))
    assert eager.text == deferred.text == FULL
    # a draft late by one draft step is "not ready" on a busy machine: allow one such position
    assert eager.step_acceptance["accepted"] >= deferred.step_acceptance["accepted"] - 1
    assert eager.step_acceptance["accepted"] > 2
    assert eager.wall_time_s < 0.85 * deferred.wall_time_s, (eager.wall_time_s, deferred.wall_time_s)


def test_rejection_cancels_eager_judgements_of_the_lost_subtree():
    """A slow judge still running for a node below a rejected position is cancelled with it:
    the run ends without waiting for it, and its call counts as started, not used."""
    target, draft = engines(wrong_steps={2}, draft_tok=0.0002, target_tok=0.002)
    verifier = ExactVerifier(latency_s=0.05)
    res = run(lr("eager", depth=4), target, draft, verifier)
    assert res.text == FULL
    n = res.step_acceptance["judgements"]
    assert n["started"] >= verifier.calls  # a task cancelled before it ran never called
    assert n["started"] > n["used"]


# ------------------------------------------------------------------ lr collect: flag and resume

def spec(out, **kw):
    return collect_mod.CollectSpec(**(dict(mode="lr", limit=1, depth=2, max_tokens=200, out=str(out),
                                           probe=False) | kw))


def test_judge_timing_is_recorded_and_resume_refuses_another(fast_collect):
    from lrcore.traces import read_traces

    out = fast_collect
    assert collect_mod.collect(spec(out)).written == 1
    [rec] = read_traces(out)
    assert rec["run"]["flags"]["judge_timing"] == "eager"
    assert "judgements" in rec["step_acceptance"]
    before = out.read_bytes()
    with pytest.raises(UserError, match="made with --judge-timing 'eager'; this run has "
                                        "--judge-timing 'deferred'"):
        collect_mod.collect(spec(out, limit=2, resume=True, judge_timing="deferred"))
    assert out.read_bytes() == before
    assert collect_mod.collect(spec(out, limit=2, resume=True)).written == 1


def test_records_without_judge_timing_were_deferred(fast_collect):
    out = fast_collect
    collect_mod.collect(spec(out, judge_timing="deferred"))
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    for r in recs:  # as an older toolkit wrote them
        del r["run"]["flags"]["judge_timing"]
    out.write_text("".join(json.dumps(r) + "\n" for r in recs))
    with pytest.raises(UserError, match="--judge-timing 'deferred'"):
        collect_mod.collect(spec(out, limit=2, resume=True))
    assert collect_mod.collect(spec(out, limit=2, resume=True, judge_timing="deferred")).written == 1


def test_cli_judge_timing(fast_collect, run_lr):
    from lrcore.traces import read_traces

    out = fast_collect
    code, stdout, err = run_lr("collect", "--mode", "lr", "--depth", "2", "--limit", "1",
                               "--max-tokens", "200", "--judge-timing", "deferred", "--no-probe",
                               "--out", out, "--json")
    assert code == 0, err
    assert read_traces(out)[0]["run"]["flags"]["judge_timing"] == "deferred"
    code, _, err = run_lr("collect", "--judge-timing", "soon", "--out", out.with_name("o.jsonl"))
    assert code == 2 and "--judge-timing 'soon'" in err and "\n" not in err.strip(), err
