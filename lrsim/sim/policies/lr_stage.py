"""The paper's asynchronous *stage* model (App. B Theorem 2, App. C), run on the engines.

Used to validate S1/S2 and to see what that idealisation predicts on real-shaped hardware. A
stage emits X + 1 steps (X = accepted drafts before the first rejection):
    k1 <  ceil(1/c1)  (S2): ceil((X+1)/k1) batched target rounds of up to k1 steps, then
                            X mod k1 sequential draft steps;
    k1 >= ceil(1/c1)  (S1): X sequential draft steps, then one target step (the drafter paces).
c1 is the draft/target cost ratio of one step (single sequence, from the latency models). The
stage model's steps prefill nothing (the theory's cost is per step): no job is a new request
whose context the prefix cache rounds to whole blocks.
The stage's verdicts are awaited after its jobs, in parallel (judge_timing is lr-async's: the
stage model has no tree of drafts to judge early).
"""
from __future__ import annotations

import math

from ...theory.formulas import depth_limit


def run(world, req, rec):
    env, cfg, wl = world.env, world.cfg, world.workload
    lens = req.step_tokens
    S = len(lens)
    k1 = cfg.k1
    limit = float(depth_limit(cfg.stage_c1))
    stream = world.sd_stream(req)
    ctx = float(req.prompt_tokens)
    pos = 0

    def drafts(start, count):
        for i in range(count):
            job = world.draft.submit(world.draft_job(lens[start + i], ctx + sum(lens[pos:start + i]),
                                                     req=req, new_request=False))
            yield job.done

    def targets(start, count):
        jobs = [world.target.submit(world.target_job(req, lens[start + i], ctx + sum(lens[pos:start + i]),
                                                     stream=stream, new_request=False))
                for i in range(count)]
        yield env.all_of([j.done for j in jobs])

    while pos < S:
        x = 0
        while pos + x < S - 1:
            ok = wl.step_accept(req, pos + x, min(x + 1, k1))
            world.stats.judged(min(x + 1, k1), ok)
            if not ok:
                break
            x += 1
        if k1 >= limit:
            yield from drafts(pos, x)
            yield from targets(pos + x, 1)
        else:
            left, start = x + 1, pos
            for _ in range(math.ceil((x + 1) / k1)):
                n = min(k1, left)
                yield from targets(start, n)
                start += n
                left -= n
            yield from drafts(pos, x % k1)
        if x:
            yield env.all_of([world.verdict_delay(lens[pos + i], lens[pos + i]) for i in range(x)])
        for i in range(x):
            world.commit(rec, "draft", lens[pos + i])
        world.commit(rec, "target", lens[pos + x])
        world.stats.cycle(x + 1)
        ctx += sum(lens[pos:pos + x + 1])
        pos += x + 1
