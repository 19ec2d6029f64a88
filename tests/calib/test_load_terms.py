"""Terms the load replay missed: prompts in the prefix cache, and the relaunch gap measured from
the step's commit (not from an eager verdict that came in before its parent's)."""
import json
from pathlib import Path

import pytest

from lrsim.calib import overheads as oh
from lrsim.sim.traces import TraceWorkload, prompt_cached
from lrsim.sim.workload import Synthetic

LOAD = Path(__file__).resolve().parents[2] / "traces" / "load" / "gsm8k"


def _rec(first_pass, prompt=109):
    return {"prompt_tokens": prompt, "engine_stats": {"target": {"forward_passes": [first_pass]}}}


def test_cached_prompt_from_the_first_pass():
    alone = {"batch_size": 1, "prefill_tokens": 20, "prefill_requests": 1, "decode_requests": 0}
    assert prompt_cached(_rec(alone)) == 89
    assert prompt_cached(_rec({"batch_size": 1, "decode_requests": 1})) is None
    assert prompt_cached({"prompt_tokens": 50}) is None


def test_cached_prompt_is_context_but_not_prefill():
    (req,) = Synthetic(prompt_tokens=100, prompt_cached=70).requests()
    assert (req.prompt_tokens, req.prompt_cached, req.prompt_uncached) == (100, 70, 30)
    (req,) = Synthetic(prompt_tokens=10, prompt_cached=70).requests()
    assert req.prompt_uncached == 0


def _step(source, target, verify, draft=None, tokens=10):
    s = {"source": source, "tokens": tokens, "target": {"start": target[0], "end": target[1]},
         "verify": {"start": verify[0], "end": verify[1]}}
    if draft:
        s["draft"] = {"start": draft[0], "end": draft[1]}
    return s


def test_relaunch_gap_counts_from_the_commit():
    """Step 1 (a draft) is judged at 35.9 s; its child step 2 (a target step) got its verdict at
    25.9 s but commits only with its parent. The next launch at 35.9 s is no 10 s overhead."""
    steps = [_step("target", (0.0, 8.0), (8.0, 8.0)),
             _step("draft", (8.0, 35.1), (35.1, 35.86), draft=(8.0, 20.5)),
             _step("target", (20.5, 25.5), (25.5, 25.87), draft=(20.5, 22.0)),
             _step("draft", (35.861, 62.7), (62.7, 62.9), draft=(35.861, 46.0))]
    gaps = oh.scheduling_gaps([{"steps": steps, "mode": "lr"}])
    assert gaps["relaunch"]["n"] == 2
    assert gaps["relaunch"]["mean_s"] == pytest.approx(0.0005, abs=1e-3)


def test_cached_prompt_of_a_block():
    """N requests start together: the mean prefill of the first N prompt prefills."""
    passes = [{"batch_size": 2, "prefill_tokens": 19, "prefill_requests": 2},
              {"batch_size": 4, "prefill_tokens": 21, "prefill_requests": 2, "decode_requests": 2},
              {"batch_size": 4, "prefill_tokens": 0, "prefill_requests": 0, "decode_requests": 4}]
    rec = {"prompt_tokens": 79, "load": {"concurrency": 4},
           "engine_stats": {"target": {"forward_passes": passes}}}
    assert prompt_cached(rec) == 69
    rec["load"]["concurrency"] = 8        # the passes never prefilled 8 prompts
    assert prompt_cached(rec) is None


def test_cached_prompt_measured_by_the_engine_wins():
    """A first target span with vLLM's own count (num_cached_tokens) is exact: no inference from
    the passes, which here would say 89."""
    alone = {"batch_size": 1, "prefill_tokens": 20, "prefill_requests": 1, "decode_requests": 0}
    rec = _rec(alone) | {"steps": [{"tokens": 5, "target": {"start": 0, "end": 1, "tokens": 5,
                                                             "prompt_tokens": 112, "cached_tokens": 96}}]}
    assert prompt_cached(rec) == 96
    del rec["steps"][0]["target"]["cached_tokens"]      # older records: inferred as before
    assert prompt_cached(rec) == 89


def test_spans_take_context_and_prefill_from_the_engine_counts():
    """The rule of overheads.spans says a target step after a draft prefills that draft step (10
    tokens); the engine counted a 130-token prompt of which 112 were cached: 18 prefilled (the
    chat template's turn markers, a block boundary). Spans without the counts keep the rule."""
    steps = [_step("target", (0.0, 1.0), (1.0, 1.0)),
             _step("draft", (1.0, 2.0), (2.0, 2.1), draft=(1.0, 1.5)),
             _step("target", (2.1, 3.0), (3.0, 3.1), draft=(2.1, 2.5))]
    rec = {"mode": "lr", "prompt_tokens": 100, "steps": steps}
    ruled = {(s.engine, s.start): (s.ctx, s.prefill) for s in oh.spans(rec)}
    assert ruled[("target", 2.1)] == (120, 10)
    steps[2]["target"] |= {"prompt_tokens": 130, "cached_tokens": 112}
    counted = {(s.engine, s.start): (s.ctx, s.prefill) for s in oh.spans(rec)}
    assert counted[("target", 2.1)] == (130, 18)
    assert {k: v for k, v in counted.items() if k != ("target", 2.1)} == \
        {k: v for k, v in ruled.items() if k != ("target", 2.1)}


@pytest.mark.skipif(not (LOAD / "c4" / "ar.jsonl").exists(), reason="no load corpus")
def test_recorded_blocks_start_from_cached_prompts():
    """The load corpus runs every configuration on the same problems with the same engines: at
    4 in flight most blocks of AR find their prompts in the prefix cache but for the last
    partial block (a block whose problems the engine had not seen yet prefills them whole)."""
    recs = [json.loads(x) for x in (LOAD / "c4" / "ar.jsonl").read_text().splitlines() if x]
    blocks = {}
    for rec, req in zip(recs, TraceWorkload(recs).requests()):
        blocks.setdefault(rec["run"]["flags"]["load_round"], []).append(req.prompt_uncached)
    warm = [b for b in blocks.values() if max(b) <= 40]
    assert len(warm) >= len(blocks) / 2


def test_synthetic_boundary_rule_for_the_prompt():
    (req,) = Synthetic().requests()
    assert Synthetic().can_draft(req, 0) and Synthetic().can_draft(req, 3)
    wl = Synthetic(draft_first=False)
    assert not wl.can_draft(req, 0) and wl.can_draft(req, 1)


@pytest.mark.skipif(not (LOAD / "c1" / "lr-d2.jsonl").exists(), reason="no load corpus")
def test_profiles_learn_that_the_prompt_is_never_drafted_after():
    """The real scheduler never drafts after the chat prompt; a profile's synthetic workload
    follows it, and then speculates on one step fewer per request (under load, less wasted
    target work). An lr-async simulation shows it in its drafted steps."""
    from lrsim.calib.profile import Profile, validate_doc
    from lrsim.calib.calibrate import calibrate
    from lrsim.sim.runner import run

    prof = Profile(validate_doc(calibrate([str(LOAD / "c1" / f) for f in ("ar.jsonl", "lr-d2.jsonl")],
                                          select_placement=False)))
    assert prof.doc["steps"]["first_step_drafted"] == 0.0
    wl = prof.workload(requests=4, seed=3)
    assert wl.draft_first is False
    s_rule, _ = run(prof.to_config("lr", workload=wl, depth=2))
    s_free, _ = run(prof.to_config("lr", workload=Synthetic(**{**wl.__dict__, "draft_first": True}), depth=2))
    assert s_rule["output_tokens"] == s_free["output_tokens"]
    assert s_rule["proposed_steps"] < s_free["proposed_steps"]


def test_synthetic_requests_fill_an_output_budget():
    """A run that stops on --max-tokens emits exactly the budget: the synthetic request draws
    steps until it reaches it and cuts the last one (the load corpus: 192 tokens, ~4.5 steps)."""
    w = Synthetic(n_requests=20, max_tokens=192, step_mean=41, step_sigma=0.6, seed=3)
    reqs = w.requests()
    assert all(r.output_tokens == 192 for r in reqs)
    assert all(1 <= n <= 100 for r in reqs for n in r.step_tokens)
    assert reqs[0].step_tokens == Synthetic(n_requests=20, max_tokens=192, step_mean=41,
                                            step_sigma=0.6, seed=3).requests()[0].step_tokens
    assert len({tuple(r.step_tokens) for r in reqs}) > 10           # lengths still vary
    (eq,) = Synthetic(max_tokens=100, step_mean=40, step_sigma=0).requests()
    assert eq.step_tokens == [40, 40, 20]
    with pytest.raises(Exception, match="max_tokens"):
        Synthetic(max_tokens=0)


def _budget_rec(finish, cap=192, tokens=(120, 72)):
    return {"mode": "ar", "finish_reason": finish, "run": {"flags": {"max_tokens": cap}},
            "prompt_tokens": 100, "steps": [{"tokens": n, "source": "target"} for n in tokens]}


def test_profiles_learn_the_output_budget_most_records_stopped_on():
    hit = oh.step_lengths([_budget_rec("budget"), _budget_rec("budget"), _budget_rec("stop")])
    assert (hit["budget_tokens"], hit["budget_share"]) == (192, pytest.approx(2 / 3))
    half = oh.step_lengths([_budget_rec("budget"), _budget_rec("stop")])
    assert "budget_tokens" not in half                 # not most: lengths are the steps' own
    assert "budget_tokens" not in oh.step_lengths([_budget_rec("budget", cap=None)])


@pytest.mark.skipif(not (LOAD / "c1" / "ar.jsonl").exists(), reason="no load corpus")
def test_planned_requests_are_as_long_as_the_recorded_ones():
    """Calibrated on the load corpus (every record stopped on 192 tokens), the profile's workload
    is 192 tokens a request, not steps_per_request x mean step (~164: requests 15% short made the
    plan's AR 9% faster than the replay's at 8 in flight); --steps still means steps."""
    from lrsim.calib.calibrate import calibrate
    from lrsim.calib.profile import Profile, validate_doc

    paths = [str(LOAD / "c1" / f"{c}.jsonl") for c in ("ar", "lr-d2")]
    prof = Profile(validate_doc(calibrate(paths, configs={"ar", "lr-d2"}, select_placement=False)))
    assert prof.doc["steps"]["budget_tokens"] == 192
    assert {r.output_tokens for r in prof.workload(requests=4).requests()} == {192}
    assert all(r.steps == 3 for r in prof.workload(requests=2, steps=3).requests())
