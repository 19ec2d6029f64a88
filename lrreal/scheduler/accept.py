"""`accept`: the acceptance protocol (Table 1's step acceptance, "Apt."), as a collection mode.

One step at a time, from the same committed context: the target and the draft each write the
next step (two concurrent requests with the same budget), the verifier compares them, and the
*target's* step is committed whatever the verdict. Repeat until the target's EOS or the budget.

So the output is the target's own text (greedy: what `ar` writes, cut into steps), and every
judged position is one trial of alpha1, the step acceptance at depth 1: no tree, no cancelled
speculation, no "draft not ready" - each judged draft is accepted or not by the verifier alone,
and accepted / judged gets a binomial confidence interval (`lr collect`'s summary,
`lr calibrate`; lrcore/acceptance.py). It is the cheapest way to learn alpha1 for a model
pair and a verifier before running LR.

- Boundary rule (on by default, as in the LR modes): a context that does not end in a stop
  string (the chat prompt; a step cut at --max-step-tokens) is not judged. The target writes that
  step alone (`depth` 0, no draft, `speculation: "none"`, as lr_async records a root without
  children) and it counts in neither judged nor accepted.
- Budgets: both requests get the budget left on the committed path (`Run.step_budget`), so the
  output never passes --max-tokens; an EOS in the target's step ends the answer.
- Step records: `source` is always "target" and `depth` 1 for a judged step; `verify.verdict` is
  the verifier's decision (true: LR would have kept the draft). traces/README.md allows a true
  verdict on a target step in this mode only. A verifier that fails or raises is a recorded
  rejection with its `error`, as in the LR modes (`step_acceptance.reject_reasons`: "verifier").
- Cost: the draft's step runs beside the target's and the verifier after both, so the record's
  wall time is the protocol's own (slower than `ar`); it is a measurement, not a way to decode:
  the summary gives it no speedup and the simulator does not replay it.
"""
from __future__ import annotations

from ..engine import monotonic
from .base import Job, Run, accepted, judge_pair
from .record import ProblemResult, StepLog
from .steps import ends_on_boundary


async def run_accept(run: Run) -> ProblemResult:
    cfg = run.cfg
    log = StepLog(monotonic())
    while True:
        key = f"s{len(log.steps)}"
        text = log.committed_text
        budget = run.step_budget(log.committed_tokens)  # > 0: the loop stops once the budget is spent
        judge = (not cfg.boundary_rule
                 or ends_on_boundary(run.problem.prompt + text, cfg.step_stop))
        jobs = [Job(run.target, run.request("target", key, text, budget))]
        if judge:
            jobs.append(Job(run.draft, run.request("draft", f"{key}.0", text, budget)))
        try:
            t = jobs[0].result = await jobs[0].task
            d = None
            if judge:
                d = jobs[1].result = await jobs[1].task
        finally:  # an engine error or a cancelled run: abort whatever is still running
            for job in jobs:
                if not job.task.done():
                    await job.cancel()
        if d is None:
            log.commit(source="target", text=t.text, tokens=t.tokens, depth=0, draft=None,
                       target=t, verify=None, node=key, speculation="none")
        else:
            verdict = await judge_pair(run, t.text, d.text)
            ok = accepted(verdict)
            log.judged(1, ok, None if ok else "verifier")
            log.commit(source="target", text=t.text, tokens=t.tokens, depth=1, draft=d, target=t,
                       verify=log.verify_rec(verdict), node=key)
        if stop := run.stop_reason(t, log.committed_tokens):
            return log.result(stop, monotonic())
        if t.tokens <= 0:  # no progress and no EOS: never loop on an empty step
            return log.result("error", monotonic())
