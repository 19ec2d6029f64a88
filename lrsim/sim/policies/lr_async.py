"""Asynchronous Lookahead Reasoning as the reference implementation behaves (method.md).

A tree of nodes below the committed root. A node holds one drafted step; its target job is "the
target's next step after this node's context". Rules:
 - when a node's draft finishes it (a) submits its target job at once (the prefix exists) and
   (b) spawns `width` child drafts, while it is fewer than `depth` levels below the root: a
   sequential drafter that runs at most `depth` steps ahead of the committed context;
 - when the root's target step finishes, its children are judged in order against it: a child
   whose draft is not finished then is dropped and counts as rejected; the first accepted child
   becomes the root (its draft's text is committed, its subtree keeps running, nodes now within
   the depth limit resume drafting); if none is accepted the target step is committed, all
   speculation is cancelled (freeing engine capacity) and drafting restarts from the new context.
Verification is in order: a node is judged only once its parent is the root.
"""
from __future__ import annotations


class Node:
    __slots__ = ("level", "parent", "children", "draft", "target", "draft_done", "target_done",
                 "depth", "dead", "expanded")

    def __init__(self, level: int, parent=None, depth: int = 0):
        self.level = level        # steps in this node's context, its own draft included
        self.parent = parent
        self.children: list[Node] = []
        self.draft = None         # draft Job (None for a root made from a committed target step)
        self.target = None        # target Job for the step at position `level`
        self.draft_done = parent is None
        self.target_done = False
        self.depth = depth        # levels below the root when it was spawned
        self.dead = False
        self.expanded = False


def run(world, req, rec):
    env, cfg, wl = world.env, world.cfg, world.workload
    lens = req.step_tokens
    S = len(lens)
    D, W = cfg.depth, cfg.width
    stream = world.sd_stream(req)
    state = {"root": None, "run": 0}      # run: drafts accepted since the last target commit
    finished = env.event()
    cum = [float(req.prompt_tokens)]
    for n in lens:
        cum.append(cum[-1] + n)

    def ctx_of(node):  # tokens in the node's context
        return cum[node.level]

    def submit_target(node, prefill):
        if node.level >= S:
            return
        node.target = world.target.submit(world.target_job(
            req, lens[node.level], ctx_of(node), prefill=prefill, stream=stream, tag=node))
        node.target.done.callbacks.append(lambda _e, n=node: on_target(n))

    def expand(node):
        root = state["root"]
        if node.expanded or node.dead or node.level >= S or node.level - root.level >= D:
            return
        node.expanded = True
        # the drafter re-reads only what it did not write: the prompt, or a committed target step
        if node.level == 0:
            prefill = req.prompt_tokens
        else:
            prefill = lens[node.level - 1] if node.draft is None else 0
        for _ in range(W):
            c = Node(node.level + 1, node, depth=node.level + 1 - root.level)
            node.children.append(c)
            c.draft = world.draft.submit(world.draft_job(lens[node.level], ctx_of(node), prefill=prefill, tag=c))
            c.draft.done.callbacks.append(lambda _e, n=c: on_draft(n))

    def on_draft(node):
        if node.dead:
            return
        node.draft_done = True
        submit_target(node, prefill=lens[node.level - 1])
        expand(node)

    def on_target(node):
        if node.dead:
            return
        node.target_done = True
        if node is state["root"]:
            resolve(node)

    def kill(node):
        node.dead = True
        world.cancel(world.draft, node.draft, "draft")
        world.cancel(world.target, node.target, "target")
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

    def resolve(root, deferred=False):
        pos = root.level
        if not deferred and any(not c.draft_done and not c.dead for c in root.children):
            # a draft finishing at this very instant counts as ready: let same-time events run first
            env.timeout(0).callbacks.append(lambda _e: resolve(root, True))
            return
        ready = [c for c in root.children if c.draft_done and not c.dead]
        for c in root.children:
            if not c.draft_done:          # not ready when the target step is: rejected
                world.stats.judged(c.depth, False)
                world.stats.unready += 1
                kill(c)
        if not ready or cfg.verifier.kind == "none":
            decide(root, ready)
            return
        evs = [world.verdict_delay(lens[pos], lens[pos]) for _ in ready]   # judged in parallel
        ev = evs[0] if len(evs) == 1 else env.all_of(evs)
        ev.callbacks.append(lambda _e: decide(root, ready))

    def first_accepted(pos, ready):
        """Index of the first sibling the verifier accepts (in sibling order), or None."""
        joint = getattr(wl, "judge_siblings", None)      # workloads may correlate siblings
        if joint is not None:
            return joint(req, pos, [c.depth for c in ready])
        for i, c in enumerate(ready):
            if wl.step_accept(req, pos, c.depth):
                return i
        return None

    def decide(root, ready):
        pos = root.level
        win = first_accepted(pos, ready) if ready else None
        judged = ready if win is None else ready[:win + 1]
        for i, c in enumerate(judged):
            world.stats.judged(c.depth, i == win)
        winner = ready[win] if win is not None else None
        if ready:
            world.stats.positions += 1
            world.stats.positions_accepted += winner is not None
        for c in ready:
            if c is not winner:
                kill(c)
        if winner is not None:
            world.commit(rec, "draft", lens[pos])
            state["run"] += 1
            root.children = [winner]
            new_root(winner)
        else:
            world.commit(rec, "target", lens[pos])
            world.stats.cycle(state["run"] + 1)
            state["run"] = 0
            fresh = Node(pos + 1)
            state["root"] = fresh
            if fresh.level < S:
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
