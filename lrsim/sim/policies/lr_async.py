"""Asynchronous Lookahead Reasoning as the reference implementation behaves (method.md).

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

Three optional workload hooks carry what a recorded run knew (lrsim/sim/traces.py; synthetic
workloads have none, and then every context is a step boundary, a draft is as long as the
target's step, and the judge timing is the Config's):
 - `can_draft(req, level)`: the boundary rule of the real scheduler - drafting only follows a
   context that ends on a step boundary (a step cut at the token cap does not); the drafter then
   only prefills the prompt meanwhile (a 1-token request), as the real one does;
 - `spec_tokens(req, kind, position, root_level)`: how long a draft or target job for that
   position ran in the recorded run (None: the committed step's length);
 - `judge_timing(req)`: the judge timing the recorded run used ("eager" or "deferred").
Prefix caching on the drafter: it re-reads only the committed tokens it has not processed
(`d_cached`), which after a stretch without drafting is more than the last step.
"""
from __future__ import annotations


class Node:
    __slots__ = ("position", "parent", "children", "draft_job", "target_job", "draft_done",
                 "target_done", "launch_depth", "alive", "expanded", "verdict_event")

    def __init__(self, position: int, parent=None, launch_depth: int = 0):
        self.position = position  # steps in this node's context, its own draft included
        self.parent = parent
        self.children: list[Node] = []
        self.draft_job = None     # None for a root made from a committed target step
        self.target_job = None    # the target's step number `position`
        self.draft_done = parent is None
        self.target_done = False
        self.launch_depth = launch_depth  # levels below the root when its draft was launched
        self.alive = True
        self.expanded = False
        self.verdict_event = None  # the event of its draft's judgement (started once, then reused)


def run(world, req, rec):
    env, cfg, wl = world.env, world.cfg, world.workload
    lens = req.step_tokens
    S = len(lens)
    D, W = cfg.depth, cfg.width
    stream = world.sd_stream(req)
    can_draft = getattr(wl, "can_draft", None)
    spec_len = getattr(wl, "spec_tokens", None)
    recorded = getattr(wl, "judge_timing", None)
    timing = (recorded(req) if recorded is not None else None) or cfg.judge_timing
    # a free verdict (kind "none") has nothing to overlap: both timings decide alike
    eager = timing == "eager" and cfg.verifier.kind != "none"

    def job_len(kind, position):
        n = spec_len(req, kind, position, state["root"].position) if spec_len is not None else None
        return n if n else lens[position]
    # run: drafts accepted since the last target commit; d_cached: committed tokens (prompt
    # included) the drafter has processed, so its prefix cache holds them
    state = {"root": None, "run": 0, "d_cached": 0.0}
    finished = env.event()
    cum = [float(req.prompt_tokens)]
    for n in lens:
        cum.append(cum[-1] + n)

    def ctx_of(node):  # tokens in the node's context
        return cum[node.position]

    def submit_target(node, prefill):
        if node.position >= S:
            return
        node.target_job = world.target.submit(world.target_job(
            req, job_len("target", node.position), ctx_of(node), prefill=prefill, stream=stream, tag=node))
        node.target_job.done.callbacks.append(lambda _e, n=node: on_target(n))

    def expand(node):
        root = state["root"]
        if node.expanded or not node.alive or node.position >= S or node.position - root.position >= D:
            return
        if can_draft is not None and not can_draft(req, node.position):
            if node.position == 0 and state["d_cached"] == 0:
                # the first step follows the chat prompt: the drafter only prefills the prompt
                world.draft.submit(world.draft_job(1, 0.0, prefill=req.prompt_tokens))
                state["d_cached"] = float(req.prompt_tokens)
            return
        node.expanded = True
        # the drafter re-reads only what it has not processed: committed tokens it never saw
        if node.draft_job is None:
            prefill = int(max(0.0, ctx_of(node) - state["d_cached"]))
            state["d_cached"] = ctx_of(node)
        else:
            prefill = 0                   # it wrote this context itself
        n_tok = job_len("draft", node.position)
        for _ in range(W):
            c = Node(node.position + 1, node, launch_depth=node.position + 1 - root.position)
            node.children.append(c)
            c.draft_job = world.draft.submit(world.draft_job(n_tok, ctx_of(node), prefill=prefill, tag=c))
            c.draft_job.done.callbacks.append(lambda _e, n=c: on_draft(n))

    def on_draft(node):
        if not node.alive:
            return
        node.draft_done = True
        # the target reads the draft's text, which it has not seen
        submit_target(node, prefill=node.draft_job.total if node.draft_job is not None else lens[node.position - 1])
        expand(node)
        if eager and node.parent is not None and node.parent.target_done:
            judgement(node)               # the step it is compared with is there already

    def on_target(node):
        if not node.alive:
            return
        node.target_done = True
        if eager:
            for c in node.children:       # the drafts that were waiting for this step
                if c.draft_done and c.alive:
                    judgement(c)
        if node is state["root"]:
            resolve(node)

    def judgement(node):
        """The event of node's verdict against its parent's target step: started once, reused."""
        if node.verdict_event is None:
            pos = node.position - 1          # both steps follow the context of `pos` steps
            node.verdict_event = world.verdict_delay(lens[pos], lens[pos])
        return node.verdict_event

    def kill(node):
        node.alive = False
        world.cancel(world.draft, node.draft_job, "draft")
        world.cancel(world.target, node.target_job, "target")
        for c in node.children:
            kill(c)

    def new_root(node):
        node.parent = None
        state["root"] = node
        # nodes that stopped at the old depth limit may draft again (walk the live subtree)
        stack = [node]
        while stack:
            n = stack.pop()
            if n.draft_done and not n.expanded:
                expand(n)
            stack.extend(n.children)

    def resolve(root, waited=False):
        if not waited and any(not c.draft_done and c.alive for c in root.children):
            # a draft finishing at this very instant counts as ready: let same-time events run first
            env.timeout(0).callbacks.append(lambda _e: resolve(root, True))
            return
        ready = [c for c in root.children if c.draft_done and c.alive]
        for c in root.children:
            if not c.draft_done:          # not ready when the target step is: rejected
                world.stats.judged(c.launch_depth, False)
                world.stats.unready += 1
                kill(c)
        if not ready or cfg.verifier.kind == "none":
            decide(root, ready)
            return
        # judged in parallel; eager: started when each draft was, maybe finished already
        pending = [ev for ev in map(judgement, ready) if not ev.processed]
        if not pending:
            decide(root, ready)
            return
        ev = pending[0] if len(pending) == 1 else env.all_of(pending)
        ev.callbacks.append(lambda _e: decide(root, ready))

    def first_accepted(pos, ready):
        """Index of the first sibling the verifier accepts (in sibling order), or None."""
        joint = getattr(wl, "judge_siblings", None)      # workloads may correlate siblings
        if joint is not None:
            return joint(req, pos, [c.launch_depth for c in ready])
        for i, c in enumerate(ready):
            if wl.step_accept(req, pos, c.launch_depth):
                return i
        return None

    def decide(root, ready):
        pos = root.position
        win = first_accepted(pos, ready) if ready else None
        judged = ready if win is None else ready[:win + 1]
        for i, c in enumerate(judged):
            world.stats.judged(c.launch_depth, i == win)
        winner = ready[win] if win is not None else None
        if ready:
            world.stats.positions += 1
            world.stats.positions_accepted += winner is not None
        for c in ready:
            if c is not winner:
                kill(c)
        if winner is not None:
            world.commit(rec, "draft", lens[pos])
            state["d_cached"] = cum[pos + 1]       # the drafter wrote the step it committed
            state["run"] += 1
            root.children = [winner]
            new_root(winner)
        else:
            world.commit(rec, "target", lens[pos])
            world.stats.cycle(state["run"] + 1)
            state["run"] = 0
            fresh = Node(pos + 1)
            state["root"] = fresh
            if fresh.position < S:
                submit_target(fresh, prefill=0)   # the target wrote this step: cached
                expand(fresh)
        if len(rec.steps) >= S:
            if state["run"]:
                world.stats.cycle(state["run"])   # the request ended inside a run of accepts
            kill(state["root"])
            finished.succeed()
            return
        r = state["root"]
        if r.target_done:
            resolve(r)

    root = Node(0)
    state["root"] = root
    submit_target(root, prefill=req.prompt_tokens)
    expand(root)
    yield finished
