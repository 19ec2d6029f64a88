"""The score verifier (`--verifier score[:T]`): the target model scores the drafted step 0-9.

The paper's main baseline is SpecReason-style speculative reasoning: a small model drafts a
reasoning step and the large (target) model, asked to judge it, answers with a score from 0 to 9
in a single generated token; the step is kept when the score reaches a threshold. SpecReason reads
the greedy first token as the score and accepts at score >= threshold. We take no threshold from
the paper (arXiv 2506.19830); the default here, 7, is our choice, and it is also the default of
SpecReason's public script (`--score_threshold 7.0`).

How it runs here: `_compare` renders the score prompt with the target's chat template, appends
the pre-fill (the open assistant turn, "Score: ", so the next token is the digit) and sends ONE
request to the target engine: `max_tokens=1`, temperature 0 (greedy). The first non-blank
character of the reply must be a digit 0-9 (the score, a float in the trace's `verify.score`);
accepted iff score >= T. A reply without a digit is a rejection with `error` ("unexpected reply:
..."), never a silent 0. The exact-match shortcut runs first, as for every verifier but `exact`.
The request is ordinary target work: it shares the target's batches (and, in lr+sd, its n-gram
SD; a one-token request is unaffected) and its forward passes are in the record's engine stats.

The target engine exists only once the engines run, so `make_verifier("score")` builds an unbound
verifier (enough to check the flag) and `lr collect` binds it: `bind(engine, render)`, with
`render(messages) -> str` the target's chat template (lrreal/collect.py, Collector).

Differences from SpecReason, on purpose or by interface:
- The target sees only the drafted step: not the problem, not the reasoning so far, not its own
  version of the step (the Verifier interface passes the two steps; SpecReason shows the question
  and the previous steps). Our LR scheduler still generates the target's step (it replaces a
  rejected draft), so this measures scoring as a verifier, not SpecReason's saving of the
  target's generation.
- SpecReason counts a non-digit reply as score 0; here it is a rejection with `error` set.

The wording is a module constant (SCORE_PROMPT); its identity is the sha256 of the canonical JSON
of {system, user, prefill} (the same hash as a judge template, judge_prompt.prompt_sha256), which
`lr collect` records in `run.verifier.prompt` and `run.judge_prompt`.
"""
from __future__ import annotations

import itertools
import uuid
from dataclasses import dataclass
from functools import cached_property
from typing import Callable

from lrcore.errors import UserError

from .base import Verifier
from .judge_prompt import prompt_sha256

DEFAULT_THRESHOLD = 7   # our choice, not the paper's; SpecReason's script defaults to 7.0 too
DIGITS = "0123456789"


@dataclass(frozen=True)
class ScorePrompt:
    """What the target is asked: a system message ("" = none), a user turn with `{draft}` (the
    drafted step, stripped) as its only placeholder, and the pre-fill the reply continues."""
    name: str
    system: str
    user: str
    prefill: str

    @cached_property
    def sha256(self) -> str:
        return prompt_sha256(self.system, self.user, self.prefill)

    def messages(self, draft_step: str) -> list[dict]:
        """The chat messages (no assistant turn: the pre-fill is appended after the template)."""
        user = self.user.format(draft=draft_step.strip())
        return ([{"role": "system", "content": self.system}] if self.system else []) + \
            [{"role": "user", "content": user}]

    def describe(self) -> dict:
        return {"name": self.name, "sha256": self.sha256}


SCORE_PROMPT = ScorePrompt(
    name="score",
    system="You are a meticulous judge of steps of mathematical reasoning.",
    user=("Below is one step of a solution to a problem, written by a small model.\n\n"
          "Step: {draft}\n\n"
          "How likely is this step to be correct and useful? Judge its calculations and its "
          "logic. Answer with a single digit from 0 to 9: 9 if the step is certainly correct and "
          "useful, 0 if it is wrong or useless."),
    prefill="Score: ",
)


def parse_score(reply: str) -> float | None:
    """The score in a reply: its first non-blank character as a digit 0-9, else None."""
    head = reply.lstrip()[:1]
    return float(head) if head and head in DIGITS else None


class ScoreVerifier(Verifier):
    method = "score"

    def __init__(self, threshold: int = DEFAULT_THRESHOLD, shortcut: bool = True,
                 prompt: ScorePrompt = SCORE_PROMPT):
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) \
                or not float(threshold).is_integer() or not 0 <= threshold <= 9:
            raise UserError(f"--verifier score:T needs a whole number 0 <= T <= 9 (got {threshold})")
        self.threshold, self.shortcut, self.prompt = int(threshold), shortcut, prompt
        self.engine = None
        self.render: Callable[[list[dict]], str] | None = None
        self._tag = uuid.uuid4().hex[:8]      # request ids unique across verifiers on one engine
        self._ids = itertools.count()

    def bind(self, engine, render: Callable[[list[dict]], str]) -> "ScoreVerifier":
        """Ask `engine` (the target's) with prompts rendered by `render` (its chat template)."""
        self.engine, self.render = engine, render
        return self

    def request(self, draft_step: str):
        """The one-token greedy request that scores `draft_step`."""
        from ..engine import GenRequest

        prompt = self.render(self.prompt.messages(draft_step)) + self.prompt.prefill
        return GenRequest(request_id=f"score-{self._tag}-{next(self._ids)}", prompt=prompt,
                          max_tokens=1, temperature=0.0)

    async def _compare(self, target_step: str, draft_step: str):
        # target_step is not shown to the scorer (see the module docstring)
        if self.engine is None or self.render is None:
            return False, None, ("score verifier: no target engine bound (it asks the target "
                                 "engine that lr collect starts)")
        result = await self.engine.generate(self.request(draft_step))
        score = parse_score(result.text)
        if score is None:
            return False, None, f"unexpected reply: no 0-9 score digit in {result.text[:50]!r}"
        return score >= self.threshold, score, None

    async def aclose(self) -> None:
        self.engine = self.render = None   # the engines belong to the collector

    def describe(self) -> dict:
        return super().describe() | {"threshold": self.threshold, "asks": "target",
                                     "prompt": self.prompt.describe()}
