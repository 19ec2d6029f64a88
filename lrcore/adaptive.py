"""Adaptive lookahead: running estimates, the decision rule, hysteresis, the record.

Before each new speculation a scheduler asks a Controller which depth (0 = no speculation: plain
AR, or SD alone, for that step), width and SD length k2 to run. The Controller takes the choice
that maximises the expected committed tokens per second of the paper's closed forms
(lrcore/theory.py) extended with the measured overheads (`expected_rate`), over a bounded
candidate set - or the deepest depth on that choice's plateau (`preferred`) - and moves away
from its current choice only when the gain clears a margin, or a smaller gain has lasted `dwell`
decisions. The
simulator (lrsim) and the real backend (lrreal) both import this module, so the decision is the
same code in both worlds; it imports nothing but lrcore and the standard library, and holds no
randomness: the same observations give the same decisions.

    cfg = AdaptiveConfig()
    est = Estimator(cfg, prior=Estimates())     # neutral prior; or Estimates(...) of a profile
    ctl = Controller(cfg)
    d = ctl.decide(est.snapshot())              # Decision: d.depth, d.width, d.k2, d.reason
    ...run that speculation, then feed back what happened:
    est.observe_verdict(depth=1, accepted=True); est.observe_target_step(0.8, batch=3)
    record["adaptive"].append(d.to_dict())      # JSON for the trace; Decision.from_dict reads it

Memory is bounded: a fixed number of decayed sums per quantity (exponential forgetting, one decay
per observation), whatever the length of the run.
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import NamedTuple

import numpy as np

from .errors import UserError
from .theory import f_async, f_sync, geometric_sum

# Two candidates whose expected rates differ by less than this relative amount tie, and the
# cheaper one (smaller depth, then width, then k2) wins: far above float rounding (~1e-15), far
# below anything measurable (the same tolerance as lrsim/theory/optimize.py).
TIE_RTOL = 1e-12
MIN_STEP_S = 1e-9           # floor of a fitted step time (s): rates divide by it
MODES = ("async", "sync")


# --- configuration -----------------------------------------------------------------------------

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
    depth_pool_weight: float = 8.0  # a depth >= 2 is believed like the depth above it, worth 8 of
    #                                 its own verdicts for ever (Estimator._alphas)
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
                             ("depth_rtol", 0, 1)):
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


# --- estimates ---------------------------------------------------------------------------------

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
    step_tokens: float = 40.0       # tokens per reasoning step (only scales the rate)
    launch_s: float = 0.0           # extra seconds a speculative target step pays as a request of
    #                                 its own (queue, the context's prefill) before its first token,
    #                                 which a step of depth 0, written by a request already
    #                                 running, does not; 0 = the theory's (and the simulator's)

    def __post_init__(self):
        if not self.alpha_by_depth or any(not 0.0 <= a <= 1.0 for a in self.alpha_by_depth):
            raise UserError(f"estimates: alpha_by_depth must be a non-empty list of probabilities, "
                            f"got {list(self.alpha_by_depth)!r}")
        if not 0.0 <= self.alpha2 <= 1.0:
            raise UserError(f"estimates: alpha2 must be a probability, got {self.alpha2!r}")
        if not (self.target_step_s > 0 and self.draft_step_s >= 0 and self.verify_s >= 0
                and self.target_slope_s >= 0 and self.draft_slope_s >= 0 and self.step_tokens > 0
                and self.launch_s >= 0):
            raise UserError("estimates: target_step_s and step_tokens must be > 0, the other "
                            "times and slopes >= 0")

    def alpha(self, depth: int) -> float:
        """Acceptance of one draft at `depth` >= 1 (the deepest known value beyond the table)."""
        return self.alpha_by_depth[min(depth, len(self.alpha_by_depth)) - 1]

    def target_time(self, positions: float) -> float:
        """Seconds of one target step with `positions` in the target's batch."""
        return self.target_step_s + self.target_slope_s * (positions - 1.0)

    def draft_time(self, sequences: float) -> float:
        """Seconds of one draft step with `sequences` in the draft's batch."""
        return self.draft_step_s + self.draft_slope_s * (sequences - 1.0)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["alpha_by_depth"] = list(self.alpha_by_depth)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Estimates":
        return cls(**{**d, "alpha_by_depth": tuple(float(a) for a in d["alpha_by_depth"])})


@dataclass
class DecayedMean:
    """A weighted mean with exponential forgetting and a prior:

        value = (p_n x0 + sum_i decay^(n-i) w_i x_i) / (p_n + sum_i decay^(n-i) w_i)

    after n observations (x_i, w_i) or forgets; x0 is the prior, worth p_n observations: w0 for
    ever (p_n = w0), or, if `ages`, w0 observations made before the first (p_n = w0 decay^n): the
    data alone decide in the end, and a mean that is only forgotten keeps its value."""
    prior: float
    prior_weight: float
    decay: float
    ages: bool = False
    total: float = 0.0      # decayed sum of w_i x_i
    weight: float = 0.0     # decayed sum of w_i
    prior_mass: float = -1.0  # p_n (-1: not set yet, prior_weight)

    def __post_init__(self):
        if self.prior_mass < 0:
            self.prior_mass = float(self.prior_weight)

    def observe(self, value: float, weight: float = 1.0) -> None:
        self.forget()
        self.total += weight * value
        self.weight += weight

    def forget(self) -> None:
        """One decay without an observation (another depth's verdict ticked the clock)."""
        self.total *= self.decay
        self.weight *= self.decay
        if self.ages:
            self.prior_mass *= self.decay
            mass = self.prior_mass + self.weight
            if 0 < mass < 1e-200:       # ~9000 decays with nothing new: rescale before underflow
                self.prior_mass, self.total, self.weight = (
                    self.prior_mass / mass, self.total / mass, self.weight / mass)

    def blend(self, prior: float) -> float:
        """The mean with `prior` in place of x0 (the estimator's chained prior by depth)."""
        mass = self.prior_mass + self.weight
        return (self.prior_mass * prior + self.total) / mass if mass > 0 else prior

    @property
    def value(self) -> float:
        return self.blend(self.prior)


MAX_BATCH_BIN = 63   # batch sizes (x - 1) kept apart up to this; larger ones share the last bin


@dataclass
class BatchCost:
    """Step seconds as a line in the batch size x, T(x) = base + slope (x - 1), fitted by weighted
    least squares through the decayed mean at each batch size seen, with a ridge prior worth w0
    observations:

        minimise  sum_b w_b (t_b - base - slope u_b)^2 + w0 (base - base0)^2 + w0 (slope - slope0)^2

    where bin b holds the observations at round(x - 1) = b: w_b = sum_i decay^(n_b - i) is its
    decayed count and (u_b, t_b) its decayed means, each bin forgetting only as it is observed
    again (directional forgetting). One clock for all sizes would let a run that settles at one
    batch size - depth 0 alone, or 4 AR streams - forget everything it measured about the
    others, and the slope fall back to its prior (the theory's free batching, 0) and the
    speculation it made look free (the real load corpus's rounds 5-6, docs/adaptive.md). Seen at
    one batch size only, the slope is its prior; a negative fitted slope is refitted at 0 (a
    larger batch never runs faster)."""
    base0: float
    slope0: float
    prior_weight: float
    decay: float
    bins: dict[int, list[float]] = field(default_factory=dict)   # b -> decayed [w, sum u, sum t]

    def observe(self, seconds: float, batch: float) -> None:
        u = batch - 1.0
        b = min(int(round(u)), MAX_BATCH_BIN)
        w, su, st = self.bins.get(b, (0.0, 0.0, 0.0))
        self.bins[b] = [self.decay * w + 1.0, self.decay * su + u, self.decay * st + seconds]

    def fit(self) -> tuple[float, float]:
        p = self.prior_weight
        # the normal equations [[a, b], [b, d]] [base, slope] = [r, s], bins at their means
        w = sum(v[0] for v in self.bins.values())
        u = sum(v[1] for v in self.bins.values())
        uu = sum(v[1] * v[1] / v[0] for v in self.bins.values())
        t = sum(v[2] for v in self.bins.values())
        ut = sum(v[1] * v[2] / v[0] for v in self.bins.values())
        a, b, d = w + p, u, uu + p
        r, s = t + p * self.base0, ut + p * self.slope0
        slope = (a * s - b * r) / (a * d - b * b)
        base = (r - b * slope) / a
        if slope < 0.0:                        # the fit with the slope held at 0
            slope, base = 0.0, r / a
        return max(base, MIN_STEP_S), slope


def _measured(name: str, *values: float) -> None:
    """A caller's bug, not a user's: a negative or non-finite measurement would poison the sums."""
    if any(not (math.isfinite(v) and v >= 0) for v in values):
        raise ValueError(f"{name}: measurements must be finite and >= 0, got {values}")


class Estimator:
    """Running estimates of step acceptance by depth, SD token acceptance, draft and target step
    time (by batch), verifier time, load and step length, each starting from the prior and
    forgetting old observations at `cfg.decay` per observation."""

    def __init__(self, cfg: AdaptiveConfig, prior: Estimates | None = None):
        self.cfg = cfg
        p = prior or Estimates()
        w, k, ages = cfg.prior_weight, cfg.decay, cfg.prior_ages
        # depths >= 2: only their decayed sums are used (their prior is the chain, _alphas)
        self.alpha = [DecayedMean(p.alpha(d), w, k, ages and d == 1)
                      for d in range(1, max(cfg.max_depth, 1) + 1)]
        self.alpha2 = DecayedMean(p.alpha2, w, k, ages)
        self.target = BatchCost(p.target_step_s, p.target_slope_s, w, k)
        self.draft = BatchCost(p.draft_step_s, p.draft_slope_s, w, k)
        self.verify = DecayedMean(p.verify_s, w, k, ages)
        self.load = DecayedMean(p.load, w, k, ages)
        self.step_tokens = DecayedMean(p.step_tokens, w, k, ages)
        self.launch = DecayedMean(p.launch_s, w, k, ages)

    def observe_verdict(self, depth: int, accepted: bool) -> None:
        """One judged draft at `depth` >= 1 (deeper than max_depth counts as max_depth)."""
        self.observe_acceptance(depth, 1, int(bool(accepted)))

    def observe_acceptance(self, depth: int, judged: int, accepted: int) -> None:
        """`accepted` of `judged` drafts at `depth` accepted: one observation of weight `judged`."""
        if depth < 1:
            raise ValueError(f"depth must be >= 1, got {depth}")
        _measured("observe_acceptance", judged, accepted, judged - accepted)
        if judged > 0:
            mine = self.alpha[min(depth, len(self.alpha)) - 1]
            for m in self.alpha:    # one clock for every depth: a depth no longer judged forgets
                if m is not mine:   # its old verdicts and returns to its prior (the depth above)
                    m.forget()
            mine.observe(accepted / judged, judged)

    def observe_sd(self, accepted: int, rejected: int) -> None:
        """SD tokens as Bernoulli trials of alpha2: `accepted` draft tokens, and `rejected`, the
        rounds that stopped at a rejected token (drafts after that one were never trials)."""
        _measured("observe_sd", accepted, rejected)
        if accepted + rejected > 0:
            self.alpha2.observe(accepted / (accepted + rejected), accepted + rejected)

    def observe_target_step(self, seconds: float, batch: float = 1, k2: int = 1,
                            tokens_per_pass: float | None = None,
                            tokens: float | None = None, launch_s: float | None = None) -> None:
        """One target step with `batch` sequences in the target's batch. A step run with SD
        (k2 > 1, `tokens_per_pass` tokens committed per pass, default the current estimate) is
        stored as the plain step of batch * k2 positions it equals under `expected_rate`'s model.
        `tokens`, the step's length, scales the seconds to a step of the mean length (the current
        step_tokens estimate): steps vary in length far more than a batch changes their time.
        `launch_s`: of the seconds, those before its first token beyond one token's time (a
        request of its own: queue, prefill); learned apart (Estimates.launch_s), the rest is the
        step's cost in the batch. None: a step of a request already running (depth 0)."""
        _measured("observe_target_step", seconds, batch - 1, k2 - 1)
        if launch_s is not None:
            _measured("launch_s", launch_s)
            launch_s = min(launch_s, seconds)
            self.launch.observe(launch_s)
            seconds -= launch_s
        seconds = self._per_mean_step(seconds, tokens)
        if k2 > 1:
            m = tokens_per_pass or float(geometric_sum(self.alpha2.value, k2))
            seconds = seconds * m / (1.0 + self.cfg.sd_draft_ratio * (k2 - 1))
        self.target.observe(seconds, batch * k2)

    def observe_draft_step(self, seconds: float, batch: float = 1,
                           tokens: float | None = None) -> None:
        """One draft step with `batch` sequences in the draft's batch (`tokens`: as for
        observe_target_step)."""
        _measured("observe_draft_step", seconds, batch - 1)
        self.draft.observe(self._per_mean_step(seconds, tokens), batch)

    def _per_mean_step(self, seconds: float, tokens: float | None) -> float:
        if tokens is None:
            return seconds
        _measured("tokens", tokens)
        return seconds * self.step_tokens.value / tokens if tokens > 0 else seconds

    def observe_verify(self, seconds: float) -> None:
        """One verdict's latency (a level's sibling verdicts run concurrently: report one)."""
        _measured("observe_verify", seconds)
        self.verify.observe(seconds)

    def observe_load(self, in_flight: float) -> None:
        """Requests in flight, e.g. at each decision."""
        _measured("observe_load", in_flight)
        self.load.observe(in_flight)

    def observe_step_tokens(self, tokens: float) -> None:
        """Tokens of one committed step."""
        _measured("observe_step_tokens", tokens)
        self.step_tokens.observe(tokens)

    def snapshot(self) -> Estimates:
        """The current estimates (probabilities clipped to [0, 1] against rounding; the load is at
        least 1, the request asking)."""
        (tb, ts), (db, ds) = self.target.fit(), self.draft.fit()

        def prob(x: float) -> float:
            return min(max(x, 0.0), 1.0)
        return Estimates(self._alphas(prob), prob(self.alpha2.value),
                         tb, ts, db, ds, self.verify.value, max(self.load.value, 1.0),
                         self.step_tokens.value, max(self.launch.value, 0.0))


    def _alphas(self, prob) -> tuple[float, ...]:
        """Acceptance by depth. Depth 1 is its own mean (its prior ages with cfg.prior_ages). The
        prior of depth d >= 2 is the estimate of depth d - 1 (times the prior's own ratio between
        them), worth cfg.depth_pool_weight observations for ever: a depth seldom judged - the
        async tree judges most drafts at the depth they were launched at, and a rejection at
        depth 1 kills the deeper ones unjudged - is believed to be like the depth above it, not
        the fixed prior. (With a fixed 0.5 at depths 2-4, a depth-1 acceptance of 0 still priced
        a depth-4 tree at a geometric-mean acceptance of 0.27, and it never stopped
        speculating; with the chain worth only 2 observations, depths 2-4, each with ~5 of the
        ~20 verdicts in memory, swung by 0.2 on noise, and the choice with them between depth 2
        and 4.) Before any observation every depth is exactly its prior."""
        out: list[float] = []
        pool = self.cfg.depth_pool_weight
        for d, m in enumerate(self.alpha):
            above = self.alpha[d - 1].prior if d else 0.0
            if not d:
                out.append(prob(m.value))
                continue
            prior = m.prior * (out[-1] / above) if above > 0 else m.prior
            out.append(prob((pool * prior + m.total) / (pool + m.weight)))
        return tuple(out)


# --- the decision rule -------------------------------------------------------------------------

class Choice(NamedTuple):
    depth: int      # drafted steps ahead (0: no speculation)
    width: int      # sibling drafts per node
    k2: int         # SD positions per target pass (1: no SD)

    def label(self) -> str:
        return f"depth {self.depth} width {self.width} k2 {self.k2}"


AR = Choice(0, 1, 1)


def candidates(cfg: AdaptiveConfig) -> list[Choice]:
    """The bounded candidate set, cheapest first (ties go to the earlier one): depth 0 with each
    k2, then every depth 1..max_depth x width x k2."""
    out = [Choice(0, 1, k2) for k2 in sorted(set(cfg.k2s))]
    out += [Choice(d, w, k2) for d in range(1, cfg.max_depth + 1)
            for w in sorted(set(cfg.widths)) for k2 in sorted(set(cfg.k2s))]
    return out


def expected_rate(est: Estimates, c: Choice, cfg: AdaptiveConfig) -> float:
    """Expected committed tokens per second of one request running choice `c` while `est.load`
    requests in flight all run it (the closed forms of lrcore/theory.py with measured costs).

    With a_d = est.alpha(d), T_t(x) / T_d(x) the target / draft step seconds at x positions in
    the engine's batch, T_v the verdict time, T_l the launch a speculative target step pays, n the load, L tokens per step, c2 = sd_draft_ratio:

      Token level (paper Sec. 3.3, App. B eq. 2), the target running SD with k2 positions:
          m(k2)   = (1 - alpha2^k2) / (1 - alpha2)            tokens per target pass
          T_sd(x) = T_t(x k2) (1 - c2 + c2 k2) / m(k2)        one target step of x sequences
      Depth 0 (no speculation):   rate = L / T_sd(n)
      Depth D >= 1 (step level: App. B Thm. 1 sync, Thm. 2 async):
          A_d     = 1 - (1 - a_d)^(W^width_exponent)         a level accepts if one sibling does
          alpha   = (A_1 A_2 ... A_D)^(1/D)                  same chance of D accepts in a row
          P       = 1 + W + ... + W^D                        target positions of one request's tree
          T_round = T_sd(n P) + T_l + T_v                    a target step (a request of its own:
                                                             its launch T_l), then its verdict
          c1      = (1/D) sum_{d=1..D} T_d(n W^d) / T_round  drafting one level, per round
          rate    = L f(alpha, c1, D + 1) / T_round          f = f_async (S1/S2) or f_sync

    With flat costs (T_t, T_d constant), T_v = T_l = 0, W = 1, n = 1 and constant acceptance, rate over
    the AR rate L / T_t(1) is exactly the paper's f(alpha1, c1, k1 = D + 1) at depth D >= 1, g(k2)
    at depth 0, and f(alpha1, c1 g(k2), D + 1) g(k2) = h(k1, k2) (Sec. 3.3 eq. 1) for the hybrid,
    c1 measured against the SD-accelerated target step as the simulator's ideal setup does.
    """
    return _rates(est, [c], cfg)[0][1]


def ranked(est: Estimates, cfg: AdaptiveConfig) -> list[tuple[Choice, float]]:
    """Every candidate with its expected rate, in candidate order."""
    return _rates(est, candidates(cfg), cfg)


def _rates(est: Estimates, choices: list[Choice],
           cfg: AdaptiveConfig) -> list[tuple[Choice, float]]:
    """expected_rate of each choice: the per-choice terms in plain floats, then one vectorised
    call of the closed forms (one call per candidate costs ~0.3 ms in numpy overhead)."""
    n, L = est.load, est.step_tokens
    k2s = sorted({c.k2 for c in choices})
    m = dict(zip(k2s, np.atleast_1d(geometric_sum(est.alpha2, np.array(k2s, dtype=float)))))

    def t_sd(sequences: float, k2: int) -> float:
        sd_cost = 1.0 + cfg.sd_draft_ratio * (k2 - 1)
        return max(est.target_time(sequences * k2), MIN_STEP_S) * sd_cost / float(m[k2])

    rates = [L / t_sd(n, c.k2) if c.depth == 0 else None for c in choices]
    alphas, c1s, k1s, rounds = [], [], [], []
    for c in choices:
        if c.depth == 0:
            continue
        D, W = c.depth, c.width
        levels = [1.0 - (1.0 - est.alpha(d)) ** (W ** cfg.width_exponent) for d in range(1, D + 1)]
        positions = sum(W ** d for d in range(D + 1))
        t_round = t_sd(n * positions, c.k2) + est.launch_s + est.verify_s
        t_draft = sum(max(est.draft_time(n * W ** d), 0.0) for d in range(1, D + 1)) / D
        alphas.append(math.prod(levels) ** (1.0 / D))
        c1s.append(t_draft / t_round)
        k1s.append(D + 1.0)
        rounds.append(t_round)
    if alphas:
        f = (f_async if cfg.mode == "async" else f_sync)(np.array(alphas), np.array(c1s),
                                                         np.array(k1s))
        spec = iter(L * float(fk) / t for fk, t in zip(np.atleast_1d(f), rounds))
        rates = [r if r is not None else next(spec) for r in rates]
    return list(zip(choices, rates))


def best_choice(est: Estimates, cfg: AdaptiveConfig) -> tuple[Choice, float]:
    """The argmax of expected_rate over the candidates; a tie (within TIE_RTOL) goes to the
    cheaper candidate."""
    return _argmax(ranked(est, cfg))


def _argmax(rated: list[tuple[Choice, float]]) -> tuple[Choice, float]:
    best, best_rate = rated[0]
    for c, r in rated[1:]:
        if r > best_rate * (1.0 + TIE_RTOL):
            best, best_rate = c, r
    return best, best_rate


def on_plateau(c: Choice, rate: float, best: Choice, best_rate: float,
               cfg: AdaptiveConfig) -> bool:
    """`c` (expected `rate`) is the best, or as deep or deeper with the best's width and k2 and
    within cfg.depth_rtol of its rate: the plateau rule (AdaptiveConfig.depth_rtol). Depth 0 has
    no plateau: when not speculating is best, only not speculating is on it."""
    if c == best:
        return True
    return (best.depth > 0 and c.width == best.width and c.k2 == best.k2
            and c.depth > best.depth and rate >= best_rate * (1.0 - cfg.depth_rtol))


def preferred(rated: list[tuple[Choice, float]], cfg: AdaptiveConfig) -> tuple[Choice, float]:
    """The choice the Controller moves to: the deepest candidate on the argmax's plateau."""
    best, best_rate = _argmax(rated)
    pick, pick_rate = best, best_rate
    for c, r in rated:
        if c.depth > pick.depth and on_plateau(c, r, best, best_rate, cfg):
            pick, pick_rate = c, r
    return pick, pick_rate


# --- the record and the controller -------------------------------------------------------------

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
    near a boundary change the target before that: no flapping). At depth 0 it probes depth 1
    every cfg.explore_every decisions so acceptance stays measured."""

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

        best, best_rate = _argmax(rated)
        target, _ = preferred(rated, self.cfg)
        aim = target.label() if target == best else f"{target.label()} (plateau of {best.label()})"
        cur = self.current
        stays = cur is not None and on_plateau(cur, rate(cur), best, best_rate, self.cfg)
        gain = best_rate / rate(cur) - 1.0 if cur is not None else 0.0
        if cur is not None and not stays and self.cfg.min_gain < gain <= self.cfg.margin:
            self.streak = self.streak + 1 if target == self.pending else 1
            self.pending = target
        else:
            self.pending, self.streak = None, 0
        if cur is None:
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
            if self.at_depth0 > self.cfg.explore_every:
                run = Choice(1, 1, chosen.k2)
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
