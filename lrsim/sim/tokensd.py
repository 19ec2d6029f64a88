"""Token-level speculative decoding inside a step (Leviathan et al. 2023; paper Sec. 2, 3.3).

A round drafts k2 - 1 tokens (n-gram lookup: free; a draft model: k2 - 1 draft passes, charged
by the engine), then one target pass verifies k2 positions and emits min(X, k2 - 1) + 1 tokens,
X ~ Geometric(alpha2) (i.i.d. per-token acceptance). A step of n tokens needs R rounds; the
target engine runs the step as a job of R iterations of k2 positions each.

Proposals that never come: an n-gram (prompt-lookup) drafter proposes only where the last tokens
recur in the context; a round without a match is a plain decode pass (1 position, 1 token). With
`hit` < 1 a round carries a proposal with probability `hit` (measured: the share of the target's
decode passes that verified one, lrsim/calib/overheads.proposal_rate); 1 = a draft model, which
always proposes (the paper's model, Sec. 3.3). A job is priced at its rounds' mean positions.

Truncation: a real engine stops at the step's end ("\\n\\n"), so the last round's surplus is
wasted. Under `--ideal` the theory assumes an endless token stream; the surplus is then carried
to the request's next step (`SDStream.carry`), which removes the truncation bias (renewal-reward:
tokens per round average exactly (1 - alpha2^k2) / (1 - alpha2)).

Measured accepted lengths (opt-in): an n-gram drafter's accepted lengths are not geometric (most
proposals accept nothing, a few accept every drafted token). `AcceptedLengths` draws X from a
recorded `sd.accepted_length_hist` instead of Geometric(alpha2): a scenario's or Synthetic's
`accepted_length_hist`, `TraceWorkload(sd_lengths=True)`, `Profile.workload(sd_lengths=True)`.
It is not the default: on the load corpus it moved the replayed SD speed by under 3% against
Geometric(alpha2) with alpha2 matching the histogram's mean (lrsim/calib/overheads.mean_alpha;
tokens per pass depend on X through its mean), and left the plan where it was
(benchmarks/results/plan_gap_histogram.md against plan_gap.md).
"""
from __future__ import annotations

import bisect
import itertools
import math
import random
from dataclasses import dataclass
from typing import Any

import numpy as np
from mypy_extensions import mypyc_attr

# This module is compiled (lrsim/native.py): the numbers that arrive as int, float or NumPy
# scalars (k2, alpha2, the workload's hit rate, token counts, the counters they feed) are `Any`,
# which keeps Python's own values and arithmetic (an `int` annotation is checked at run time,
# a `float` one turns an int into a float); the rounds' lists hold Python ints (`tolist`).


CHUNK_ROUNDS = 2048     # SD rounds drawn per numpy call


PENDING_STREAMS = 4096  # streams with rounds to count before SDStats counts them all: a
#                        backstop (World.release counts a request's streams when it finishes)


class SDStats:
    """A run's SD counters. The histogram is counted lazily: a stream's rounds are tallied in
    bulk (np.bincount) when its chunk is refilled or the histogram is read, not round by round
    in every rounds_for (the loop per round was most of an lr+sd step's cost when compiled);
    every read of `hist` sees every round drawn so far, as when it was counted eagerly. A stream
    with rounds still to count is held in `pending` until it is counted (World.release counts a
    request's streams as it finishes, so a finished request's stream is not kept)."""

    def __init__(self) -> None:
        self.rounds: Any = 0          # int
        self.drafted: Any = 0         # int
        self.accepted: Any = 0        # int
        self._hist: list[int] = []    # _hist[e] = verify passes that emitted e tokens
        self.pending: dict[int, Any] = {}   # id -> SDStream with rounds not yet in _hist
        self.max_pending: int = PENDING_STREAMS

    @property
    def hist(self) -> list[int]:
        self.flush()
        return self._hist

    def flush(self) -> None:
        """Count every pending stream's drawn rounds into the histogram."""
        for stream in list(self.pending.values()):
            stream.flush()

    def __repr__(self) -> str:        # as the dataclass it was: the counters, every round counted
        return (f"SDStats(rounds={self.rounds!r}, drafted={self.drafted!r}, "
                f"accepted={self.accepted!r}, hist={self.hist!r})")

    @property
    def emitted_hist(self) -> dict[int, int]:
        return {e: c for e, c in enumerate(self.hist) if c}


# a Python class where compiled: a workload holds one (copied, pickled to worker processes)
@mypyc_attr(native_class=False)
@dataclass(frozen=True)
class AcceptedLengths:
    """The empirical distribution of X, the draft tokens one proposing pass accepts, from a
    recorded histogram (hist[k] = passes that accepted exactly k of gamma = len(hist) - 1).

    At cap <= gamma a pass accepts min(X, cap). Past gamma (a what-if longer than recorded) the
    top survives with the last measured conditional rate q = P(X >= gamma) / P(X >= gamma - 1),
    the geometric tail the histogram cannot show."""
    survival: tuple[float, ...]      # survival[j - 1] = P(X >= j), j = 1..gamma

    @classmethod
    def from_hist(cls, hist) -> "AcceptedLengths | None":
        """None without passes (or without a drafted position): nothing measured."""
        n = sum(hist or ())
        if n <= 0 or len(hist) < 2:
            return None
        tail = list(itertools.accumulate(reversed(hist)))[::-1]     # tail[j] = passes with X >= j
        return cls(tuple(t / n for t in tail[1:]))

    def surv(self, cap: Any) -> list[float]:
        """P(X >= j) for j = 1..cap."""
        s = list(self.survival[:cap])
        if cap > len(s):
            prev = self.survival[-2] if len(self.survival) > 1 else 1.0
            q = self.survival[-1] / prev if prev > 0 else 0.0
            while len(s) < cap:
                s.append(s[-1] * q)
        return s

    def mean(self, cap: Any) -> Any:
        """E[min(X, cap)]: accepted tokens per proposing pass (E = sum of the survival)."""
        return float(sum(self.surv(cap)))

    def draw(self, g: np.random.Generator, n: Any, cap: Any) -> Any:          # an ndarray
        """n draws of min(X, cap) by inversion: X = #{j : U < P(X >= j)}."""
        asc = np.asarray(self.surv(cap)[::-1])
        return len(asc) - np.searchsorted(asc, g.random(n), side="right")


def accepted_run(alpha: Any, cap: Any, rng: random.Random) -> Any:
    """min(X, cap) for X ~ Geometric(alpha) on {0, 1, ...}: P(X >= j) = alpha^j (scalar reference)."""
    if alpha <= 0.0 or cap <= 0:
        return 0
    if alpha >= 1.0:
        return cap
    x = int(math.log(1.0 - rng.random()) / math.log(alpha))
    return x if x < cap else cap


@dataclass
class SDStream:
    """Per-request token-level SD state: a pre-drawn sequence of tokens emitted per round (numpy,
    seeded from the request's RNG) consumed in order; a step of n tokens takes the rounds up to
    the first prefix sum >= n (one bisect instead of a Python loop per round: this was the
    simulator's hot spot at large k2)."""
    k2: Any                          # int
    alpha2: Any                      # float
    carry_surplus: bool = False      # True under --ideal (see module doc)
    credit: Any = 0                  # int
    hit: Any = 1.0                   # P(a round carries a proposal); see the module doc
    lengths: AcceptedLengths | None = None   # measured accepted lengths; None = Geometric(alpha2)

    def __post_init__(self):
        self._cs: list[int] = []
        self._ps: list[int] = []      # prefix sums of proposing rounds (only with hit < 1)
        self.last_positions: Any = 0  # verified positions of the rounds the last rounds_for took
        self._p = 0           # next unused round
        self._base = 0        # tokens emitted by the used rounds (prefix sum before _p)
        self._np: Any = None
        # the histogram's lazy count (SDStats): the rounds before _counted are counted (or were
        # taken without stats); those from _counted to _p are counted into _stats at flush
        self._counted = 0
        self._stats: SDStats | None = None
        self._pending = False
        self._emits_np: Any = None    # tokens each drawn round emits (an ndarray), and which
        #                               rounds proposed (hit < 1): what flush counts
        self._prop_np: Any = None

    def flush(self) -> None:
        """Count the rounds taken since the last flush into their stats' histogram."""
        stats, lo, hi = self._stats, self._counted, self._p
        self._counted = hi
        if self._pending and stats is not None:
            self._pending = False
            stats.pending.pop(id(self), None)
        if stats is None or hi <= lo:
            return
        emits = self._emits_np[lo:hi]
        if self._prop_np is not None:  # hit < 1: only the proposing rounds verified
            emits = emits[self._prop_np[lo:hi]]
        h = stats._hist
        for e, c in enumerate(np.bincount(emits).tolist()):
            if c:
                h[e] += c

    def _refill(self, rng: Any) -> None:
        self.flush()                  # the used rounds are dropped below: count them first
        if self._np is None:
            self._np = np.random.default_rng(rng.getrandbits(63))
        cap = self.k2 - 1
        if self.lengths is not None:
            x = self.lengths.draw(self._np, CHUNK_ROUNDS, cap)
        elif self.alpha2 <= 0.0:
            x = np.zeros(CHUNK_ROUNDS, dtype=np.int64)
        elif self.alpha2 >= 1.0:
            x = np.full(CHUNK_ROUNDS, cap, dtype=np.int64)
        else:
            x = np.minimum(self._np.geometric(1.0 - self.alpha2, CHUNK_ROUNDS) - 1, cap)
        if self.hit < 1.0:            # a round without a proposal: one plain decode position
            prop = self._np.random(CHUNK_ROUNDS) < self.hit
            x = np.where(prop, x, 0)
            done = self._ps[self._p - 1] if self._p else 0
            self._ps = [v - done for v in self._ps[self._p:]]
            base = self._ps[-1] if self._ps else 0
            # = [base + v for v in accumulate(prop)], the sums in NumPy's int64 (exact)
            self._ps += (np.cumsum(prop.astype(np.int64)) + base).tolist()
            self._prop_np = (prop if self._prop_np is None
                             else np.concatenate((self._prop_np[self._p:], prop)))
        # the unused rounds' prefix sums from 0 again, then the new rounds' after them: =
        # list(accumulate(emits)) over the unused and new rounds (int64 sums: exact)
        p = self._p
        done = self._cs[p - 1] if p else 0
        cs = [v - done for v in self._cs[p:]]
        last = cs[-1] if cs else 0
        emits = x + 1
        self._emits_np = emits if self._emits_np is None else np.concatenate((self._emits_np[p:], emits))
        self._cs = cs + (np.cumsum(emits) + last).tolist()
        self._p, self._base, self._counted = 0, 0, 0

    def rounds_for(self, n_tokens: Any, rng: Any, stats: SDStats | None = None) -> int:
        need = n_tokens
        if self.carry_surplus:
            use = min(self.credit, need)
            self.credit -= use
            need -= use
        if need <= 0:
            self.last_positions = 0
            return 0
        while not self._cs or self._cs[-1] - self._base < need:
            self._refill(rng)
        j = bisect.bisect_left(self._cs, self._base + need, self._p)
        rounds = j - self._p + 1
        got = self._cs[j] - self._base
        props = rounds
        if self._ps:                  # hit < 1: only the proposing rounds verified k2 positions
            props = self._ps[j] - (self._ps[self._p - 1] if self._p else 0)
        self.last_positions = rounds + props * (self.k2 - 1)
        if stats is not self._stats and self._p > self._counted:
            self.flush()              # the rounds before these belong to the other stats
        if stats is not None:
            stats.rounds += rounds
            stats.drafted += props * (self.k2 - 1)
            stats.accepted += got - rounds
            h = stats._hist
            if len(h) <= self.k2:
                h.extend([0] * (self.k2 + 1 - len(h)))
        self._stats = stats           # these rounds are counted into its hist at the next flush
        self._p, self._base = j + 1, self._cs[j]
        if stats is None:
            self._counted = self._p   # taken without stats: never counted
        elif not self._pending:
            self._pending = True
            stats.pending[id(self)] = self
            if len(stats.pending) >= stats.max_pending:
                stats.flush()
        if self.carry_surplus:
            self.credit += got - need
        return rounds
