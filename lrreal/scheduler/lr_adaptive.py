"""`lr-adaptive` / `lr+sd-adaptive`: asynchronous LR whose depth and width are chosen before each
new speculation by lrcore.adaptive's Controller, from what the run has measured.

The tree is lr_async.py's, unchanged: `_choose`, called whenever a new root is set (before any
speculation below it), asks the Controller instead of keeping the config's shape; speculation
already in flight keeps running, only new drafts follow the new shape. Depth 0 means the target
writes that step alone, as plain AR (for lr+sd-adaptive: SD alone, the target engine runs n-gram
SD on every request): `ARStream`, one target request for the rest of the answer, cut into steps
at the stop strings as it streams (ar mode's segmentation). At each cut the step is committed and
the next position decided; while the choice stays 0 the same request writes on, so a run of
depth-0 steps pays one request as AR does, not one per step; a choice of depth >= 1 (or a
Controller's exploration) cancels it (what it wrote past the cut is recorded as cancelled work)
and the tree grows from the committed text.

The decision logic is lrcore.adaptive's, imported, not copied: the simulator's lr-adaptive
policy (lrsim/sim/policies/lr_adaptive.py) runs the same code and is fed the same kinds of
observation:
  - the verdict of the first ready draft of each decided position, at its launch depth (the first
    sibling: the marginal acceptance); drafts not ready in time are not verdicts (the closed
    forms price a slow draft through c1)
  - each finished target step (a tree's step request, or a stream's cut): seconds (from its
    request's start, or the previous cut, to its end: queueing in the engine is part of the
    cost), the requests the target engine ran over the step's life (time-averaged, itself
    included: engine_load.py), the draft requests running beside it (time-averaged: on a CPU the
    drafter slows the target), its tokens;
    with SD, the engine's k2 and the SD counters' accepted tokens and rejected rounds
  - each finished draft: seconds and the draft engine's time-averaged requests over its life
  - the duration of the verdict that decided each position
  - the tokens committed between two decisions and the seconds they took, against the price of
    the choice in force then, within a steady stretch of one kind (observe_paid: the price
    checked against the run's own commits)
  - the problems in flight in this process at each decision (the load).
One Estimator per run, shared by every problem on the same engines (`RunEstimates`: a serving
process learns across its requests, and a 192-token answer has about five steps, too few to learn
anything alone); one Controller per problem (its hysteresis follows its own choices). The
Estimator starts from the neutral prior (lrcore's Estimates(): told nothing about this workload),
whose times are rescaled to the run's first timed step (`_scale_prior`), or from estimates carried
from an earlier run's records (`--adaptive-prior`, adaptive_prior.py), taken as they are. The simulator's policy keeps acceptance per request (its
requests run thousands of tokens, the paper presets, and its phase-change target is a change
inside one request) and shares the run's step costs (Estimator.share_costs).

Bounds (`adaptive_config`): depths 0..--depth, widths 1..--width, and k2 fixed: 1 for
lr-adaptive; for lr+sd-adaptive the engine's one k2 = --num-speculative-tokens + 1, because vLLM
fixes the SD length when the engine starts (the simulator may choose k2 per step; the real
backend cannot).

Every decision is recorded: the result's extra["adaptive"] becomes the trace record's `adaptive`
object (traces/README.md): the AdaptiveConfig, the prior, and one entry per decision
(Decision.to_dict(): estimates, chosen depth/width/k2, expected rates, reason) with the root
position it was made at.
"""
from __future__ import annotations

import json
from dataclasses import asdict, replace

from lrcore.adaptive import AdaptiveConfig, Controller, Estimates, Estimator
from lrcore.adaptive.estimator import first_token_wait

from ..engine import GenResult, Progress, monotonic, sd_summary
from .adaptive_prior import NEUTRAL
from .base import Job, Run
from .engine_load import CountedEngine, mean_batch, meter
from .lr_async import AsyncLookahead
from .record import ProblemResult
from .steps import StreamSegmenter
from .tree import Node

# Problems in flight in this process: the load the Estimator is told.
_problems = 0


class RunEstimates:
    """The Estimator the problems on one pair of engines share, with its prior (the neutral one
    rescaled once, at the run's first timed step; a carried one as measured: adaptive_prior.py)
    and how many problems have started on it."""

    def __init__(self, acfg: AdaptiveConfig, prior: Estimates | None = None,
                 prior_from: str = NEUTRAL):
        self.acfg = acfg
        self.prior = prior or Estimates()
        self.prior_from = prior_from if prior is not None else NEUTRAL
        self.est = Estimator(acfg, prior=self.prior)
        self.scaled = prior is not None         # the prior's times are at this run's scale
        self.loads: list[float] = []            # load observed before that (replayed into it)
        self.problems = 0                       # problems that started on it


def run_estimates(target, draft, acfg: AdaptiveConfig, prior: dict | None = None,
                  prior_from: str = NEUTRAL) -> RunEstimates:
    """The RunEstimates of this pair of engines and bounds, kept on the target engine (it lives as
    long as they may be used together). `prior` (Estimates.to_dict()) is used only where it is
    built: a later problem's prior does not reset what the run has learned."""
    runs = getattr(target, "_adaptive_runs", None)
    if runs is None:
        runs = {}
        target._adaptive_runs = runs
    key = (id(draft), acfg)
    if key not in runs:                 # built once: an Estimator is not free to make per problem
        runs[key] = RunEstimates(acfg, Estimates.from_dict(prior) if prior else None, prior_from)
    return runs[key]


def plain(obj):
    """`obj` as JSON has it (tuples become lists), as the trace's validator expects."""
    return json.loads(json.dumps(obj, allow_nan=False))


def engine_k2(engine) -> int:
    """Positions per target pass: 1 + the engine's n-gram speculative tokens (1: no SD)."""
    return 1 + int(getattr(engine, "num_spec_tokens", 0) or 0)


def launch_s(t: GenResult) -> float | None:
    """Seconds a request waited for its first token beyond one token's time (queue, prefill):
    first - start - (end - first) / (tokens - 1); None where the engine did not say when."""
    if t.first is None or t.tokens < 1:
        return None
    return first_token_wait(t.start, t.first, t.end, t.tokens)


def after_prefill(step: GenResult, first: float | None) -> GenResult:
    """A stream's first cut timed from its first token less one token's time: the wait before it
    (`launch_s`: the request's queue and prefill, the prompt's at the answer's start, which every
    mode pays once, or the context's after speculation) is no cost of the depth-0 steps that
    follow, and depth 0's price has no launch. Timed whole, beside the drafter's own prefill of
    the prompt (lr_async's rule) it was read as the drafter's cost to the target: 0.348-0.718 of a
    step per draft request at 2 in flight (traces/load-adaptive-f25m17-paid). A cut of one token,
    or with no first token known, is timed whole."""
    if first is None or step.tokens < 2:
        return step
    wait = launch_s(replace(step, first=first))
    return replace(step, start=step.start + min(wait, step.end - step.start), first=first)


def adaptive_config(cfg, k2: int) -> AdaptiveConfig:
    """The Controller's bounds from the scheduler config (module docstring)."""
    return AdaptiveConfig(mode="async", max_depth=cfg.depth, widths=tuple(range(1, cfg.width + 1)),
                          k2s=(k2,))


class AdaptiveLookahead(AsyncLookahead):
    """lr_async's tree whose `_choose` asks the Controller, whose root at depth 0 is written by
    an ARStream, and whose event handlers feed the Estimator."""

    def __init__(self, run: Run):
        engines = (run.target, run.draft)
        run.target, run.draft = CountedEngine(run.target), CountedEngine(run.draft)
        super().__init__(run)
        self.k2 = engine_k2(run.target) if self.cfg.mode == "lr+sd-adaptive" else 1
        self.acfg = adaptive_config(self.cfg, self.k2)
        self.shared = run_estimates(*engines, self.acfg, self.cfg.adaptive_prior,
                                    self.cfg.adaptive_prior_from)
        self.learned_from = self.shared.problems     # problems before this one on the estimator
        self.shared.problems += 1
        self.ctl = Controller(self.acfg)
        self.decisions: list[dict] = []
        self.sd_mark = self._sd_mark()
        self.stream: ARStream | None = None    # the target writing on alone, at depth 0
        self.paying: tuple | None = None   # (speculating, priced tok/s, steady) in force
        self.paid_mark = (monotonic(), 0)               # (time, committed tokens) last looked at

    async def run_problem(self) -> ProblemResult:
        global _problems
        _problems += 1
        try:
            res = await super().run_problem()
        finally:
            _problems -= 1
            if self.stream is not None:        # an error ended the run mid-stream
                await self.stream.job.cancel()
        res.extra["adaptive"] = self.record()
        return res

    # -- the decision ----------------------------------------------------------------------------

    @property
    def est(self) -> Estimator:
        return self.shared.est

    @property
    def prior(self) -> Estimates:
        return self.shared.prior

    def _choose(self, position: int) -> None:
        self.est.observe_load(_problems)
        if not self.shared.scaled:
            self.shared.loads.append(_problems)
        self._observe_paid()
        d = self.ctl.decide(self.est.snapshot())
        self.depth, self.width = d.depth, d.width
        self.decisions.append(plain({"position": position, **d.to_dict()}))
        # what the closed forms priced this choice at, before the run's own correction
        spec = d.depth > 0
        priced = d.expected_tps / d.estimates.spec_factor if spec else d.expected_tps
        steady = (self.paying is not None and self.paying[0] == spec
                  and not d.reason.startswith("explore"))
        self.paying = (spec, priced, steady)

    def _observe_paid(self) -> None:
        """The tokens committed since the last decision, and the seconds they took, against the
        price of the choice in force (Estimator.observe_paid): a step committed between two
        decisions is the previous decision's. Only in a steady stretch of one kind: a decision
        shapes only new work, so the first interval after a change of kind (or an exploration)
        was written by the work the previous kind launched; and not the problem's first
        interval (its prompt's prefill) nor its last (the run's cleanup): neither is priced."""
        now, tokens = monotonic(), self.log.committed_tokens
        if self.paying is not None and self.paying[2] and tokens > self.paid_mark[1]:
            (spec, priced, _), (t0, c0) = self.paying, self.paid_mark
            self.est.observe_paid(spec, tokens - c0, max(0.0, now - t0), priced)
        self.paid_mark = (now, tokens)

    # -- depth 0: the target writes on alone, one request for as long as the choice stays 0 -----

    def _submit_target(self, v: Node) -> None:
        """The root at depth 0 is written by the AR stream (started, or kept running); any other
        target step stops the stream first."""
        if v is self.root and self.depth == 0 and v.position == len(self.log.steps):
            if self.stream is None:
                self._start_stream()
            return
        if self.stream is not None:
            self._stop_stream()
        super()._submit_target(v)

    def _start_stream(self) -> None:
        """One target request for the rest of the answer (as ar mode makes), cut into steps at
        the stop strings as its text arrives; each cut posts a "stream" event."""
        budget = self.cfg.max_tokens - self.log.committed_tokens
        req = self.run.request("target", f"{self.root.key}.ar", self.log.committed_text, budget,
                               step=False)
        stream = ARStream(self.cfg.step_stop)
        stream.job = Job(self.run.target, req, self._post("stream", stream))
        stream.job.progress.on_update = lambda p: stream.on_update(p, self.events)
        self.stream = stream

    def _stop_stream(self) -> None:
        """Cancel the stream (the choice left depth 0); what it wrote past its last committed
        step is recorded as cancelled target work."""
        stream, self.stream = self.stream, None
        stream.job.task.cancel()
        now = monotonic()
        kept = stream.seg.cuts[:stream.taken]
        lost = Progress(start=kept[-1]["end"] if kept else stream.seg.start,
                        tokens=max(0, stream.job.progress.tokens - sum(c["tokens"] for c in kept)),
                        end=now)
        self.log.cancelled("target", lost, 0, now)

    async def _on_other(self, kind: str, node, payload) -> str | None:
        if kind != "stream":
            return await super()._on_other(kind, node, payload)
        if node is not self.stream:                 # a stopped stream's late event
            return None
        return await self._on_stream(node)

    async def _on_stream(self, stream: "ARStream") -> str | None:
        """Commit the steps the stream has cut since the last event; after each, decide the next
        position (_new_root): depth 0 keeps the stream, anything else stops it and grows a tree.
        Returns the finish reason once the stream's last step is committed."""
        res = stream.job.result
        if res is not None and not stream.ended:   # its text after the last stop string: a step
            stream.seg.finish(res.text, res.tokens, res.end)
            stream.ended = True
        cuts = stream.seg.cuts
        while stream.taken < len(cuts) and stream is self.stream:
            cut = cuts[stream.taken]
            stream.taken += 1
            last = res is not None and stream.taken == len(cuts)
            step = GenResult(text=cut["text"], tokens=cut["tokens"],
                             finish=res.finish if last else "", start=cut["start"], end=cut["end"])
            timed = after_prefill(step, stream.job.progress.first) if stream.taken == 1 else step
            # batch: the requests on the target over the step's life, the stream's own included
            self._observe_target(timed, mean_batch(self.run.target, timed.start, timed.end))
            self.log.commit(source="target", text=step.text, tokens=step.tokens, depth=0,
                            draft=None, target=step, verify=None, node=self.root.key,
                            speculation="none")
            if stop := self.run.stop_reason(step, self.log.committed_tokens):
                return stop
            if last:                                  # the request ended short of EOS: budget
                return "budget"
            self._new_root()
        return None

    # -- observations ----------------------------------------------------------------------------

    def _scale_prior(self, measured_s: float, prior_s: float) -> None:
        """At the first timed step: the neutral prior's times (target step 1 s, draft 0.1 s,
        verdict 0.013 s: ratios, on an arbitrary scale) rescaled so the measured kind of step
        takes what was measured, `measured_s` in the unit the Estimator stores that kind in
        (Estimator.target_cost / draft_cost: less its launch, per step of the prior's
        step_tokens, SD's as the plain step it equals). A first step of 8 tokens taken whole as
        the cost of a 40-token step put the prior's base at a fifth of every later observation,
        and the ridge fit gave the difference to the batch slope and the drafter's cost.
        The prior weighs as observations for ever, so at its own scale
        it would pull a CPU's 20 s steps (or a fake engine's 20 ms ones) towards 1 s and hide
        how the batch slows them; its ratios, which steer the decision, are kept."""
        sh = self.shared
        if sh.scaled or measured_s <= 0 or prior_s <= 0:
            return
        sh.scaled = True
        k, p = measured_s / prior_s, sh.prior
        sh.prior = replace(p, target_step_s=p.target_step_s * k, target_slope_s=p.target_slope_s * k,
                           draft_step_s=p.draft_step_s * k, draft_slope_s=p.draft_slope_s * k,
                           verify_s=p.verify_s * k, launch_s=p.launch_s * k,
                           target_draft_s=p.target_draft_s * k)
        sh.est = Estimator(self.acfg, prior=sh.prior)   # nothing timed was observed yet
        for n in sh.loads:
            sh.est.observe_load(n)
        sh.loads = []

    def _on_target(self, v: Node) -> None:
        if v.alive and v.target is not None:
            t = v.target
            self._observe_target(t, mean_batch(self.run.target, t.start, t.end), launched=True)
        super()._on_target(v)

    def _on_draft(self, c: Node) -> None:
        if c.alive and c.draft is not None:
            d = c.draft
            self._scale_prior(self.est.draft_cost(d.end - d.start, d.tokens), self.prior.draft_step_s)
            self.est.observe_draft_step(max(0.0, d.end - d.start),
                                        mean_batch(self.run.draft, d.start, d.end), tokens=d.tokens)
        super()._on_draft(c)

    async def _on_decided(self, root: Node, judged: list) -> str | None:
        if judged:
            c, verdict = judged[0]
            self.est.observe_verdict(c.launch_depth, bool(verdict.accepted))
            self.est.observe_verify(max(0.0, verdict.duration_s))
        return await super()._on_decided(root, judged)

    def _observe_target(self, t: GenResult, batch: float, launched: bool = False) -> None:
        """One finished target step: its seconds at its batch (per step of the prior's length:
        steps run 9-100 tokens, far more spread than a batch adds), its tokens, SD's counters; a
        step that was a request of its own (`launched`: a tree's), its launch too (`launch_s`)."""
        seconds, wait = max(0.0, t.end - t.start), launch_s(t) if launched else None
        self._scale_prior(self.est.target_cost(seconds, self.k2, tokens=t.tokens, launch_s=wait),
                          self.prior.target_step_s)
        self.est.observe_target_step(seconds, max(1.0, batch), self.k2, tokens=t.tokens,
                                     launch_s=wait, drafting=meter(self.run.draft).mean(t.start, t.end))
        self.est.observe_step_tokens(t.tokens)
        if self.k2 > 1:
            self._observe_sd()

    def _sd_mark(self):
        """The target engine's SD counters now (None: no SD, or an engine without counters)."""
        mark = self.run.target.stats_mark() if self.k2 > 1 else None
        return mark[1] if isinstance(mark, tuple) and isinstance(mark[1], dict) else None

    def _observe_sd(self) -> None:
        """SD's accepted tokens and rejected rounds since the last look (engine-wide counters:
        under load they include the other requests' passes, the same engine's acceptance)."""
        before, after = self.sd_mark, self._sd_mark()
        if before is None or after is None:
            return
        s = sd_summary(before, after, self.k2 - 1)
        full = s["accepted_length_hist"][-1] if s["accepted_length_hist"] else 0
        self.est.observe_sd(max(0, s["accepted"]), max(0, s["num_drafts"] - full))
        self.sd_mark = after

    # -- the record ------------------------------------------------------------------------------

    def record(self) -> dict:
        """The trace record's `adaptive` object."""
        return {"config": plain(asdict(self.acfg)), "prior": plain(self.prior.to_dict()),
                "prior_from": self.shared.prior_from, "learned_from": self.learned_from,
                "decisions": self.decisions, "final": plain(self.est.snapshot().to_dict())}


class ARStream:
    """The target alone on the rest of the answer (depth 0 for several steps in a row): one
    request, its text cut into steps at the stop strings as it streams (StreamSegmenter, as ar
    mode cuts), so a run of depth-0 steps pays one request, not one per step."""

    def __init__(self, stops):
        self.seg = StreamSegmenter(start=monotonic(), stops=stops)
        self.job: Job | None = None
        self.taken = 0                  # cuts committed
        self.ended = False              # the request is done and its last cut made

    def on_update(self, progress: Progress, events) -> None:
        n = len(self.seg.cuts)
        self.seg.on_update(progress, monotonic())
        if len(self.seg.cuts) > n:
            events.put_nowait(("stream", self, None))


async def run_lr_adaptive(run: Run) -> ProblemResult:
    return await AdaptiveLookahead(run).run_problem()
