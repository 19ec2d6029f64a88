"""Building the per-step part of a trace record while a problem runs.

Times are stored relative to the record's start `t0` (monotonic seconds). One step record per
committed step, in output order. A committed step carries the target step and the draft step
that were compared at its position (either may be absent), the verdict, and the work cancelled
or discarded when the step was decided (see traces/README.md for the contract).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..engine import GenResult, Progress, monotonic


@dataclass
class ProblemResult:
    text: str
    output_tokens: int
    finish_reason: str                     # "eos" or "budget"
    steps: list[dict]
    step_acceptance: dict
    wall_time_s: float
    t0: float
    extra: dict = field(default_factory=dict)
    first_output: float | None = None      # monotonic time the first output token was final
                                           # (lr modes: the first commit; ar/sd: the first token)


class StepLog:
    def __init__(self, t0: float):
        self.t0 = t0
        self.steps: list[dict] = []
        self.pending_cancelled: list[dict] = []
        self.pending_discarded: list[dict] = []
        self.proposed = self.accepted = 0
        self.by_depth: dict[str, list[int]] = {}
        self.reject_reasons: dict[str, int] = {}
        self.judge_counts: dict | None = None
        self.first_output: float | None = None  # when the user could first see output (TTFT)
        self.committed_text, self.committed_tokens = "", 0   # the answer so far: the steps, joined

    def rel(self, t: float) -> float:
        return max(0.0, t - self.t0)

    def span(self, r: GenResult | None) -> dict | None:
        if r is None:
            return None
        out = {"start": self.rel(r.start), "end": self.rel(r.end), "tokens": r.tokens}
        if r.finish:           # why the engine request ended (stop, eos, length); a cut of a
            out["finish"] = r.finish          # streamed request that goes on has none
        if r.prompt_tokens is not None and r.cached_tokens is not None:
            out |= {"prompt_tokens": r.prompt_tokens, "cached_tokens": r.cached_tokens}
        return out

    def verify_rec(self, verdict) -> dict | None:
        """A Verdict (lrreal.verifiers.base) as the trace's verify object."""
        return None if verdict is None else verdict.to_trace(self.t0)

    def cancelled(self, kind: str, p: Progress, depth: int, now: float) -> None:
        self.pending_cancelled.append({"kind": kind, "start": self.rel(p.start or now),
                                       "end": self.rel(p.end or now), "tokens": p.tokens,
                                       "depth": depth})

    def discarded(self, kind: str, r: GenResult, depth: int) -> None:
        """Finished work never used (e.g. a draft in a subtree that lost)."""
        self.pending_discarded.append({"kind": kind, **self.span(r), "depth": depth})

    def judged(self, depth: int, accepted: bool, reason: str | None = None) -> None:
        """One step position decided with draft(s) proposed (accepted if any was accepted)."""
        self.proposed += 1
        self.accepted += int(accepted)
        d = self.by_depth.setdefault(str(depth), [0, 0])
        d[0] += 1
        d[1] += int(accepted)
        if not accepted and reason:
            self.reject_reasons[reason] = self.reject_reasons.get(reason, 0) + 1

    def commit(self, *, source: str, text: str, tokens: int, depth: int, draft: GenResult | None,
               target: GenResult | None, verify: dict | None, **extra) -> dict:
        step = {"index": len(self.steps), "source": source, "tokens": tokens, "depth": depth,
                "draft": self.span(draft), "target": self.span(target), "verify": verify,
                "cancelled": self.pending_cancelled, "text": text}
        if self.pending_discarded:
            step["discarded"] = self.pending_discarded
        step.update({k: v for k, v in extra.items() if v is not None})
        if self.first_output is None:
            self.first_output = monotonic()
        self.steps.append(step)
        self.committed_text += text
        self.committed_tokens += tokens
        self.pending_cancelled, self.pending_discarded = [], []
        return step

    def flush_pending_into_last(self) -> None:
        """Work cancelled at the very end (EOS/budget) belongs to the last step."""
        if self.steps and (self.pending_cancelled or self.pending_discarded):
            last = self.steps[-1]
            last["cancelled"] = last["cancelled"] + self.pending_cancelled
            if self.pending_discarded:
                last["discarded"] = last.get("discarded", []) + self.pending_discarded
            self.pending_cancelled, self.pending_discarded = [], []

    def judgements(self, started: int, used: int) -> None:
        """Verifier calls made, and how many decided a position (the rest judged drafts that
        were cancelled first: the price of judging eagerly)."""
        self.judge_counts = {"started": started, "used": used}

    def acceptance(self) -> dict:
        out = {"proposed": self.proposed, "accepted": self.accepted, "by_depth": self.by_depth}
        if self.reject_reasons:
            out["reject_reasons"] = self.reject_reasons
        if self.judge_counts is not None:
            out["judgements"] = self.judge_counts
        return out

    def result(self, finish_reason: str, now: float, **extra) -> ProblemResult:
        self.flush_pending_into_last()
        return ProblemResult(text="".join(s["text"] for s in self.steps),
                             output_tokens=sum(s["tokens"] for s in self.steps),
                             finish_reason=finish_reason, steps=self.steps,
                             step_acceptance=self.acceptance(), wall_time_s=now - self.t0,
                             t0=self.t0, extra=extra, first_output=self.first_output)
