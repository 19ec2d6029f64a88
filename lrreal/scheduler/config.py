"""What one scheduler run needs to know: mode, tree shape, budgets, segmentation, sampling, seeds."""
from __future__ import annotations

from dataclasses import dataclass

from lrcore.errors import UserError
from lrcore.modes import MODES  # ar, sd, lr, lr+sd, lr-sync and accept (the acceptance protocol)

from .steps import DEFAULT_STEP_STOP, check_step_stops

JUDGE_TIMINGS = ("eager", "deferred")


@dataclass
class SchedulerConfig:
    mode: str = "lr"
    depth: int = 4             # max speculation depth below the root (reference default 4);
                               # lr-sync uses it as gamma, the number of drafted steps per cycle
    width: int = 1             # child drafts per node; >1 only helps with sampling (greedy
                               # siblings are identical)
    max_tokens: int = 1024     # total output budget; the output is cut exactly at it
    max_step_tokens: int = 100  # a step ends at a stop string or after this many tokens (reference: 100)
    boundary_rule: bool = True  # compare steps only after a context ending in a stop string (reference)
    temperature: float = 0.0   # 0 = greedy; the paper samples at 0.6 / top_p 0.95
    top_p: float = 1.0
    top_k: int = 0
    seed: int = 0              # run seed; every request's seed is derived from it (seeds.py)
    step_stop: tuple[str, ...] = DEFAULT_STEP_STOP  # strings that end a step (reference: "\n\n")
    judge_timing: str = "eager"  # judge a draft as soon as it and its parent's target step exist
                                 # (reference); "deferred": only once the parent is the root
    adaptive_prior: dict | None = None  # lr-adaptive: Estimates.to_dict() the run's Estimator
                                        # starts from (None: the neutral prior, rescaled)
    adaptive_prior_from: str = "neutral"  # where it came from, for the record

    def __post_init__(self):
        if self.mode not in MODES:
            raise UserError(f"--mode {self.mode!r}: use one of {', '.join(MODES)}")
        for flag, v, lo in (("--depth", self.depth, 1), ("--width", self.width, 1),
                            ("--max-tokens", self.max_tokens, 1),
                            ("--max-step-tokens", self.max_step_tokens, 1)):
            if v < lo:
                raise UserError(f"{flag} must be >= {lo}, got {v}")
        if self.temperature < 0:
            raise UserError(f"--temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise UserError(f"--top-p must be in (0, 1], got {self.top_p}")
        self.step_stop = check_step_stops(self.step_stop)
        if self.judge_timing not in JUDGE_TIMINGS:
            raise UserError(f"--judge-timing {self.judge_timing!r}: use one of {', '.join(JUDGE_TIMINGS)}")
