"""The verifier's cost: judging whether a draft step matches the target's step.

    none       zero cost (the theory's assumption, --ideal)
    constant   a fixed latency per judgement (paper, H200: embedding 0.009 s, 7B judge 0.013 s,
               32B judge 0.025 s per step; method.md)
    per_token  a latency per token of the two steps compared
    llm        an LLM judge on its own engine: a prefill of both steps + prompt template and one
               decoded token (max_tokens 1), batched with other judgements on the judge device
Acceptance itself comes from the workload; this module only decides how long a verdict takes.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import UserError
from .engine import Engine, Job

JUDGE_TEMPLATE_TOKENS = 120   # system prompt + instructions around the two steps (method.md protocol)
KINDS = ("none", "constant", "per_token", "llm")


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

    def judge(self, env, engine: Engine | None, draft_tokens: int, target_tokens: int):
        """SimPy event that fires when the verdict is known."""
        if self.kind == "none":
            return env.timeout(0)
        if self.kind == "constant":
            return env.timeout(self.seconds)
        if self.kind == "per_token":
            return env.timeout(self.seconds * (draft_tokens + target_tokens))
        if engine is None:
            raise UserError("verifier.kind = 'llm' needs a judge model placed on a device")
        job = Job(env, 1, ctx=0.0, prefill=self.template_tokens + draft_tokens + target_tokens)
        return engine.submit(job).done
