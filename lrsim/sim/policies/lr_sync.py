"""Synchronous Lookahead Reasoning (paper, Algorithm 1; App. B Theorem 1).

One cycle from the committed context:
 1. the drafter writes g = k1 - 1 steps one after another (each conditioned on the previous);
 2. the target writes g + 1 steps in one batch: t_i from context + d_1..d_(i-1);
 3. the verifier judges (t_i, d_i) in parallel; j = first rejection;
 4. commit d_1..d_(j-1) and t_j (all accepted: d_1..d_g and t_(g+1)).
Near the end of a request g shrinks so that nothing is drafted past the last step.
Prefix caching: the target re-reads only the draft steps it has not seen (prefill), the drafter
only the committed tokens it has not processed. The workload hooks `can_draft` (boundary rule)
and `spec_tokens` (recorded job lengths) work as in lr_async.py: drafting stops at a context
that does not end on a step boundary, so such a cycle is the target's step alone.
"""
from __future__ import annotations


def run(world, req, rec):
    env, cfg, wl = world.env, world.cfg, world.workload
    lens = req.step_tokens
    S = len(lens)
    stream = world.sd_stream(req)
    can_draft = getattr(wl, "can_draft", None)
    spec_len = getattr(wl, "spec_tokens", None)

    def job_len(kind, position, root):
        n = spec_len(req, kind, position, root) if spec_len is not None else None
        return n if n else lens[position]

    pos = 0
    ctx = float(req.prompt_tokens)
    pre_t = req.prompt_uncached
    d_cached = float(req.draft_cached)  # committed tokens the drafter has processed
    while pos < S:
        g = min(cfg.k1 - 1, S - pos - 1)
        if can_draft is not None:       # drafting stops at the first context off a boundary
            g = next((i for i in range(g) if not can_draft(req, pos + i)), g)
        # 1. sequential drafting
        dl = [job_len("draft", pos + i, pos) for i in range(g)]
        for i in range(g):
            job = world.draft.submit(world.draft_job(dl[i], ctx + sum(dl[:i]), req=req,
                                                     prefill=int(ctx - d_cached) if i == 0 else 0))
            yield job.done
        # 2. g + 1 target steps in one batch (equal step costs under --ideal share one SD draw)
        shared = stream.rounds_for(lens[pos], req.rng, world.sd) if (stream and cfg.ideal) else None
        jobs = []
        for i in range(g + 1):
            prefix = sum(dl[:i])
            jobs.append(world.target.submit(world.target_job(
                req, job_len("target", pos + i, pos), ctx + prefix, prefill=pre_t + prefix,
                stream=stream, rounds=shared)))
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
        if g:                           # the drafter processed the context and its accepted drafts
            d_cached = ctx + sum(lens[pos:pos + j])
        ctx += sum(lens[pos:pos + j + 1])
        pre_t = 0
        pos += j + 1
