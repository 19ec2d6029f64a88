"""`lr-adaptive` / `lr+sd-adaptive`: asynchronous LR whose depth and width are chosen before each
new speculation by lrcore.adaptive's Controller, from what the run has measured (issue 14).

The tree is lr_async.py's, unchanged: `_choose`, called whenever a new root is set (before any
speculation below it), asks the Controller instead of keeping the config's shape. Depth 0 runs
the root's target step alone: a plain AR step (for lr+sd-adaptive: an SD step, the target engine
runs n-gram SD on every request); speculation already in flight keeps running, only new drafts
follow the new shape. The decision logic is lrcore/adaptive.py's, imported, not copied: the
simulator's lr-adaptive policy (lrsim/sim/policies/lr_adaptive.py) runs the same code and is fed
the same kinds of observation:
  - the verdict of the first ready draft of each decided position, at its launch depth (the first
    sibling: the marginal acceptance); drafts not ready in time are not verdicts (the closed
    forms price a slow draft through c1)
  - each finished target step: seconds (request start to finish: queueing in the engine is part
    of the cost), the requests in flight on the target engine as it finishes (itself included),
    its tokens; with SD, the engine's k2 and the SD counters' accepted tokens and rejected rounds
  - each finished draft: seconds and the draft engine's requests in flight
  - the duration of the verdict that decided each position
  - the problems in flight in this process at each decision (the load).
One Estimator and Controller per problem, starting from the neutral prior (lrcore's Estimates():
told nothing about this workload; a calibrated profile as prior is not wired to the CLI yet).

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

from dataclasses import asdict

from lrcore.adaptive import AdaptiveConfig, Controller, Estimates, Estimator

from ..engine import sd_summary
from .base import Run
from .lr_async import AsyncLookahead
from .record import ProblemResult
from .tree import Node

# Requests in flight per engine (by id) and problems in flight, in this process: what the
# Estimator is told about batch sizes and load. Shared by every problem on the same engines.
_busy: dict[int, int] = {}
_problems = 0


class CountedEngine:
    """An engine whose generate() calls are counted in _busy while they run."""

    def __init__(self, engine):
        self.engine = engine

    def __getattr__(self, name):
        return getattr(self.engine, name)

    async def generate(self, req, progress=None):
        key = id(self.engine)
        _busy[key] = _busy.get(key, 0) + 1
        try:
            return await self.engine.generate(req, progress)
        finally:
            _busy[key] -= 1


def in_flight(engine) -> int:
    """Requests running on `engine` (a CountedEngine or the engine it wraps)."""
    return _busy.get(id(getattr(engine, "engine", engine)), 0)


def engine_k2(engine) -> int:
    """Positions per target pass: 1 + the engine's n-gram speculative tokens (1: no SD)."""
    return 1 + int(getattr(engine, "num_spec_tokens", 0) or 0)


def adaptive_config(cfg, k2: int) -> AdaptiveConfig:
    """The Controller's bounds from the scheduler config (module docstring)."""
    return AdaptiveConfig(mode="async", max_depth=cfg.depth, widths=tuple(range(1, cfg.width + 1)),
                          k2s=(k2,))


class AdaptiveLookahead(AsyncLookahead):
    """lr_async's tree whose `_choose` asks the Controller; the overrides below only observe."""

    def __init__(self, run: Run):
        run.target, run.draft = CountedEngine(run.target), CountedEngine(run.draft)
        super().__init__(run)
        self.k2 = engine_k2(run.target) if self.cfg.mode == "lr+sd-adaptive" else 1
        self.acfg = adaptive_config(self.cfg, self.k2)
        self.prior = Estimates()
        self.est = Estimator(self.acfg, prior=self.prior)
        self.ctl = Controller(self.acfg)
        self.decisions: list[dict] = []
        self.sd_mark = self._sd_mark()

    async def run_problem(self) -> ProblemResult:
        global _problems
        _problems += 1
        try:
            res = await super().run_problem()
        finally:
            _problems -= 1
        res.extra["adaptive"] = self.record()
        return res

    # -- the decision ----------------------------------------------------------------------------

    def _choose(self, position: int) -> None:
        self.est.observe_load(_problems)
        d = self.ctl.decide(self.est.snapshot())
        self.depth, self.width = d.depth, d.width
        self.decisions.append({"position": position, **d.to_dict()})

    # -- observations ----------------------------------------------------------------------------

    def _on_target(self, v: Node) -> None:
        if v.alive and v.target is not None:
            self._observe_target(v.target)
        super()._on_target(v)

    def _on_draft(self, c: Node) -> None:
        if c.alive and c.draft is not None:
            d = c.draft
            self.est.observe_draft_step(max(0.0, d.end - d.start), in_flight(self.run.draft) + 1)
        super()._on_draft(c)

    async def _on_decided(self, root: Node, judged: list) -> str | None:
        if judged:
            c, verdict = judged[0]
            self.est.observe_verdict(c.launch_depth, bool(verdict.accepted))
            self.est.observe_verify(max(0.0, verdict.duration_s))
        return await super()._on_decided(root, judged)

    def _observe_target(self, t) -> None:
        """One finished target step: its seconds at its batch, its tokens, SD's counters."""
        self.est.observe_target_step(max(0.0, t.end - t.start), in_flight(self.run.target) + 1,
                                     self.k2)
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
        return {"config": {**asdict(self.acfg), "widths": list(self.acfg.widths),
                           "k2s": list(self.acfg.k2s)},
                "prior": self.prior.to_dict(), "decisions": self.decisions}


async def run_lr_adaptive(run: Run) -> ProblemResult:
    return await AdaptiveLookahead(run).run_problem()
