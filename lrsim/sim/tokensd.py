"""Token-level speculative decoding inside a step (Leviathan et al. 2023; paper Sec. 2, 3.3).

A round drafts k2 - 1 tokens (n-gram lookup: free; a draft model: k2 - 1 draft passes, charged
by the engine), then one target pass verifies k2 positions and emits min(X, k2 - 1) + 1 tokens,
X ~ Geometric(alpha2) (i.i.d. per-token acceptance). A step of n tokens needs R rounds; the
target engine runs the step as a job of R iterations of k2 positions each.

Truncation: a real engine stops at the step's end ("\\n\\n"), so the last round's surplus is
wasted. Under `--ideal` the theory assumes an endless token stream; the surplus is then carried
to the request's next step (`SDStream.carry`), which removes the truncation bias (renewal-reward:
tokens per round average exactly (1 - alpha2^k2) / (1 - alpha2)).
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass, field


@dataclass
class SDStats:
    rounds: int = 0
    drafted: int = 0
    accepted: int = 0
    emitted_hist: dict[int, int] = field(default_factory=dict)   # tokens per verify pass

    def add(self, other: "SDStats") -> None:
        self.rounds += other.rounds
        self.drafted += other.drafted
        self.accepted += other.accepted
        for k, v in other.emitted_hist.items():
            self.emitted_hist[k] = self.emitted_hist.get(k, 0) + v


def accepted_run(alpha: float, cap: int, rng: random.Random) -> int:
    """min(X, cap) for X ~ Geometric(alpha) on {0, 1, ...}: P(X >= j) = alpha^j."""
    if alpha <= 0.0 or cap <= 0:
        return 0
    if alpha >= 1.0:
        return cap
    x = int(math.log(1.0 - rng.random()) / math.log(alpha))
    return x if x < cap else cap


@dataclass
class SDStream:
    """Per-request token-level SD state."""
    k2: int
    alpha2: float
    carry_surplus: bool = False      # True under --ideal (see module doc)
    credit: int = 0

    def rounds_for(self, n_tokens: int, rng: random.Random, stats: SDStats | None = None) -> int:
        need = n_tokens
        if self.carry_surplus:
            use = min(self.credit, need)
            self.credit -= use
            need -= use
        rounds = 0
        while need > 0:
            x = accepted_run(self.alpha2, self.k2 - 1, rng)
            emit = x + 1
            rounds += 1
            if stats is not None:
                stats.rounds += 1
                stats.drafted += self.k2 - 1
                stats.accepted += x
                stats.emitted_hist[emit] = stats.emitted_hist.get(emit, 0) + 1
            need -= emit
        if self.carry_surplus and need < 0:
            self.credit += -need
        return rounds
