"""The runtime of one simulation: SimPy env, engines, workload, and what happened (records).

Policies receive a World and one RequestSpec and commit steps through `World.commit`, which is
the single place where output is accounted (conservation checks rely on it).
"""
from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Any

import simpy

from .dispatch import timeout
from .engine import Job
from .kvcache import request_prefill
from .tokensd import SDStats, SDStream

# This module may be compiled (lrsim/native.py), where an `int` or `float` annotation is checked
# at run time and converts an int to a float: the numbers that arrive as int, float or NumPy
# scalars (times, token counts) are `Any`, which keeps Python's own values and arithmetic.


@dataclass
class RequestRecord:
    rid: Any
    arrival: Any                       # float (the env's clock)
    steps_expected: Any                # int
    tokens_expected: Any               # int
    first_output: Any = None           # float | None
    finish: Any = None                 # float | None
    tokens: Any = 0                    # int
    steps: list[str] = field(default_factory=list)     # "draft" | "target" per committed step

    @property
    def latency(self) -> Any:
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


class World:
    """One run's world (compared by identity, not printed field by field): the engines, and
    what happened (records, stats, sd). `World(env, cfg, workload, target, draft, judge, pool)`."""

    # an explicit __init__, not a dataclass's: compiled (lrsim/native.py), fields a dataclass
    # leaves out of __init__ (init=False) would stay unset
    # the engines are Engines or, under --ideal, free_engine.FreeEngines (or a test's fakes)
    def __init__(self, env: simpy.Environment, cfg: Any, workload: Any, target: Any,
                 draft: Any, judge: Any, pool: Any) -> None:
        self.env = env
        self.cfg = cfg                     # config.Config
        self.workload = workload
        self.target = target
        self.draft = draft
        self.judge = judge
        self.pool = pool                   # devices.DevicePool
        self.records: list[RequestRecord] = []
        self.stats = StepStats()
        self.sd = SDStats()
        self.decisions: Any = None         # lr-adaptive: its DecisionLog
        self.adaptive_costs: Any = None    # lr-adaptive: the run's Estimator of step costs,
        #                                    shared by its requests
        self._verifier: Any = None         # cfg.verifier as verdict_delay last read it, and
        self._fixed_delay: Any = None      # its VerifierCost.fixed_delay()
        self.arrivals: list[Any] | None = None   # every request's arrival, sorted
        #                                    (runner.run): the requests that have arrived by now,
        #                                    counted before their processes start
        self._streams: dict[Any, list[Any]] = {}  # request id -> its SD streams (release)

    def in_flight(self) -> int:
        """Requests arrived and not finished: with `arrivals` known, those whose processes have
        not started yet at this instant count too (all of them at t = 0, where each request's
        first decision ran before the next one's process had started)."""
        unfinished = sum(r.finish is None for r in self.records)
        if self.arrivals is None:
            return unfinished
        return unfinished + bisect_right(self.arrivals, self.env.now) - len(self.records)

    # --- helpers for policies -----------------------------------------------------------------
    def sd_stream(self, req, k2: Any = None) -> SDStream | None:
        """Token-level SD rounds of `req` at k2 positions per pass (default: the Config's)."""
        k2 = self.cfg.k2 if k2 is None else k2
        if k2 <= 1:
            return None
        hit = getattr(self.workload, "token_hit", None)
        lengths = getattr(self.workload, "token_lengths", None)
        stream = SDStream(k2, self.workload.token_alpha(req), carry_surplus=self.cfg.ideal,
                          hit=1.0 if hit is None else hit(req),
                          lengths=None if lengths is None else lengths(req))
        self._streams.setdefault(req.rid, []).append(stream)
        return stream

    def release(self, req) -> None:
        """`req` has finished: count its SD streams' rounds (SDStats counts lazily) and let them
        go, so that a long run keeps only the streams of the requests in flight."""
        for stream in self._streams.pop(req.rid, ()):
            stream.flush()

    def target_job(self, req, tokens: Any, ctx: Any, prefill: Any = 0,
                   stream: SDStream | None = None, rounds: Any = None, tag=None,
                   new_request: bool = True, starts_request: Any = None, positions: Any = None) -> Job:
        """A target step of `tokens` tokens: plain decoding, or SD rounds of k2 positions.
        `ctx`: its context (prompt included), `prefill` of which the engine never saw; a new
        engine request (not ar's stream going on) prefills as the prefix cache's blocks leave it.
        `starts_request`: the job is an engine request's first (cfg.sd_plain_first_pass), where
        `prefill` is a recorded count and not rounded again (new_request False); default
        new_request. `rounds`: SD rounds given, not drawn (a prefilling job's first pass among
        them: cfg.sd_plain_first_pass does not apply; the run's SD statistics do not count them);
        `positions`: the positions they verify (None: those of the stream's last draw, which gave
        `rounds`)."""
        if new_request and ctx > 0:
            prefill = request_prefill(ctx, prefill, self.target.prefix_block)
        if stream is None:
            return Job(self.env, tokens, ctx, prefill, 1, False, tag, group=req.rid)
        # cfg.sd_plain_first_pass: a prefilling job's first pass samples its first token alone
        # (the engine prices that pass by its prefill), its SD rounds the tokens after it
        starts = new_request if starts_request is None else starts_request
        plain = 1 if getattr(self.cfg, "sd_plain_first_pass", False) and starts and prefill > 0 and rounds is None else 0
        if rounds is None:
            rounds = stream.rounds_for(tokens - plain, req.rng, self.sd)
        per_round = stream.k2
        if positions is not None:     # given with the rounds
            per_round = positions / max(rounds, 1)
        elif stream.hit < 1.0:        # rounds without a proposal verify one position
            per_round = stream.last_positions / max(rounds, 1)
        if plain and not rounds:      # one token: the prefilling pass alone
            per_round = 1
        rounds += plain
        return Job(self.env, rounds, ctx, prefill, per_round, True, tag,
                   emit_per_iter=tokens / max(rounds, 1), group=req.rid)

    def draft_job(self, tokens: Any, ctx: Any, prefill: Any = 0, tag=None, req=None,
                  new_request: bool = True) -> Job:
        """A draft step (target_job's ctx, prefill and new_request); `req`: its request, whose
        other jobs share its KV prefix."""
        if new_request and ctx > 0:
            prefill = request_prefill(ctx, prefill, self.draft.prefix_block)
        return Job(self.env, tokens, ctx, prefill, 1, False, tag,
                   group=None if req is None else req.rid)

    def cancel(self, engine: Any, job: Job | None, kind: str) -> None:
        if job is None or job.finished is not None or job.cancelled:
            return
        engine.cancel(job)
        self.stats.cancelled_jobs[kind] += 1
        # work thrown away: iterations completed before the cancel (at the last batch boundary)
        self.stats.cancelled_tokens[kind] += job.total - job.iters_left

    def commit(self, rec: RequestRecord, source: str, tokens: Any) -> None:
        if rec.first_output is None:
            rec.first_output = self.env.now
        rec.steps.append(source)
        rec.tokens += tokens

    def verdict_delay(self, draft_tokens: Any, target_tokens: Any) -> Any:
        v = self.cfg.verifier
        if v is not self._verifier:       # its fixed delay, read once per verifier
            self._verifier, self._fixed_delay = v, v.fixed_delay()
        if self._fixed_delay is not None:  # = v.judge(...), without the Python call per verdict
            return timeout(self.env, self._fixed_delay)
        engine = self.target if v.kind == "score" else self.judge   # score: the target judges
        return v.judge(self.env, engine, draft_tokens, target_tokens)
