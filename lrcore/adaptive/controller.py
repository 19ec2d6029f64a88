"""The Controller (hysteresis: move only for a gain over a margin, or one that lasted `dwell`
decisions) and the Decision it records in the trace."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from .config import AdaptiveConfig, Estimates
from .rule import (AR, Choice, argmax, batch_positions, expected_rate, on_plateau, preferred,
                   ranked, within_reach)


@dataclass(frozen=True)
class Decision:
    """One decision, as the trace records it: what was believed, what was chosen, and why."""
    index: int                  # 0 for a controller's first decision, then 1, 2, ...
    depth: int
    width: int
    k2: int
    expected_tps: float         # expected committed tokens/s of one request under the choice
    ar_tps: float               # the same for plain AR (depth 0, k2 1), for comparison
    best: tuple[int, int, int]  # the argmax (depth, width, k2), which hysteresis may decline
    best_tps: float
    reason: str
    estimates: Estimates

    @property
    def choice(self) -> Choice:
        return Choice(self.depth, self.width, self.k2)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["best"] = list(self.best)
        d["estimates"] = self.estimates.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Decision":
        return cls(**{**d, "best": tuple(int(v) for v in d["best"]),
                      "estimates": Estimates.from_dict(d["estimates"])})

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), allow_nan=False, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "Decision":
        return cls.from_dict(json.loads(text))


class Controller:
    """The decision rule with hysteresis. Its current choice stands while it is on the plateau of
    the argmax (`on_plateau`: the argmax, or deeper within cfg.depth_rtol). Otherwise it moves to
    the deepest choice on that plateau (`preferred`) when the argmax's expected rate beats the
    current one's, for the same estimates, by more than cfg.margin (at once), or by more than
    cfg.min_gain with the same target for cfg.dwell decisions in a row (estimates oscillating
    near a boundary change the target before that: no flapping). A current choice whose batch
    has gone past the reach of the measured costs (rule.within_reach: the load rose) moves to the
    target at once. At depth 0 it probes depth 1 every cfg.explore_every decisions so acceptance
    stays measured (when the probe is within reach)."""

    def __init__(self, cfg: AdaptiveConfig, current: Choice | None = None):
        self.cfg = cfg
        self.current = current          # None: the first decision takes the target
        self.decisions = 0
        self.at_depth0 = 0              # decisions at depth 0 since the last speculation
        self.pending: Choice | None = None  # a better target that has not cleared the margin
        self.streak = 0                 # ... and for how many decisions in a row

    def decide(self, est: Estimates) -> Decision:
        rated = ranked(est, self.cfg)
        rates = dict(rated)

        def rate(c: Choice) -> float:
            return rates[c] if c in rates else expected_rate(est, c, self.cfg)

        best, best_rate = argmax(rated)
        target, _ = preferred(rated, self.cfg)
        aim = target.label() if target == best else f"{target.label()} (plateau of {best.label()})"
        cur = self.current
        if cur is not None and not within_reach(est, cur, self.cfg):
            beyond, cur = cur, None          # its batch is past what the costs were measured at
        else:
            beyond = None
        stays = cur is not None and on_plateau(cur, rate(cur), best, best_rate, self.cfg)
        gain = best_rate / rate(cur) - 1.0 if cur is not None else 0.0
        if cur is not None and not stays and self.cfg.min_gain < gain <= self.cfg.margin:
            self.streak = self.streak + 1 if target == self.pending else 1
            self.pending = target
        else:
            self.pending, self.streak = None, 0
        if beyond is not None:
            chosen, why = target, (f"switch from {beyond.label()}: its batch, "
                                   f"{batch_positions(est, beyond):.0f} positions, is past the "
                                   f"reach of the measured costs, {est.reach(self.cfg):.0f}; {aim}")
        elif cur is None:
            chosen, why = target, f"first decision: the best, {aim}"
        elif stays:
            chosen, why = cur, (f"{cur.label()} is still the best" if cur == best else
                                f"{cur.label()} is on the plateau of the best, {best.label()}")
        elif gain > self.cfg.margin:
            chosen, why = target, (f"switch from {cur.label()}: {aim} gains {gain:.1%} > margin "
                                   f"{self.cfg.margin:.1%}")
        elif self.streak >= self.cfg.dwell:
            chosen, why = target, (f"switch from {cur.label()}: {aim} gains {gain:.1%} > "
                                   f"{self.cfg.min_gain:.1%} for {self.streak} decisions in a row")
            self.pending, self.streak = None, 0
        else:
            held = f", {self.streak} of {self.cfg.dwell} in a row" if self.streak else ""
            chosen, why = cur, (f"keep {cur.label()}: {aim} would gain only {gain:.1%} <= margin "
                                f"{self.cfg.margin:.1%}{held}")
        self.current = chosen
        run = chosen
        if chosen.depth == 0 and self.cfg.max_depth >= 1 and self.cfg.explore_every > 0:
            self.at_depth0 += 1
            probe = Choice(1, 1, chosen.k2)
            if self.at_depth0 > self.cfg.explore_every and within_reach(est, probe, self.cfg):
                run = probe
                why = (f"explore: depth 1 once after {self.cfg.explore_every} decisions at depth 0 "
                       f"(keeps acceptance measured); {why}")
                self.at_depth0 = 0
        else:
            self.at_depth0 = 0
        run_rate, ar_rate = rate(run), rate(AR)
        d = Decision(self.decisions, run.depth, run.width, run.k2, run_rate, ar_rate, tuple(best),
                     best_rate, f"{why}; expected {run_rate / ar_rate:.3f}x AR", est)
        self.decisions += 1
        return d
