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
lags the true one by at most that many tokens. A batch that prefills runs a chunk of one
iteration; where nothing can change the decode chunk after it, both are one timer
(`_plan_decode`).

Contention (two engines on separate devices of one machine, e.g. two CPU cores sharing memory
bandwidth): an engine linked to a `peer` pays `(1 + contention)` x the iteration time for every
iteration that starts while the peer is running one. When either engine starts or stops running,
the other recomposes at the end of its iteration in progress, so each iteration's cost reflects
the peer's state at its start (no link, or contention 0: nothing changes, no extra events).

KV cache (`kv`, a kvcache.KVSpec; None = unlimited, the engine as it always was): at every
boundary the running jobs' next iteration must fit the pool, else the job admitted last is
preempted by recompute; waiting jobs are admitted only while their blocks fit; a fluid chunk
ends at the iteration after which the cache would overflow (kvcache.py has the rules).
"""
from __future__ import annotations

import math
from collections import deque
from heapq import heappush
from typing import Any

import simpy
from simpy.events import PENDING

from .devices import Device
from .dispatch import NORMAL, Done, Wake, place, schedule_now, take
from .kvcache import KVCache, KVSpec, held
from .latency import Ideal, LatencyModel, Roofline
from .roofline_time import roofline_seconds, roofline_time

NEVER_CAP = 1 << 62


class Job:
    """A request to an engine: `iters` iterations, each decoding `tokens_per_iter` positions.

    `done` (a dispatch.Done: a simpy.Event to processes and conditions) succeeds (value None: the
    job as its value made a job <-> event reference cycle for every job) when the last iteration
    ends; a cancelled job's never fires, and its callbacks are dropped at the cancel."""

    __slots__ = ("iters_left", "tokens_per_iter", "prefill", "ctx", "sd", "done", "cancelled",
                 "submitted", "started", "finished", "tag", "emit_per_iter", "total", "finish_iter",
                 "start_iter", "kv_base", "group", "kv_own", "kv_held", "kv_tok", "area0",
                 "first_end", "seq")

    # The numbers arrive as int, float or NumPy scalars (tokens_per_iter is a float under SD with
    # misses, world.target_job). Those the engine's per-iteration sums and costs read are stored
    # as Python floats (float(): the same value, a whole number below 2^53 exactly), so that the
    # compiled module (lrsim/native.py) keeps them as C doubles, and plain Python holds the same
    # values of the same type; the KV cache's (kv_base, below) keep the values as they came.
    def __init__(self, env, iters: Any, ctx: Any = 0.0, prefill: Any = 0, tokens_per_iter: Any = 1,
                 sd: bool = False, tag=None, emit_per_iter: Any = 1.0, group=None):
        iters = int(iters)
        self.iters_left: int = iters if iters > 1 else 1    # = max(1, int(iters))
        self.total: int = self.iters_left
        self.tokens_per_iter: float = float(tokens_per_iter)
        fctx, fpre = float(ctx), float(prefill)
        self.prefill: float = fpre
        # the cost model's context before the first pass: the policies' ctx holds the prefill
        # (or is 0: a fresh sequence, whose context is its prefill), and the first pass adds
        # the prefill to it (_advance), so the context after it is kv_base
        self.ctx: float = fctx - fpre if fctx > fpre else 0.0
        self.sd = sd
        self.emit_per_iter: float = float(emit_per_iter)
        self.done = Done(env)
        self.cancelled = False
        self.submitted = env._now
        self.area0 = 0.0                  # the engine's batch area at submission (Engine.submit)
        self.first_end: float | None = None   # end of its first iteration, if it prefilled (its
        #                                   first token: lr-adaptive's launch, launch_s)
        self.started: float | None = None
        self.finished: float | None = None
        self.start_iter: int = 0          # the engine's iteration count at its admission (Engine._add)
        self.finish_iter: int = 0         # ... and at its last iteration's end
        self.seq = 0                      # ... its admission number there (JobHeap's tie-break)
        # the KV cache's bookkeeping (kvcache.KVCache.on_add/refresh)
        self.kv_tok: Any = 0
        self.kv_own: Any = 0
        self.kv_held: Any = 0
        self.tag = tag
        self.group = group                # the request it belongs to (shares its KV prefix)
        # KV context: ctx holds the prefill, or is 0 (kvcache.py); = max(ctx, prefill)
        self.kv_base = prefill if fpre > fctx else ctx


class JobHeap:
    """An engine's admitted jobs by (finish_iter, seq): a binary heap of the Jobs themselves, so
    that the compiled engine compares two int fields where heapq compared (finish_iter, seq, job)
    tuples through Python's rich comparison (under load, hundreds of jobs: much of an engine's
    bookkeeping). The keys are unique (one admission number per job), so `pop` returns the
    jobs in exactly heapq's order: the minimum, whatever the layout."""

    def __init__(self) -> None:
        self.jobs: list[Job] = []

    def __len__(self) -> int:
        return len(self.jobs)

    def top(self) -> Job:
        """The job of the smallest key (the heap is not empty)."""
        return self.jobs[0]

    def push(self, job: Job) -> None:
        """Add `job` by its finish_iter and seq (set before)."""
        h = self.jobs
        h.append(job)
        fi, sq = job.finish_iter, job.seq
        pos = len(h) - 1
        while pos > 0:                # up while the parent sorts after it
            parent = (pos - 1) >> 1
            p = h[parent]
            if fi < p.finish_iter or (fi == p.finish_iter and sq < p.seq):
                h[pos] = p
                pos = parent
            else:
                break
        h[pos] = job

    def pop(self) -> Job:
        """Remove and return the job of the smallest key."""
        h = self.jobs
        last = h.pop()
        n = len(h)
        if not n:
            return last
        top = h[0]
        fi, sq = last.finish_iter, last.seq
        pos = 0
        while True:                   # the last job down from the root, below smaller children
            c = 2 * pos + 1
            if c >= n:
                break
            a = h[c]
            if c + 1 < n:
                b = h[c + 1]
                if b.finish_iter < a.finish_iter or (b.finish_iter == a.finish_iter and b.seq < a.seq):
                    c, a = c + 1, b
            if a.finish_iter < fi or (a.finish_iter == fi and a.seq < sq):
                h[pos] = a
                pos = c
            else:
                break
        h[pos] = last
        return top

    def remove(self, job: Job) -> None:
        """Drop `job` (a preempted job: rare)."""
        keep = [j for j in self.jobs if j is not job]
        self.jobs = []
        for j in keep:
            self.push(j)


def unit_costs(model: Any) -> bool:
    """Whether `model` is the theory's unit cost (latency.Ideal), scaled or not."""
    while model is not None and not isinstance(model, Ideal):
        model = getattr(model, "inner", None)
    return model is not None


def mean_batch(engine, job: Job) -> float:
    """The sequences `engine` ran, on average, over `job`'s life (submission to finish; the
    lr-adaptive Estimator's batch, as lrreal/scheduler/engine_load.py measures it on a real
    engine), at least 1; 1 on the theory's free engine (--ideal), where the batch costs nothing."""
    area_now = getattr(engine, "area_now", None)
    if area_now is None:
        return 1.0
    span = job.finished - job.submitted
    if span <= 0.0:
        return float(engine.n + 1)
    return max(1.0, (area_now() - job.area0) / span)


class Engine:
    """Incremental bookkeeping (the hot path is O(log n) per batch change, not O(batch)):
    iterations are counted globally (`iter_no`); a job admitted at iteration a with n
    iterations finishes at a + n (a heap gives the next completion); the batch's decode tokens,
    SD sequences and context sum are running totals (context = A + iter_no * E)."""

    def __init__(self, env: simpy.Environment, name: str, latency: LatencyModel, devices: list,
                 max_seqs: Any = 256, sd_k2: Any = 1, sd_draft: LatencyModel | None = None,
                 context_term: bool = True, max_chunk: Any = 64, kv: KVSpec | None = None):
        self.env = env
        self._queue: list = env._queue    # the environment's event heap and id counter (the
        self._eid: Any = env._eid         # same objects for the whole run)
        self.name = name
        self.latency = latency
        # the roofline model's terms, computed once: its iteration time is then one compiled call
        # (roofline_time, as Roofline.forward computes it), not a Python method per iteration
        self._roof: tuple[float, float, float, float] | None = (
            latency.terms if type(latency) is Roofline else None)
        self._sd_roof: tuple[float, float, float, float] | None = (
            sd_draft.terms if type(sd_draft) is Roofline else None)
        self.devices: list[Device] = devices
        self.max_seqs = max_seqs          # vLLM max_num_seqs: more jobs queue (FIFO)
        self.sd_k2 = sd_k2                # positions per SD verification pass
        self.sd_draft = sd_draft          # drafter run inside the engine step (None = n-gram, free)
        self.max_chunk = max_chunk if context_term else NEVER_CAP
        self.waiting: deque[Job] = deque()
        self.heap = JobHeap()             # admitted jobs by (finish_iter, seq)
        self.prefilling: list[Job] = []   # admitted, first iteration (prefill) not yet run
        self.cancelled: list[Job] = []    # cancelled while admitted, removed at the next boundary
        self.iter_no = 0
        self.n = 0                        # admitted sequences
        self.dec = 0.0                    # decode positions per iteration of admitted jobs
        self.nsd = 0
        self.ctx_a = 0.0
        self.ctx_e = 0.0
        self._seq = 0
        self._chunk: tuple[float, float] = (0.0, 0.0)   # (start, iteration time) of the chunk
        #                                   in progress
        self._n_chunk = 0                 # its iterations
        self.busy_s = 0.0
        self.area = 0.0                   # integral of admitted sequences over time (chunks ended)
        self.last_end = 0.0                    # end of the last iteration run
        self.iterations = 0
        self.positions = 0.0              # decode positions run (dec over the iterations ended;
        #                                   a prefilling job's first iteration prefills instead)
        self.prefilled = 0.0              # prefill positions run
        self.batch_hist: dict[int, int] = {}   # sequences per iteration -> iterations
        self._shared: bool | None = None  # known once every model is placed (first kick)
        self._state = "idle"              # idle | kick (start scheduled) | wait-device | run
        self._gen = 0                     # chunk generation: stale chunk-end callbacks are ignored
        self._end: Any = None             # the chunk end's entry when env can cancel it (kernel.py)
        self._cancellable = hasattr(env, "_timers")   # a kernel.Environment: dispatch.place
        self._timers: list = env._timers if self._cancellable else []   # its timers (the same list)
        self._nowq: list | None = env._nowq if self._cancellable else None   # its now-queue
        self._end_cbs = (self._on_end,)   # the callbacks of every chunk-end Wake
        self._kick_cbs = (self._kick,)
        self._granted_cbs = (self._granted,)
        self._ungranted = 0               # device requests not yet granted (shared placement)
        self._boundary = False            # an early chunk end is already scheduled
        self._reqs: list = []
        self.peer: Any = None             # the Engine on other devices of the same machine (runner)
        self.contention = 0.0             # fractional slowdown of an iteration while the peer runs
        self.kv: Any = KVCache(kv, name) if kv is not None else None   # KVCache | None
        # the prefix cache's granularity (kvcache.request_prefill): the KV spec's block, else a
        # token (no KV model: the cache holds everything the engine saw)
        self.prefix_block = kv.block_tokens if kv is not None else 1
        self._order: dict = {}            # KV cache only: admitted jobs in admission order
        # a prefill iteration planned through (_plan_decode): (its end, the decode chunk's
        # iteration time and iterations after it), or None; never with the theory's unit costs
        # (Ideal: iteration times on a grid, where events at one instant are routine)
        self._plan: tuple[float, float, int] | None = None
        self._plannable = (self._cancellable and kv is None and not unit_costs(latency)
                           and not unit_costs(sd_draft))

    @property
    def shared(self) -> bool:
        if self._shared is None:
            self._shared = any(d.shared for d in self.devices)
        return self._shared

    @property
    def running(self) -> int:
        return self.n

    def area_now(self) -> float:
        """The integral of the admitted sequences over time up to now: the chunks ended, plus the
        one in progress (the batch is constant within a chunk)."""
        if self._plan is not None:
            self._unplan()
        if self._state == "run":
            now: float = self.env._now
            return self.area + self.n * (now - self._chunk[0])
        return self.area

    # --- API used by policies ---------------------------------------------------------------
    def submit(self, job: Job) -> Job:
        if self.kv is not None:
            self.kv.check_fits(job)
        job.area0 = self.area_now()       # (lands or undoes a planned prefill first: _unplan)
        self.waiting.append(job)
        # = self._changed(), inlined (one call per job)
        st = self._state
        if st == "idle":
            self._state = "kick"
            env = self.env
            schedule_now(self._nowq, self._queue, (env._now, NORMAL, take(self._eid), Wake(self._kick_cbs)))
        elif st == "run" and not self._boundary:
            self._recompose()
        return job

    def cancel(self, job: Job) -> None:
        if job.finished is None and not job.cancelled:
            if self._plan is not None:
                self._unplan()
            job.cancelled = True
            # its done event never fires: drop the callbacks, which often reach the job itself
            # (a closure over it) and would leave a cycle for the cyclic GC
            cbs: list = job.done.callbacks
            cbs.clear()
            if job.started is not None:       # admitted: leaves at the next iteration boundary
                start, t_iter = self._chunk
                now: float = self.env._now
                running = math.ceil((now - start) / t_iter - 1e-9) if t_iter > 0 else 0
                job.iters_left = max(0, job.finish_iter - self.iter_no - running)
                self.cancelled.append(job)
                self._changed()

    # --- the scheduler: callbacks, no SimPy process (a Condition event per chunk was the
    # simulator's hot spot); every chunk end is one Timeout whose callback carries its generation
    def _changed(self):
        """The batch changed (submit/cancel): recompose at the end of the iteration in progress."""
        st = self._state
        if st == "idle":
            self._state = "kick"      # start at this instant, after all same-time submits
            env = self.env            # = env.timeout(0) with self._kick as its callback
            schedule_now(self._nowq, self._queue, (env._now, NORMAL, take(self._eid), Wake(self._kick_cbs)))
        elif st == "run" and not self._boundary:
            self._recompose()

    def _peer_changed(self):
        """The peer started or stopped running: a running engine recomposes (and re-costs) at the
        end of its iteration in progress; an idle or waiting one costs its next start anyway."""
        if self._state == "run" and not self._boundary:
            self._recompose()

    def _notify_peer(self):
        """Called on every change into or out of the "run" state (only when a peer is linked)."""
        p = self.peer
        if p.contention:
            p._peer_changed()

    def _recompose(self):
        """End the chunk in progress at the end of its current iteration (never preempted; at
        the chunk's first instant, k = 0: restart it at once)."""
        start, t_iter = self._chunk
        now: float = self.env._now
        k = math.ceil((now - start) / t_iter - 1e-9) if t_iter > 0 else 0
        if k < self._n_chunk:
            self._boundary = True
            self._gen = gen = self._gen + 1
            # the chunk end at the end of this iteration (= env.timeout(max(0.0, delay)) calling
            # _on_end): the one it replaces is cancelled where the environment can
            # (dispatch.place), else it fires stale and is ignored (generation)
            self._schedule_end(Wake(self._end_cbs, gen, k), start + k * t_iter - now)

    def _schedule_end(self, w: Wake, delay: float) -> None:
        """The chunk's end `delay` s from now (clamped at 0), replacing the one scheduled before
        (dispatch.place where the environment can cancel, else a plain push whose
        stale predecessor fires and is ignored by its generation)."""
        if not delay > 0.0:           # = max(0.0, delay)
            delay = 0.0
        if self._cancellable:
            now: float = self.env._now
            self._end = place(self._timers, self._eid, self._end, now + delay, w)
        else:
            env = self.env
            heappush(self._queue, (env._now + delay, NORMAL, take(self._eid), w))

    def _kick(self, _e=None):
        self._admit()
        self._run_or_idle()

    def _run_or_idle(self):
        """After admission: idle without jobs, else the next chunk (through the devices when
        they are time-shared)."""
        if not self.n:
            was = self._state
            self._state = "idle"
            if was == "run" and self.peer is not None:
                self._notify_peer()
            return
        # time-sharing: hold every device of the pool, one iteration at a time
        if self._shared or (self._shared is None and self.shared):
            self._kick_shared()
        else:
            self._start_chunk()

    def _kick_shared(self):
        was = self._state
        self._state = "wait-device"
        if was == "run" and self.peer is not None:
            self._notify_peer()
        # (every placed device has its resource: DevicePool)
        self._reqs = [d.resource.request() for d in self.devices]  # type: ignore[union-attr]
        # = env.all_of(self._reqs) calling _granted: the same event, scheduled when the last
        # request is processed, as a bare Wake (no Condition object, no ConditionValue)
        self._ungranted = len(self._reqs)
        for r in self._reqs:
            r.callbacks.append(self._device_granted)

    def _device_granted(self, _e):
        self._ungranted -= 1
        if not self._ungranted:
            env = self.env
            schedule_now(self._nowq, self._queue, (env._now, NORMAL, take(self._eid), Wake(self._granted_cbs)))

    def _granted(self, _e):
        self._admit()
        if not self.n:
            self._release()
            self._state = "idle"
            return
        self._start_chunk()

    def _release(self):
        for r in self._reqs:
            r.resource.release(r)
        self._reqs = []

    def _start_chunk(self):
        # the iteration's cost at the current batch: the decode positions of the admitted jobs,
        # whose first iteration (prefilling) processes their prefill instead (+ first token)
        pre = 0.0
        dec = self.dec
        prefilling = self.prefilling
        for j in prefilling:
            pre += j.prefill
            dec -= j.tokens_per_iter
        it = self.iter_no
        t_iter = self._cost(dec, pre, self.ctx_a + it * self.ctx_e)
        n: int                            # iterations in the chunk
        if self._shared or prefilling:
            n = 1
        else:
            h = self.heap
            n = (h.top().finish_iter if not h.top().cancelled else self._next_finish()) - it
            if n > self.max_chunk:
                n = self.max_chunk
            kv = self.kv
            if kv is not None and n > 1:        # end the chunk where the cache would overflow
                top = kv.upper(it + n - 1)
                if top > kv.capacity:
                    fit, last = kv.iterations_fitting(it, n)
                    n = int(fit)                # (the KV cache may count in NumPy)
                    kv.observe(last)
                elif top > kv.peak:             # a new peak is possible: measure it
                    kv.observe(kv.at(it, n - 1))   # = kv.usage(self._running(), n - 1)
        was = self._state
        self._state = "run"
        self._boundary = False
        env = self.env
        self._chunk = (env._now, t_iter)
        self._n_chunk = n
        self._gen = gen = self._gen + 1
        plan = (self._plan_decode(it) if prefilling and self._plannable and not self._shared
                and not self.contention else None)
        if plan is None:
            # the chunk's end after n iterations, as in _recompose
            self._schedule_end(Wake(self._end_cbs, gen, n), n * t_iter)
        else:
            # the prefill iteration's end, then the decode chunk's (_schedule_end's times, each
            # from the one before): one timer, at the decode chunk's end
            n2, t2 = plan
            d1 = n * t_iter
            if not d1 > 0.0:
                d1 = 0.0
            now: float = env._now
            t1 = now + d1
            d2 = n2 * t2
            if not d2 > 0.0:
                d2 = 0.0
            self._plan = (t1, t2, n2)
            self._end = place(self._timers, self._eid, self._end, t1 + d2,
                              Wake(self._end_cbs, gen, n2))
        if was != "run" and self.peer is not None:
            self._notify_peer()

    def _cost(self, dec: float, pre: float, ctx: float) -> float:
        """One iteration's seconds at the current batch: `dec` decode positions, `pre` prefill
        tokens, `ctx` context tokens (the SD drafter's passes inside the step, the peer's
        contention)."""
        roof = self._roof
        t_iter = (roofline_seconds(roof, dec, pre, ctx) if roof is not None
                  else self.latency.forward(dec, pre, self.n, ctx))
        nsd = self.nsd
        if nsd and self.sd_draft is not None and self.sd_k2 > 1:
            sd_roof = self._sd_roof
            t_iter += (self.sd_k2 - 1) * (roofline_time(sd_roof, nsd, 0, ctx) if sd_roof is not None
                                          else self.sd_draft.forward(nsd, 0, nsd, ctx))
        if self.contention and self.peer is not None and self.peer._state == "run":
            t_iter *= 1.0 + self.contention
        return t_iter

    # --- a prefill iteration planned through (one event where there were two) ------------------
    # A chunk whose batch prefills runs one iteration (its cost is the prefill's); its end then
    # starts the decode chunk, which costs what the batch after the prefill costs, to the next
    # job's end. Where nothing is submitted or cancelled meanwhile that second chunk is known when
    # the first starts: the engine schedules its end only, and lands the prefill's end (_land)
    # when that timer fires or when something reads or changes the batch earlier (_unplan, at
    # every submit, cancel and area_now). The same operations on the same values, at the same
    # times; only the decode chunk's timer takes its event id at the prefill's start, not at its
    # end, so an event due at exactly the decode chunk's end and scheduled between the two would
    # run after it rather than before. Not with a KV cache, time-shared devices or contention
    # (their next chunk depends on what happens then), nor with the theory's unit costs (Ideal:
    # times on a grid, where such ties are routine; elsewhere an exact tie of two engines'
    # float sums is a coincidence). Engine accounting read after env.run(until=...) may miss a
    # prefill whose plan is still open (the runner always drains).

    def _plan_decode(self, it: int) -> tuple[int, float] | None:
        """(iterations, iteration time) of the decode chunk that would start when the prefill
        iteration starting now at iteration `it` ends, or None if a job ends with it."""
        h = self.heap
        it2 = it + 1
        n2 = (h.top().finish_iter if not h.top().cancelled else self._next_finish()) - it2
        if n2 < 1:
            return None
        if n2 > self.max_chunk:
            n2 = self.max_chunk
        ctx_a = self.ctx_a
        for j in self.prefilling:         # what _advance adds, in its order
            ctx_a += j.prefill
        return n2, self._cost(self.dec, 0, ctx_a + it2 * self.ctx_e)

    def _land(self):
        """The planned prefill iteration's end, as its own chunk end would have run it (one
        iteration, at its end time), and the decode chunk started there."""
        plan = self._plan
        assert plan is not None
        t1, t2, n2 = plan
        self._plan = None
        self._advance(1, 1 * self._chunk[1], t1)
        self._chunk = (t1, t2)
        self._n_chunk = n2

    def _unplan(self):
        """Before the planned chunk's end: within the prefill iteration, back to its own chunk
        end (a timer at its end); past it, that end landed."""
        plan = self._plan
        assert plan is not None
        t1 = plan[0]
        now: float = self.env._now
        if now >= t1:
            self._land()
            return
        self._plan = None
        self._gen = gen = self._gen + 1
        self._end = place(self._timers, self._eid, self._end, t1, Wake(self._end_cbs, gen, 1))

    def _on_end(self, w: Wake):
        """The chunk ends (k iterations run; the chunk of generation gen, else it is stale)."""
        if w.gen != self._gen:
            return
        self._end = None
        if self._reqs:
            self._release()
        if self._plan is not None:
            self._land()
        k = w.k
        if k:
            self._advance(k, k * self._chunk[1])
        # = self._kick(), with _admit's nothing-to-do test inlined
        if self.waiting or self.cancelled or self.kv is not None:
            self._admit()
        self._run_or_idle()

    # --- bookkeeping ----------------------------------------------------------------------------
    def _add(self, j: Job):
        j.started = self.env._now
        j.finish_iter = self.iter_no + j.iters_left
        j.start_iter = self.iter_no
        self._seq += 1
        j.seq = self._seq
        self.heap.push(j)
        self.n += 1
        self.dec += j.tokens_per_iter
        self.nsd += j.sd
        self.ctx_a += j.ctx - self.iter_no * j.emit_per_iter
        self.ctx_e += j.emit_per_iter
        if j.prefill:
            self.prefilling.append(j)
        if self.kv is not None:
            self._order[j] = None
            self.kv.on_add(j)

    def _remove(self, j: Job):
        if self.kv is not None:
            del self._order[j]
            self.kv.on_remove(j)
        self.n -= 1
        self.dec -= j.tokens_per_iter
        self.nsd -= j.sd
        self.ctx_a -= j.ctx - j.start_iter * j.emit_per_iter
        self.ctx_e -= j.emit_per_iter

    def _admit(self):
        if not self.waiting and not self.cancelled and self.kv is None:
            return
        if self.cancelled:
            for j in self.cancelled:
                self._remove(j)
                if self.kv is not None:   # what it computed stays cached
                    self.kv.finished(j, self.iter_no - j.start_iter)
                if j in self.prefilling:
                    self.prefilling.remove(j)
            self.cancelled.clear()
        if self.kv is not None:
            self._admit_kv()
            return
        w = self.waiting
        if not w or self.n >= self.max_seqs:
            return
        # = self._add(j) for each job admitted, inlined with the running sums in locals (the
        # same float operations in the same order)
        now = self.env._now
        it = self.iter_no
        cap = self.max_seqs
        heap, prefilling = self.heap, self.prefilling
        seq, n, dec, nsd, ctx_a, ctx_e = self._seq, self.n, self.dec, self.nsd, self.ctx_a, self.ctx_e
        while w and n < cap:
            j = w.popleft()
            if j.cancelled:
                continue
            j.started = now
            j.finish_iter = fi = it + j.iters_left
            j.start_iter = it
            seq += 1
            j.seq = seq
            heap.push(j)
            n += 1
            dec += j.tokens_per_iter
            nsd += j.sd
            e = j.emit_per_iter
            ctx_a += j.ctx - it * e
            ctx_e += e
            if j.prefill:
                prefilling.append(j)
        self._seq, self.n, self.dec, self.nsd, self.ctx_a, self.ctx_e = seq, n, dec, nsd, ctx_a, ctx_e

    def _next_finish(self) -> int:
        h = self.heap
        while h.top().cancelled:
            h.pop()
        return h.top().finish_iter

    def _advance(self, k: int, spent: float, at: Any = None) -> None:
        """k iterations run, `spent` seconds, ending now (or `at`: a planned prefill's end)."""
        env = self.env
        # (a float: the clock's value; only at t = 0 can SimPy's clock be the int 0, where no
        # iteration ends)
        now: float = env._now if at is None else at
        self.busy_s += spent
        self.last_end = now
        self.iterations += k
        hist = self.batch_hist
        n = self.n
        hist[n] = hist.get(n, 0) + k
        self.area += n * spent
        for d in self.devices:
            d.busy_s += spent
        self.iter_no = it = self.iter_no + k
        pos = self.dec * k
        if self.prefilling:
            first = now - spent + spent / k     # the end of the chunk's first iteration
            for j in self.prefilling:
                pos -= j.tokens_per_iter
                self.prefilled += j.prefill
                if j.first_end is None:         # a preempted job's re-prefill is no first token
                    j.first_end = first
                self.ctx_a += j.prefill
                j.ctx += j.prefill          # so that _remove takes it out again
                j.prefill = 0.0
            self.prefilling.clear()
        self.positions += pos
        h = self.heap
        if not len(h) or h.top().finish_iter > it:
            return
        if self.kv is not None:
            while len(h) and h.top().finish_iter <= it:
                j = h.pop()
                if j.cancelled:
                    continue
                self._remove(j)
                self.kv.finished(j, j.finish_iter - j.start_iter)
                j.iters_left = 0
                j.finished = now
                j.done.succeed()
            return
        # the jobs finishing now: = self._remove(j); j.done.succeed() for each, inlined, with
        # the running sums in locals (the same float operations in the same order)
        q = self._queue
        eid = self._eid
        # the now-queue takes entries due at the present only; a planned prefill's end (`at`, in
        # the past) finishes no job (_plan_decode plans only where none ends with it), so its
        # heap push is never taken
        nq = self._nowq if at is None else None
        dec, nsd, ctx_a, ctx_e = self.dec, self.nsd, self.ctx_a, self.ctx_e
        while len(h) and h.top().finish_iter <= it:
            j = h.pop()
            if j.cancelled:
                continue
            n -= 1
            dec -= j.tokens_per_iter
            nsd -= j.sd
            ctx_a -= j.ctx - j.start_iter * j.emit_per_iter
            ctx_e -= j.emit_per_iter
            j.iters_left = 0
            j.finished = now
            done = j.done                   # = done.succeed(): Event.succeed, env.schedule
            if done._value is not PENDING:
                raise RuntimeError(f"{done} has already been triggered")
            done._ok = True
            done._value = None
            schedule_now(nq, q, (now, NORMAL, take(eid), done))
        self.n, self.dec, self.nsd, self.ctx_a, self.ctx_e = n, dec, nsd, ctx_a, ctx_e

    # --- KV cache (only with a KVSpec) ----------------------------------------------------------
    def _running(self) -> list:
        """(job, iterations done since admission) of the admitted jobs, in admission order."""
        it = self.iter_no
        return [(j, it - j.start_iter) for j in self._order]

    def _admit_kv(self):
        """vLLM V1's order: the running jobs' next iteration first (preempting the job admitted
        last while it does not fit), then, if nothing was preempted, waiting jobs in FIFO order
        while their blocks fit."""
        kv = self.kv
        now_i = self.iter_no
        exact = None                      # the exact usage, computed only where the bound fails
        preempted = False
        if kv.upper(now_i) > kv.capacity:
            exact = kv.current(now_i)             # = kv.usage(self._running())
            while exact > kv.capacity:
                self._preempt(next(reversed(self._order)))   # the job admitted last
                preempted = True
                exact = kv.current(now_i)
        w = self.waiting
        blocked = None
        if preempted:
            blocked = w[0] if w else None
        elif w and self.n < self.max_seqs:
            exact_held = False            # with the per-request sharing, once the bound fails:
            #                               kv.held_total / kv.peek = kv.tally(self._running())'s
            while w and self.n < self.max_seqs:
                j = w[0]
                if j.cancelled:
                    w.popleft()
                    continue
                tokens = held(j, 0)
                limit = kv.limit if self.n else kv.capacity
                if not exact_held and kv.upper(now_i) + tokens + kv.block > limit:
                    exact_held = True
                    kv.held_total(now_i)
                if exact_held and kv.peek(j, tokens) > limit:
                    blocked = j
                    break
                w.popleft()
                miss = kv.prefix_miss(j, j.group in kv.groups)
                if miss:                  # its cached context was evicted: prefill it again
                    j.prefill += miss
                    j.ctx -= miss         # (the cost model's context after the prefill is unchanged)
                self._add(j)
            exact = kv.held_total(now_i) if exact_held else None
        bound = kv.upper(now_i)
        if (kv.cached_tokens and kv.cached_tokens + bound > kv.capacity) or bound > kv.peak:
            if exact is None:
                exact = kv.current(now_i)         # = kv.usage(self._running())
            kv.evict(exact)
            kv.observe(exact)
        kv.blocked(self.env.now, blocked)

    def _preempt(self, j: Job):
        """Preempt by recompute: free j's blocks and requeue it at the front; readmitted, it
        prefills everything it held (context + generated tokens) in its first iteration."""
        done = self.iter_no - j.start_iter
        self._remove(j)
        self.heap.remove(j)
        j.iters_left = j.finish_iter - self.iter_no
        j.started = None                  # waiting again: cancel() treats it as never admitted
        if j in self.prefilling:          # its first iteration never ran: nothing to recompute
            self.prefilling.remove(j)
        elif done:
            tokens = j.kv_base + done * j.emit_per_iter
            redo = math.ceil(tokens - 1e-9)
            # the cost model's context after the re-prefill is what it was before the preemption
            j.ctx = j.ctx + done * j.emit_per_iter - redo
            j.prefill = float(redo)
            j.kv_base = tokens
            self.kv.recomputed_tokens += tokens
        self.kv.preemptions += 1
        self.waiting.appendleft(j)
