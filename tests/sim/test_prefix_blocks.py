"""The prefix cache's block granularity (kvcache.request_prefill): a new engine request prefills
what its engine never saw plus the context's tail past the last full cached block, and never
less than its last token; the engine's `prefix_block` is its KV spec's block (1 without one).
And the cost model's context: a job's prefill is counted in its context once (engine.Job keeps
ctx - prefill until the first pass adds it)."""
from dataclasses import replace

import pytest
import simpy

from lrsim.sim.build import Options, build
from lrsim.sim.devices import DevicePool
from lrsim.sim.engine import Engine, Job
from lrsim.sim.kvcache import KVSpec, request_prefill
from lrsim.sim.latency import Roofline
from lrsim.sim.runner import run


@pytest.mark.parametrize("ctx,unseen,block,want", [
    (100, 10, 32, 36),    # 90 seen: 2 full blocks (64) cached, 36 to compute
    (100, 0, 32, 4),      # all seen: 3 blocks cached, the partial block's 4 tokens again
    (64, 0, 32, 32),      # all seen, a whole number of blocks: the last token is never cached
    (64, 64, 32, 64),     # nothing seen: all of it
    (100, 10, 1, 10),     # a token-granular cache: the unseen tokens alone
    (100, 0, 1, 0),
    (0, 30, 32, 30),      # a fresh sequence (ctx = 0): its prefill is its context
    (20, 30, 32, 30),     # more unseen than context (no such policy job): left as given
])
def test_request_prefill_rounds_the_cached_prefix_down_to_whole_blocks(ctx, unseen, block, want):
    assert request_prefill(ctx, unseen, block) == want


def test_a_jobs_prefill_is_counted_in_its_cost_context_once():
    # 1 s + 0.01 s per context token an iteration (knee far away); a job with 100 tokens of
    # context, 30 of them unseen, 3 iterations: the prefill pass reads the 70 cached tokens, the
    # two decode passes (one chunk, costed at its start) 100 + 1 each. Counting the prefill twice
    # (the old bookkeeping: 100, then 130 + 1) would cost 0.9 s more.
    env = simpy.Environment()
    lat = Roofline(base_s=1.0, knee_tokens=1e9, per_ctx_token_s=0.01)
    e = Engine(env, "t", lat, DevicePool(env, {"d0": "gpu"}).place("t", ["d0"]))
    j = Job(env, 3, ctx=100, prefill=30)
    assert (j.ctx, j.kv_base) == (70, 100)
    e.submit(j)
    env.run()
    assert e.busy_s == pytest.approx(3.0 + 0.01 * (70 + 101 + 101))
    fresh = Job(env, 3, ctx=0, prefill=30)       # ctx = 0: its context is its prefill
    assert (fresh.ctx, fresh.kv_base) == (0, 30)


def _submitted(cfg):
    """[(role, ctx, prefill, request)] of every job the policy's run submits, as submitted."""
    seen, submit = [], Engine.submit
    roles = {cfg.target.name: "target", **({cfg.draft.name: "draft"} if cfg.draft else {})}

    def logged(self, job):
        seen.append((roles.get(self.name, self.name), job.kv_base, job.prefill, job.group))
        return submit(self, job)

    Engine.submit = logged
    try:
        run(cfg)
    finally:
        Engine.submit = submit
    return seen


@pytest.mark.parametrize("policy,knobs", [("lr-async", {"depth": 2}), ("lr-sync", {"k1": 3})])
def test_lr_step_jobs_prefill_in_whole_blocks_of_the_kv_spec(policy, knobs):
    cfg = build(Options(policy=policy, requests=4, steps=10, kv_cache_tokens=1 << 30, **knobs))
    cfg = replace(cfg, target=replace(cfg.target, kv=KVSpec(1 << 30, 32)),
                  draft=replace(cfg.draft, kv=KVSpec(1 << 30, 32)))
    blocked = _submitted(cfg)
    token = _submitted(replace(cfg, target=replace(cfg.target, kv=KVSpec(1 << 30, 1)),
                                            draft=replace(cfg.draft, kv=KVSpec(1 << 30, 1))))
    steps = [(name, ctx, pre) for name, ctx, pre, _ in blocked if name in ("target", "draft") and ctx > 0]
    assert steps and all(pre >= 1 and (ctx - pre) % 32 == 0 and ctx - pre >= 0 for _, ctx, pre in steps)
    # every job a token-granular cache prefills at most what the block cache does, and some less
    tok = {name: sum(pre for n, ctx, pre, _ in token if n == name and ctx > 0) for name in ("target", "draft")}
    blk = {name: sum(pre for n, ctx, pre in steps if n == name) for name in ("target", "draft")}
    assert all(blk[n] > tok[n] for n in blk), (blk, tok)
    # and the rounding leaves the cache its whole blocks: no job prefills more than a block past
    # the most a token-granular job prefilled, and a job prefills its whole context only where the
    # token-granular cache made it too (its engine's first sight of the request); a full
    # re-prefill of every job (ctx - pre = 0) would pass the divisibility check above, not these
    most = max(pre for n, ctx, pre, _ in token if n in ("target", "draft") and ctx > 0)
    assert all(pre < most + 32 for _, _, pre in steps), most

    def whole(jobs):
        return sum(pre >= ctx for n, ctx, pre, *_ in jobs if n in ("target", "draft") and ctx > 0)
    assert whole(steps) == whole(token) < len(steps) / 4, (whole(steps), whole(token), len(steps))


def test_lr_sync_jobs_are_the_token_cache_jobs_with_their_prefill_rounded():
    """lr-sync's jobs do not depend on timing: the same jobs with whole blocks, each prefilling
    exactly request_prefill of what the token-granular cache prefilled (the unseen tokens)."""
    cfg = build(Options(policy="lr-sync", k1=3, requests=3, steps=10, kv_cache_tokens=1 << 30))
    runs = []
    for b in (1, 32):
        kv = KVSpec(1 << 30, b)
        runs.append(_submitted(replace(cfg, target=replace(cfg.target, kv=kv),
                                                    draft=replace(cfg.draft, kv=kv))))
    token, blocked = ({(role, g): [] for role, _, _, g in runs[0]} for _ in range(2))
    for run_, out in zip(runs, (token, blocked)):
        for role, ctx, pre, g in run_:
            out[(role, g)].append((ctx, pre))
    assert blocked.keys() == token.keys() and any(pre for jobs in token.values() for _, pre in jobs)
    for key, jobs in token.items():
        assert blocked[key] == [(ctx, request_prefill(ctx, pre, 32)) for ctx, pre in jobs]


def test_ar_prompt_is_rounded_and_its_stream_goes_on_in_the_same_request():
    # 300 prompt tokens, 100 of them cached: 3 whole blocks (96) hit, 204 to prefill; the rest
    # of the answer decodes in the same request, which prefills nothing again
    cfg = build(Options(policy="ar", requests=3, steps=8, kv_cache_tokens=1 << 30))
    cfg = replace(cfg, target=replace(cfg.target, kv=KVSpec(1 << 30, 32)),
                  workload=replace(cfg.workload, prompt_tokens=300, prompt_cached=100))
    jobs = [(ctx, pre) for name, ctx, pre, _ in _submitted(cfg) if name == "target"]
    assert sorted(jobs) == [(300, 0)] * 3 + [(300, 204)] * 3


def test_lr_adaptive_depth_0_writes_on_in_one_request_and_lr_stage_prefills_nothing(monkeypatch):
    """lr-adaptive at depth 0 is one target request writing step after step (the real
    scheduler's ARStream): after the prompt's job, its steps prefill nothing, block or not. The
    stage model's jobs are no new requests either (the theory's cost is per step)."""
    from dataclasses import replace as dc_replace

    from lrcore.adaptive import Controller

    def ar_only(self, est):
        d = orig(self, est)
        return dc_replace(d, depth=0, width=1, k2=1)

    orig = Controller.decide
    monkeypatch.setattr(Controller, "decide", ar_only)
    kv = KVSpec(1 << 30, 32)
    for policy in ("lr-adaptive", "lr-stage"):
        cfg = build(Options(policy=policy, requests=2, steps=10, kv_cache_tokens=1 << 30))
        cfg = replace(cfg, target=replace(cfg.target, kv=kv), draft=replace(cfg.draft, kv=kv))
        jobs = [(ctx, pre) for role, ctx, pre, _ in _submitted(cfg) if role == "target"]
        prompted = [(ctx, pre) for ctx, pre in jobs if pre]
        if policy == "lr-adaptive":      # each request's prompt job, then its steps on the stream
            assert len(jobs) > 2 * 5 and prompted == [(300, 300)] * 2
        else:                            # the stage model: no prefill anywhere
            assert jobs and prompted == []
