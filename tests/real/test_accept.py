"""The acceptance protocol (`lr collect --mode accept`, lrreal/scheduler/accept.py) on the
deterministic fake engines: exact judged/accepted counts for a known pattern of wrong draft
steps, the target's own text as output, valid records, budgets, failures, and the summary's 95%
Wilson interval (scipy). The real-engine run is in test_engine_real.py."""
from __future__ import annotations

import asyncio
import json

import pytest
from scipy.stats import binomtest

from harness.fake_engine import GSM8K_SCRIPT, MARKER, ExactVerifier, FakeEngine, tokenize
from lrcore.modes import DRAFT_MODES, MODES
from lrreal import collect as collect_mod
from lrreal import summary as summary_mod
from lrreal.scheduler import Problem, SchedulerConfig, run_problem

SCRIPT = [f"Step {i}: compute part {i} of the answer." for i in range(6)] + ["The answer is \\boxed{42}."]
PROMPT = "Question: what is six times seven?\n" + MARKER
FULL = "\n\n".join(SCRIPT)
FULL_TOKENS = len(tokenize(FULL)) + 1  # + EOS


def engines(wrong_steps=(), draft_tok=0.0005, target_tok=0.002):
    target = FakeEngine("target", SCRIPT, per_token_s=target_tok)
    draft = FakeEngine("draft", SCRIPT, per_token_s=draft_tok,
                       wrong=lambda step, seed: step in wrong_steps)
    return target, draft


def run(cfg, target, draft=None, verifier=None):
    return asyncio.run(run_problem(cfg, Problem("p1", 0, PROMPT), target, draft,
                                   verifier or ExactVerifier()))


def validate(res, mode="accept"):
    """The result must form a valid trace record (schema + cross-field rules)."""
    from lrcore.traces import validate_record

    rec = {"schema_version": 1, "run": {"flags": {"mode": mode}, "models": {}, "vllm_version": None,
                                        "hardware": {}, "seeds": {}},
           "mode": mode, "problem_id": "p1", "sample": 0, "wall_time_s": max(res.wall_time_s, 1e-6),
           "output_tokens": res.output_tokens, "correct": None, "steps": res.steps,
           "engine_stats": {}, "sd": None, "step_acceptance": res.step_acceptance}
    return validate_record(rec)


def judged_steps(res):
    return [s for s in res.steps if s["draft"] is not None]


def test_accept_is_a_draft_mode():
    assert "accept" in MODES and "accept" in DRAFT_MODES
    collect_spec = collect_mod.CollectSpec(mode="accept", limit=1, out=None).validate()
    assert collect_spec.scheduler_config().mode == "accept"
    with pytest.raises(ValueError, match="draft engine and a verifier"):
        run(SchedulerConfig(mode="accept"), engines()[0])


@pytest.mark.parametrize("wrong", [(), (2, 4), (1, 2, 3, 4, 5, 6), (0, 3)])
def test_counts_follow_the_wrong_steps_and_the_output_is_the_target_s(wrong):
    """Step 0 follows the chat prompt (no step boundary): the target writes it alone. Steps 1-6
    are each judged once; exactly the steps the draft writes wrong are rejected (step 0's draft
    is never asked for, so a wrong step 0 changes nothing)."""
    target, draft = engines(wrong_steps=set(wrong))
    res = run(SchedulerConfig(mode="accept", max_tokens=500), target, draft)
    ar_target, _ = engines()
    ar = run(SchedulerConfig(mode="ar", max_tokens=500), ar_target)
    assert res.text == ar.text == FULL and res.finish_reason == "eos"
    assert res.output_tokens == ar.output_tokens == FULL_TOKENS
    assert [s["text"] for s in res.steps] == [s["text"] for s in ar.steps]
    n_wrong = len(set(wrong) & set(range(1, len(SCRIPT))))
    judged = len(SCRIPT) - 1
    acc = res.step_acceptance
    assert (acc["proposed"], acc["accepted"]) == (judged, judged - n_wrong)
    assert acc["by_depth"] == {"1": [judged, judged - n_wrong]}
    assert acc.get("reject_reasons", {}) == ({"verifier": n_wrong} if n_wrong else {})
    # every committed step is the target's; the first one unjudged, the others judged at depth 1
    assert all(s["source"] == "target" for s in res.steps)
    first = res.steps[0]
    assert first["depth"] == 0 and first["draft"] is None and first["verify"] is None
    assert first["speculation"] == "none"
    for i, s in enumerate(res.steps[1:], start=1):
        assert s["depth"] == 1 and s["draft"] is not None and s["target"] is not None
        assert s["verify"]["verdict"] is (i not in wrong), i
        assert "speculation" not in s
    assert len(judged_steps(res)) == acc["proposed"]
    # one draft request per judged step, from the same context and with the same budget as the
    # target's request for that step
    assert len(draft.requests) == judged and len(target.requests) == len(SCRIPT)
    for d in draft.requests:
        twin = [t for t in target.requests if t.prompt == d.prompt]
        assert len(twin) == 1 and twin[0].max_tokens == d.max_tokens and twin[0].stop == d.stop
        assert d.prompt.endswith("\n\n")
    validate(res)


def test_target_and_draft_steps_run_side_by_side():
    target, draft = engines(draft_tok=0.001, target_tok=0.002)
    res = run(SchedulerConfig(mode="accept", max_tokens=500), target, draft)
    for s in judged_steps(res):
        d, t = s["draft"], s["target"]
        assert d["start"] < t["end"] and t["start"] < d["end"]       # they overlap
        assert s["verify"]["start"] >= max(d["end"], t["end"]) - 1e-6  # judged after both


def test_a_true_verdict_on_a_target_step_is_valid_only_in_accept_records():
    from lrcore.traces import TraceError

    target, draft = engines()
    res = run(SchedulerConfig(mode="accept", max_tokens=500), target, draft)
    assert any(s["verify"] and s["verify"]["verdict"] is True for s in res.steps)
    validate(res, "accept")
    with pytest.raises(TraceError, match="must be the draft"):
        validate(res, "lr")


@pytest.mark.parametrize("budget", [1, 7, 9, 23, 40])
def test_budget_truncates_exactly(budget):
    target, draft = engines(wrong_steps={3})
    res = run(SchedulerConfig(mode="accept", max_tokens=budget), target, draft)
    assert res.output_tokens == budget < FULL_TOKENS and res.finish_reason == "budget"
    assert FULL.startswith(res.text)
    # no request ever asked for more than the budget left on the committed path
    used = 0
    for s in res.steps:
        assert s["tokens"] <= budget - used
        used += s["tokens"]
    assert all(r.max_tokens <= budget for r in target.requests + draft.requests)
    assert res.step_acceptance["proposed"] == len(judged_steps(res)) == len(draft.requests)
    validate(res)


def test_boundary_rule_off_judges_the_first_step_too():
    target, draft = engines(wrong_steps={0})
    res = run(SchedulerConfig(mode="accept", max_tokens=500, boundary_rule=False), target, draft)
    assert res.text == FULL
    acc = res.step_acceptance
    assert (acc["proposed"], acc["accepted"]) == (len(SCRIPT), len(SCRIPT) - 1)
    assert res.steps[0]["verify"]["verdict"] is False
    validate(res)


def test_steps_cut_by_max_step_tokens_are_not_judged_after():
    """A step cut at --max-step-tokens does not end on a boundary: the next one is the target's
    alone (speculation "none"), like the first step after the chat prompt."""
    target, draft = engines()
    res = run(SchedulerConfig(mode="accept", max_tokens=500, max_step_tokens=5), target, draft)
    assert res.text == FULL
    assert all(s["tokens"] <= 5 for s in res.steps)
    assert all(r.prompt.endswith("\n\n") for r in draft.requests)
    unjudged = [s for s in res.steps if s["draft"] is None]
    assert unjudged and all(s["speculation"] == "none" and s["depth"] == 0 for s in unjudged)
    assert res.step_acceptance["proposed"] == len(judged_steps(res)) == len(draft.requests)
    validate(res)


def test_verifier_failure_is_a_recorded_rejection():
    class Broken:
        async def verify(self, t, d):
            raise ConnectionError("judge down")

    target, draft = engines()
    res = run(SchedulerConfig(mode="accept", max_tokens=500), target, draft, Broken())
    assert res.text == FULL and res.finish_reason == "eos"
    acc = res.step_acceptance
    assert acc["accepted"] == 0 and acc["proposed"] == len(SCRIPT) - 1
    assert acc["reject_reasons"] == {"verifier": len(SCRIPT) - 1}
    for s in judged_steps(res):
        assert s["verify"]["verdict"] is False and "judge down" in s["verify"]["error"]
    validate(res)


def test_an_engine_error_cancels_the_other_step_and_propagates():
    target, draft = engines(draft_tok=0.005)
    generate = target.generate

    async def failing(req, progress=None):
        if len(target.requests) >= 2:   # the third step: a judged one, the draft is running
            target.requests.append(req)
            await asyncio.sleep(0.002)
            raise RuntimeError("engine died")
        return await generate(req, progress)

    target.generate = failing

    async def main():
        with pytest.raises(RuntimeError, match="engine died"):
            await run_problem(SchedulerConfig(mode="accept", max_tokens=500),
                              Problem("p1", 0, PROMPT), target, draft, ExactVerifier())
        return draft.active, list(draft.aborted)

    active, aborted = asyncio.run(main())
    assert active == 0 and len(aborted) == 1   # cancelled by the scheduler, not left running


# ------------------------------------------------------------------ lr collect --mode accept

@pytest.fixture
def fake_collect(fake_collector):
    # the draft writes GSM8K_SCRIPT's step 2 wrong: per problem steps 1-3 are judged, 2 accepted
    return fake_collector(0.001, 0.0002, wrong=lambda step, seed: step == 2)


def spec(out, **kw):
    return collect_mod.CollectSpec(**(dict(mode="accept", dataset="gsm8k", limit=3, max_tokens=200,
                                           out=str(out), probe=False) | kw))


def test_collect_accept_records_counts_text_and_summary_interval(fake_collect):
    from lrcore.traces import read_traces

    out = fake_collect
    s = collect_mod.collect(spec(out))
    assert (s.written, s.failed) == (3, [])
    s = collect_mod.collect(spec(out, mode="ar", resume=True))
    assert s.written == 3
    recs = read_traces(out)                        # validated on read: schema + cross-field rules
    acc = {r["problem_id"]: r for r in recs if r["mode"] == "accept"}
    ar = {r["problem_id"]: r for r in recs if r["mode"] == "ar"}
    assert set(acc) == set(ar) == {"gsm8k/0", "gsm8k/1", "gsm8k/2"}
    judged_per_problem = len(GSM8K_SCRIPT) - 1
    for pid, r in acc.items():
        assert r["run"]["flags"]["mode"] == "accept" and r["run"]["models"]["draft"]
        assert r["output_text"] == ar[pid]["output_text"] and r["correct"] == ar[pid]["correct"]
        assert r["output_tokens"] == ar[pid]["output_tokens"]
        sa = r["step_acceptance"]
        assert (sa["proposed"], sa["accepted"]) == (judged_per_problem, judged_per_problem - 1)
        assert sa["proposed"] == sum(1 for st in r["steps"] if st["draft"] is not None)

    rows = {row["mode"]: row for row in summary_mod.summarize(recs)}
    row = rows["accept"]
    n, k = 3 * judged_per_problem, 3 * (judged_per_problem - 1)
    assert row["steps_proposed"] == n and row["step_acceptance"] == pytest.approx(k / n)
    ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    lo, hi = row["step_acceptance_ci95"]
    assert (lo, hi) == pytest.approx((ci.low, ci.high))
    assert lo <= k / n <= hi
    assert row["speedup_vs_ar"] is None            # a measurement, not a way to decode
    [group] = row["step_acceptance_by_verifier_dataset"]
    assert group["verifier"] == "exact" and group["dataset"] == "gsm8k"
    assert (group["judged"], group["accepted"], group["records"]) == (n, k, 3)
    assert group["ci95"] == pytest.approx([ci.low, ci.high])
    assert rows["ar"]["step_acceptance_ci95"] is None
    assert rows["ar"]["step_acceptance_by_verifier_dataset"] is None


def test_collect_cli_json_and_table_report_the_interval(fake_collect, run_lr, capsys):
    from lrreal.collect_cli import _print_summary

    out = fake_collect
    code, stdout, err = run_lr("collect", "--mode", "accept", "--limit", "2", "--max-tokens", "200",
                               "--no-probe", "--out", out, "--json")
    assert code == 0, err
    res = json.loads(stdout)
    [row] = res["summary"]
    assert row["mode"] == "accept" and row["steps_proposed"] == 6
    ci = binomtest(4, 6).proportion_ci(confidence_level=0.95, method="wilson")
    assert row["step_acceptance_ci95"] == pytest.approx([ci.low, ci.high])
    assert row["step_acceptance_by_verifier_dataset"][0]["judged"] == 6

    _print_summary(res)
    text = capsys.readouterr().out
    assert "step acceptance per judged draft" in text
    assert f"exact, gsm8k: 0.667 [{ci.low:.3f}, {ci.high:.3f}], 4/6 judged" in text


def test_wilson_interval_edges_come_from_scipy():
    from lrcore.acceptance import binomial_ci, estimate, protocol_acceptance

    assert binomial_ci(0, 0) is None and estimate(0, 0)["rate"] is None
    for k, n in ((0, 5), (5, 5), (3, 10), (63, 100)):
        lo, hi = binomial_ci(k, n)
        ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
        assert (lo, hi) == pytest.approx((ci.low, ci.high))
        assert -1e-12 <= lo <= k / n + 1e-12 and k / n - 1e-12 <= hi <= 1 + 1e-12
    exact = binomtest(3, 10).proportion_ci(confidence_level=0.95, method="exact")
    assert binomial_ci(3, 10, method="exact") == pytest.approx((exact.low, exact.high))
    assert protocol_acceptance([{"mode": "lr", "step_acceptance": {"proposed": 3, "accepted": 1}}]) is None
