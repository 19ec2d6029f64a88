"""The verifier's cost: judging whether a draft step matches the target's step.

    none       zero cost (the theory's assumption, --ideal)
    constant   a fixed latency per judgement (paper, H200: embedding 0.009 s, 7B judge 0.013 s,
               32B judge 0.025 s per step; arXiv 2506.19830)
    per_token  a latency per token of the two steps compared
    llm        an LLM judge on its own engine: a prefill of both steps + prompt template and one
               decoded token (max_tokens 1), batched with other judgements on the judge device
    score      the target scores the drafted step 0-9 in one token and accepts at or above a
               threshold (the paper's SpecReason-style baseline): a prefill of the drafted step +
               a short template and one decoded token, on the TARGET engine, where it competes
               with the target's own steps for batch capacity
Acceptance itself comes from the workload; this module only decides how long a verdict takes.
"""
from __future__ import annotations

from dataclasses import dataclass

from lrcore.errors import UserError

from .dispatch import timeout
from .engine import Engine, Job

JUDGE_TEMPLATE_TOKENS = 120   # system prompt + instructions around the two steps (authors' prompt)
# the instruction text of the score verifier's prompt (lrreal/verifiers/score.py) around the
# drafted step; that prompt shows the step alone (no problem, no history): a fresh sequence
SCORE_TEMPLATE_TOKENS = 60
KINDS = ("none", "constant", "per_token", "llm", "score")


@dataclass
class VerifierCost:
    kind: str = "none"
    seconds: float = 0.0          # constant: per judgement; per_token: per compared token
    template_tokens: int = JUDGE_TEMPLATE_TOKENS

    def __post_init__(self):
        if self.kind not in KINDS:
            raise UserError(f"verifier.kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        if self.seconds < 0:
            raise UserError(f"verifier.seconds must be >= 0, got {self.seconds}")

    def fixed_delay(self):
        """The verdict's delay where it is the same for every judgement (kind none: 0, constant:
        `seconds`), else None (World.verdict_delay schedules it without calling judge)."""
        if self.kind == "none":
            return 0
        if self.kind == "constant":
            return self.seconds
        return None

    def judge(self, env, engine: Engine | None, draft_tokens: int, target_tokens: int):
        """SimPy event that fires when the verdict is known. `engine`: the judge's engine (llm)
        or the target's (score)."""
        fixed = self.fixed_delay()
        if fixed is not None:               # (dispatch.timeout = env.timeout, lighter)
            return timeout(env, fixed)
        if self.kind == "per_token":
            return timeout(env, self.seconds * (draft_tokens + target_tokens))
        if self.kind == "score":
            job = Job(env, 1, ctx=0.0, prefill=SCORE_TEMPLATE_TOKENS + draft_tokens)
            return engine.submit(job).done
        if engine is None:
            raise UserError("verifier.kind = 'llm' needs a judge model placed on a device")
        job = Job(env, 1, ctx=0.0, prefill=self.template_tokens + draft_tokens + target_tokens)
        return engine.submit(job).done
