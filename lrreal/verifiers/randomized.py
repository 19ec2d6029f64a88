"""Accept with probability p, for ablations (how much does verification quality matter?).

The draw is a deterministic function of (seed, target step, draft step), not of call order, so
an asynchronous run that judges steps in a different order still gets the same verdicts.
"""
from __future__ import annotations

import random

from lrcore.errors import UserError

from .base import Verifier


class RandomVerifier(Verifier):
    method = "random"

    def __init__(self, p: float, seed: int = 0, shortcut: bool = True):
        if not 0.0 <= p <= 1.0:
            raise UserError(f"--verifier random:P needs 0 <= P <= 1 (got {p})")
        self.p, self.seed, self.shortcut = p, seed, shortcut

    async def _compare(self, target_step: str, draft_step: str):
        draw = random.Random(f"{self.seed}\0{target_step}\0{draft_step}").random()
        return draw < self.p, draw, None

    def describe(self) -> dict:
        return super().describe() | {"p": self.p, "seed": self.seed}
