"""Continuous batching of one model on its device pool (vLLM-style iteration-level scheduling).

Every iteration runs all admitted jobs together: a job decodes `tokens_per_iter` positions per
iteration (1 = plain decoding, k2 = a speculative-decoding verification pass), and its first
iteration also processes its uncached prompt suffix (`prefill`). Jobs join and leave at iteration
boundaries. The cost of an iteration comes from the model's LatencyModel at the current batch.

Fluid chunks (the performance trick): between two batch changes every iteration of a batch costs
the same, so the engine sleeps through `n` iterations in one SimPy timeout, where `n` runs to the
next job completion. A submit or cancel wakes it; it then finishes the iteration in progress
(iterations are never preempted) and recomposes the batch. Events scale with jobs, not tokens.
With a context-length term the chunk is capped (`max_chunk`) so the context used for the cost
lags the true one by at most that many tokens.
"""
from __future__ import annotations

import math

import simpy

from .latency import LatencyModel

NEVER_CAP = 1 << 62


class Job:
    """A request to an engine: `iters` iterations, each decoding `tokens_per_iter` positions."""

    __slots__ = ("iters_left", "tokens_per_iter", "prefill", "ctx", "sd", "done", "cancelled",
                 "submitted", "started", "finished", "tag", "emit_per_iter", "total")

    def __init__(self, env, iters: int, ctx: float = 0.0, prefill: int = 0, tokens_per_iter: int = 1,
                 sd: bool = False, tag=None, emit_per_iter: float = 1.0):
        self.iters_left = max(1, int(iters))
        self.total = self.iters_left
        self.tokens_per_iter = tokens_per_iter
        self.prefill = prefill
        self.ctx = ctx
        self.sd = sd
        self.emit_per_iter = emit_per_iter
        self.done = simpy.Event(env)
        self.cancelled = False
        self.submitted = env.now
        self.started = None
        self.finished = None
        self.tag = tag


class Engine:
    def __init__(self, env: simpy.Environment, name: str, latency: LatencyModel, devices: list,
                 max_seqs: int = 256, sd_k2: int = 1, sd_draft: LatencyModel | None = None,
                 context_term: bool = True, max_chunk: int = 64):
        self.env = env
        self.name = name
        self.latency = latency
        self.devices = devices
        self.max_seqs = max_seqs          # vLLM max_num_seqs: more jobs queue (FIFO)
        self.sd_k2 = sd_k2                # positions per SD verification pass
        self.sd_draft = sd_draft          # drafter run inside the engine step (None = n-gram, free)
        self.max_chunk = max_chunk if context_term else NEVER_CAP
        self.running: list[Job] = []
        self.waiting: list[Job] = []
        self.busy_s = 0.0
        self.last_end = 0.0                    # end of the last iteration run
        self.iterations = 0
        self.batch_hist: dict[int, int] = {}   # sequences per iteration -> iterations
        self._wake = env.event()
        self.proc = env.process(self._loop())

    # --- API used by policies ---------------------------------------------------------------
    def submit(self, job: Job) -> Job:
        self.waiting.append(job)
        self._poke()
        return job

    def cancel(self, job: Job) -> None:
        if job.finished is None and not job.cancelled:
            job.cancelled = True
            self._poke()

    def _poke(self):
        if not self._wake.triggered:
            self._wake.succeed()

    # --- the scheduler loop -----------------------------------------------------------------
    def _admit(self):
        self.running = [j for j in self.running if not j.cancelled]
        if self.waiting:
            self.waiting = [j for j in self.waiting if not j.cancelled]
            while self.waiting and len(self.running) < self.max_seqs:
                j = self.waiting.pop(0)
                j.started = self.env.now
                self.running.append(j)

    def _iteration_cost(self, batch: list[Job]) -> float:
        dec = pre = nsd = 0
        ctx = 0.0
        for j in batch:
            if j.prefill:
                pre += j.prefill
            else:
                dec += j.tokens_per_iter
            if j.sd:
                nsd += 1
            ctx += j.ctx
        t = self.latency.forward(dec, pre, len(batch), ctx)
        if nsd and self.sd_draft is not None and self.sd_k2 > 1:
            t += (self.sd_k2 - 1) * self.sd_draft.forward(nsd, 0, nsd, ctx)
        return t

    def _loop(self):
        env = self.env
        shared = any(d.shared for d in self.devices)
        while True:
            self._admit()
            if not self.running:
                self._wake = env.event()
                yield self._wake
                continue
            batch = list(self.running)
            reqs = []
            if shared:  # time-sharing: hold every device of the pool, one iteration at a time
                reqs = [d.resource.request() for d in self.devices]
                yield env.all_of(reqs)
                batch = [j for j in self.running if not j.cancelled] or batch
            t_iter = self._iteration_cost(batch)
            if shared or any(j.prefill for j in batch):
                n = 1
            else:
                n = min(min(j.iters_left for j in batch), self.max_chunk)
            start = env.now
            self._wake = env.event()
            to = env.timeout(n * t_iter)
            fired = yield to | self._wake
            if to in fired:
                k = n
            else:  # batch change: finish the iteration in progress, then recompose
                k = min(n, math.ceil((env.now - start) / t_iter - 1e-9)) if t_iter > 0 else 0
                end = start + k * t_iter
                if end > env.now:
                    yield env.timeout(end - env.now)
            for r in reqs:
                d = r.resource
                d.release(r)
            if k == 0:
                continue
            spent = k * t_iter
            self.busy_s += spent
            self.last_end = env.now
            self.iterations += k
            self.batch_hist[len(batch)] = self.batch_hist.get(len(batch), 0) + k
            for d in self.devices:
                d.busy_s += spent
            now = env.now
            for j in batch:
                if j.cancelled:
                    continue
                j.iters_left -= k
                j.ctx += k * j.emit_per_iter + j.prefill
                j.prefill = 0
                if j.iters_left <= 0:
                    j.finished = now
                    j.done.succeed(j)
            self.running = [j for j in self.running if j.finished is None and not j.cancelled]


class FreeEngine:
    """The theory's free batching with an unlimited budget (--ideal, M = inf): every job runs at
    `unit` per iteration from the instant it is submitted, whatever else runs. Same API as
    Engine; no batch-boundary wait (the theory starts a target step the moment its prefix
    exists). Busy time is the union of the jobs' intervals."""

    def __init__(self, env, name: str, unit: float, devices: list, sd_k2: int = 1, sd_unit: float = 0.0):
        self.env = env
        self.name = name
        self.unit = unit
        self.devices = devices
        self.sd_k2 = sd_k2
        self.sd_unit = sd_unit
        self.busy_s = 0.0
        self.last_end = 0.0
        self.iterations = 0
        self.batch_hist: dict[int, int] = {}
        self._active = 0
        self._busy_since = 0.0

    def _per_iter(self, job: Job) -> float:
        return self.unit + ((self.sd_k2 - 1) * self.sd_unit if job.sd else 0.0)

    def submit(self, job: Job) -> Job:
        env = self.env
        job.started = env.now
        if self._active == 0:
            self._busy_since = env.now
        self._active += 1
        env.timeout(job.iters_left * self._per_iter(job)).callbacks.append(
            lambda _e, j=job: self._finish(j))
        return job

    def _idle_check(self):
        self._active -= 1
        if self._active == 0:
            spent = self.env.now - self._busy_since
            self.busy_s += spent
            self.last_end = self.env.now
            for d in self.devices:
                d.busy_s += spent

    def _finish(self, job: Job):
        if job.cancelled:
            return
        self.iterations += job.iters_left
        job.iters_left = 0
        job.finished = self.env.now
        self._idle_check()
        job.done.succeed(job)

    def cancel(self, job: Job) -> None:
        if job.finished is not None or job.cancelled:
            return
        job.cancelled = True
        done = int((self.env.now - job.started) / self._per_iter(job) + 1e-9)
        job.iters_left = max(0, job.total - done)
        self.iterations += done
        self._idle_check()
