"""Asynchronous Lookahead Reasoning as the reference implementation behaves.

The reference implementation is the authors' code (github.com/hao-ai-lab/LookaheadReasoning).
A tree of nodes below the committed root. A node holds one drafted step; its target job is "the
target's next step after this node's context". Rules:
 - when a node's draft finishes it (a) submits its target job at once (the prefix exists) and
   (b) spawns `width` child drafts, while it is fewer than `depth` levels below the root: a
   sequential drafter that runs at most `depth` steps ahead of the committed context;
 - a child's draft is judged against its parent's target step (both are "the step after the same
   context") as soon as both are finished, whether or not the parent is the root (eager judging,
   as the reference does); the verdict of a node cancelled meanwhile is ignored (an LLM judge
   still spent the work);
 - when the root's target step finishes, a child whose draft is not finished then is dropped and
   counts as rejected; once the other children's judgements are in, the first accepted child (in
   sibling order) becomes the root (its draft's text is committed, its subtree keeps running,
   nodes now within the depth limit resume drafting); if none is accepted the target step is
   committed, all speculation is cancelled (freeing engine capacity) and drafting restarts from
   the new context.
Judging early takes the verifier's latency off the critical path wherever it overlaps with other
work. `judge_timing = "deferred"` (Config) judges a node's children only once it is the root.
The code: `AsyncLookahead`, one method per step of the rules in that order; `run` is the policy.

Five optional workload hooks carry what a recorded run knew (lrsim/sim/traces.py; a synthetic
workload has only the first, where every context is a step boundary but, as calibrated, the
prompt; then a draft is as long as the target's step, the judge timing is the Config's and a
new request prefills what its engine never saw, rounded to the prefix cache's blocks):
 - `can_draft(req, position)`: the boundary rule of the real scheduler - drafting only follows a
   context (of `position` steps) that ends on a step boundary (a step cut at the token cap does
   not); the drafter then only prefills the prompt meanwhile (a 1-token request), as the real
   one does;
 - `spec_tokens(req, kind, position, root_position)`: how long a draft or target job for that
   position ran in the recorded run (None: the committed step's length);
 - `judge_timing(req)`: the judge timing the recorded run used ("eager" or "deferred");
 - `spec_prefill(req, kind, position, root_position, after_draft)`: the prompt tokens the real
   engine computed for that job (vLLM's cached-token count), where the record has it;
 - `spec_rounds(req, position, root_position, tokens, k2)` (opt-in): the target passes a
   token-level SD job on the committed path ran in (None: its rounds are drawn at the record's
   rate).
Prefix caching on the drafter: it re-reads only the committed tokens it has not processed
(`d_cached`), which after a stretch without drafting is more than the last step.
"""
from __future__ import annotations

from typing import Any

from mypy_extensions import mypyc_attr

from ..dispatch import NORMAL, Wake, schedule_now, take
from ..engine import Job
from ..world import RequestRecord, World


class Node:
    """One speculative position: a drafted step, and the target's step after it.

    Same names as lrreal/scheduler/tree.py's Node:
      position      steps in this node's context, its own draft included (committed steps plus
                    the drafts on its path); its target job writes step `position`
      launch_depth  levels below the root when its draft was launched (1 = a child of the root);
                    its depth below the current root is `position - root.position`
      draft_job, target_job, parent, children, alive, expanded
    Simulator only: draft_done / target_done (the real Node reads them off its jobs' results) and
    verdict_event, the SimPy event of its draft's judgement (the real Node's verdict_task).
    A node killed, or a root replaced, drops its links (parent, children, jobs; its jobs keep it
    as their tag): the tree then holds no reference cycle and is freed by reference counting,
    not by the cyclic GC (tests/sim/test_sim_gc.py).
    """
    __slots__ = ("position", "parent", "children", "draft_job", "target_job", "draft_done",
                 "target_done", "launch_depth", "alive", "expanded", "verdict_event")

    def __init__(self, position: int, parent: Node | None = None, launch_depth: int = 0):
        self.position = position
        self.parent = parent
        self.children: list[Node] = []
        self.draft_job: Any = None    # an engine Job; None for a root made from a committed target step
        self.target_job: Any = None   # the target's step number `position`
        self.draft_done = parent is None
        self.target_done = False
        self.launch_depth = launch_depth
        self.alive = True
        self.expanded = False
        self.verdict_event: Any = None  # started once (by judge), then reused


def run(world, req, rec):
    """The policy (registry: "lr-async"): a SimPy process that drives `req` to its last step."""
    lr = AsyncLookahead(world, req, rec)
    lr.start()
    yield lr.finished


# compiled (lrsim/native.py), it stays a base class for Python ones: lr_adaptive's policy, the
# benchmarks' phase oracle
@mypyc_attr(allow_interpreted_subclasses=True)
class AsyncLookahead:
    """One request under asynchronous LR; the methods, in the order of the rules above:
      start/restart  a root after the committed steps: choose the speculation's shape (static:
                     the Config's), ask the target for the next step, expand
      expand         draft `width` children below a node within `depth` levels of the root
      on_draft       a draft is done: ask the target for the step after it, expand it, judge it
      on_target      a target step is done: judge its children; the root's: resolve
      judge          the verdict of a child's draft against its parent's target step
      resolve        the root's ready children (the others count as rejected) and their verdicts
      decide         first accepted child: accept (new_root: it becomes the root); none: reject
                     (commit the target's step, restart); kill cancels the losers' subtrees
      finish         the last step is committed: cancel what is left, end the request
    """
    # Callbacks on job-completion events, not a SimPy process per node: a node does no work of
    # its own; it is two engine jobs whose completions act on other nodes (judge the children,
    # decide the root's position, kill subtrees, expand nodes a new root brings within depth).
    # Cancelling is then a flag plus engine.cancel, not Interrupts to many short-lived processes,
    # and processes would add SimPy events: a different event order, different seeded results.

    def __init__(self, world: World, req, rec: RequestRecord):
        self.world, self.req, self.rec = world, req, rec
        env, cfg, wl = world.env, world.cfg, world.workload
        self.env, self.cfg, self.wl = env, cfg, wl
        # kernel.Environment's now-queue (dispatch.schedule_now); None: a plain simpy.Environment
        self.nowq: list | None = getattr(env, "_nowq", None)
        self.lens = req.step_tokens
        self.n_steps = len(self.lens)
        self.max_depth, self.width = cfg.depth, cfg.width
        self.stream = world.sd_stream(req)
        self.can_draft = getattr(wl, "can_draft", None)
        self.spec_len = getattr(wl, "spec_tokens", None)
        self.spec_prefill = getattr(wl, "spec_prefill", None)
        self.spec_rounds = getattr(wl, "spec_rounds", None)
        recorded = getattr(wl, "judge_timing", None)
        timing = (recorded(req) if recorded is not None else None) or cfg.judge_timing
        # a free verdict (kind "none") has nothing to overlap: both timings decide alike
        self.free_verdict = cfg.verifier.kind == "none"
        self.eager = timing == "eager" and not self.free_verdict
        self.root: Node = Node(0)  # the Node at the committed context (start sets it)
        self.accepted_run = 0     # drafts accepted since the last target commit
        self.d_cached = float(req.draft_cached)  # committed tokens (prompt included) the drafter
                                  # has processed, so its prefix cache holds them
        self.prompt_seen = False  # the drafter has prefilled this request's prompt
        self.finished = env.event()
        cum = [float(req.prompt_tokens)]
        for n in self.lens:
            cum.append(cum[-1] + n)
        self.cum = cum            # cum[p]: tokens in a context of p steps, prompt included

    # -- the algorithm ---------------------------------------------------------------------------

    def start(self):
        self.restart(0, prefill=self.req.prompt_uncached)

    def restart(self, position, prefill):
        """A fresh root after `position` committed steps: the target writes the next step, the
        drafter drafts below it."""
        node = Node(position)
        self.root = node
        if position < self.n_steps:
            self.choose(position)
            self.submit_target(node, prefill)
            self.expand(node)

    def expand(self, node: Node) -> None:
        """Draft `width` children (the step after node's context) if node is within the depth
        limit and its context may be drafted after (boundary rule)."""
        root = self.root
        pos = node.position
        if node.expanded or not node.alive or pos >= self.n_steps or pos - root.position >= self.max_depth:
            return
        if self.can_draft is not None and not self.can_draft(self.req, pos):
            if node.position == 0 and not self.prompt_seen:
                # the first step follows the chat prompt: the drafter only prefills the prompt
                self.world.draft.submit(self.world.draft_job(1, float(self.req.prompt_tokens),
                                                             prefill=self.req.draft_prompt_uncached, req=self.req))
                self.prompt_seen = True
                self.d_cached = float(self.req.prompt_tokens)
            return
        node.expanded = True
        ctx = self.ctx_tokens(node)
        # the drafter re-reads only what it has not processed: committed tokens it never saw
        if node.draft_job is None:
            prefill = int(max(0.0, ctx - self.d_cached))
            self.d_cached = ctx
        else:
            prefill = 0                   # it wrote this context itself
        recorded = (self.spec_prefill(self.req, "draft", pos, root.position, node.draft_job is not None)
                    if self.spec_prefill is not None else None)
        n_tok = self.job_len("draft", pos)
        world, req = self.world, self.req
        for _ in range(self.width):
            c = Node(pos + 1, node, launch_depth=pos + 1 - root.position)
            node.children.append(c)
            job: Job = world.draft.submit(world.draft_job(
                n_tok, ctx, prefill=prefill if recorded is None else recorded, tag=c, req=req,
                new_request=recorded is None))    # a recorded count is the cache's own: exact
            c.draft_job = job
            job.done.add(lambda _e, n=c: self.on_draft(n))

    def on_draft(self, node: Node) -> None:
        if not node.alive:
            return
        node.draft_done = True
        # the target reads the draft's text, which it has not seen
        self.submit_target(node, prefill=node.draft_job.total if node.draft_job is not None
                           else self.lens[node.position - 1])
        self.expand(node)
        if self.eager and node.parent is not None and node.parent.target_done:
            self.judge(node)              # the step it is compared with is there already

    def submit_target(self, node: Node, prefill: Any, new_request: bool = True) -> None:
        """Ask the target for step `node.position`, the step after node's context (a new engine
        request unless it goes on in one: lr_adaptive's depth 0)."""
        pos = node.position
        if pos >= self.n_steps:
            return
        world = self.world
        starts = new_request              # an engine request's first job, whatever counts its prefill
        if new_request and self.spec_prefill is not None:
            recorded = self.spec_prefill(self.req, "target", pos, self.root.position,
                                         node.draft_job is not None)
            if recorded is not None:      # the cache's own count: exact, not rounded again
                prefill, new_request = recorded, False
        n_tok = self.job_len("target", pos)
        rounds: Any = None
        positions: Any = None
        stream = self.stream
        # the recorded run's passes for it (a new engine request's: lr_adaptive's depth 0 goes on
        # in one, whose recorded spans have no prefilling pass of their own)
        if stream is not None and self.spec_rounds is not None and starts:
            rounds = self.spec_rounds(self.req, pos, self.root.position, n_tok, stream.k2)
            if rounds is not None:
                # each verifying the positions of the stream's proposal rate (an assumption: a
                # slow span's rounds propose as often as the others and accept less)
                positions = rounds * (1 + stream.hit * (stream.k2 - 1))
        job: Job = world.target.submit(world.target_job(
            self.req, n_tok, self.ctx_tokens(node), prefill=prefill, stream=stream, rounds=rounds,
            tag=node, new_request=new_request, starts_request=starts, positions=positions))
        node.target_job = job
        job.done.add(lambda _e, n=node: self.on_target(n))

    def on_target(self, node: Node) -> None:
        if not node.alive:
            return
        node.target_done = True
        if self.eager:
            for c in node.children:       # the drafts that were waiting for this step
                if c.draft_done and c.alive:
                    self.judge(c)
        if node is self.root:
            self.resolve(node)

    def judge(self, node: Node) -> Any:
        """The event of node's verdict against its parent's target step: started once, reused."""
        if node.verdict_event is None:
            pos = node.position - 1       # both steps follow the context of `pos` steps
            node.verdict_event = self.world.verdict_delay(self.lens[pos], self.lens[pos])
        return node.verdict_event

    def resolve(self, root: Node, waited: bool = False) -> None:
        """The root's target step is done: drop (reject) children not drafted yet, wait for the
        verdicts of the ready ones, then decide."""
        if not waited and any(not c.draft_done and c.alive for c in root.children):
            # a draft finishing at this very instant counts as ready: let same-time events run first
            # (= env.timeout(0) calling resolve: the same event id and time, as a bare Wake)
            env = self.env
            schedule_now(self.nowq, env._queue, (env._now, NORMAL, take(env._eid),
                                                 Wake((lambda _e: self.resolve(root, True),))))
            return
        ready = [c for c in root.children if c.draft_done and c.alive]
        for c in root.children:
            if not c.draft_done:          # not ready when the target step is: rejected
                self.world.stats.judged(c.launch_depth, False)
                self.world.stats.unready += 1
                self.kill(c)
        if not ready or self.free_verdict:
            self.decide(root, ready)
            return
        # judged in parallel; eager: started when each draft was, maybe finished already
        pending = [ev for ev in map(self.judge, ready) if not ev.processed]
        if not pending:
            self.decide(root, ready)
            return
        ev = pending[0] if len(pending) == 1 else self.env.all_of(pending)
        ev.callbacks.append(lambda _e: self.decide(root, ready))

    def decide(self, root: Node, ready: list[Node]) -> None:
        """Commit the first accepted ready child (in sibling order), else the target's step."""
        win = self.first_accepted(root.position, ready) if ready else None
        winner = ready[win] if win is not None else None
        self.count_judged(ready, win)
        for c in ready:
            if c is not winner:
                self.kill(c)
        if winner is not None:
            self.accept(root, winner)
        else:
            self.reject(root)
        root.children = []                # the old root is done: drop its links (retire)
        root.draft_job = root.target_job = None
        if len(self.rec.steps) >= self.n_steps:
            self.finish()
            return
        if self.root.target_done:         # the new root's step may be in already
            self.resolve(self.root)

    def accept(self, root: Node, winner: Node) -> None:
        """Commit winner's draft; winner becomes the root and its subtree keeps running."""
        pos = root.position
        self.world.commit(self.rec, "draft", self.lens[pos])
        self.d_cached = self.cum[pos + 1]  # the drafter wrote the step it committed
        self.accepted_run += 1
        self.new_root(winner)

    def reject(self, root: Node) -> None:
        """Commit the target's step (decide/resolve cancelled all speculation) and restart."""
        pos = root.position
        self.world.commit(self.rec, "target", self.lens[pos])
        self.world.stats.cycle(self.accepted_run + 1)
        self.accepted_run = 0
        self.restart(pos + 1, prefill=0)  # the target wrote this step: cached

    def new_root(self, node: Node) -> None:
        node.parent = None
        self.root = node
        self.choose(node.position)
        # nodes that stopped at the old depth limit may draft again (walk the live subtree)
        stack = [node]
        while stack:
            n = stack.pop()
            if n.draft_done and not n.expanded:
                self.expand(n)
            stack.extend(n.children)

    def kill(self, node: Node) -> None:
        """Cancel node's jobs and its subtree's, and drop the links of the dead subtree (retire:
        a dead node's callbacks only read `alive`), so that it is freed when the last reference
        goes, not by the cyclic GC."""
        node.alive = False
        self.world.cancel(self.world.draft, node.draft_job, "draft")
        self.world.cancel(self.world.target, node.target_job, "target")
        for c in node.children:
            self.kill(c)
        node.parent = None
        node.children = []
        node.draft_job = node.target_job = None

    def finish(self):
        if self.accepted_run:
            self.world.stats.cycle(self.accepted_run)  # the request ended inside a run of accepts
        self.kill(self.root)
        self.finished.succeed()

    # -- bookkeeping -----------------------------------------------------------------------------

    def choose(self, position):
        """Before new speculation below a root at `position`: the depth and width (self.max_depth,
        self.width) and SD stream (self.stream) to run it with. Static: the Config's, always
        (lr_adaptive.py asks lrcore.adaptive instead)."""

    def first_accepted(self, pos: int, ready: list[Node]) -> Any:
        """Index of the first sibling the verifier accepts (in sibling order), or None."""
        joint = getattr(self.wl, "judge_siblings", None)  # workloads may correlate siblings
        if joint is not None:
            return joint(self.req, pos, [c.launch_depth for c in ready])
        for i, c in enumerate(ready):
            if self.wl.step_accept(self.req, pos, c.launch_depth):
                return i
        return None

    def count_judged(self, ready: list[Node], win: Any) -> None:
        """Step statistics of one decided position (drafts judged up to the winner)."""
        judged = ready if win is None else ready[:win + 1]
        for i, c in enumerate(judged):
            self.world.stats.judged(c.launch_depth, i == win)
        if ready:
            self.world.stats.positions += 1
            self.world.stats.positions_accepted += win is not None

    def job_len(self, kind, position):
        """Tokens of a draft or target job for step `position` (the recorded run's, if known)."""
        n = (self.spec_len(self.req, kind, position, self.root.position)
             if self.spec_len is not None else None)
        return n if n else self.lens[position]

    def ctx_tokens(self, node: Node) -> float:
        """Tokens in node's context."""
        return self.cum[node.position]
