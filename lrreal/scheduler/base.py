"""What every mode shares: the engines, the verifier, the problem, request construction."""
from __future__ import annotations

import asyncio
from dataclasses import dataclass

from ..engine import Engine, GenRequest, GenResult, Progress, monotonic
from ..verifiers.base import Verdict
from .config import SchedulerConfig
from .seeds import SeedSource


@dataclass
class Problem:
    problem_id: str
    sample: int
    prompt: str          # the fully templated prompt (chat template applied)


class Run:
    """One (problem, sample) under one config."""

    def __init__(self, cfg: SchedulerConfig, problem: Problem, target: Engine,
                 draft: Engine | None = None, verifier=None):
        self.cfg, self.problem = cfg, problem
        self.target, self.draft, self.verifier = target, draft, verifier
        self.seeds = SeedSource(cfg.seed, problem.problem_id, problem.sample)
        self._n = 0

    def request(self, role: str, path: str, context: str, max_tokens: int,
                step: bool = True) -> GenRequest:
        self._n += 1
        sampled = self.cfg.temperature > 0
        return GenRequest(
            request_id=f"{self.problem.problem_id}/{self.problem.sample}/{role}/{path}/{self._n}",
            prompt=self.problem.prompt + context, max_tokens=max_tokens,
            stop=tuple(self.cfg.step_stop) if step else (),
            seed=self.seeds(path, role) if sampled else None,
            temperature=self.cfg.temperature, top_p=self.cfg.top_p, top_k=self.cfg.top_k)

    def step_budget(self, used: int) -> int:
        """Tokens a step request may make when `used` tokens precede it on its path."""
        return min(self.cfg.max_step_tokens, self.cfg.max_tokens - used)

    def stop_reason(self, step: GenResult, used: int) -> str | None:
        """Why the answer ends with `step`, just committed (`used`: the tokens committed in all):
        its EOS ("eos") or the budget spent ("budget"); None: it goes on."""
        if step.finish == "eos":
            return "eos"
        if used >= self.cfg.max_tokens:
            return "budget"
        return None


class Job:
    """One in-flight engine request as an asyncio task, with its live progress."""

    def __init__(self, engine: Engine, req: GenRequest, on_done=None):
        self.req, self.progress = req, Progress(start=monotonic())
        self.result: GenResult | None = None
        self.used = False  # committed or used as the reference of a verdict: not wasted work
        self.task = asyncio.ensure_future(engine.generate(req, self.progress))
        if on_done is not None:
            self.task.add_done_callback(lambda t: on_done(self, t))

    @property
    def done(self) -> bool:
        return self.result is not None

    async def cancel(self) -> None:
        """Abort the request (cancelling the task aborts it in the engine) and wait for it."""
        if not self.task.done():
            self.task.cancel()
        try:
            await self.task
        except (asyncio.CancelledError, Exception):
            pass
        if self.progress.end is None:
            self.progress.end = monotonic()


async def judge_pair(run: Run, target_text: str, draft_text: str):
    """The verifier's verdict on one pair; a verifier that raises is a recorded rejection
    (a verifier must not crash the run)."""
    try:
        return await run.verifier.verify(target_text, draft_text)
    except Exception as e:
        return Verdict.rejected("error", "verifier raised", monotonic(), f"{type(e).__name__}: {e}")


def accepted(verdict: Verdict) -> bool:
    return bool(verdict.accepted)
