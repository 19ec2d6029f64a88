"""Autoregressive decoding (AR), optionally with token-level SD (policy `sd`, k2 > 1).

Steps do not matter to the target alone: the request is one sequence. Its prompt prefill
produces the first token (TTFT), then the remaining tokens decode one per iteration (AR) or in
SD rounds of k2 positions (n-gram drafting is free; a draft model's k2 - 1 passes are charged
inside the target engine's step, as vLLM's speculative decoding does).
"""
from __future__ import annotations


def run(world, req, rec):
    target = world.target
    tokens = req.output_tokens
    stream = world.sd_stream(req) if world.cfg.policy == "sd" else None
    ctx = 0.0
    if req.prompt_tokens:
        pre = target.submit(world.target_job(req, 1, float(req.prompt_tokens), prefill=req.prompt_uncached))
        yield pre.done
        rec.first_output = world.env.now
        tokens -= 1
        ctx = req.prompt_tokens
    if tokens > 0:
        job = target.submit(world.target_job(req, tokens, ctx, stream=stream, new_request=False))
        yield job.done
    for n in req.step_tokens:   # every step is the target's own
        world.commit(rec, "target", n)
