"""lr-adaptive / lr+sd-adaptive on the deterministic fake engine: the Controller's choice steers
the lr-async tree (depth 0 = the target alone), the Estimator is fed, every decision is
recorded and schema-valid, and the text is the target's own under exact matching."""
from __future__ import annotations

import asyncio
import random

import pytest

from harness.fake_engine import MARKER, ExactVerifier, FakeEngine, run_virtual, tokenize
from lrcore.adaptive import AdaptiveConfig, Decision, Estimates
from lrcore.modes import ADAPTIVE_MODES, DRAFT_MODES, LR_MODES, MODES, SD_MODES
from lrreal.scheduler import Problem, SchedulerConfig, run_problem
from lrreal.scheduler import engine_load, lr_adaptive
from lrreal.scheduler.base import Run
from lrreal.scheduler.lr_adaptive import AdaptiveLookahead

SCRIPT = [f"Step {i}: compute part {i} of the answer." for i in range(6)] + ["The answer is \\boxed{42}."]
PROMPT = "Question: what is six times seven?\n" + MARKER
FULL = "\n\n".join(SCRIPT)
FULL_TOKENS = len(tokenize(FULL)) + 1  # + EOS
LONG = [f"Step {i}: add {i} to the running total." for i in range(40)] + ["Done: \\boxed{780}."]


def engines(script=SCRIPT, wrong=lambda step, seed: False, draft_tok=0.0005, target_tok=0.002):
    return (FakeEngine("target", script, per_token_s=target_tok),
            FakeEngine("draft", script, per_token_s=draft_tok, wrong=wrong))


def run_adaptive(cfg, target, draft, verifier=None, keep_clock=False) -> tuple:
    """(result, the scheduler) of one problem, so a test can look at its Estimator; on the fake
    engines' virtual clock (run_virtual; `keep_clock` for engines a previous run used)."""
    async def one():
        lr = AdaptiveLookahead(Run(cfg, Problem("p1", 0, PROMPT), target, draft,
                                   verifier or ExactVerifier()))
        return await lr.run_problem(), lr

    return run_virtual(one(), keep_clock)


def record(res, mode: str) -> dict:
    """The result as a trace record (what lr collect's build_record writes), validated."""
    from lrcore.traces import validate_record

    rec = {"schema_version": 1, "run": {"flags": {}, "models": {}, "vllm_version": None,
                                        "hardware": {}, "seeds": {}},
           "mode": mode, "problem_id": "p1", "sample": 0, "wall_time_s": res.wall_time_s,
           "output_tokens": res.output_tokens, "correct": None, "steps": res.steps,
           "engine_stats": {}, "sd": None, "step_acceptance": res.step_acceptance,
           "adaptive": res.extra["adaptive"]}
    return validate_record(rec)


def test_the_scheduler_reads_its_event_loops_clock():
    """lrreal.engine.monotonic is the running loop's time (time.monotonic() on asyncio's own
    loop and outside one), so run_virtual's fake engines cost exactly what they sleep, whatever
    else the machine runs; each run_virtual starts at the epoch, or goes on from the last (keep_clock)."""
    import time

    from lrreal.engine import monotonic

    async def nap(seconds):
        t0 = monotonic()
        await asyncio.sleep(seconds)
        return t0, monotonic() - t0

    wall = time.monotonic()
    (t0, slept), (t1, _) = run_virtual(nap(30.0)), run_virtual(nap(0.0), keep_clock=True)
    assert slept == pytest.approx(30.0, abs=1e-6) and time.monotonic() - wall < 10.0
    assert t1 >= t0 + 30.0 and run_virtual(nap(0.0))[0] == t0       # a fresh clock: the epoch
    (_, real) = asyncio.run(nap(0.01))
    assert 0.01 <= real < 5.0
    assert abs(monotonic() - time.monotonic()) < 1.0


def test_adaptive_modes_are_real_lr_modes():
    for m in ADAPTIVE_MODES:
        assert m in MODES and m in LR_MODES and m in DRAFT_MODES
        SchedulerConfig(mode=m)               # accepted, not "use one of ..."
    assert "lr+sd-adaptive" in SD_MODES and "lr-adaptive" not in SD_MODES


@pytest.mark.parametrize("mode", list(ADAPTIVE_MODES))
def test_exact_acceptance_reproduces_the_target_text_and_records_every_decision(mode):
    target, draft = engines()
    res = run_virtual(run_problem(SchedulerConfig(mode=mode, depth=3, max_tokens=500), Problem(
        "p1", 0, PROMPT), target, draft, ExactVerifier()))
    assert res.text == FULL and res.finish_reason == "eos" and res.output_tokens == FULL_TOKENS
    rec = record(res, mode)
    ad = rec["adaptive"]
    assert ad["config"]["max_depth"] == 3 and ad["config"]["k2s"] == [1]   # fake: no SD in engine
    # the neutral prior at this run's time scale: its ratios kept, its target step the first one
    prior, neutral = Estimates.from_dict(ad["prior"]), Estimates()
    assert prior.target_step_s < neutral.target_step_s
    assert prior.draft_step_s / prior.target_step_s == pytest.approx(
        neutral.draft_step_s / neutral.target_step_s)
    assert prior.verify_s / prior.target_step_s == pytest.approx(
        neutral.verify_s / neutral.target_step_s)
    assert prior.alpha_by_depth == neutral.alpha_by_depth and prior.step_tokens == neutral.step_tokens
    decisions = ad["decisions"]
    assert decisions and [d["index"] for d in decisions] == list(range(len(decisions)))
    assert decisions[0]["position"] == 0
    for d in decisions:
        entry = {k: v for k, v in d.items() if k != "position"}
        assert Decision.from_dict(entry).to_dict() == entry               # replayable
        assert 0 <= d["depth"] <= 3 and d["width"] == 1 and d["reason"]
    # every draft agreed: speculation ran and committed drafts
    assert any(s["source"] == "draft" for s in res.steps)


def test_the_estimator_is_fed_what_the_run_measured():
    target, draft = engines(target_tok=0.002, draft_tok=0.0005)
    res, lr = run_adaptive(SchedulerConfig(mode="lr-adaptive", depth=2, max_tokens=500),
                           target, draft)
    est = lr.est.snapshot()
    prior = Estimates()
    # every judged draft was accepted: depth-1 acceptance rose above the neutral 0.5
    assert res.step_acceptance["proposed"] > 0
    assert est.alpha(1) > prior.alpha(1)
    # fake steps take milliseconds (~8 tokens x 2 ms): the estimates left the prior's 1 s / 0.1 s
    assert 0 < est.target_step_s < prior.target_step_s and 0 < est.draft_step_s < prior.draft_step_s
    assert est.step_tokens != prior.step_tokens and est.load == 1.0
    assert est.verify_s < prior.verify_s                  # exact matching: ~0 s
    # the decisions saw the estimates as they were then: the first the prior, the last not
    first, last = lr.decisions[0]["estimates"], lr.decisions[-1]["estimates"]
    assert set(first.pop("alpha_by_depth")) == {0.5}
    assert first.pop("in_flight") == 1.0              # the count at the decision, not the prior's
    assert first == {k: v for k, v in prior.to_dict().items()
                     if k not in ("alpha_by_depth", "in_flight")}
    assert last["target_step_s"] != prior.target_step_s


def depth_zero_only(monkeypatch):
    monkeypatch.setattr(lr_adaptive, "adaptive_config",
                        lambda cfg, k2: AdaptiveConfig(max_depth=0, widths=(1,), k2s=(k2,)))


def test_depth_zero_is_plain_ar(monkeypatch):
    """A controller bounded to depth 0 never drafts: the target writes the answer in one request,
    as ar mode does, cut into the same steps; a decision is still made (and recorded) per step."""
    depth_zero_only(monkeypatch)
    target, draft = engines()
    res, lr = run_adaptive(SchedulerConfig(mode="lr-adaptive", depth=3, max_tokens=500),
                           target, draft)
    assert res.text == FULL and res.output_tokens == FULL_TOKENS and res.finish_reason == "eos"
    assert [s["text"] for s in res.steps] == [s + "\n\n" for s in SCRIPT[:-1]] + [SCRIPT[-1]]
    assert all(s["source"] == "target" and s["verify"] is None and s["draft"] is None
               and s.get("speculation") == "none" and not s["cancelled"] for s in res.steps)
    assert res.step_acceptance["proposed"] == 0
    assert len(target.requests) == 1 and target.requests[0].stop == ()      # one request
    # the draft engine only prefilled the prompt during the first step (lr_async's rule)
    assert all("/prefill/" in r.request_id for r in draft.requests)
    decisions = record(res, "lr-adaptive")["adaptive"]["decisions"]
    assert [d["position"] for d in decisions] == list(range(len(res.steps)))
    assert all(d["depth"] == 0 for d in decisions)
    assert lr.est.snapshot().target_step_s < Estimates().target_step_s     # the cuts were timed


def test_the_prompts_prefill_is_no_step_cost_nor_the_drafters(monkeypatch):
    """At depth 0 the stream's first cut waits for the prompt's prefill while the drafter
    prefills the prompt beside it (lr_async's rule): timed from its first token, the cut costs
    what the steps after it cost, and the drafter is not believed to slow the target. Timed whole,
    the Estimator believed a draft request beside a step cost the target several steps."""
    depth_zero_only(monkeypatch)
    target, draft = engines(script=LONG)
    target.prefill_s, draft.prefill_s = 0.2, 0.15          # ~10 steps' decode, each engine
    res, lr = run_adaptive(SchedulerConfig(mode="lr-adaptive", depth=2, max_tokens=4000),
                           target, draft)
    assert res.text == "\n\n".join(LONG)
    assert any("/prefill/" in r.request_id for r in draft.requests)     # it ran beside
    est = lr.est.snapshot()
    assert est.target_draft_s == 0.0
    _, plain = run_adaptive(SchedulerConfig(mode="lr-adaptive", depth=2, max_tokens=4000),
                            *engines(script=LONG))
    # no dearer than without the prefills (0.08 s when the wait was timed in, 4x)
    assert est.target_step_s <= 1.05 * plain.est.snapshot().target_step_s
    # the committed step keeps its whole time: only what the Estimator is told leaves the wait
    assert res.steps[0]["target"]["end"] - res.steps[0]["target"]["start"] > 0.2


@pytest.mark.parametrize("budget", [1, 7, 23, 40])
def test_depth_zero_truncates_the_budget_exactly(monkeypatch, budget):
    depth_zero_only(monkeypatch)
    target, draft = engines()
    res, _ = run_adaptive(SchedulerConfig(mode="lr-adaptive", max_tokens=budget), target, draft)
    assert res.output_tokens == budget and res.finish_reason == "budget"
    assert FULL.startswith(res.text)
    record(res, "lr-adaptive")


def test_leaving_depth_zero_cancels_the_stream_and_records_it(monkeypatch):
    """Depth 0, then 2 from the third step on: the stream is cancelled after two steps, what it
    wrote past them is recorded as cancelled, and the tree takes over with the same text."""
    class Script:
        def __init__(self, cfg):
            self.cfg, self.n = cfg, 0

        def decide(self, est):
            from lrcore.adaptive import Decision

            depth = 0 if self.n < 2 else 2
            self.n += 1
            return Decision(index=self.n - 1, depth=depth, width=1, k2=1, expected_tps=1.0,
                            ar_tps=1.0, best=(depth, 1, 1), best_tps=1.0, reason="scripted",
                            estimates=est)

    monkeypatch.setattr(lr_adaptive, "Controller", Script)
    target, draft = engines()
    res, _ = run_adaptive(SchedulerConfig(mode="lr-adaptive", depth=2, max_tokens=500),
                          target, draft)
    assert res.text == FULL and res.output_tokens == FULL_TOKENS
    assert target.requests[0].stop == () and target.requests[0].request_id in target.aborted
    assert [s.get("speculation") for s in res.steps[:2]] == ["none", "none"]
    assert any(c["kind"] == "target" for c in res.steps[2]["cancelled"])
    assert any(s["source"] == "draft" for s in res.steps[2:])
    record(res, "lr-adaptive")


class CrowdedEngine(FakeEngine):
    """A fake engine whose tokens slow down with the requests it runs at once (a CPU engine's
    batch is far from free): per_token_s is the time alone times the square of the requests in
    flight."""

    @property
    def per_token_s(self) -> float:
        return self._alone * max(1, self.active) ** 2

    @per_token_s.setter
    def per_token_s(self, seconds: float) -> None:
        self._alone = seconds


class SharedCores(FakeEngine):
    """A fake target whose tokens slow down while the draft engine works (two engines sharing a
    CPU's cores): per_token_s is the time alone times 1 + factor x the draft requests running."""
    factor: float = 0.0
    drafter: FakeEngine | None = None

    @property
    def per_token_s(self) -> float:
        return self._alone * (1.0 + self.factor * (self.drafter.active if self.drafter else 0))

    @per_token_s.setter
    def per_token_s(self, seconds: float) -> None:
        self._alone = seconds


def alternating(first: int):
    """A scripted Controller: three decisions at depth `first` (0 or 2), three at the other, and
    so on: steps alone and beside the drafter."""
    class Alternate:
        def __init__(self, cfg):
            self.n = 0

        def decide(self, est):
            depth = 2 * ((self.n // 3 + first // 2) % 2)
            self.n += 1
            return Decision(index=self.n - 1, depth=depth, width=1, k2=1, expected_tps=1.0,
                            ar_tps=1.0, best=(depth, 1, 1), best_tps=1.0, reason="scripted",
                            estimates=est)
    return Alternate


@pytest.mark.parametrize("factor", [0.0, 1.0])
def test_the_estimator_learns_what_the_drafter_beside_a_target_step_costs(factor, monkeypatch):
    """The draft requests running beside each target step reach the Estimator: a target that
    runs twice as slow while the drafter works is believed to pay a share of a step per draft
    request (Estimates.target_draft_s), one the drafter does not slow keeps the prior's 0. (A
    scripted Controller alternates depth 0 and 2: steps alone and beside the drafter.)"""
    monkeypatch.setattr(lr_adaptive, "Controller", alternating(first=0))
    rng = random.Random(7)
    wrong_steps = {i for i in range(len(LONG)) if rng.random() < 0.5}
    target = SharedCores("target", LONG, per_token_s=0.002)
    draft = FakeEngine("draft", LONG, per_token_s=0.0008,
                       wrong=lambda step, seed: step in wrong_steps)
    target.factor, target.drafter = factor, draft
    res, lr = run_adaptive(SchedulerConfig(mode="lr-adaptive", depth=2, max_tokens=4000),
                           target, draft)
    assert res.text == "\n\n".join(LONG)
    est = lr.est.snapshot()
    assert {d["depth"] for d in lr.decisions} == {0, 2}
    if factor:
        assert est.target_draft_s / est.target_step_s > 0.1      # fed: 0 without
    else:
        assert est.target_draft_s == 0.0
    assert record(res, "lr-adaptive")["adaptive"]["final"]["target_draft_s"] == est.target_draft_s


def test_the_prior_is_rescaled_in_the_unit_the_estimator_stores(monkeypatch):
    """The run's first timed step rescales the neutral prior (_scale_prior) in the unit the
    Estimator stores: here a tree's target step whose request waits 0.05 s for its prefill (its
    launch, learned apart) and writes 8 tokens at 0.002 s. Rescaled from its whole seconds per
    40-token step, the prior's base was 4x every later observation and the ridge fit gave the
    difference to the slope and the drafter's cost; in one unit a drafter that costs nothing is
    believed to cost nothing and the base is the step's per-token time."""
    monkeypatch.setattr(lr_adaptive, "Controller", alternating(first=2))   # a tree's step timed first
    rng = random.Random(7)
    wrong_steps = {i for i in range(len(LONG)) if rng.random() < 0.5}
    target = FakeEngine("target", LONG, per_token_s=0.002)
    target.prefill_s = 0.05                              # every new target request waits for it
    draft = FakeEngine("draft", LONG, per_token_s=0.01,  # slower: the target's step ends first
                       wrong=lambda step, seed: step in wrong_steps)
    res, lr = run_adaptive(SchedulerConfig(mode="lr-adaptive", depth=2, max_tokens=4000),
                           target, draft)
    assert res.text == "\n\n".join(LONG)
    est = lr.est.snapshot()
    scaled = lr.shared.prior
    assert scaled.target_step_s == pytest.approx(0.002 * 40, rel=1e-6)   # per 40-token step
    assert est.target_draft_s == 0.0
    assert est.launch_s > 0.03


class HiddenCostVerifier(ExactVerifier):
    """Exact matching that waits `hidden_s` before each verdict, outside the verdict's own timing
    (which the Estimator learns): a cost of speculation the closed forms cannot see."""
    def __init__(self, hidden_s: float):
        super().__init__()
        self.hidden_s = hidden_s

    async def verify(self, target_step, draft_step):
        await asyncio.sleep(self.hidden_s)
        return await super().verify(target_step, draft_step)


@pytest.mark.parametrize("hidden_s", [0.0, 0.1])
def test_a_cost_the_price_misses_is_caught_by_the_runs_own_commits(hidden_s):
    """Every draft right, so the closed forms price depth 2 far above AR; a hidden 0.1 s before
    each verdict (six of the target's ~16 ms steps) makes speculation lose (static lr: 0.35x AR).
    The commits' seconds against their price (observe_paid) pull spec_factor down and the run
    stops speculating, for good, within the first half of the answer; with no hidden cost it
    speculates throughout."""
    target, draft = engines(LONG)
    res, lr = run_adaptive(SchedulerConfig(mode="lr-adaptive", depth=2, max_tokens=4000),
                           target, draft, HiddenCostVerifier(hidden_s))
    assert res.text == "\n\n".join(LONG)
    depths = [d["depth"] for d in lr.decisions]
    factor = lr.est.snapshot().spec_factor
    if hidden_s:
        stopped = depths.index(0)                   # it stopped, and for good
        assert factor < 0.75 and 0 < stopped <= len(depths) // 2 and set(depths[stopped:]) == {0}
    else:
        assert factor >= 1.0 and 0 not in depths
    assert record(res, "lr-adaptive")["adaptive"]["final"]["spec_factor"] == factor


def test_it_stops_speculating_when_every_draft_is_wrong_and_batching_costs():
    """Acceptance 0 and a target that slows down with its batch (this machine, where static LR
    loses): the Controller learns to stop speculating, and steps are the target's alone."""
    target = CrowdedEngine("target", LONG, per_token_s=0.002)
    draft = FakeEngine("draft", LONG, per_token_s=0.001, wrong=lambda step, seed: True)
    res, lr = run_adaptive(SchedulerConfig(mode="lr-adaptive", depth=4, max_tokens=2000),
                           target, draft)
    assert res.text == "\n\n".join(LONG) and res.step_acceptance["accepted"] == 0
    depths = [d["depth"] for d in lr.decisions]
    assert depths[0] > 0 and 0 in depths            # the neutral prior speculates, then it stops
    alone = [s for s in res.steps[1:] if s.get("speculation") == "none"]
    assert len(alone) >= 10                         # steps the target wrote with no draft at all
    record(res, "lr-adaptive")


@pytest.mark.parametrize("case", range(10))
def test_randomized_adaptive_runs_always_yield_the_target_text(case):
    rng = random.Random(1000 + case)
    wrong_steps = {i for i in range(len(SCRIPT)) if rng.random() < 0.5}
    wrong = lambda step, seed: step in wrong_steps  # noqa: E731
    target, draft = engines(wrong=wrong, target_tok=rng.choice([0.0005, 0.002]),
                            draft_tok=rng.choice([0.0002, 0.001, 0.003]))
    budget = rng.choice([5, 17, 33, 500])
    cfg = SchedulerConfig(mode=rng.choice(list(ADAPTIVE_MODES)), depth=rng.randint(1, 4),
                          width=rng.randint(1, 2), max_tokens=budget,
                          max_step_tokens=rng.choice([4, 100]), boundary_rule=rng.random() < 0.7,
                          temperature=rng.choice([0.0, 0.7]), seed=case)
    res, _ = run_adaptive(cfg, target, draft)
    assert FULL.startswith(res.text)
    assert res.output_tokens == min(budget, FULL_TOKENS)
    record(res, cfg.mode)
    assert target.active == 0 and draft.active == 0
    assert engine_load.in_flight(target) == 0 and engine_load.in_flight(draft) == 0


def test_load_and_batch_sizes_count_problems_in_flight():
    """Two problems at once on the same engines: the estimator sees load 2 and batches > 1."""
    target, draft = engines(target_tok=0.002, draft_tok=0.0005)
    cfg = SchedulerConfig(mode="lr-adaptive", depth=2, max_tokens=500)

    async def both():
        lrs = [AdaptiveLookahead(Run(cfg, Problem(f"p{i}", 0, PROMPT), target, draft,
                                     ExactVerifier())) for i in range(2)]
        return lrs, await asyncio.gather(*(lr.run_problem() for lr in lrs))

    lrs, results = run_virtual(both())
    assert all(r.text == FULL for r in results)
    assert max(d["estimates"]["load"] for lr in lrs for d in lr.decisions) > 1.0
    batches = [b for lr in lrs for b in [*lr.est.target.bins, *(b for b, _ in lr.est.target.busy)]]
    assert any(b > 0 for b in batches)                # a step ran beside another
    assert lr_adaptive._problems == 0


def test_collect_writes_adaptive_records(fast_collect):
    from lrcore.traces import read_traces
    from lrreal import collect as collect_mod
    from lrreal import summary as summary_mod

    for mode in ADAPTIVE_MODES:
        s = collect_mod.collect(collect_mod.CollectSpec(mode=mode, dataset="gsm8k", limit=2,
                                                        depth=2, max_tokens=200,
                                                        out=str(fast_collect), resume=True))
        assert (s.written, s.failed) == (2, [])
    recs = read_traces(fast_collect)
    assert sorted({r["mode"] for r in recs}) == sorted(ADAPTIVE_MODES)
    assert all(r["adaptive"]["decisions"] and r["run"]["flags"]["mode"] == r["mode"] for r in recs)
    rows = {r["mode"]: r for r in summary_mod.summarize(recs)}
    assert set(rows) == set(ADAPTIVE_MODES)


class NgramFake(FakeEngine):
    """A fake target with n-gram SD counters (vLLM's shape): every request adds two verification
    passes of 3 drafted tokens, one accepting all 3, one accepting 1."""
    num_spec_tokens = 3

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.sd = {"num_drafts": 0, "drafted": 0, "accepted": 0, "per_pos": [0, 0, 0]}

    async def generate(self, req, progress=None):
        res = await super().generate(req, progress)
        self.sd["num_drafts"] += 2
        self.sd["drafted"] += 6
        self.sd["accepted"] += 4
        self.sd["per_pos"] = [p + n for p, n in zip(self.sd["per_pos"], (2, 1, 1))]
        return res

    def stats_mark(self):
        return len(self.requests), {k: (list(v) if isinstance(v, list) else v)
                                    for k, v in self.sd.items()}


def test_lr_sd_adaptive_offers_the_engine_k2_and_measures_sd_acceptance():
    target = NgramFake("target", SCRIPT, per_token_s=0.002)
    draft = FakeEngine("draft", SCRIPT, per_token_s=0.0005)
    res, lr = run_adaptive(SchedulerConfig(mode="lr+sd-adaptive", depth=2, max_tokens=500),
                           target, draft)
    assert res.text == FULL
    assert lr.acfg.k2s == (4,) and all(d["k2"] == 4 for d in lr.decisions)
    # 4 accepted tokens and 1 rejected round per request: alpha2 rises from the prior's 0 to 0.8
    assert 0.5 < lr.est.snapshot().alpha2 <= 0.8
    assert record(res, "lr+sd-adaptive")["adaptive"]["config"]["k2s"] == [4]


def test_problems_on_the_same_engines_share_what_they_learned():
    """One Estimator per pair of engines (RunEstimates): short answers (7 steps) cannot learn
    alone, so a problem starts from what the ones before it measured on the same engines. Every
    draft wrong and a batch that costs: the first problem speculates before it learns, the next
    ones do not; a problem on other engines starts afresh."""
    def crowded():
        return (CrowdedEngine("target", SCRIPT, per_token_s=0.002),
                FakeEngine("draft", SCRIPT, per_token_s=0.001, wrong=lambda step, seed: True))

    cfg = SchedulerConfig(mode="lr-adaptive", depth=4, max_tokens=2000)
    target, draft = crowded()
    runs = [run_adaptive(cfg, target, draft, keep_clock=k > 0) for k in range(3)]
    (first, lr1), rest = runs[0], runs[1:]
    assert lr1.decisions[0]["depth"] > 0                  # the neutral prior speculates
    for k, (res, lr) in enumerate(rest, start=1):
        assert lr.est is lr1.est and lr.learned_from == k
        assert record(res, "lr-adaptive")["adaptive"]["learned_from"] == k
        assert res.text == FULL
        start = lr.decisions[0]["estimates"]              # what the ones before measured
        assert start["alpha_by_depth"][0] < 0.8 * Estimates().alpha(1)
        assert lr.decisions[0]["depth"] == 0
    assert sum(d["depth"] > 0 for _, lr in rest for d in lr.decisions) < sum(
        d["depth"] > 0 for d in lr1.decisions)
    _, fresh = run_adaptive(cfg, *crowded())
    assert fresh.learned_from == 0 and fresh.est is not lr1.est and fresh.decisions[0]["depth"] > 0


def test_a_tree_step_reports_its_launch_and_a_stream_step_none():
    """launch_s: the seconds before a request's first token beyond one token's time."""
    from lrreal.engine import GenResult
    from lrreal.scheduler.lr_adaptive import launch_s

    assert launch_s(GenResult("x", 5, "stop", start=10.0, end=12.0, first=11.2)) == pytest.approx(1.0)
    assert launch_s(GenResult("x", 1, "stop", start=10.0, end=10.5, first=10.5)) == pytest.approx(0.5)
    assert launch_s(GenResult("x", 5, "stop", start=10.0, end=12.0)) is None


def test_it_stops_speculating_when_each_speculative_step_pays_a_prefill():
    """Half the drafts right and batching free, but every tree step is a new request that waits
    for its prefill (the CPU engine's case: a context's last partial block and the launch): the
    Estimator learns the launch from the tree's steps (not from the stream's), and the run stops
    speculating."""
    target = FakeEngine("target", LONG, per_token_s=0.002)
    target.prefill_s = 0.12                           # ~ one 8-token step's decode, per request
    draft = FakeEngine("draft", LONG, per_token_s=0.001, wrong=lambda step, seed: step % 2 == 0)
    res, lr = run_adaptive(SchedulerConfig(mode="lr-adaptive", depth=2, max_tokens=2000), target, draft)
    assert res.text == "\n\n".join(LONG)
    last = lr.decisions[-1]["estimates"]
    assert last["launch_s"] > 0.05
    depths = [d["depth"] for d in lr.decisions]
    assert depths[0] > 0 and depths[-10:].count(0) >= 8
    record(res, "lr-adaptive")


def test_step_times_reach_the_estimator_with_their_lengths(monkeypatch):
    """Steps run from a few tokens to a hundred: their seconds go to the Estimator with their
    token counts (scaled to a step of the prior's length), as the simulator's policy reports them;
    without, the batch slope was fitted to step-length noise (0 on this machine)."""
    from lrcore.adaptive import Estimator

    seen = {"target": [], "draft": []}
    t0, d0 = Estimator.observe_target_step, Estimator.observe_draft_step

    def target(self, seconds, batch=1, k2=1, tokens_per_pass=None, tokens=None, launch_s=None,
               drafting=0.0):
        seen["target"].append(tokens)
        return t0(self, seconds, batch, k2, tokens_per_pass, tokens, launch_s, drafting)

    def draft(self, seconds, batch=1, tokens=None):
        seen["draft"].append(tokens)
        return d0(self, seconds, batch, tokens)

    monkeypatch.setattr(Estimator, "observe_target_step", target)
    monkeypatch.setattr(Estimator, "observe_draft_step", draft)
    res, _ = run_adaptive(SchedulerConfig(mode="lr-adaptive", depth=2, max_tokens=2000), *engines(LONG))
    assert seen["target"] and seen["draft"]
    assert all(isinstance(n, int) and n > 0 for n in seen["target"] + seen["draft"])
    assert len(set(seen["target"])) > 1
