"""Adaptive lookahead: asynchronous LR whose depth, width and SD length are chosen
before each new speculation by lrcore.adaptive's Controller, from what the run has observed.

The tree is lr_async.py's, unchanged: `AsyncLookahead.choose`, called whenever a new root is set
(before any speculation below it), asks the Controller here instead of keeping the Config's
shape. Depth 0 runs the root's target step alone (plain AR, or SD alone, for that step);
speculation already in flight keeps running, only new drafts follow the new shape. What the
request observes feeds its Estimator:
  - the verdict of the first ready draft of each decided position, at its launch depth (the first
    sibling: the marginal acceptance, not lowered by siblings rejected before it)
  - each finished target step: seconds (submission to finish: the wait for the engine's next
    iteration boundary or a batch slot is part of what speculation costs; a depth-0 stream's
    first step from its first token), the sequences in the
    target's batch averaged over the step's life (engine.mean_batch: a step of ~40 iterations
    shares the batch with speculative steps that start and end inside it, so the batch as it
    ends says little; the real backend measures the same), its k2 and tokens per pass, its
    tokens, and for a tree's step its launch (observe_target: as the real scheduler measures
    it; a request's first step, its prompt's prefill, is not timed, unlike the real scheduler);
    for SD the accepted tokens and rejected rounds it drew
  - each finished draft: seconds and the draft engine's batch over its life; each verdict's seconds
  - the requests in flight at each decision (World.in_flight: arrived, not finished).
One Estimator and Controller per request, starting from the neutral prior (`neutral_prior`: told
nothing about this workload), so a request follows its own phase changes; its Estimator shares the
run's step costs, verdict time, launch, load and step length (Estimator.share_costs: what the
engines cost is learned from every request on them, as the real backend's one Estimator per
engine pair). With Config.adaptive_scope "run" the requests share one Estimator, acceptance
included, and its price is checked against their commits (observe_paid), as the real backend
does; a trace workload may carry the recorded run's estimates as the prior
(TraceWorkload.adaptive_prior). The decision logic is lrcore.adaptive's, imported, not copied.

A replayed adaptive record (a trace workload with `recorded_choice`) makes the choices its run
made instead: each root takes the record's last decision at or before its position, so the
replay is the timing of what happened (lrsim/sim/traces.py; docs/adaptive.md).

The Config bounds the choice (`adaptive_config`): depths 0..cfg.depth, widths 1..cfg.width, k2
1, cfg.k2 or a shorter length of lr plan's grid (3, 5) below it (`sd_lengths`); with SD on offer
the prior's SD acceptance is 0.5 (`neutral_prior`), as lrcore's 0 would never run SD and so never
measure it. cfg.adaptive, an AdaptiveConfig, replaces the bounds.

Every decision is counted in the world's DecisionLog (metrics: summary["adaptive"]): by depth,
width, k2 and request, switches and explorations, and in full (Decision.to_dict: estimates,
choice, expected rates, reason) the first and last LOG_HALF decisions that changed a request's
choice.
"""
from __future__ import annotations

from collections import Counter, deque

from lrcore.adaptive import AdaptiveConfig, Controller, Decision, Estimates, Estimator
from lrcore.adaptive.estimator import first_token_wait

from ..engine import mean_batch
from .lr_async import AsyncLookahead

LOG_HALF = 10       # decisions kept in full: the first and the last 10 that changed a choice


def run(world, req, rec):
    """The policy (registry: "lr-adaptive")."""
    lr = AdaptiveLookahead(world, req, rec)
    lr.start()
    yield lr.finished


def adaptive_config(cfg) -> AdaptiveConfig:
    """cfg.adaptive, or the defaults bounded by the Config (module docstring)."""
    if cfg.adaptive is not None:
        return cfg.adaptive
    c2 = 0.0                                  # n-gram SD drafts for free
    if cfg.sd_draft is not None and cfg.k2 > 1:
        c2 = cfg.sd_draft.per_token() / cfg.target.latency.per_token()
    # the theory's free engine (--ideal) measures no batch (mean_batch: 1) and batching is free:
    # every batch is within reach
    floor = FREE_BATCH_FLOOR if cfg.ideal else AdaptiveConfig.batch_floor
    return AdaptiveConfig(mode="async", max_depth=cfg.depth, widths=tuple(range(1, cfg.width + 1)),
                          k2s=sd_lengths(cfg.k2), sd_draft_ratio=c2, batch_floor=floor)


FREE_BATCH_FLOOR = 1e15     # positions: past any batch a run can put


SHORTER_K2S = (3, 5)    # lr plan's default --k2 grid below the paper's 9


def sd_lengths(k2: int) -> tuple[int, ...]:
    """The SD lengths lr-adaptive chooses from with the Config's k2: 1 (no SD), k2, and the grid's
    shorter lengths below it. The simulator switches k2 per step (each a stream of its own); vLLM
    fixes it at engine start, so a real backend offers (1,) or its one k2. Offered only k2 = 9,
    the paper's n-gram SD, it could not run lr plan's best static lr+sd, k2 5 or 3 on every paper
    preset (at SD acceptance 0.28 the 6th-9th positions are accepted with probability <= 0.002,
    and they cost target batch)."""
    return tuple(sorted({1, k2} | {k for k in SHORTER_K2S if k < k2}))


def neutral_prior(acfg: AdaptiveConfig) -> Estimates:
    """lrcore's neutral prior; with SD on offer (some k2 > 1) its acceptance starts at 0.5, like
    the step acceptance's, not at 0: at 0 a choice between k2 = 1 and SD never runs SD, so it
    never measures it."""
    return Estimates(alpha2=0.5) if max(acfg.k2s) > 1 else Estimates()


class AdaptiveLookahead(AsyncLookahead):
    """lr-async whose `choose` asks the Controller; the overrides below only observe."""

    def __init__(self, world, req, rec):
        super().__init__(world, req, rec)
        self.acfg = adaptive_config(world.cfg)
        carried = getattr(world.workload, "adaptive_prior", None)
        prior = (carried() if carried is not None else None) or neutral_prior(self.acfg)
        if world.adaptive_costs is None:
            world.adaptive_costs = Estimator(self.acfg, prior=prior)
        # scope "run": the real backend's one Estimator for every request (Config.adaptive_scope)
        self.run_scope = world.cfg.adaptive_scope == "run"
        self.est = (world.adaptive_costs if self.run_scope else
                    Estimator(self.acfg, prior=prior).share_costs(world.adaptive_costs))
        self.paying: tuple | None = None   # run scope: (speculating, priced tok/s, steady) in force
        self.paid_mark = (self.env.now, 0.0)   # (time, committed tokens) at the last decision
        self.ctl = Controller(self.acfg)
        self.streams = {self.stream.k2: self.stream} if self.stream is not None else {}
        self.on_stream = False    # the last target step was a depth-0 root's (one request writes on)
        self.recorded = getattr(world.workload, "recorded_choice", None)
        if world.decisions is None:
            world.decisions = DecisionLog()

    # -- the decision ----------------------------------------------------------------------------

    def choose(self, position):
        if position >= self.n_steps:
            return
        self.est.observe_load(self.world.in_flight())
        # a replayed adaptive record: the choice its run made here (TraceWorkload.recorded_choice)
        d = self.recorded(self.req, position) if self.recorded is not None else None
        check = self.run_scope and d is None     # the price of the policy's own choices
        if check:
            self.observe_paid()
        if d is None:
            d = self.ctl.decide(self.est.snapshot())
        self.max_depth, self.width = d.depth, d.width
        self.stream = self.sd_stream(d.k2)
        self.world.decisions.add(self.req.rid, position, d)
        if check:                 # what the closed forms priced it at, before the run's correction
            spec = d.depth > 0
            priced = d.expected_tps / d.estimates.spec_factor if spec else d.expected_tps
            steady = (self.paying is not None and self.paying[0] == spec
                      and not d.reason.startswith("explore"))
            self.paying = (spec, priced, steady)

    def observe_paid(self):
        """The tokens committed since the request's last decision and the seconds they took,
        against the price of the choice in force then (Estimator.observe_paid), in a steady
        stretch of one kind only, as the real backend's _observe_paid: a decision shapes only new
        work, so the first interval after a change of kind (or an exploration) was written by
        what the previous kind launched; the request's first interval (its prompt's prefill)
        is never steady, and its last ends with no decision."""
        now, tokens = self.env.now, self.rec.tokens
        if self.paying is not None and self.paying[2] and tokens > self.paid_mark[1]:
            (spec, priced, _), (t0, c0) = self.paying, self.paid_mark
            self.est.observe_paid(spec, tokens - c0, max(0.0, now - t0), priced)
        self.paid_mark = (now, tokens)

    # -- observations ----------------------------------------------------------------------------

    def count_judged(self, ready, win):
        super().count_judged(ready, win)
        if ready:
            self.est.observe_verdict(ready[0].launch_depth, win == 0)

    def on_draft(self, node):
        if node.alive:
            job = node.draft_job
            self.est.observe_draft_step(job.finished - job.submitted, mean_batch(self.world.draft, job),
                                        tokens=job.total)
        super().on_draft(node)

    def submit_target(self, node, prefill, new_request=True):
        # depth 0 is one target request writing on step after step (the real scheduler's
        # ARStream): a root's step after a depth-0 root's is no new request
        writing_on = node is self.root and self.max_depth == 0
        new_request = new_request and not (writing_on and self.on_stream)
        self.on_stream = writing_on
        stream, before = self.stream, sd_counts(self.world.sd, self.stream)
        super().submit_target(node, prefill, new_request)
        job = node.target_job
        if job is None or job.done.triggered:
            return
        k2 = stream.k2 if stream is not None else 1
        sd = None
        if stream is not None:                # what this step drew: accepted tokens, rejected rounds
            after = sd_counts(self.world.sd, stream)
            sd = (after[0] - before[0], after[1] - before[1])
        # observed before on_target acts on the finished step (a decision may follow at once)
        launched, stream_start = new_request and not writing_on, new_request and writing_on
        job.done.callbacks.insert(0, lambda _e: self.observe_target(
            job, k2, sd, node.position > 0, launched, stream_start))

    def observe_target(self, job, k2, sd, timed=True, launched=False, stream_start=False):
        """As the real scheduler (lrreal/scheduler/lr_adaptive.py): a tree's step (`launched`, a
        request of its own) is timed whole, its launch learned apart (launch_s); a depth-0 stream's
        first step is timed from its first token (after_prefill: the wait before it is no cost of
        the steps that follow, and depth 0's price has no launch). Unlike it, `timed` False: the
        request's first step, which holds its prompt's prefill (at t = 0 every request's, which
        would time the whole run's prefill as a step): not timed; its tokens and SD counts are
        still observed."""
        tokens = job.total * job.emit_per_iter if k2 > 1 else job.total
        if timed:
            target, wait = self.world.target, launch_s(job, tokens)
            seconds = job.finished - job.submitted
            if stream_start and wait is not None:
                seconds -= min(wait, seconds)
            self.est.observe_target_step(seconds, mean_batch(target, job), k2,
                                         tokens_per_pass=job.emit_per_iter if k2 > 1 else None,
                                         tokens=tokens, launch_s=wait if launched else None)
        self.est.observe_step_tokens(tokens)
        if sd is not None:
            self.est.observe_sd(*sd)

    def judge(self, node):
        new = node.verdict_event is None
        ev = super().judge(node)
        if new:
            t0 = self.env.now
            ev.callbacks.append(lambda _e: self.est.observe_verify(self.env.now - t0))
        return ev

    def sd_stream(self, k2):
        """This request's SD stream at k2 positions per pass (None: no SD), made once per k2."""
        if k2 <= 1:
            return None
        if k2 not in self.streams:
            self.streams[k2] = self.world.sd_stream(self.req, k2)
        return self.streams[k2]


def launch_s(job, tokens: float) -> float | None:
    """Seconds a new request's step of `tokens` waited for its first token (the end of its first
    iteration) beyond one token's time: its queue and prefill, as the real backend's
    lrreal/scheduler/lr_adaptive.py launch_s: first - submitted - (finished - first) / (tokens -
    1); None if it never prefilled."""
    if job.first_end is None:
        return None
    return first_token_wait(job.submitted, job.first_end, job.finished, tokens)


def sd_counts(stats, stream) -> tuple[int, int]:
    """(accepted tokens, rounds that stopped at a rejected token) SD has drawn so far at stream's
    k2: a round that emits k2 tokens accepted every draft; rounds without a proposal are none."""
    if stream is None:
        return 0, 0
    h, k2 = stats.hist, stream.k2
    full = h[k2] if len(h) > k2 else 0
    return stats.accepted, sum(h[1:]) - full


class DecisionLog:
    """What lr-adaptive decided in one run (all requests), bounded whatever the run's length."""

    def __init__(self):
        self.decisions = self.switches = self.explorations = 0
        self.by_depth, self.by_width, self.by_k2 = Counter(), Counter(), Counter()
        self.by_request: dict[int, Counter] = {}    # request -> decisions by depth
        self.last: dict[int, tuple] = {}            # request -> its last choice
        self.first_changes: list[dict] = []
        self.last_changes: deque[dict] = deque(maxlen=LOG_HALF)

    def add(self, rid: int, position: int, d: Decision) -> None:
        self.decisions += 1
        self.by_depth[d.depth] += 1
        self.by_width[d.width] += 1
        self.by_k2[d.k2] += 1
        self.by_request.setdefault(rid, Counter())[d.depth] += 1
        self.explorations += d.reason.startswith("explore")
        prev = self.last.get(rid)
        self.last[rid] = d.choice
        if prev == d.choice:
            return
        self.switches += prev is not None
        entry = {"request": rid, "position": position, **d.to_dict()}
        if len(self.first_changes) < LOG_HALF:
            self.first_changes.append(entry)
        else:
            self.last_changes.append(entry)

    def summary(self) -> dict:
        def counts(c: Counter) -> dict:
            return {str(k): v for k, v in sorted(c.items())}
        return {"decisions": self.decisions, "switches": self.switches,
                "explorations": self.explorations, "by_depth": counts(self.by_depth),
                "by_width": counts(self.by_width), "by_k2": counts(self.by_k2),
                "by_request": {str(r): counts(c) for r, c in sorted(self.by_request.items())},
                "log": self.first_changes + list(self.last_changes), "log_half": LOG_HALF}
