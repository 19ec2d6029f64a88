"""The runtime of one simulation: SimPy env, engines, workload, and what happened (records).

Policies receive a World and one RequestSpec and commit steps through `World.commit`, which is
the single place where output is accounted (conservation checks rely on it).
"""
from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field

import simpy

from .engine import Engine, Job
from .kvcache import request_prefill
from .tokensd import SDStats, SDStream


@dataclass
class RequestRecord:
    rid: int
    arrival: float
    steps_expected: int
    tokens_expected: int
    first_output: float | None = None
    finish: float | None = None
    tokens: int = 0
    steps: list[str] = field(default_factory=list)     # "draft" | "target" per committed step

    @property
    def latency(self) -> float:
        return self.finish - self.arrival


@dataclass
class StepStats:
    proposed: int = 0                  # drafts judged (+ drafts dropped unready: count as rejected)
    accepted: int = 0
    unready: int = 0                   # drafts not finished when their target step was
    positions: int = 0                 # positions whose drafts were judged (any sibling ready)
    positions_accepted: int = 0        # ... of which one sibling was accepted (width > 1 metric)
    by_depth: dict[int, list[int]] = field(default_factory=dict)    # depth -> [proposed, accepted]
    per_cycle: dict[int, int] = field(default_factory=dict)         # steps emitted per target verdict
    cancelled_jobs: dict[str, int] = field(default_factory=lambda: {"draft": 0, "target": 0})
    cancelled_tokens: dict[str, int] = field(default_factory=lambda: {"draft": 0, "target": 0})

    def judged(self, depth: int, ok: bool) -> None:
        self.proposed += 1
        self.accepted += ok
        pa = self.by_depth.setdefault(depth, [0, 0])
        pa[0] += 1
        pa[1] += ok

    def cycle(self, emitted: int) -> None:
        self.per_cycle[emitted] = self.per_cycle.get(emitted, 0) + 1


@dataclass(eq=False, repr=False)   # one run's world: compared by identity, not printed field by field
class World:
    env: simpy.Environment
    cfg: object                        # config.Config
    workload: object
    target: Engine
    draft: Engine | None
    judge: Engine | None
    pool: object                       # devices.DevicePool
    records: list[RequestRecord] = field(default_factory=list, init=False)
    stats: StepStats = field(default_factory=StepStats, init=False)
    sd: SDStats = field(default_factory=SDStats, init=False)
    decisions: object | None = field(default=None, init=False)   # lr-adaptive: its DecisionLog
    adaptive_costs: object | None = field(default=None, init=False)  # lr-adaptive: the run's
    #                                 Estimator of step costs, shared by its requests
    arrivals: list[float] | None = field(default=None, init=False)  # every request's arrival,
    #                                 sorted (runner.run): the requests that have arrived by now,
    #                                 counted before their processes start

    def in_flight(self) -> int:
        """Requests arrived and not finished: with `arrivals` known, those whose processes have
        not started yet at this instant count too (all of them at t = 0, where each request's
        first decision ran before the next one's process had started)."""
        unfinished = sum(r.finish is None for r in self.records)
        if self.arrivals is None:
            return unfinished
        return unfinished + bisect_right(self.arrivals, self.env.now) - len(self.records)

    # --- helpers for policies -----------------------------------------------------------------
    def sd_stream(self, req, k2: int | None = None) -> SDStream | None:
        """Token-level SD rounds of `req` at k2 positions per pass (default: the Config's)."""
        k2 = self.cfg.k2 if k2 is None else k2
        if k2 <= 1:
            return None
        hit = getattr(self.workload, "token_hit", None)
        lengths = getattr(self.workload, "token_lengths", None)
        return SDStream(k2, self.workload.token_alpha(req), carry_surplus=self.cfg.ideal,
                        hit=1.0 if hit is None else hit(req),
                        lengths=None if lengths is None else lengths(req))

    def target_job(self, req, tokens: int, ctx: float, prefill: int = 0, stream=None,
                   rounds: int | None = None, tag=None, new_request: bool = True) -> Job:
        """A target step of `tokens` tokens: plain decoding, or SD rounds of k2 positions.
        `ctx`: its context (prompt included), `prefill` of which the engine never saw; a new
        engine request (not ar's stream going on) prefills as the prefix cache's blocks leave it."""
        if new_request and ctx > 0:
            prefill = request_prefill(ctx, prefill, self.target.prefix_block)
        if stream is None:
            return Job(self.env, tokens, ctx, prefill, 1, False, tag, group=req.rid)
        if rounds is None:
            rounds = stream.rounds_for(tokens, req.rng, self.sd)
        per_round = stream.k2
        if stream.hit < 1.0:          # rounds without a proposal verify one position
            per_round = stream.last_positions / max(rounds, 1)
        return Job(self.env, rounds, ctx, prefill, per_round, True, tag,
                   emit_per_iter=tokens / max(rounds, 1), group=req.rid)

    def draft_job(self, tokens: int, ctx: float, prefill: int = 0, tag=None, req=None,
                  new_request: bool = True) -> Job:
        """A draft step (target_job's ctx, prefill and new_request); `req`: its request, whose
        other jobs share its KV prefix."""
        if new_request and ctx > 0:
            prefill = request_prefill(ctx, prefill, self.draft.prefix_block)
        return Job(self.env, tokens, ctx, prefill, 1, False, tag,
                   group=None if req is None else req.rid)

    def cancel(self, engine: Engine, job: Job | None, kind: str) -> None:
        if job is None or job.finished is not None or job.cancelled:
            return
        engine.cancel(job)
        self.stats.cancelled_jobs[kind] += 1
        # work thrown away: iterations completed before the cancel (at the last batch boundary)
        self.stats.cancelled_tokens[kind] += job.total - job.iters_left

    def commit(self, rec: RequestRecord, source: str, tokens: int) -> None:
        if rec.first_output is None:
            rec.first_output = self.env.now
        rec.steps.append(source)
        rec.tokens += tokens

    def verdict_delay(self, draft_tokens: int, target_tokens: int):
        v = self.cfg.verifier
        engine = self.target if v.kind == "score" else self.judge   # score: the target judges
        return v.judge(self.env, engine, draft_tokens, target_tokens)
