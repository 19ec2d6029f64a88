"""The lookahead tree: one node per speculative position.

A node stands for "the context after some draft steps": the committed text plus the uncommitted
drafts on its path. It holds
  - its own draft step (the draft model's step after its parent's context; none for a root),
  - the target's step after its own context ("what the target says comes next here"),
  - `width` children, each drafting the step after this node's context.
A child's draft and its parent's target step both continue the same context, so they are what the
verifier compares (as in the authors' asynchronous code, github.com/hao-ai-lab/LookaheadReasoning).

Names (the same in the simulator's Node, lrsim/sim/policies/lr_async.py):
  position      steps in the node's context, its own draft included (committed steps plus the
                drafts on its path); its target request writes step `position`
  launch_depth  levels below the root when its draft was launched (1 = a child of the root);
                its depth below the current root is `position - root.position`
  draft_job, target_job, parent, children, alive, expanded (here `draft` and `target` are the
  jobs' results, `verdict_task` judges the draft and `verdict` is its result)
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..engine import GenResult
from .base import Job


@dataclass(eq=False)
class Node:
    key: str                    # seed path: "s<step index of its restart root>.<child idx>..."
    position: int               # steps in its context, own draft included (module docstring)
    parent: "Node | None"
    ctx: str = ""               # generated text up to and including this node's draft
    used: int = 0               # tokens of `ctx` (committed + uncommitted drafts on the path)
    launch_depth: int = 0       # levels below the root when its draft was launched (1 = child)
    draft_job: Job | None = None
    target_job: Job | None = None
    children: list["Node"] = field(default_factory=list)
    alive: bool = True
    terminal: bool = False      # its draft ended the answer (EOS) or the budget: nothing follows
    expanded: bool = False
    verdict_task: object = None  # asyncio task judging this node's draft against its parent's target step
    verdict: object = None       # its result (a Verdict; an auto-rejection is one too)
    ready: list | None = None    # as the root: the children whose drafts were done when it could
                                 # first decide (its target step done, it the root); the rest
                                 # count as not ready

    @property
    def draft(self) -> GenResult | None:
        return self.draft_job.result if self.draft_job else None

    @property
    def target(self) -> GenResult | None:
        return self.target_job.result if self.target_job else None

    def subtree(self):
        yield self
        for c in self.children:
            yield from c.subtree()
