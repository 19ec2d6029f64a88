"""Adaptive lookahead's knobs (AdaptiveConfig) and what the Estimator believes at one moment
(Estimates: acceptance by depth, step times and their batch slopes, verifier time, load)."""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from ..errors import UserError

MIN_STEP_S = 1e-9           # floor of a fitted step time (s): rates divide by it
MODES = ("async", "sync")


@dataclass(frozen=True)
class AdaptiveConfig:
    """Knobs of the estimator and the decision rule."""
    mode: str = "async"             # the reference's asynchronous tree (App. B Thm. 2); "sync" for
    #                                 Algorithm 1 (Thm. 1)
    max_depth: int = 8              # deepest speculation considered (twice the reference's 4:
    #                                 deeper only pays at acceptance > 0.9 with a nearly free draft)
    widths: tuple[int, ...] = (1, 2)  # the paper's width ablation peaks at W = 2 (arXiv 2506.19830)
    k2s: tuple[int, ...] = (1,)     # SD lengths to choose from; vLLM fixes k2 at engine start, so a
    #                                 real backend offers (1,) or its one k2, the simulator any set
    sd_draft_ratio: float = 0.0     # c2: SD drafter time per token / target's; 0 = n-gram lookup
    width_exponent: float = 0.28    # W siblings are worth W^0.28 independent drafts: the paper's
    #                                 acceptance 0.63 -> 0.83 from W = 1 to 8 (1 - 0.37^(8^0.28))
    decay: float = 0.95             # memory of ~1/(1 - decay) = 20 observations: follows a phase
    #                                 change within a few dozen steps
    prior_weight: float = 2.0       # the prior counts as 2 observations (the batch costs' ridge
    #                                 prior for ever: it keeps the slope defined)
    prior_ages: bool = True         # the means' prior ages like an observation (decays with them),
    #                                 so ~60 observations on the data alone decide: a permanent
    #                                 prior held acceptance 0 at a believed >= 0.045, above the
    #                                 break-even, for ever. An unseen depth stays at its prior
    #                                 (prior and data decay together: their ratio is kept)
    depth_pool_weight: float = 30.0  # a depth >= 2 is believed like the depth above it, worth 30
    #                                 of its own verdicts for ever (Estimator._alphas): more than
    #                                 the ~20 a depth can hold in memory, so noise between depths
    #                                 does not move the depth chosen (at 8 it did: on r1-humaneval
    #                                 lr+sd-adaptive ran depth 2 most where static depth 3-4 is
    #                                 best) while a lasting difference shows at up to 40% of its
    #                                 size (20 / 50; a depth holding ~5 of the ~20 verdicts: ~14%)
    margin: float = 0.03            # switch at once for > 3% expected gain
    min_gain: float = 0.005         # ... or for > 0.5% once the same better choice has been the
    dwell: int = 5                  # target of `dwell` decisions in a row: estimates that oscillate
    #                                 near a boundary never switch, a lasting gain below the margin
    #                                 is not left on the table for ever (margin alone kept the
    #                                 prior's first pick, k2 9, where k2 5 gained 2%)
    depth_rtol: float = 0.01        # plateau: the deepest depth (same width, k2) within 1% of the
    #                                 best is the target. Past the depth limit ceil(1/c1) the closed
    #                                 form is flat in depth (Thm. 2, S1: equal step times); with
    #                                 step lengths that vary, a deeper tree keeps the target busy
    #                                 through a long step, which the formula cannot see
    explore_every: int = 50         # after this many decisions at depth 0, one depth-1 speculation
    #                                 refreshes acceptance (AR observes none); 0 = never
    batch_reach: float = 2.0        # a choice may put at most 2x the largest target batch measured
    #                                 so far (Estimates.batch_seen) in its steps: past it the cost
    #                                 is the fit's extrapolation, and the neutral prior's free
    #                                 batching (slope 0) made any batch look free: at 128 requests
    #                                 its first pick, depth 4 k2 9 for every request, put 5,760
    #                                 positions in one batch (docs/adaptive.md, "Batch reach")
    batch_floor: float = 32.0       # ... and any choice of at most 32 positions is within reach:
    #                                 one request's tree at depth 4 width 2 without SD (31), the
    #                                 real corpus's 1-4 requests at depth 2 without SD (<= 12); SD
    #                                 multiplies the positions by k2 (depth 4 at k2 9: 45). Plain
    #                                 AR always is, and counts as measured (Estimates.reach)

    def __post_init__(self):
        def bad(name, v, want):
            raise UserError(f"adaptive config: {name} must be {want}, got {v!r}")
        if self.mode not in MODES:
            bad("mode", self.mode, " or ".join(MODES))
        if not isinstance(self.max_depth, int) or self.max_depth < 0:
            bad("max_depth", self.max_depth, "an integer >= 0")
        for name in ("widths", "k2s"):
            vs = getattr(self, name)
            if not vs or any(not isinstance(v, int) or v < 1 for v in vs):
                bad(name, vs, "a non-empty tuple of integers >= 1")
        for name, lo, hi in (("sd_draft_ratio", 0, math.inf), ("width_exponent", 0, 1),
                             ("decay", 0, 1), ("margin", 0, math.inf), ("min_gain", 0, math.inf),
                             ("depth_rtol", 0, 1), ("batch_reach", 1, math.inf),
                             ("batch_floor", 1, math.inf)):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and lo <= v <= hi and math.isfinite(v)):
                bad(name, v, f"a finite number in [{lo}, {hi}]")
        for name in ("prior_weight", "depth_pool_weight"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and 0 < v < math.inf):
                bad(name, v, "a finite number > 0")
        if not isinstance(self.dwell, int) or self.dwell < 1:
            bad("dwell", self.dwell, "an integer >= 1")
        if not isinstance(self.explore_every, int) or self.explore_every < 0:
            bad("explore_every", self.explore_every, "an integer >= 0")


@dataclass(frozen=True)
class Estimates:
    """A snapshot of what the estimator believes, and the form of a prior (a calibrated profile's
    numbers, or these neutral defaults). Times in seconds; only their ratios steer the decision."""
    alpha_by_depth: tuple[float, ...] = (0.5,)  # step acceptance of one draft at depth 1, 2, ...
    #                                 (the last holds deeper); 0.5: mid of the paper's 0.43-0.63
    alpha2: float = 0.0             # SD per-token acceptance: SD earns nothing until measured
    target_step_s: float = 1.0      # target step, one sequence in the batch
    target_slope_s: float = 0.0     # extra target seconds per extra position in its batch
    #                                 (0: the theory's free batching)
    draft_step_s: float = 0.1       # draft step, one sequence: c1 = 0.1 (a 1.5B draft, 32B target)
    draft_slope_s: float = 0.0      # extra draft seconds per extra sequence in its batch
    verify_s: float = 0.013         # one verdict: the paper's 7B judge on H200 (arXiv 2506.19830)
    load: float = 1.0               # requests in flight
    step_tokens: float = 40.0       # tokens per reasoning step (scales the rate; a prior's is
    #                                 also the length its costs are per, the Estimator's unit)
    launch_s: float = 0.0           # extra seconds a speculative target step pays as a request of
    #                                 its own (queue, the context's prefill) before its first token,
    #                                 which a step of depth 0, written by a request already
    #                                 running, does not; 0 = the theory's (both backends measure it)
    target_draft_s: float = 0.0     # extra target step seconds per draft request running beside
    #                                 it: where draft and target share a machine's cores (a 2-core
    #                                 CPU: 8-10% of a step, docs/adaptive.md), the drafter slows the
    #                                 target; 0 = separate devices (the theory's, the simulator's)
    spec_factor: float = 1.0        # the speculative choices' rate as the run measured it over
    #                                 their price, relative to depth 0's (Estimator.observe_paid):
    #                                 what the closed forms miss (1: nothing, the simulator's)
    batch_seen: float = 0.0         # the largest target batch (positions) a step's cost was
    #                                 measured at (0: none): AdaptiveConfig.batch_reach's base
    in_flight: float = 0.0          # requests in flight at the last count, not smoothed (0: not
    #                                 counted): the batch reach counts the batch a choice puts now

    def __post_init__(self):
        if not self.alpha_by_depth or any(not 0.0 <= a <= 1.0 for a in self.alpha_by_depth):
            raise UserError(f"estimates: alpha_by_depth must be a non-empty list of probabilities, "
                            f"got {list(self.alpha_by_depth)!r}")
        if not 0.0 <= self.alpha2 <= 1.0:
            raise UserError(f"estimates: alpha2 must be a probability, got {self.alpha2!r}")
        if not (self.target_step_s > 0 and self.draft_step_s >= 0 and self.verify_s >= 0
                and self.target_slope_s >= 0 and self.draft_slope_s >= 0 and self.step_tokens > 0
                and self.launch_s >= 0 and self.target_draft_s >= 0 and self.spec_factor > 0
                and self.batch_seen >= 0 and self.in_flight >= 0):
            raise UserError("estimates: target_step_s, step_tokens and spec_factor must be > 0, "
                            "the other times, slopes, batch_seen and in_flight >= 0")

    def alpha(self, depth: int) -> float:
        """Acceptance of one draft at `depth` >= 1 (the deepest known value beyond the table)."""
        return self.alpha_by_depth[min(depth, len(self.alpha_by_depth)) - 1]

    def target_time(self, positions: float, drafting: float = 0.0) -> float:
        """Seconds of one target step with `positions` in the target's batch and, on average,
        `drafting` draft requests running beside it."""
        return (self.target_step_s + self.target_slope_s * (positions - 1.0)
                + self.target_draft_s * drafting)

    def draft_time(self, sequences: float) -> float:
        """Seconds of one draft step with `sequences` in the draft's batch."""
        return self.draft_step_s + self.draft_slope_s * (sequences - 1.0)

    def requests_now(self) -> float:
        """The requests whose batch a choice puts now: the larger of the smoothed load and the
        last count (the load lags a burst of arrivals)."""
        return max(self.load, self.in_flight)

    def reach(self, cfg: "AdaptiveConfig") -> float:
        """The largest target batch (positions) a choice may put in its steps: batch_reach times
        the largest batch measured, or plain AR's batch now (always a candidate, so as good as
        measured), at least batch_floor."""
        return max(cfg.batch_floor, cfg.batch_reach * max(self.batch_seen, self.requests_now()))

    def to_dict(self) -> dict:
        d = asdict(self)
        d["alpha_by_depth"] = list(self.alpha_by_depth)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Estimates":
        return cls(**{**d, "alpha_by_depth": tuple(float(a) for a in d["alpha_by_depth"])})
