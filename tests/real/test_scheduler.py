"""Scheduler logic on the deterministic fake engine (no models): every mode, every path."""
from __future__ import annotations

import asyncio

import pytest

from harness.fake_engine import MARKER, ExactVerifier, FakeEngine, tokenize
from lrreal.scheduler import Problem, SchedulerConfig, derive_seed, run_problem
from lrreal.scheduler.record import StepLog

SCRIPT = [f"Step {i}: compute part {i} of the answer." for i in range(6)] + ["The answer is \\boxed{42}."]
PROMPT = "Question: what is six times seven?\n" + MARKER
FULL = "\n\n".join(SCRIPT)
FULL_TOKENS = len(tokenize(FULL)) + 1  # + EOS


def engines(wrong_steps=(), draft_tok=0.0005, target_tok=0.002, wrong=None):
    target = FakeEngine("target", SCRIPT, per_token_s=target_tok)
    draft = FakeEngine("draft", SCRIPT, per_token_s=draft_tok,
                       wrong=wrong or (lambda step, seed: step in wrong_steps))
    return target, draft


def run(cfg, target, draft=None, verifier=None, problem=None):
    problem = problem or Problem("p1", 0, PROMPT)
    return asyncio.run(run_problem(cfg, problem, target, draft, verifier or ExactVerifier()))


def validate(res, mode):
    """The result must form a valid trace record (schema + cross-field rules)."""
    from lrcore.traces import validate_record

    rec = {"schema_version": 1, "run": {"flags": {}, "models": {}, "vllm_version": None,
                                        "hardware": {}, "seeds": {}},
           "mode": mode, "problem_id": "p1", "sample": 0, "wall_time_s": res.wall_time_s,
           "output_tokens": res.output_tokens, "correct": None, "steps": res.steps,
           "engine_stats": {}, "sd": None, "step_acceptance": res.step_acceptance}
    validate_record(rec)


def all_cancelled(res):
    return [c for s in res.steps for c in s["cancelled"]]


@pytest.mark.parametrize("mode", ["lr", "lr-sync"])
def test_all_accepted_reproduces_target_text(mode):
    target, draft = engines()
    res = run(SchedulerConfig(mode=mode, depth=3, max_tokens=500, boundary_rule=True), target, draft)
    assert res.text == FULL
    assert res.finish_reason == "eos"
    assert res.output_tokens == FULL_TOKENS
    # The first step follows the prompt (no boundary): the target writes it alone.
    assert res.steps[0]["source"] == "target" and res.steps[0]["verify"] is None
    assert any(s["source"] == "draft" for s in res.steps)
    acc = res.step_acceptance
    assert acc["proposed"] > 0 and acc["accepted"] == acc["proposed"]
    validate(res, mode)


def test_ar_segments_steps_and_counts_tokens_exactly():
    target, _ = engines()
    res = run(SchedulerConfig(mode="ar", max_tokens=500), target)
    assert res.text == FULL and res.finish_reason == "eos"
    assert [s["text"] for s in res.steps] == [s + "\n\n" for s in SCRIPT[:-1]] + [SCRIPT[-1]]
    assert res.output_tokens == FULL_TOKENS
    assert len(target.requests) == 1 and target.requests[0].stop == ()
    validate(res, "ar")


@pytest.mark.parametrize("mode", ["lr", "lr-sync"])
def test_rejection_commits_target_step(mode):
    target, draft = engines(wrong_steps={2, 4})
    res = run(SchedulerConfig(mode=mode, depth=2, max_tokens=500), target, draft)
    assert res.text == FULL  # the target's text wins wherever the draft was wrong
    rejected = [s for s in res.steps if s["verify"] and s["verify"]["verdict"] is False]
    assert rejected and all(s["source"] == "target" for s in rejected)
    # each rejection was judged: the draft compared is recorded and differs from the committed text
    assert all(s["draft"] is not None and s["verify"]["method"] == "exact" for s in rejected)
    acc = res.step_acceptance
    assert acc["accepted"] < acc["proposed"]
    assert acc["reject_reasons"].get("verifier", 0) >= 2
    validate(res, mode)


def test_rejection_cancels_speculation_and_records_it():
    # Deep tree, wrong step 2: drafts below the wrong one are running when it is rejected.
    target, draft = engines(wrong_steps={2}, draft_tok=0.0005, target_tok=0.004)
    res = run(SchedulerConfig(mode="lr", depth=4, max_tokens=500), target, draft)
    assert res.text == FULL
    cancelled = all_cancelled(res)
    assert cancelled, "speculation below a rejected draft must be cancelled and recorded"
    assert {c["kind"] for c in cancelled} <= {"draft", "target"}
    aborted = set(draft.aborted) | set(target.aborted)
    assert len(aborted) == len(cancelled)  # every abort is recorded, none silently dropped
    validate(res, "lr")


def test_draft_not_ready_is_a_recorded_rejection():
    # A draft much slower than the target: the target step finishes first every time.
    target, draft = engines(draft_tok=0.01, target_tok=0.0005)
    res = run(SchedulerConfig(mode="lr", depth=2, max_tokens=500), target, draft)
    assert res.text == FULL
    not_ready = [s for s in res.steps if s["verify"] and s["verify"]["method"] == "not-ready"]
    assert not_ready and all(s["source"] == "target" and s["verify"]["verdict"] is False
                             for s in not_ready)
    assert res.step_acceptance["reject_reasons"]["not-ready"] == len(not_ready)
    assert any(c["kind"] == "draft" for c in all_cancelled(res))
    validate(res, "lr")


@pytest.mark.parametrize("mode", ["ar", "lr", "lr-sync"])
@pytest.mark.parametrize("budget", [1, 7, 23, 40])
def test_budget_truncates_exactly(mode, budget):
    target, draft = engines(wrong_steps={3})
    res = run(SchedulerConfig(mode=mode, depth=3, max_tokens=budget), target, draft)
    assert res.output_tokens == budget < FULL_TOKENS
    assert res.finish_reason == "budget"
    assert FULL.startswith(res.text)
    validate(res, mode)


@pytest.mark.parametrize("mode", ["lr", "lr-sync"])
def test_eos_inside_accepted_draft_ends_output_without_tail(mode):
    target, draft = engines()
    res = run(SchedulerConfig(mode=mode, depth=4, max_tokens=10_000), target, draft)
    assert res.text == FULL and res.finish_reason == "eos"
    assert res.steps[-1]["source"] == "draft"  # the draft wrote the final step incl. EOS
    assert res.output_tokens == FULL_TOKENS


def test_max_step_tokens_caps_steps_and_boundary_rule_blocks_drafting():
    target, draft = engines()
    res = run(SchedulerConfig(mode="lr", depth=2, max_step_tokens=3, max_tokens=500), target, draft)
    assert res.text == FULL
    assert all(s["tokens"] <= 3 for s in res.steps)
    # Step texts cut mid-sentence never end on a boundary: drafting only after real "\n\n".
    steps = [r for r in draft.requests if "/prefill/" not in r.request_id]
    assert steps
    for r in steps:
        assert r.prompt.endswith("\n\n")
    # The idle draft prefilled the prompt (1 token) during the first, target-only step.
    prefill = [r for r in draft.requests if "/prefill/" in r.request_id]
    assert len(prefill) == 1 and prefill[0].max_tokens == 1 and prefill[0].prompt == PROMPT
    validate(res, "lr")


def test_boundary_rule_off_drafts_from_the_prompt():
    target, draft = engines()
    res = run(SchedulerConfig(mode="lr", depth=2, max_tokens=500, boundary_rule=False), target, draft)
    assert res.text == FULL
    assert res.steps[0]["source"] == "draft"  # the very first step can now be speculated


def test_width_two_siblings_get_distinct_seeds_and_one_wins():
    # Sampling: sibling 0 is wrong at step 3 when its seed is even; seeds are derived per path.
    wrong = lambda step, seed: step == 3 and seed is not None and seed % 2 == 0
    target, draft = engines(wrong=wrong)
    cfg = SchedulerConfig(mode="lr", depth=2, width=2, max_tokens=500, temperature=0.6, seed=7)
    res = run(cfg, target, draft)
    assert res.text == FULL
    seeds = [r.seed for r in draft.requests]
    assert None not in seeds and len(set(seeds)) == len(seeds)
    multi = [s for s in res.steps if "judged" in s]
    assert multi and all(len(s["judged"]) <= 2 for s in multi)
    validate(res, "lr")


def test_seed_derivation_is_deterministic_and_distinct():
    a = derive_seed(1, "gsm8k/3", 0, "s2.0.1", "draft")
    assert a == derive_seed(1, "gsm8k/3", 0, "s2.0.1", "draft")
    others = {derive_seed(1, "gsm8k/3", 0, "s2.0.0", "draft"), derive_seed(1, "gsm8k/3", 1, "s2.0.1", "draft"),
              derive_seed(2, "gsm8k/3", 0, "s2.0.1", "draft"), derive_seed(1, "gsm8k/3", 0, "s2.0.1", "target"),
              derive_seed(1, "gsm8k/4", 0, "s2.0.1", "draft")}
    assert a not in others and len(others) == 5
    assert all(0 <= s < 2**31 for s in others | {a})


def test_sampled_runs_are_reproducible():
    wrong = lambda step, seed: seed is not None and seed % 3 == 0
    cfg = SchedulerConfig(mode="lr", depth=2, max_tokens=500, temperature=0.6, seed=11)
    r1 = run(cfg, *engines(wrong=wrong))
    t2, d2 = engines(wrong=wrong)
    r2 = run(cfg, t2, d2)
    assert [s["source"] for s in r1.steps] == [s["source"] for s in r2.steps]
    assert r1.text == r2.text


def test_lr_sync_cycle_structure():
    # gamma = 2, wrong step 4: cycles commit [t0], [d1, d2, bonus t3], [t4 replaces d4] ...
    target, draft = engines(wrong_steps={4})
    res = run(SchedulerConfig(mode="lr-sync", depth=2, max_tokens=500), target, draft)
    assert res.text == FULL
    srcs = [s["source"] for s in res.steps]
    assert srcs[0] == "target" and srcs[1:3] == ["draft", "draft"]
    assert res.steps[3]["source"] == "target" and res.steps[3]["verify"] is None  # bonus step
    assert res.steps[4]["source"] == "target" and res.steps[4]["verify"]["verdict"] is False
    # The draft is sequential within a cycle; the g+1 target steps of a cycle run concurrently.
    assert target.max_active >= 2
    validate(res, "lr-sync")


def test_verifier_exception_is_a_recorded_rejection():
    class Broken:
        async def verify(self, t, d):
            raise RuntimeError("judge down")

    target, draft = engines()
    res = run(SchedulerConfig(mode="lr", depth=2, max_tokens=500), target, draft, Broken())
    assert res.text == FULL
    errs = [s for s in res.steps if s["verify"] and s["verify"]["error"]]
    assert errs and all("judge down" in s["verify"]["error"] for s in errs)
    assert res.step_acceptance["accepted"] == 0


def test_event_driven_no_polling_with_slow_verifier():
    # A slow verifier must not stall the tree: drafts/targets keep being submitted meanwhile.
    target, draft = engines()
    res = run(SchedulerConfig(mode="lr", depth=3, max_tokens=500), target, draft,
              ExactVerifier(latency_s=0.02))
    assert res.text == FULL


def test_steplog_relative_times_never_negative():
    log = StepLog(t0=100.0)
    assert log.rel(99.0) == 0.0 and log.rel(101.5) == 1.5


def test_steplog_spans_carry_the_prefix_cache_hit_when_the_engine_says_it():
    from lrreal.engine import GenResult

    log = StepLog(t0=100.0)
    seen = GenResult("x", 3, "stop", 101.0, 102.0, prompt_tokens=120, cached_tokens=96)
    assert log.span(seen) == {"start": 1.0, "end": 2.0, "tokens": 3, "prompt_tokens": 120,
                              "cached_tokens": 96, "finish": "stop"}
    assert log.span(GenResult("x", 3, "eos", 101.0, 102.0)) == {"start": 1.0, "end": 2.0, "tokens": 3,
                                                                "finish": "eos"}
    # a cut of a streamed request that goes on (ar's steps but its last) has no finish
    assert log.span(GenResult("x", 3, "", 101.0, 102.0)) == {"start": 1.0, "end": 2.0, "tokens": 3}
    log.discarded("draft", seen, depth=2)
    assert log.pending_discarded == [{"kind": "draft", "start": 1.0, "end": 2.0, "tokens": 3,
                                      "prompt_tokens": 120, "cached_tokens": 96, "finish": "stop",
                                      "depth": 2}]


@pytest.mark.parametrize("mode", ["ar", "lr", "lr-sync"])
def test_each_engine_request_records_why_it_ended(mode):
    """Every draft and target span says why its engine request ended: a step cut at its stop
    string "stop", the answer's last step "eos"; ar's steps are cuts of one streamed request,
    so only its last step carries the request's finish."""
    target, draft = engines(wrong_steps=(3,))
    res = run(SchedulerConfig(mode=mode, depth=2, max_tokens=500), target, draft)
    validate(res, mode)
    spans = [s[k] for s in res.steps for k in ("draft", "target") if s[k]]
    if mode == "ar":
        assert [sp.get("finish") for sp in spans] == [None] * (len(spans) - 1) + ["eos"]
        return
    assert all(sp["finish"] in ("stop", "eos") for sp in spans), spans
    last = res.steps[-1][res.steps[-1]["source"]]
    assert last["finish"] == "eos"
    assert [s["target"]["finish"] for s in res.steps[:-1] if s["target"]] == \
        ["stop"] * sum(1 for s in res.steps[:-1] if s["target"])


@pytest.mark.parametrize("case", range(24))
def test_randomized_trees_always_yield_the_target_text(case):
    """Random wrong steps, speeds, depth, width, budgets: the committed text is always the
    target's own text (exact verifier), truncated exactly at the budget, and the record is valid."""
    import random

    rng = random.Random(case)
    wrong_steps = {i for i in range(len(SCRIPT)) if rng.random() < 0.4}
    wrong = lambda step, seed: step in wrong_steps or (seed is not None and seed % 5 == 0 and step % 2 == 1)
    target = FakeEngine("target", SCRIPT, per_token_s=rng.choice([0.0003, 0.001, 0.002]))
    draft = FakeEngine("draft", SCRIPT, per_token_s=rng.choice([0.0001, 0.0005, 0.002]), wrong=wrong)
    mode = rng.choice(["lr", "lr-sync"])
    budget = rng.choice([5, 17, 33, 500])
    cfg = SchedulerConfig(mode=mode, depth=rng.randint(1, 4), width=rng.randint(1, 3),
                          max_tokens=budget, max_step_tokens=rng.choice([4, 9, 100]),
                          boundary_rule=rng.random() < 0.7,
                          temperature=rng.choice([0.0, 0.7]), seed=case)
    res = run(cfg, target, draft)
    assert FULL.startswith(res.text)
    assert res.output_tokens == min(budget, FULL_TOKENS)
    assert res.finish_reason == ("eos" if budget >= FULL_TOKENS else "budget")
    validate(res, mode)
    assert target.active == 0 and draft.active == 0  # nothing left running


def test_each_cancelled_or_discarded_request_is_recorded_once():
    # Budget ends right after a rejection: the old root's killed subtree must not be re-recorded.
    for budget in (12, 20, 31):
        target, draft = engines(wrong_steps={1, 2, 3}, draft_tok=0.0005, target_tok=0.003)
        res = run(SchedulerConfig(mode="lr", depth=3, max_tokens=budget), target, draft)
        ids = draft.aborted + target.aborted
        assert len(ids) == len(set(ids)) == len(all_cancelled(res))
        discarded = [d for s in res.steps for d in s.get("discarded", [])]
        keys = [(d["kind"], d["start"], d["end"], d["tokens"]) for d in discarded]
        assert len(keys) == len(set(keys))
