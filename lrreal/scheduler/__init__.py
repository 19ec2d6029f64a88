"""The Lookahead Reasoning scheduler: modes ar, sd, lr, lr+sd, lr-sync, lr-adaptive and
lr+sd-adaptive (lr_adaptive.py: depth and width chosen online) over async engines, and
accept (the step-acceptance protocol: target and draft write each step, the target's is kept).
The mode lists (which need a draft engine, which run n-gram SD) are lrcore/modes.py's.

    result = await run_problem(cfg, Problem(id, sample, prompt), target, draft, verifier)

`target`/`draft` implement `lrreal.engine.Engine` (vLLM AsyncLLM, or the in-process fake engine
for tests); `verifier` has `async verify(target_step, draft_step) -> Verdict`. In `sd`/`lr+sd`
the target engine itself must have been built with an n-gram speculative_config.
"""
from __future__ import annotations

from lrcore.modes import ADAPTIVE_MODES

from .base import Problem, Run
from .config import SchedulerConfig
from .record import ProblemResult
from .seeds import derive_seed

__all__ = ["SchedulerConfig", "Problem", "ProblemResult", "derive_seed", "run_problem"]


async def run_problem(cfg: SchedulerConfig, problem: Problem, target, draft=None,
                      verifier=None) -> ProblemResult:
    run = Run(cfg, problem, target, draft, verifier)
    if cfg.mode in ("ar", "sd"):
        from .ar import run_ar
        return await run_ar(run)
    if draft is None or verifier is None:
        raise ValueError(f"mode {cfg.mode} needs a draft engine and a verifier")
    if cfg.mode in ("lr", "lr+sd"):
        from .lr_async import run_lr
        return await run_lr(run)
    if cfg.mode in ADAPTIVE_MODES:
        from .lr_adaptive import run_lr_adaptive
        return await run_lr_adaptive(run)
    if cfg.mode == "accept":
        from .accept import run_accept
        return await run_accept(run)
    from .lr_sync import run_lr_sync
    return await run_lr_sync(run)
