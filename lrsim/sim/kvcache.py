"""KV-cache capacity of one engine: paged blocks, per-job growth, admission and preemption.

The model is vLLM's (Kwon et al., "Efficient Memory Management for Large Language Model Serving
with PagedAttention", SOSP 2023; vLLM V1's scheduler, vllm/v1/core/sched/scheduler.py):

- the cache is a pool of fixed-size blocks (`block_tokens`, vLLM's CacheConfig.block_size: 16
  on GPUs);
  a sequence holding t tokens holds ceil(t / block) blocks;
- a job holds its context, the tokens it has generated, and the positions a speculative
  verification pass writes ahead of them (k2 - 1 drafted tokens: vLLM allocates
  num_lookahead_tokens slots before the pass);
- admission: a waiting job joins the batch only if its blocks fit (FIFO: the head of the queue
  blocks the rest, as vLLM's FCFS policy does);
- growth: when the running jobs' next iteration would need more blocks than the pool has, the
  job admitted last is preempted by recompute (vLLM V1's only mode): its blocks are freed, it
  goes back to the front of the queue, and when readmitted it prefills its whole sequence
  (context + generated tokens) again; no new job is admitted at a boundary that preempted;
- prefix caching (on by default in vLLM V1): the jobs of one request on one engine (the target
  steps of an LR tree, sibling drafts) share the full blocks of their common prefix. The
  simulator counts the shortest context of the group once (its full blocks), and each job's
  remaining tokens on their own: exact for the committed context, conservative for the drafted
  steps that deeper nodes of one path also share;
- between two jobs of a request (a step done, the next not yet admitted) its sequence stays in
  the cache as free, evictable blocks (vLLM keeps freed blocks hashed until it needs them):
  they never block an admission, and when the running jobs need the room the least recently
  used request's are evicted. A job whose request has no job running and whose cached context
  was evicted prefills that context again (the policies otherwise assume it cached). A
  preempted job recomputes its whole sequence (under the pressure that preempted it, its
  blocks are assumed evicted);
- the prefix cache hits whole blocks only, and never a prompt's last token: a new request
  prefills what its engine never saw plus its context's tail past the last full cached block
  (request_prefill; the engine's `prefix_block` is its KV spec's block, 1 without a KV cache).

A job's KV context is max(ctx, prefill): the policies pass the whole context as `ctx` with the
uncached part inside it as `prefill`, or ctx = 0 for a fresh sequence whose context is its
prefill (engine.Job, which keeps ctx - prefill, the context before its first pass).
"""
from __future__ import annotations

import heapq
import math
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from mypy_extensions import mypyc_attr

from lrcore.errors import UserError

# This module is compiled (lrsim/native.py): the numbers that arrive as int, float or NumPy
# scalars (token counts, the jobs' fields, the engine's iteration counts) are `Any`, which keeps
# Python's own values and arithmetic; an `int` or `float` annotation is checked at run time and
# converts an int to a float. KVSpec and the errors stay plain Python classes (native_class=False):
# a Config holds a KVSpec (copied, pickled to worker processes, dataclasses.replace'd) and its
# checks raise UserError for any bad value.

BLOCK_TOKENS = 16            # vLLM's CacheConfig.block_size default on GPUs (vLLM-CPU: 128,
#                              lrsim/calib/kv.py; lr collect sets 32)
GPU_MEMORY_UTILIZATION = 0.9  # vLLM's gpu_memory_utilization default: share of device memory
#                               the engine may use (weights + activations + KV cache)
MAX_BLOCK_TOKENS = 1 << 16


def request_prefill(ctx: Any, unseen: Any, block: Any) -> Any:
    """The tokens a new engine request prefills when its context holds `ctx` tokens, `unseen` of
    which its engine never processed. vLLM's prefix cache hits the longest run of cached full
    blocks and leaves at least the prompt's last token to compute (vllm/v1/core/
    kv_cache_manager.py, get_computed_blocks: at most num_tokens - 1 tokens cached), so the hit
    is floor(min(ctx - unseen, ctx - 1) / block) blocks. block <= 1: the unseen tokens alone (a
    token-granular cache, the simulator's model without a KV spec)."""
    if block <= 1 or ctx <= 0 or unseen > ctx:
        return unseen
    seen = ctx - unseen
    if seen > ctx - 1:
        seen = ctx - 1 if ctx >= 1 else 0.0
    return int(round(ctx - (seen // block) * block))


@mypyc_attr(native_class=False)
class KVCapacityError(UserError):
    """A single sequence that can never fit the engine's KV cache (one line, like every UserError)."""


@mypyc_attr(native_class=False)
class KVNoRoomError(UserError):
    """The weights leave no memory for a KV cache (a planner skips such a candidate)."""


@mypyc_attr(native_class=False)
@dataclass(frozen=True)
class KVSpec:
    # int, int, float: Any, so that __post_init__ (compiled) sees any value and rejects a bad one
    # as a UserError
    capacity_tokens: Any                   # KV slots of the engine's pool, all its TP shards together
    block_tokens: Any = BLOCK_TOKENS       # tokens per block (vLLM's default 16)
    watermark: Any = 0.0                   # share of blocks kept free when admitting (vLLM V0 used
    #                                        0.01; V1 has none), never when the batch is empty
    sizing: Any = field(default=None, compare=False)   # dict | None: how capacity was derived
    #                                        (kv_from_memory), for reports and for re-sizing on more
    #                                        devices (equal resources)
    per_device: bool = True                # capacity grows with the devices (GPU memory); False:
    #                                        a fixed space whatever the cores (vLLM-CPU's
    #                                        VLLM_CPU_KVCACHE_SPACE)

    def __post_init__(self):
        b = self.block_tokens
        if isinstance(b, bool) or not isinstance(b, int) or not 1 <= b <= MAX_BLOCK_TOKENS:
            raise UserError(f"KV cache: block size must be an integer in [1, {MAX_BLOCK_TOKENS}] "
                            f"tokens, got {b!r}")
        c = self.capacity_tokens
        if isinstance(c, bool) or not isinstance(c, int) or c < b:
            raise UserError(f"KV cache: capacity must be an integer >= one block ({b} tokens), "
                            f"got {c!r}")
        w = self.watermark
        if not (isinstance(w, (int, float)) and not isinstance(w, bool) and 0.0 <= w < 0.5):
            raise UserError(f"KV cache: watermark must be in [0, 0.5), got {w!r}")

    @property
    def blocks(self) -> int:
        return self.capacity_tokens // self.block_tokens

    def widened(self, tp_old: Any, tp_new: Any) -> "KVSpec":
        """The pool on tp_new devices instead of tp_old (equal resources): re-sized from memory
        when it was sized that way, else scaled by the device count (conservative: it ignores
        that each device then holds a smaller share of the weights)."""
        if tp_new == tp_old or not self.per_device:
            return self
        s = self.sizing
        if s:
            return kv_from_memory(s["device_gib"], tp_new, s["weights_gib"], s["bytes_per_token"],
                                  utilisation=s["utilisation"], share=s["share"],
                                  block_tokens=self.block_tokens, watermark=self.watermark)
        return KVSpec(max(self.block_tokens, self.capacity_tokens * tp_new // tp_old),
                      self.block_tokens, self.watermark)


def kv_from_memory(device_gib: Any, devices: Any, weights_gib: Any, bytes_per_token: Any,
                   utilisation: Any = GPU_MEMORY_UTILIZATION, share: Any = 1.0,
                   block_tokens: Any = BLOCK_TOKENS, watermark: Any = 0.0,
                   what: str = "model") -> KVSpec:
    """vLLM's sizing: KV bytes = utilisation x memory of the engine's devices - weights (the
    profiled activation peak is left out), in tokens of `bytes_per_token` (2 x layers x KV heads
    x head dim x dtype bytes), whole blocks. `share`: this engine's part of the devices when
    another engine's weights and cache sit on the same ones (shared placement)."""
    if not (bytes_per_token > 0 and device_gib > 0 and devices >= 1 and 0 < share <= 1):
        raise UserError(f"{what}: KV cache sizing needs positive memory, devices, share and KV "
                        f"bytes per token, got {device_gib} GiB x {devices}, share {share}, "
                        f"{bytes_per_token} B/token")
    free = (utilisation * device_gib * devices * share - weights_gib) * 1024 ** 3
    tokens = int(free // bytes_per_token) // block_tokens * block_tokens if free > 0 else 0
    if tokens < block_tokens:
        raise KVNoRoomError(f"{what}: no room for a KV cache: {utilisation:g} x {device_gib:g} GiB x "
                        f"{devices} device(s){'' if share == 1 else f' x share {share:g}'} holds "
                        f"no more than the {weights_gib:.1f} GiB of weights; give it more devices "
                        "or memory")
    return KVSpec(tokens, block_tokens, watermark,
                  sizing={"device_gib": device_gib, "devices": devices, "weights_gib": weights_gib,
                          "bytes_per_token": bytes_per_token, "utilisation": utilisation,
                          "share": share})


def kv_shared(specs: list[KVSpec], what: str = "shared placement") -> list[KVSpec]:
    """Engines whose weights and caches share one set of devices (the first spec's, e.g. draft
    and judge on the target's GPUs): utilisation x their memory less every engine's weights,
    split so that each engine holds the same number of tokens (an LR request keeps about as many
    tokens in the draft's cache as in the target's). Specs given in tokens (no sizing) are kept."""
    if not specs or any(s is None or not s.sizing for s in specs):
        return specs
    s0 = specs[0].sizing
    weights = sum(s.sizing["weights_gib"] for s in specs)
    per_token = sum(s.sizing["bytes_per_token"] for s in specs)
    free = (s0["utilisation"] * s0["device_gib"] * s0["devices"] - weights) * 1024 ** 3
    block = specs[0].block_tokens
    tokens = int(free // per_token) // block * block if free > 0 else 0
    if tokens < block:
        raise KVNoRoomError(f"{what}: no room for the KV caches: {s0['utilisation']:g} x "
                        f"{s0['device_gib']:g} GiB x {s0['devices']} device(s) holds no more than "
                        f"the {weights:.1f} GiB of weights of the {len(specs)} models on them")
    return [KVSpec(tokens, s.block_tokens, s.watermark) for s in specs]


class Usage:
    """Blocks (in tokens) held by a set of jobs, prefix sharing within a request counted once:
    per group, the sum of its jobs' blocks less (n - 1) copies of the full blocks of its
    shortest context."""

    __slots__ = ("block", "groups", "total")

    def __init__(self, block: Any):
        self.block = block
        self.groups: dict = {}        # group -> [sum of blocks (tokens), jobs, shortest context]
        self.total: Any = 0

    def add(self, job, tokens: Any) -> Any:
        """Add a job holding `tokens` tokens; returns the new total."""
        self.total = self.peek(job, tokens, commit=True)
        return self.total

    def peek(self, job, tokens: Any, commit: bool = False) -> Any:
        """The total if a job holding `tokens` tokens were added."""
        b = self.block
        own = math.ceil(tokens / b - 1e-9) * b
        g = job.group
        if g is None:
            return self.total + own
        rec = self.groups.get(g)
        if rec is None:
            if commit:
                self.groups[g] = [own, 1, job.kv_base]
            return self.total + own
        n, low = rec[1] + 1, min(rec[2], job.kv_base)
        before = rec[0] - (rec[1] - 1) * (int(rec[2] // b) * b)
        after = rec[0] + own - (n - 1) * (int(low // b) * b)
        if commit:
            rec[0], rec[1], rec[2] = rec[0] + own, n, low
        return self.total + after - before


def held(job, done: Any, ahead: Any = 0) -> Any:
    """Tokens job holds to run its iteration number done + ahead + 1 since (re)admission: its
    context, what it generated, and the positions a verification pass writes beyond them."""
    return job.kv_base + (done + ahead) * job.emit_per_iter + (job.tokens_per_iter - 1)


class KVCache:
    """One engine's pool and what happened to it (Engine calls it at iteration boundaries)."""

    __slots__ = ("spec", "engine", "block", "capacity", "limit", "peak", "preemptions",
                 "recomputed_tokens", "blocked_s", "blocked_jobs", "_blocked_since", "_blocked_job",
                 "a", "e", "jobs", "shared", "groups", "cached", "cached_tokens", "evicted",
                 "evictions", "prefix_misses", "reprefilled_tokens", "_own", "_held", "_grow", "_tok")

    def __init__(self, spec: KVSpec, engine: str):
        self.spec = spec
        self.engine = engine
        self.block = spec.block_tokens
        self.capacity = spec.blocks * spec.block_tokens
        self.limit = self.capacity - math.floor(spec.watermark * spec.blocks) * spec.block_tokens
        self.peak: Any = 0
        self.preemptions = 0
        self.recomputed_tokens = 0.0
        self.blocked_s = 0.0               # time the queue's head waited for blocks
        self.blocked_jobs = 0              # jobs that waited for blocks at least once
        self._blocked_since: Any = None
        self._blocked_job: Any = None
        self.a = 0.0                       # running sums of the upper bound (on_add, upper)
        self.e = 0.0
        self.jobs = 0
        self.shared = 0
        self.groups: dict = {}             # request -> KV contexts of its admitted jobs
        self.cached: OrderedDict = OrderedDict()   # request -> tokens of its last sequence, free to
        #                                           evict, least recently used first
        self.cached_tokens = 0
        self.evicted: set = set()          # requests whose cached sequence was evicted
        self.evictions = 0                 # cached sequences evicted for running jobs
        self.prefix_misses = 0             # jobs that found their cached context evicted
        self.reprefilled_tokens = 0.0      # context tokens those jobs prefilled again
        self._own = 0                      # exact usage, kept as jobs join, leave and grow
        #                                    (current): the sum of the admitted jobs' own blocks
        #                                    (tokens, job.kv_own) as of their last refresh
        self._held = 0                     # the same with held()'s arithmetic (job.kv_held), the
        #                                    one tally() and Usage use (admission)
        self._grow: list = []              # heap (iteration, token, job): no admitted job's own
        #                                    blocks grow before its entry's iteration
        self._tok = 0                      # admission counter: an entry is live while its token
        #                                    is its job's kv_tok

    # --- an O(1) upper bound on the blocks the admitted jobs hold (the engine's hot path) -------
    # exact usage = sum over jobs of ceil(held / block) x block, less the shared prefixes; with
    # held = kv_base + (I - start) e + k - 1 at iteration index I, it is at most
    # a + I e + jobs x block - shared, with running sums kept as jobs join and leave. Where that
    # bound settles a question (fits, no new peak) the exact sum is not computed; where it does
    # not, the exact sum is kept incrementally too (current, at, held_total, peek below): each
    # job's blocks are recomputed only when they may have grown, not every job at every boundary.
    def on_add(self, job) -> None:
        """job was admitted at iteration job.start_iter (the engine's current one)."""
        self.a += job.kv_base - job.start_iter * job.emit_per_iter + job.tokens_per_iter - 1
        self.e += job.emit_per_iter
        self.jobs += 1
        self._tok += 1
        job.kv_tok = self._tok
        job.kv_own = job.kv_held = 0
        self._refresh(job, job.start_iter)
        if len(self._grow) > 4 * self.jobs + 64:     # drop the entries of jobs gone
            self._grow = [x for x in self._grow if x[2].kv_tok == x[1]]
            heapq.heapify(self._grow)
        if job.group is not None:
            bases = self.groups.setdefault(job.group, [])
            self.shared -= self._shared(bases)
            bases.append(job.kv_base)
            self.shared += self._shared(bases)

    def on_remove(self, job) -> None:
        self.a -= job.kv_base - job.start_iter * job.emit_per_iter + job.tokens_per_iter - 1
        self.e -= job.emit_per_iter
        self.jobs -= 1
        self._own -= job.kv_own
        self._held -= job.kv_held
        job.kv_tok = 0
        if job.group is not None:
            bases = self.groups[job.group]
            self.shared -= self._shared(bases)
            bases.remove(job.kv_base)
            if bases:
                self.shared += self._shared(bases)
            else:
                del self.groups[job.group]

    # --- the exact usage, incrementally: a job's own blocks only grow while it is admitted (its
    # KV context is fixed, `done` only rises), so each is refreshed when a heap says it may have
    # grown, with the very expression usage() evaluates; the shared prefixes are `shared`
    def _refresh(self, job, iteration: Any) -> None:
        """job's own blocks at `iteration`, by usage()'s arithmetic (done + ahead = done) and by
        Usage's (held(job, done), which adds tokens_per_iter - 1 in one piece: the two can differ
        by a rounding), and the first iteration at which they may grow next (never later than
        they do)."""
        b = self.block
        done = iteration - job.start_iter
        e = job.emit_per_iter
        base = job.kv_base + done * e
        own = math.ceil((base + job.tokens_per_iter - 1) / b - 1e-9) * b
        self._own += own - job.kv_own
        job.kv_own = own
        hold = math.ceil((base + (job.tokens_per_iter - 1)) / b - 1e-9) * b   # held(job, done)
        self._held += hold - job.kv_held
        job.kv_held = hold
        if e > 0:
            # held grows past `low` once done > (low + 1e-9 b - kv_base - tokens_per_iter + 1) / e;
            # 1e-3 of an iteration below that absorbs this estimate's rounding (an early refresh
            # only recomputes the same values; a late one would be wrong)
            low = own if own <= hold else hold
            est = ((low / b + 1e-9) * b - job.kv_base - job.tokens_per_iter + 1) / e
            if est < 1e15:
                nxt = max(done + 1, math.floor(est - 1e-3) + 1)
                heapq.heappush(self._grow, (job.start_iter + nxt, job.kv_tok, job))

    def current(self, iteration: Any) -> Any:
        """usage() of every admitted job at `iteration` (the engine's current iteration, which
        never goes back), without visiting the jobs whose blocks did not grow."""
        h = self._grow
        while h and h[0][0] <= iteration:
            _, tok, job = heapq.heappop(h)
            if job.kv_tok == tok:
                self._refresh(job, iteration)
        return self._own - self.shared

    def held_total(self, iteration: Any) -> Any:
        """tally(running).total at `iteration` (the engine's current one)."""
        self.current(iteration)
        return self._held - self.shared

    def peek(self, job, tokens: Any) -> Any:
        """tally(running).peek(job, tokens) at the iteration of the last current() / held_total()
        (jobs admitted since included): the blocks held if job, holding `tokens`, joined."""
        b = self.block
        total = self._held - self.shared + math.ceil(tokens / b - 1e-9) * b
        g = job.group
        if g is not None:
            bases = self.groups.get(g)
            if bases:
                low = min(bases)
                new = job.kv_base if job.kv_base < low else low
                total += (len(bases) - 1) * (int(low // b) * b) - len(bases) * (int(new // b) * b)
        return total

    def at(self, iteration: Any, ahead: Any) -> Any:
        """usage() of every admitted job `ahead` iterations after `iteration` (the engine's
        current one): current(iteration) plus the growth of the jobs whose heap entry falls due
        by then (a walk of the heap that stops below any later entry), the same arithmetic."""
        total = self.current(iteration)
        h = self._grow
        if ahead <= 0 or not h:
            return total
        t = iteration + ahead
        b = self.block
        ceil = math.ceil
        size = len(h)
        stack = [0]
        while stack:
            i = stack.pop()
            key, tok, job = h[i]
            if key > t:
                continue
            if job.kv_tok == tok:
                total += ceil((job.kv_base + (t - job.start_iter) * job.emit_per_iter
                               + job.tokens_per_iter - 1) / b - 1e-9) * b - job.kv_own
            i = 2 * i + 1
            if i < size:
                stack.append(i)
                if i + 1 < size:
                    stack.append(i + 1)
        return total

    def _shared(self, bases: list) -> Any:
        return (len(bases) - 1) * (int(min(bases) // self.block) * self.block) if len(bases) > 1 else 0

    def upper(self, iteration: Any) -> Any:
        """At least the exact usage at iteration index `iteration` (+1 token against rounding)."""
        return self.a + iteration * self.e + self.jobs * self.block - self.shared + 1.0

    def check_fits(self, job) -> None:
        """A job whose last iteration alone needs more blocks than the pool can never run."""
        need = held(job, job.iters_left - 1)
        blocks = math.ceil(need / self.block - 1e-9)
        if blocks * self.block > self.capacity:
            raise KVCapacityError(
                f"engine {self.engine}: one sequence grows to {need:,.0f} KV tokens "
                f"({blocks:,} blocks of {self.block}), more than its KV cache of "
                f"{self.capacity:,} tokens: give the model more KV cache (kv_cache_tokens, memory "
                "or devices) or shorten the requests")

    def tally(self, entries, ahead: Any = 0) -> Usage:
        """The blocks held by (job, iterations done) entries, `ahead` iterations later."""
        u = Usage(self.block)
        for j, done in entries:
            u.add(j, held(j, done, ahead))
        return u

    def usage(self, entries, ahead: Any = 0) -> Any:
        """Usage(...).total of the same entries, in one tight loop (the simulator's hot spot
        under load: called at every batch boundary)."""
        b = self.block
        total = 0
        groups: dict = {}
        ceil = math.ceil
        for j, done in entries:
            own = ceil((j.kv_base + (done + ahead) * j.emit_per_iter + j.tokens_per_iter - 1) / b
                       - 1e-9) * b
            g = j.group
            if g is None:
                total += own
                continue
            r = groups.get(g)
            if r is None:
                groups[g] = [own, 1, j.kv_base]
            else:
                r[0] += own
                r[1] += 1
                if j.kv_base < r[2]:
                    r[2] = j.kv_base
        for own, n, low in groups.values():
            total += own - (n - 1) * (int(low // b) * b)
        return total

    def iterations_fitting(self, iteration: Any, n: Any) -> tuple[Any, Any]:
        """The most iterations m (1..n) the batch admitted at `iteration` (the engine's current
        one) can run before its blocks overflow the pool (the first always fits: the boundary's
        admission/preemption made sure of it), and the blocks it holds in the last of them."""
        last = self.at(iteration, n - 1) if n > 1 else None
        if last is None or last <= self.capacity:
            return n, last if last is not None else self.at(iteration, 0)
        lo, hi = 0, n - 1          # usage(lo) fits, usage(hi) does not
        fit = None
        while hi - lo > 1:
            mid = (lo + hi) // 2
            u = self.at(iteration, mid)
            if u <= self.capacity:
                lo, fit = mid, u
            else:
                hi = mid
        return lo + 1, fit if fit is not None else self.at(iteration, lo)

    def finished(self, job, iterations: Any) -> None:
        """job left the batch (done, or cancelled) after `iterations` since its admission: the
        sequence it computed stays cached, free (a request keeps its longest one)."""
        g = job.group
        if g is None:
            return
        seq = job.kv_base + iterations * job.emit_per_iter if iterations else job.ctx
        tokens = math.ceil(seq / self.block - 1e-9) * self.block
        old = self.cached.pop(g, 0)
        self.cached[g] = max(old, tokens)
        self.cached_tokens += self.cached[g] - old

    def prefix_miss(self, job, group_running: bool) -> int:
        """Context tokens job must prefill again because its request's cached sequence was
        evicted (0 when a job of its request is running: it holds the common prefix; 0 when
        nothing was evicted: the policy's own prefix-cache accounting stands). The request's
        cached sequence now belongs to the running job."""
        g = job.group
        if g is None:
            return 0
        c = self.cached.pop(g, None)
        if c is not None:
            self.cached_tokens -= c
        lost = g in self.evicted
        self.evicted.discard(g)
        assumed = job.ctx                 # what the policy takes as cached (Job keeps ctx - prefill)
        if not lost or assumed <= 0 or group_running:
            return 0
        miss = math.ceil(assumed - 1e-9)
        self.prefix_misses += 1
        self.reprefilled_tokens += miss
        return miss

    def evict(self, running_tokens: Any) -> None:
        """Evict least recently used cached sequences until they fit beside the running jobs."""
        room = self.capacity - running_tokens
        while self.cached and self.cached_tokens > room:
            g, t = self.cached.popitem(last=False)
            self.cached_tokens -= t
            self.evicted.add(g)
            self.evictions += 1

    def observe(self, tokens: Any) -> None:
        if tokens > self.peak:
            self.peak = tokens

    def blocked(self, now: Any, job) -> None:
        """The queue's head `job` (None: nothing waits for blocks) at a boundary at `now`."""
        if job is not None and self._blocked_since is None:
            self._blocked_since = now
        elif job is None and self._blocked_since is not None:
            self.blocked_s += now - self._blocked_since
            self._blocked_since = None
        if job is not None and job is not self._blocked_job:
            self._blocked_job = job
            self.blocked_jobs += 1

    def summary(self) -> dict:
        return {"capacity_tokens": self.capacity, "block_tokens": self.block,
                "peak_tokens": self.peak, "peak_fraction": self.peak / self.capacity,
                "preemptions": self.preemptions, "recomputed_tokens": self.recomputed_tokens,
                "blocked_s": self.blocked_s, "blocked_jobs": self.blocked_jobs,
                "evictions": self.evictions, "prefix_misses": self.prefix_misses,
                "reprefilled_tokens": self.reprefilled_tokens}
