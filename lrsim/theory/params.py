"""Validated parameters of the analytical model (one place for the ranges, used by the API and CLI)."""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

from lrcore.errors import UserError

MODES = ("sync", "async")


class InvalidParameter(UserError, ValueError):
    """A parameter outside its domain. `name` is the parameter (CLI flag spelling is derived)."""

    def __init__(self, name: str, message: str):
        super().__init__(f"{name}: {message}")
        self.name = name


def check_unit(name: str, value: float) -> float:
    """A probability or cost ratio: a finite number in [0, 1]."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) \
            or not 0.0 <= value <= 1.0:
        raise InvalidParameter(name, f"must be in [0, 1], got {value!r}")
    return float(value)


# Upper limits, far beyond any hardware, that keep every computation finite and fast:
# a parallel dimension above MAX_DIM only pushes f, g towards their limits, and the exact
# optimiser is O(M) in time and memory (M = 2^20 takes seconds; the paper's budgets are <= 64).
MAX_DIM = 10**9
MAX_BUDGET = 2**20


def check_count(name: str, value: int, maximum: int | None = None) -> int:
    """A parallel dimension or budget: an integer >= 1 (and <= maximum when given)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise InvalidParameter(name, f"must be an integer >= 1, got {value!r}")
    if maximum is not None and value > maximum:
        raise InvalidParameter(name, f"must be <= {maximum}, got {value!r}")
    return value


def check_mode(value: str) -> str:
    if value not in MODES:
        raise InvalidParameter("mode", f"must be one of {', '.join(MODES)}, got {value!r}")
    return value


@dataclass(frozen=True)
class HybridParams:
    """Acceptance and cost ratios of both speculation levels (arXiv 2506.19830 notation)."""

    alpha1: float         # step acceptance probability
    c1: float             # draft/target cost ratio per step
    alpha2: float = 0.0   # token acceptance probability (0 with k2 = 1 means: no token-level SD)
    c2: float = 0.0       # draft/target cost ratio per token; 0 for n-gram prompt lookup
    mode: str = "sync"    # 'sync' = Algorithm 1, 'async' = the pipelined variant (App. B Thm. 2)

    def __post_init__(self):
        for name in ("alpha1", "c1", "alpha2", "c2"):
            check_unit(name, getattr(self, name))
        check_mode(self.mode)
