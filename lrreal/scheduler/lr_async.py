"""`lr` / `lr+sd`: asynchronous Lookahead Reasoning over a tree of speculative steps.

Event-driven: every engine request is an asyncio task whose completion posts an event on a
queue; the loop awaits the queue (no polling). The rules, after the reference implementation
(method.md) with its weak points fixed:

- The root stands for the committed context; it asks the target for the next step and has
  `width` children drafting that step.
- When a node's draft finishes, the node asks the target for the step after its draft and, while
  it is fewer than `depth` levels below the root, spawns `width` child drafts.
- When the root's target step finishes, the root's finished child drafts are judged against it.
  Accept (first accepted child in order): commit the draft's text, the child becomes the root
  (its target step may already be done: decide again at once). Reject: commit the target step,
  cancel everything below, restart from the corrected context.
- A child draft still running when the root's target step finishes is cancelled and the position
  counts as rejected, recorded with method "not-ready" (the reference drops it silently).
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
from .base import Job, Run
from .record import ProblemResult, StepLog
from .steps import ends_on_boundary
from .tree import Node


class _Stop(Exception):
    pass


class AsyncLookahead:
    def __init__(self, run: Run):
        self.run, self.cfg = run, run.cfg
        self.events: asyncio.Queue = asyncio.Queue()
        self.log = StepLog(monotonic())
        self.committed_text, self.committed_tokens = "", 0
        self.root: Node | None = None
        self.deciding = False
        self.finish_reason: str | None = None

    # -- requests ------------------------------------------------------------------------------

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

    def _submit_target(self, v: Node) -> None:
        budget = self.run.step_budget(v.used)
        if budget <= 0:
            v.terminal = True
            return
        req = self.run.request("target", v.key, v.ctx, budget)
        v.target_job = Job(self.run.target, req, self._post("target", v))

    def _expand(self, v: Node) -> None:
        """Spawn v's child drafts if v is within depth, not terminal and on a step boundary."""
        if not v.alive or v.expanded or v.terminal or self.root is None:
            return
        if v is not self.root and v.draft is None:
            return
        if v.level - self.root.level >= self.cfg.depth:
            return
        if self.cfg.boundary_rule and not ends_on_boundary(self.run.problem.prompt + v.ctx,
                                                          self.cfg.step_stop):
            return
        budget = self.run.step_budget(v.used)
        if budget <= 0:
            return
        v.expanded = True
        for i in range(self.cfg.width):
            c = Node(key=f"{v.key}.{i}", level=v.level + 1, parent=v,
                     launch_depth=v.level + 1 - self.root.level)
            req = self.run.request("draft", c.key, v.ctx, budget)
            c.draft_job = Job(self.run.draft, req, self._post("draft", c))
            v.children.append(c)

    def _new_root(self) -> None:
        key = f"s{len(self.log.steps)}"
        self.root = Node(key=key, level=0, parent=None, ctx=self.committed_text,
                         used=self.committed_tokens)
        self._submit_target(self.root)
        self._expand(self.root)
        if not self.root.expanded and not self.log.steps:
            self._prefill_draft()

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

    # -- cancellation ----------------------------------------------------------------------------

    async def _kill(self, nodes: list[Node]) -> None:
        """Cancel all requests of `nodes` and their subtrees; record what was cancelled/wasted."""
        jobs = []
        for n in nodes:
            for m in n.subtree():
                if not m.alive:  # already killed (and recorded) by an earlier decision
                    continue
                m.alive = False
                depth = max(0, m.level - self.root.level) if self.root else 0
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
            self.log.cancelled(kind, job.progress, depth, now)

    # -- decisions -------------------------------------------------------------------------------

    async def _verify(self, target_text: str, draft_text: str):
        try:
            return await self.run.verifier.verify(target_text, draft_text)
        except Exception as e:  # a verifier must not crash the run: a failed check rejects
            now = monotonic()
            rec = self.log.auto_reject("error", "verifier raised", now)
            rec["error"] = f"{type(e).__name__}: {e}"
            return rec

    def _start_decision(self) -> None:
        root = self.root
        if self.deciding or root.target is None:
            return
        self.deciding = True
        ready = [c for c in root.children if c.draft is not None]
        t = root.target.text

        async def judge():
            verdicts = await asyncio.gather(*(self._verify(t, c.draft.text) for c in ready))
            self.events.put_nowait(("verified", root, list(zip(ready, verdicts))))

        asyncio.ensure_future(judge())

    def _accepted(self, verdict) -> bool:
        return bool(verdict["verdict"]) if isinstance(verdict, dict) else bool(verdict.accepted)

    async def _on_verified(self, root: Node, judged: list) -> None:
        self.deciding = False
        for c, _ in judged:
            c.draft_job.used = True  # judged drafts are proposals (recorded), not wasted work
        winner = next(((c, v) for c, v in judged if self._accepted(v)), None)
        extra = {}
        if len(judged) > 1:
            extra["judged"] = [self.log.verify_rec(v) for _, v in judged]
        if winner is not None:
            c, verdict = winner
            self.log.judged(c.launch_depth, True)
            c.draft_job.used = root.target_job.used = True
            await self._kill([s for s in root.children if s is not c])
            d = c.draft
            self.log.commit(source="draft", text=d.text, tokens=d.tokens, depth=c.launch_depth,
                            draft=d, target=root.target, verify=self.log.verify_rec(verdict),
                            node=c.key, **extra)
            self._advance(d.text, d.tokens)
            c.parent = None
            self.root = c
            if d.finish == "eos":
                raise _Stop("eos")
            if self.committed_tokens >= self.cfg.max_tokens:
                raise _Stop("budget")
            for n in list(c.subtree()):  # nodes that were at the depth limit may now expand
                if n.draft is not None or n is c:
                    self._expand(n)
            if c.target_job is None:  # no target was asked for (budget): nothing can follow
                raise _Stop("budget")
            self._start_decision()
            return
        # Rejected: by the verifier (first judged child), or no draft was ready.
        now = monotonic()
        t = root.target
        root.target_job.used = True
        if judged:
            c, verdict = judged[0]
            depth, draft, vrec, reason = c.launch_depth, c.draft, self.log.verify_rec(verdict), "verifier"
        elif root.children:
            c = root.children[0]
            depth, draft, reason = c.launch_depth, None, "not-ready"
            vrec = self.log.auto_reject("not-ready", "draft not ready when the target step finished", now)
        else:
            depth, draft, vrec, reason = 0, None, None, None
        if reason is not None:
            self.log.judged(depth, False, reason)
        await self._kill(root.children)
        self.log.commit(source="target", text=t.text, tokens=t.tokens, depth=depth, draft=draft,
                        target=t, verify=vrec, node=root.key,
                        speculation=None if root.children else "none", **extra)
        self._advance(t.text, t.tokens)
        if t.finish == "eos":
            raise _Stop("eos")
        if self.committed_tokens >= self.cfg.max_tokens:
            raise _Stop("budget")
        self._new_root()

    def _advance(self, text: str, tokens: int) -> None:
        self.committed_text += text
        self.committed_tokens += tokens

    def _on_draft(self, c: Node) -> None:
        if not c.alive:
            return
        d, p = c.draft, c.parent
        c.ctx, c.used = p.ctx + d.text, p.used + d.tokens
        if d.finish == "eos" or c.used >= self.cfg.max_tokens:
            c.terminal = True  # nothing follows an EOS or a spent budget: no target, no children
            return
        self._submit_target(c)
        self._expand(c)

    # -- main loop -------------------------------------------------------------------------------

    async def run_problem(self) -> ProblemResult:
        self._new_root()
        try:
            while True:
                kind, node, payload = await self.events.get()
                if kind == "error":
                    raise payload
                if kind == "draft":
                    self._on_draft(node)
                elif kind == "target":
                    if node is self.root and node.alive:
                        self._start_decision()
                elif kind == "verified":
                    await self._on_verified(node, payload)
        except _Stop as stop:
            self.finish_reason = str(stop)
        finally:
            if self.root is not None:
                await self._kill([self.root])
            job = getattr(self, "_prefill_job", None)
            if job is not None and not job.task.done():
                await job.cancel()
                self.log.cancelled("draft", job.progress, 0, monotonic())
                self.log.flush_pending_into_last()
        return self.log.result(self.finish_reason or "error", monotonic())


async def run_lr(run: Run) -> ProblemResult:
    return await AsyncLookahead(run).run_problem()
