"""What every verifier returns, and the exact-match shortcut that runs before any of them.

A verifier compares the target's version of a step with the draft's version of the same step
(both are "the step after the same context") and says whether the draft may be kept
(paper Sec. 3, step 3 of Algorithm 1). Verifiers never raise for a failed comparison: a failure is
a rejection with `error` set, so one bad judge call cannot crash a collection run.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass

from ..engine import monotonic


@dataclass(frozen=True)
class Verdict:
    accepted: bool
    method: str            # the verifier that decided ("exact", "embedding", "judge", ...)
    score: float | None    # cosine / P(aligned) / random draw, when the method has one
    shortcut: bool         # decided by the exact-match shortcut, without running `method`
    error: str | None      # the comparison failed (counts as a rejection)
    start: float           # lrreal.engine.monotonic() seconds (the scheduler's clock)
    end: float
    reason: str | None = None   # a rejection decided without comparing (the scheduler's own:
    #                             "verifier raised", "draft not ready ..."); traces carry it if set

    @property
    def duration_s(self) -> float:
        return self.end - self.start

    def to_trace(self, t0: float) -> dict:
        """The trace's `verify` object, times relative to the record start `t0`. A failed
        comparison is recorded as it counts: verdict false, with `error` saying why."""
        rec = {"start": max(0.0, self.start - t0), "end": max(0.0, self.end - t0),
               "verdict": self.accepted, "method": self.method, "score": self.score,
               "shortcut": self.shortcut, "error": self.error}
        return rec if self.reason is None else rec | {"reason": self.reason}

    @classmethod
    def rejected(cls, method: str, reason: str, now: float, error: str | None = None) -> "Verdict":
        """A rejection the scheduler decides itself, at `now` (lrreal.engine.monotonic())."""
        return cls(False, method, None, False, error, now, now, reason)

    def as_dict(self) -> dict:
        return asdict(self)


def normalize(step: str) -> str:
    """Whitespace removed, lower-cased: the reference's exact-match comparison."""
    return "".join(step.split()).lower()


def exact_match(target_step: str, draft_step: str) -> bool:
    return normalize(target_step) == normalize(draft_step)


class Verifier(ABC):
    """`await v.verify(target_step, draft_step)` -> Verdict. Subclasses implement `_compare`."""

    method: str = "base"
    shortcut: bool = True  # try exact match first; a match is accepted without `_compare`

    async def verify(self, target_step: str, draft_step: str) -> Verdict:
        start = monotonic()
        if self.shortcut and exact_match(target_step, draft_step):
            return Verdict(True, self.method, None, True, None, start, monotonic())
        try:
            accepted, score, error = await self._compare(target_step, draft_step)
        except Exception as e:  # a verifier bug or environment failure must not end the run
            accepted, score, error = False, None, f"{type(e).__name__}: {e}"
        return Verdict(bool(accepted) and error is None, self.method, score, False, error,
                       start, monotonic())

    @abstractmethod
    async def _compare(self, target_step: str, draft_step: str) -> tuple[bool, float | None, str | None]:
        """-> (accepted, score, error)."""

    async def warm_up(self) -> None:
        """Load models / open connections before the first timed comparison (optional)."""

    async def aclose(self) -> None:
        """Release clients/models (optional)."""

    def describe(self) -> dict:
        """What the trace's run record says about this verifier."""
        return {"method": self.method, "shortcut": self.shortcut}
