"""`lr` / `lr+sd`: asynchronous Lookahead Reasoning over a tree of speculative steps.

Event-driven: every engine request is an asyncio task whose completion posts an event on a
queue; the loop awaits the queue (no polling). The rules, after the reference implementation
(the authors' code, github.com/hao-ai-lab/LookaheadReasoning) with its weak points fixed:

- The root stands for the committed context; it asks the target for the next step and has
  `width` children drafting that step.
- When a node's draft finishes, the node asks the target for the step after its draft and, while
  it is fewer than `depth` levels below the root, spawns `width` child drafts.
- Judging is eager, as in the reference: a child's draft is judged against its parent's target
  step as soon as both exist, wherever the parent is in the tree, so the judge's latency overlaps
  with the steps still running (--judge-timing deferred: only the root's children are judged, once
  the root's target step is done - the judge then sits on the critical path once per level).
- When the root's target step finishes, the children whose drafts are done then are decided
  once all their verdicts are in: the first accepted one (in order) wins. Accept: commit the
  draft's text, the child becomes the root (its target step and its children's verdicts may
  already be in: decide again at once). Reject: commit the target step, cancel everything below
  (judgements included), restart from the corrected context.
- A child draft still running when the root's target step finishes is cancelled and the position
  counts as rejected, recorded with method "not-ready" (the reference drops it silently).
- Each verify record carries `ready`: when both compared steps existed, so `start - ready` is the
  judge's queueing and `end - ready` its latency as seen from the step.
- Boundary rule (option, on by default): no drafting after a context that does not end in a
  stop string (--step-stop, default "\n\n"; the reference drafts there and then auto-rejects;
  skipping saves that work).
- EOS inside a committed step ends the answer there; each request's max_tokens is capped by the
  budget left on its path, so the output never passes --max-tokens.
- Every cancelled request is recorded (tokens made, times) on the step decided when it died;
  finished work that went unused is recorded as "discarded".
"""
from __future__ import annotations

import asyncio

from ..engine import monotonic
from ..verifiers.base import Verdict
from .base import Job, Run, accepted, judge_pair
from .record import ProblemResult, StepLog
from .steps import ends_on_boundary
from .tree import Node


class AsyncLookahead:
    """One problem under asynchronous LR (the rules: module docstring). `run_problem` takes the
    engines' and the judge's completions off a queue; the methods below it follow the algorithm:
      _new_root        a root after the committed text: ask the target for the next step, expand
      _choose          before new speculation below a root: its depth and width (static: the
                       config's; lr_adaptive.py decides them)
      _expand          a node within `depth` of the root drafts `width` children
      _on_draft        a draft is done: judge it (eager), ask the target for the step after it,
                       expand it
      _on_target       a target step is done: _judge_children (its children's drafts, eager);
                       the root's: _try_decide
      _judge           one verdict: a child's draft against its parent's target step
      _try_decide      the root's target step and its ready children's verdicts are in: decide
      _on_decided      the first accepted child: _accept (it becomes the root); none: _reject
                       (commit the target's step, cancel the speculation, _new_root)
      _kill            cancel a subtree's requests and judgements
    Recording: _accept/_reject log the committed step, _kill the work lost; request and record
    helpers come last.
    """

    def __init__(self, run: Run):
        self.run, self.cfg = run, run.cfg
        self.events: asyncio.Queue = asyncio.Queue()
        self.log = StepLog(monotonic())
        self.root: Node | None = None
        self.deciding = False
        self.finish_reason: str | None = None
        self.judgements_started = self.judgements_used = 0
        # the tree's shape for new speculation: the config's, always (lr_adaptive.py's `_choose`
        # sets them before each new speculation)
        self.depth, self.width = self.cfg.depth, self.cfg.width

    # -- main loop -------------------------------------------------------------------------------

    async def run_problem(self) -> ProblemResult:
        self._new_root()
        try:
            while self.finish_reason is None:
                kind, node, payload = await self.events.get()
                if kind == "error":
                    raise payload
                if kind == "draft":
                    self._on_draft(node)
                elif kind == "target":
                    self._on_target(node)
                elif kind == "judged":
                    if node.alive and node.parent is self.root:
                        self._try_decide()
                elif kind == "decide":
                    self.finish_reason = await self._on_decided(node, payload)
                else:
                    self.finish_reason = await self._on_other(kind, node, payload)
        finally:
            if self.root is not None:
                await self._kill([self.root])
            job = getattr(self, "_prefill_job", None)
            if job is not None and not job.task.done():
                await job.cancel()
                self.log.cancelled("draft", job.progress, 0, monotonic())
                self.log.flush_pending_into_last()
        self.log.judgements(self.judgements_started, self.judgements_used)
        return self.log.result(self.finish_reason or "error", monotonic())

    # -- the algorithm: draft, judge, decide (accept / reject), finish ---------------------------

    def _new_root(self) -> None:
        position = len(self.log.steps)  # committed steps
        self.root = Node(key=f"s{position}", position=position, parent=None,
                         ctx=self.log.committed_text, used=self.log.committed_tokens)
        self._choose(position)
        self._submit_target(self.root)
        self._expand(self.root)
        if not self.root.expanded and not self.log.steps:
            self._prefill_draft()

    def _expand(self, v: Node) -> None:
        """Spawn v's child drafts if v is within depth, not terminal and on a step boundary."""
        if not v.alive or v.expanded or v.terminal or self.root is None:
            return
        if v is not self.root and v.draft is None:
            return
        if v.position - self.root.position >= self.depth:
            return
        if self.cfg.boundary_rule and not ends_on_boundary(self.run.problem.prompt + v.ctx,
                                                          self.cfg.step_stop):
            return
        budget = self.run.step_budget(v.used)
        if budget <= 0:
            return
        v.expanded = True
        for i in range(self.width):
            c = Node(key=f"{v.key}.{i}", position=v.position + 1, parent=v,
                     launch_depth=v.position + 1 - self.root.position)
            req = self.run.request("draft", c.key, v.ctx, budget)
            c.draft_job = Job(self.run.draft, req, self._post("draft", c))
            v.children.append(c)

    def _submit_target(self, v: Node) -> None:
        budget = self.run.step_budget(v.used)
        if budget <= 0:
            v.terminal = True
            return
        req = self.run.request("target", v.key, v.ctx, budget)
        v.target_job = Job(self.run.target, req, self._post("target", v))

    def _on_draft(self, c: Node) -> None:
        if not c.alive:
            return
        d, p = c.draft, c.parent
        c.ctx, c.used = p.ctx + d.text, p.used + d.tokens
        if self.cfg.judge_timing == "eager":
            self._judge(c)  # against its parent's target step, if that is done
        if d.finish == "eos" or c.used >= self.cfg.max_tokens:
            c.terminal = True  # nothing follows an EOS or a spent budget: no target, no children
            return
        self._submit_target(c)
        self._expand(c)

    def _on_target(self, v: Node) -> None:
        """v's target step is done: judge its ready children; the root's: decide if it can."""
        self._judge_children(v)
        if v is self.root and v.alive:
            self._try_decide()

    def _judge_children(self, v: Node) -> None:
        """Eager timing: judge each child of v whose draft is done, now that v's target step is."""
        if self.cfg.judge_timing == "eager" and v.alive:
            for c in v.children:
                self._judge(c)

    def _judge(self, c: Node) -> None:
        """Start judging c's draft against its parent's target step, once both exist."""
        p = c.parent
        if (c.verdict_task is not None or not c.alive or p is None or p.target is None
                or c.draft is None):
            return
        t, d = p.target.text, c.draft.text
        self.judgements_started += 1

        async def judge():
            c.verdict = await judge_pair(self.run, t, d)
            self.events.put_nowait(("judged", c, None))

        def failed(task: asyncio.Task):  # judge_pair turns Exceptions into rejections; anything
            if not task.cancelled() and task.exception() is not None:  # else ends the run
                self.events.put_nowait(("error", c, task.exception()))

        c.verdict_task = asyncio.ensure_future(judge())
        c.verdict_task.add_done_callback(failed)

    def _try_decide(self) -> None:
        """Decide the root's position once its target step and the verdicts of its ready
        children are in (first accepted child in order wins; all rejected: the target's step)."""
        root = self.root
        if self.deciding or root is None or root.target is None:
            return
        if root.ready is None:  # who is ready is fixed when the target step is there
            root.ready = [c for c in root.children if c.draft is not None and c.alive]
            for c in root.ready:
                self._judge(c)  # deferred timing starts here; eager judgements already run
        if any(c.verdict is None for c in root.ready):
            return  # a "judged" event calls us again (eager: usually all are in by now)
        self.deciding = True
        self.events.put_nowait(("decide", root, [(c, c.verdict) for c in root.ready]))

    async def _on_decided(self, root: Node, judged: list) -> str | None:
        """Apply the root's decision: the first accepted child wins, else the target's step.
        Returns the finish reason if the answer ends with this step, else None."""
        self.deciding = False
        self.judgements_used += len(judged)
        for c, _ in judged:
            c.draft_job.used = True  # judged drafts are proposals (recorded), not wasted work
        extra = {"judged": [self._vrec(c, v, root.target) for c, v in judged]} if len(judged) > 1 else {}
        winner = next(((c, v) for c, v in judged if accepted(v)), None)
        if winner is not None:
            return await self._accept(root, *winner, extra)
        return await self._reject(root, judged, extra)

    async def _accept(self, root: Node, c: Node, verdict, extra: dict) -> str | None:
        """Commit c's draft; c becomes the root and its subtree keeps running."""
        self.log.judged(c.launch_depth, True)
        c.draft_job.used = root.target_job.used = True
        await self._kill([s for s in root.children if s is not c])
        d = c.draft
        self.log.commit(source="draft", text=d.text, tokens=d.tokens, depth=c.launch_depth,
                        draft=d, target=root.target, verify=self._vrec(c, verdict, root.target),
                        node=c.key, **extra)
        c.parent = None
        self.root = c
        if stop := self.run.stop_reason(d, self.log.committed_tokens):
            return stop
        self._choose(c.position)
        for n in list(c.subtree()):  # nodes that were at the depth limit may now expand
            if n.draft is not None or n is c:
                self._expand(n)
        if c.target_job is None:  # no target was asked for (budget): nothing can follow
            return "budget"
        self._try_decide()  # its target step and verdicts may already be in
        return None

    async def _reject(self, root: Node, judged: list, extra: dict) -> str | None:
        """Commit the target's step (the verifier rejected, or no draft was ready); cancel all
        speculation and restart from the corrected context."""
        now = monotonic()
        t = root.target
        root.target_job.used = True
        if judged:
            c, verdict = judged[0]
            depth, draft, vrec, reason = c.launch_depth, c.draft, self._vrec(c, verdict, t), "verifier"
        elif root.children:
            c = root.children[0]
            depth, draft, reason = c.launch_depth, None, "not-ready"
            why = "draft not ready when the target step finished"
            vrec = self.log.verify_rec(Verdict.rejected("not-ready", why, now))
        else:
            depth, draft, vrec, reason = 0, None, None, None
        if reason is not None:
            self.log.judged(depth, False, reason)
        await self._kill(root.children)
        self.log.commit(source="target", text=t.text, tokens=t.tokens, depth=depth, draft=draft,
                        target=t, verify=vrec, node=root.key,
                        speculation=None if root.children else "none", **extra)
        if stop := self.run.stop_reason(t, self.log.committed_tokens):
            return stop
        self._new_root()
        return None

    async def _kill(self, nodes: list[Node]) -> None:
        """Cancel all requests of `nodes` and their subtrees; record what was cancelled/wasted."""
        jobs = []
        for n in nodes:
            for m in n.subtree():
                if not m.alive:  # already killed (and recorded) by an earlier decision
                    continue
                m.alive = False
                if m.verdict_task is not None and not m.verdict_task.done():
                    m.verdict_task.cancel()  # nobody will read this verdict
                depth = max(0, m.position - self.root.position) if self.root else 0
                for kind, job in (("draft", m.draft_job), ("target", m.target_job)):
                    if job is None or job.used:
                        continue
                    if job.done or (job.task.done() and not job.task.cancelled()
                                    and job.task.exception() is None):
                        job.result = job.result or job.task.result()
                        self.log.discarded(kind, job.result, depth)
                    else:
                        jobs.append((kind, job, depth))
        await asyncio.gather(*(j.cancel() for _, j, _ in jobs))
        now = monotonic()
        for kind, job, depth in jobs:
            task = job.task
            if not task.cancelled() and task.exception() is None:
                # it finished between the check above and the cancel (the engine never aborted
                # it): finished work never used, like the discarded ones above
                job.result = job.result or task.result()
                self.log.discarded(kind, job.result, depth)
            else:
                self.log.cancelled(kind, job.progress, depth, now)

    async def _on_other(self, kind: str, node, payload) -> str | None:
        """An event of a subclass's own kind (lr_adaptive.py: its AR stream); returns the finish
        reason if the answer ends with it."""
        raise ValueError(f"unknown scheduler event {kind!r}")

    def _choose(self, position: int) -> None:
        """Before new speculation below a root at `position`: the depth and width (self.depth,
        self.width) to run it with. Static: the config's, always (lr_adaptive.py asks
        lrcore.adaptive's Controller instead)."""

    # -- requests and records --------------------------------------------------------------------

    def _post(self, kind: str, node: Node):
        def done(job: Job, task: asyncio.Task):
            if task.cancelled():
                return
            exc = task.exception()
            if exc is not None:
                self.events.put_nowait(("error", node, exc))
                return
            job.result = task.result()
            self.events.put_nowait((kind, node, None))
        return done

    def _prefill_draft(self) -> None:
        """The boundary rule keeps the draft idle during the first step: let it prefill the
        prompt meanwhile (a 1-token request), so its first real draft hits the prefix cache.
        Recorded as discarded draft work on the first step."""
        req = self.run.request("draft", "prefill", "", 1, step=False)
        job = Job(self.run.draft, req)
        self._prefill_job = job

        def record(task):
            if not task.cancelled() and task.exception() is None:
                job.result = task.result()
                self.log.discarded("draft", job.result, 0)
        job.task.add_done_callback(record)

    def _vrec(self, c: Node, verdict, target) -> dict | None:
        """The trace's verify object, with `ready`: when both compared steps existed."""
        rec = self.log.verify_rec(verdict)
        if rec is not None and c.draft is not None and target is not None:
            rec = dict(rec, ready=self.log.rel(max(c.draft.end, target.end)))
        return rec


async def run_lr(run: Run) -> ProblemResult:
    return await AsyncLookahead(run).run_problem()
