"""Synchronous Lookahead Reasoning (paper, Algorithm 1; App. B Theorem 1).

One cycle from the committed context:
 1. the drafter writes g = k1 - 1 steps one after another (each conditioned on the previous);
 2. the target writes g + 1 steps in one batch: t_i from context + d_1..d_(i-1);
 3. the verifier judges (t_i, d_i) in parallel; j = first rejection;
 4. commit d_1..d_(j-1) and t_j (all accepted: d_1..d_g and t_(g+1)).
Near the end of a request g shrinks so that nothing is drafted past the last step.
Prefix caching: the target re-reads only the draft steps it has not seen (prefill), the drafter
only the committed target step.
"""
from __future__ import annotations


def run(world, req, rec):
    env, cfg, wl = world.env, world.cfg, world.workload
    lens = req.step_tokens
    S = len(lens)
    stream = world.sd_stream(req)
    pos = 0
    ctx = float(req.prompt_tokens)
    pre_d = pre_t = req.prompt_tokens
    while pos < S:
        g = min(cfg.k1 - 1, S - pos - 1)
        # 1. sequential drafting
        for i in range(g):
            job = world.draft.submit(world.draft_job(lens[pos + i], ctx + sum(lens[pos:pos + i]),
                                                     prefill=pre_d if i == 0 else 0))
            yield job.done
        # 2. g + 1 target steps in one batch (equal step costs under --ideal share one SD draw)
        shared = stream.rounds_for(lens[pos], req.rng, world.sd) if (stream and cfg.ideal) else None
        jobs = []
        for i in range(g + 1):
            prefix = sum(lens[pos:pos + i])
            jobs.append(world.target.submit(world.target_job(
                req, lens[pos + i], ctx + prefix, prefill=pre_t + prefix, stream=stream, rounds=shared)))
        yield env.all_of([j.done for j in jobs])
        # 3. parallel judgement of the g pairs
        if g:
            yield env.all_of([world.verdict_delay(lens[pos + i], lens[pos + i]) for i in range(g)])
        # 4. in-order acceptance: the verdicts after the first rejection do not matter
        j = 0
        while j < g:
            ok = wl.step_accept(req, pos + j, j + 1)
            world.stats.judged(j + 1, ok)
            if not ok:
                break
            j += 1
        for i in range(j):
            world.commit(rec, "draft", lens[pos + i])
        world.commit(rec, "target", lens[pos + j])
        world.stats.cycle(j + 1)
        ctx += sum(lens[pos:pos + j + 1])
        pre_d, pre_t = lens[pos + j], 0
        pos += j + 1
