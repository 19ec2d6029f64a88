"""`ar` and `sd`: the target alone (with n-gram SD inside the engine for `sd`).

One request for the whole answer (the fair baseline: no per-step request overhead); its stream is
cut into steps at the stop strings (--step-stop, default "\n\n") as tokens arrive, so the trace
still has per-step timings.
"""
from __future__ import annotations

from ..engine import GenResult, monotonic
from .base import Run
from .record import ProblemResult, StepLog
from .steps import StreamSegmenter


async def run_ar(run: Run) -> ProblemResult:
    t0 = monotonic()
    log = StepLog(t0)
    seg = StreamSegmenter(start=t0, stops=run.cfg.step_stop)
    req = run.request("target", "ar", "", run.cfg.max_tokens, step=False)
    from ..engine import Progress

    def on_update(p):
        now = monotonic()
        if log.first_output is None:   # the stream's first token: TTFT (the steps commit at the end)
            log.first_output = now
        seg.on_update(p, now)

    progress = Progress(start=t0, on_update=on_update)
    res = await run.target.generate(req, progress)
    cuts = seg.finish(res.text, res.tokens, res.end)
    for i, cut in enumerate(cuts):
        # the request's prompt (and its prefix-cache hit) belongs to the first step: the later
        # steps continue the same request, with no prompt of their own
        prompt = dict(prompt_tokens=res.prompt_tokens, cached_tokens=res.cached_tokens) if i == 0 else {}
        span = GenResult(text=cut["text"], tokens=cut["tokens"],
                         finish=res.finish if i == len(cuts) - 1 else "", start=cut["start"],
                         end=cut["end"], **prompt)
        log.commit(source="target", text=cut["text"], tokens=cut["tokens"], depth=0, draft=None,
                   target=span, verify=None)
    finish = "eos" if res.finish == "eos" else "budget"
    return log.result(finish, monotonic())
