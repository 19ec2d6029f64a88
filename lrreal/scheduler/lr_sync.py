"""`lr-sync`: the paper's Algorithm 1, one synchronous cycle at a time (for theory comparisons).

Per cycle, with gamma = --depth:
  1. the draft proposes d1..dg one after another from the accepted context;
  2. the target generates g+1 steps concurrently (continuous batching): t1 from the context,
     t(i+1) from context + d1..di;
  3. the verifier compares (t_i, d_i); j = the first rejection;
  4. commit d1..d(j-1) then t_j; if all g are accepted, commit d1..dg and t(g+1).
Drafting stops early at an EOS, a spent budget, or (boundary rule) a draft that does not end on a
step boundary. Budgets and EOS truncate exactly, as in the asynchronous scheduler.
"""
from __future__ import annotations

import asyncio

from ..engine import monotonic
from .base import Job, Run, accepted, judge_pair
from .record import ProblemResult, StepLog
from .steps import ends_on_boundary


async def _finished(job: Job):
    job.result = await job.task
    return job.result


async def run_lr_sync(run: Run) -> ProblemResult:
    cfg = run.cfg
    log = StepLog(monotonic())
    while True:
        key = f"s{len(log.steps)}"
        # 1. Draft gamma steps sequentially.
        drafts = []
        ctx, ctx_used = log.committed_text, log.committed_tokens
        for i in range(cfg.depth):
            if cfg.boundary_rule and not ends_on_boundary(run.problem.prompt + ctx, cfg.step_stop):
                break
            budget = run.step_budget(ctx_used)
            if budget <= 0:
                break
            job = Job(run.draft, run.request("draft", f"{key}.{i}", ctx, budget))
            d = await _finished(job)
            drafts.append(d)
            ctx, ctx_used = ctx + d.text, ctx_used + d.tokens
            if d.finish == "eos":
                break
        # 2. Target steps for every prefix, concurrently.
        contexts, c_text, c_used = [], log.committed_text, log.committed_tokens
        for i in range(len(drafts) + 1):
            if i > 0:
                d = drafts[i - 1]
                if d.finish == "eos":
                    break
                c_text, c_used = c_text + d.text, c_used + d.tokens
            if run.step_budget(c_used) <= 0:
                break
            contexts.append((c_text, c_used))
        jobs = [Job(run.target, run.request("target", f"{key}.t{i}", c, run.step_budget(u)))
                for i, (c, u) in enumerate(contexts)]
        targets = await asyncio.gather(*(_finished(j) for j in jobs))
        # 3. Verify all pairs (independent calls), then find the first rejection.
        pairs = list(zip(targets, drafts))
        verdicts = await asyncio.gather(*(judge_pair(run, t.text, d.text) for t, d in pairs))
        stop = None
        for i, d in enumerate(drafts):
            v = verdicts[i] if i < len(verdicts) else None
            if v is not None and accepted(v):
                log.judged(i + 1, True)
                log.commit(source="draft", text=d.text, tokens=d.tokens, depth=i + 1, draft=d,
                           target=targets[i], verify=log.verify_rec(v), node=f"{key}.{i}")
                stop = run.stop_reason(d, log.committed_tokens)
                if stop:
                    break
                continue
            # First rejection: commit the target's step at this position (if it was generated).
            log.judged(i + 1, False, "verifier" if v is not None else "no-target")
            for d_rest in drafts[i + 1:]:
                log.discarded("draft", d_rest, 0)
            for t_rest in targets[i + 1:]:
                log.discarded("target", t_rest, 0)
            if i < len(targets):
                t = targets[i]
                log.commit(source="target", text=t.text, tokens=t.tokens, depth=i + 1, draft=d,
                           target=t, verify=log.verify_rec(v), node=f"{key}.t{i}")
                stop = run.stop_reason(t, log.committed_tokens)
            break
        else:
            # All drafts accepted (or none proposed): commit the bonus target step t(g+1).
            i = len(drafts)
            if stop is None and i < len(targets):
                t = targets[i]
                log.commit(source="target", text=t.text, tokens=t.tokens, depth=0, draft=None,
                           target=t, verify=None, node=f"{key}.t{i}")
                stop = run.stop_reason(t, log.committed_tokens)
            elif stop is None:
                stop = "budget"
        if stop:
            return log.result(stop, monotonic())
