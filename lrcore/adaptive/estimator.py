"""Running estimates with bounded memory: decayed means with a prior (DecayedMean), a step's cost
by batch size (BatchCost), and the Estimator a scheduler feeds after every verdict and step."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..theory import geometric_sum
from .config import MIN_STEP_S, AdaptiveConfig, Estimates


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


LINEAR_BINS = 64       # batch sizes x - 1 kept apart one by one below this, then ...
BINS_PER_OCTAVE = 8    # ... 8 bins per doubling (each ~9% wide). One last bin for every size
#                        >= 64 held a run at 128 sequences and its speculation at 256 in one
#                        point, and the slope came from that point and the prior's base: at 128
#                        requests lr-adaptive speculated where it lost (docs/adaptive.md,
#                        "Estimates")
MAX_BATCH_BIN = LINEAR_BINS + BINS_PER_OCTAVE * 24   # the bin of 64 x 2^24 (~10^9) and beyond


def batch_bin(u: float) -> int:
    """The bin of u = x - 1 extra positions (or 2 v draft requests): u itself below LINEAR_BINS,
    then logarithmic; at most MAX_BATCH_BIN: the bins a cost keeps are bounded whatever the load."""
    if u < LINEAR_BINS - 0.5:
        return int(round(u))
    return min(LINEAR_BINS + int(BINS_PER_OCTAVE * math.log2(u / (LINEAR_BINS - 0.5))),
               MAX_BATCH_BIN)


@dataclass
class BatchCost:
    """Step seconds as a plane in the batch size x and the requests v of the other engine running
    beside the step, T(x, v) = base + slope (x - 1) + drafting v, fitted by weighted least
    squares through the decayed mean at each bin seen, with a ridge prior worth w0 observations:

        minimise  sum_b w_b (t_b - base - slope u_b - drafting v_b)^2 + w0 (base - base0)^2
                  + w0 (slope - slope0)^2 + w0 (drafting - drafting0)^2

    where bin b holds the observations at batch_bin(x - 1) (and, for v > 0, batch_bin(2 v)):
    w_b = sum_i decay^(n_b - i) is its decayed count and (u_b, v_b, t_b) its decayed means, each
    bin forgetting only as it is observed again (directional forgetting). One clock for all sizes
    would let a run that settles at one batch size - depth 0 alone, or 4 AR streams - forget
    everything it measured about the others, and the slope fall back to its prior (the theory's
    free batching, 0) and the speculation it made look free (the real load corpus's rounds 5-6,
    docs/adaptive.md). Seen at one batch size only, the slope is its prior; a negative fitted
    slope or drafting cost is refitted at 0 (a larger batch, or a busier drafter, never runs the
    step faster). The target's v is the draft requests beside it: on a CPU whose cores both
    engines share, a target step at batch 1 beside the drafter ran 8-10% slower than one alone
    (docs/adaptive.md), and pooled with them it priced speculation 8% too cheap. With v = 0
    throughout (the draft's own cost, separate devices) it is the line base + slope (x - 1)."""
    base0: float
    slope0: float
    prior_weight: float
    decay: float
    bins: dict[int, list[float]] = field(default_factory=dict)   # b -> decayed [w, sum u, sum t]
    #                                                              (steps with v = 0)
    busy: dict[tuple[int, int], list[float]] = field(default_factory=dict)  # (b, bin of 2 v) ->
    #                                                  decayed [w, sum u, sum t, sum v] (v > 0)
    drafting0: float = 0.0
    largest: float = 0.0        # the largest batch observed (Estimates.batch_seen)
    fitted: tuple | None = field(default=None, compare=False, repr=False)   # fit() until the
    #                                 next observation (a run-wide cost is read at every decision)

    def observe(self, seconds: float, batch: float, beside: float = 0.0) -> None:
        self.fitted = None
        self.largest = max(self.largest, batch)
        u = batch - 1.0
        b = batch_bin(u)
        k = self.decay
        if beside > 0.0:
            key = (b, batch_bin(2.0 * beside))
            w, su, st, sv = self.busy.get(key, (0.0, 0.0, 0.0, 0.0))
            self.busy[key] = [k * w + 1.0, k * su + u, k * st + seconds, k * sv + beside]
            return
        w, su, st = self.bins.get(b, (0.0, 0.0, 0.0))
        self.bins[b] = [k * w + 1.0, k * su + u, k * st + seconds]

    def fit(self) -> tuple[float, float, float]:
        """(base, slope, drafting)."""
        if self.fitted is None:
            self.fitted = self._fit_plane() if self.busy else self._fit_line()
        return self.fitted

    def _fit_line(self) -> tuple[float, float, float]:
        """No step beside the other engine: the line in closed form (the simulator's only case:
        no numpy, its results unchanged to the last bit)."""
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
        return max(base, MIN_STEP_S), slope, self.drafting0

    def _fit_plane(self) -> tuple[float, float, float]:
        """The three-parameter fit: the normal equations A theta = r of (base, slope, drafting),
        solved with slope and drafting >= 0 (of the fits holding a negative one at 0, the one of
        least squared error: the constrained least squares, the problem being convex)."""
        p = self.prior_weight
        rows = np.array([(w, su, 0.0, st) for w, su, st in self.bins.values()]
                        + [(w, su, sv, st) for w, su, st, sv in self.busy.values()])
        m, t = rows[:, :3], rows[:, 3]           # m: w x (1, mean u, mean v) by bin
        A = np.diag([p, p, p]) + (m.T / rows[:, 0]) @ m
        r = p * np.array([self.base0, self.slope0, self.drafting0]) + m.T @ (t / rows[:, 0])
        best = None
        for free in ((0, 1, 2), (0, 1), (0, 2), (0,)):
            theta = np.zeros(3)
            idx = list(free)
            theta[idx] = np.linalg.solve(A[np.ix_(idx, idx)], r[idx])
            if theta[1] < 0.0 or theta[2] < 0.0:
                continue
            err = float(theta @ A @ theta - 2.0 * r @ theta)   # squared error, less a constant
            if best is None or err < best[0]:
                best = (err, theta)
                if len(free) == 3:
                    break
        base, slope, drafting = (float(x) for x in best[1])
        return max(base, MIN_STEP_S), slope, drafting


@dataclass
class PaidCheck:
    """What committed tokens cost against what the rule priced them at, for one kind of choice
    (speculating or not): decayed sums of the seconds the price allowed them (tokens / priced
    rate) and of the seconds they took. `ratio(prior)` = allowed / taken (1: the price held;
    below 1: they came slower than priced), with `prior` worth `prior_weight` mean
    observations."""
    prior_weight: float
    decay: float
    allowed: float = 0.0
    taken: float = 0.0
    n: float = 0.0

    def observe(self, allowed_s: float, taken_s: float) -> None:
        k = self.decay
        self.allowed = k * self.allowed + allowed_s
        self.taken = k * self.taken + taken_s
        self.n = k * self.n + 1.0

    def ratio(self, prior: float = 1.0) -> float:
        if self.n <= 0.0 or self.taken <= 0.0:
            return prior
        mass = self.prior_weight * self.taken / self.n
        return (self.allowed + prior * mass) / (self.taken + mass)


SPEC_FACTOR_BOUNDS = (0.25, 4.0)   # the correction never more than 4x either way: a few steps of
#                                    luck must not make speculation look free or hopeless


def first_token_wait(start: float, first: float, end: float, tokens: float) -> float:
    """Seconds a request waited for its first token beyond one token's time (its queue and
    prefill: Estimates.launch_s): first - start - (end - first) / (tokens - 1). Both schedulers
    time launches with it (lrreal/scheduler/lr_adaptive.py, lrsim/sim/policies/lr_adaptive.py)."""
    per_token = (end - first) / (tokens - 1) if tokens > 1 else 0.0
    return max(0.0, first - start - per_token)


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
        self.target = BatchCost(p.target_step_s, p.target_slope_s, w, k, drafting0=p.target_draft_s)
        self.draft = BatchCost(p.draft_step_s, p.draft_slope_s, w, k)
        self.verify = DecayedMean(p.verify_s, w, k, ages)
        self.load = DecayedMean(p.load, w, k, ages)
        self.step_tokens = DecayedMean(p.step_tokens, w, k, ages)
        # the step length the step costs are stored per (the prior's, whose costs are per step of
        # its step_tokens): fixed, so that every batch bin holds one unit whatever the mean length
        # did since (snapshot reads them at the mean length of the moment)
        self.ref_tokens = p.step_tokens
        self.launch = DecayedMean(p.launch_s, w, k, ages)
        # the price checked against the run's own commits, speculating (True) and not (False)
        self.paid = {True: PaidCheck(w, k), False: PaidCheck(w, k)}
        self.spec_factor0 = p.spec_factor
        self.batch_seen0 = p.batch_seen     # a calibrated prior's measured batches count
        self.in_flight = 0.0                # the last count (observe_load); a prior's is stale

    def share_costs(self, run: "Estimator") -> "Estimator":
        """Take `run`'s step costs (target, draft), verdict time, launch, load, step length and
        price check: what the engines cost is the run's, learned from every request on them (the
        step costs are read at the mean step length, so the length and the unit they are stored
        in, ref_tokens, are shared with them);
        this one keeps its own acceptance, step and SD (a request's content, and its phase
        changes)."""
        self.target, self.draft, self.verify = run.target, run.draft, run.verify
        self.launch, self.load, self.paid = run.launch, run.load, run.paid
        self.step_tokens, self.ref_tokens = run.step_tokens, run.ref_tokens
        return self

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
                            tokens: float | None = None, launch_s: float | None = None,
                            drafting: float = 0.0) -> None:
        """One target step with `batch` sequences in the target's batch. A step run with SD
        (k2 > 1, `tokens_per_pass` tokens committed per pass, default the current estimate) is
        stored as the plain step of batch * k2 positions it equals under `expected_rate`'s model.
        `tokens`, the step's length, scales the seconds to a step of the prior's length
        (`ref_tokens`; snapshot reads the costs at the mean length): steps vary in length far more
        than a batch changes their time.
        `launch_s`: of the seconds, those before its first token beyond one token's time (a
        request of its own: queue, prefill); learned apart (Estimates.launch_s), the rest is the
        step's cost in the batch. None: a step of a request already running (depth 0).
        `drafting`: draft requests running beside the step, on average over its life (the
        drafter's cost to the target where they share cores: Estimates.target_draft_s)."""
        _measured("observe_target_step", seconds, batch - 1, k2 - 1, drafting)
        if launch_s is not None:
            _measured("launch_s", launch_s)
            self.launch.observe(min(launch_s, seconds))
        self.target.observe(self.target_cost(seconds, k2, tokens_per_pass, tokens, launch_s),
                            batch * k2, drafting)

    def target_cost(self, seconds: float, k2: int = 1, tokens_per_pass: float | None = None,
                    tokens: float | None = None, launch_s: float | None = None) -> float:
        """What observe_target_step stores of a step (the same arguments): its seconds less the
        launch, per step of ref_tokens tokens, as the plain step it equals under SD. The real
        scheduler rescales the neutral prior with it (the prior's costs are in this unit)."""
        if launch_s is not None:
            seconds -= min(launch_s, seconds)
        seconds = self._per_ref_step(seconds, tokens)
        if k2 > 1:
            m = tokens_per_pass or float(geometric_sum(self.alpha2.value, k2))
            seconds = seconds * m / (1.0 + self.cfg.sd_draft_ratio * (k2 - 1))
        return seconds

    def observe_draft_step(self, seconds: float, batch: float = 1,
                           tokens: float | None = None) -> None:
        """One draft step with `batch` sequences in the draft's batch (`tokens`: as for
        observe_target_step)."""
        _measured("observe_draft_step", seconds, batch - 1)
        self.draft.observe(self.draft_cost(seconds, tokens), batch)

    def draft_cost(self, seconds: float, tokens: float | None = None) -> float:
        """What observe_draft_step stores of a step: its seconds per step of ref_tokens tokens."""
        return self._per_ref_step(seconds, tokens)

    def _per_ref_step(self, seconds: float, tokens: float | None) -> float:
        if tokens is None:
            return seconds
        _measured("tokens", tokens)
        return seconds * self.ref_tokens / tokens if tokens > 0 else seconds

    def observe_verify(self, seconds: float) -> None:
        """One verdict's latency (a level's sibling verdicts run concurrently: report one)."""
        _measured("observe_verify", seconds)
        self.verify.observe(seconds)

    def observe_paid(self, speculating: bool, tokens: float, seconds: float,
                     priced_tps: float) -> None:
        """`tokens` committed over `seconds` of one request's wall time under a choice the
        closed forms priced at `priced_tps` (without spec_factor): the check of the price
        against what the run got. Estimates.spec_factor is speculation's ratio over depth 0's
        (errors common to both, such as the step length, cancel; _spec_factor)."""
        _measured("observe_paid", tokens, seconds, priced_tps)
        if tokens > 0 and priced_tps > 0:
            self.paid[bool(speculating)].observe(tokens / priced_tps, seconds)

    def observe_load(self, in_flight: float) -> None:
        """Requests in flight, e.g. at each decision."""
        _measured("observe_load", in_flight)
        self.load.observe(in_flight)
        self.in_flight = float(in_flight)

    def observe_step_tokens(self, tokens: float) -> None:
        """Tokens of one committed step."""
        _measured("observe_step_tokens", tokens)
        self.step_tokens.observe(tokens)

    def snapshot(self) -> Estimates:
        """The current estimates (probabilities clipped to [0, 1] against rounding; the load is at
        least 1, the request asking)."""
        (tb, ts, tv), (db, ds, _) = self.target.fit(), self.draft.fit()
        # costs are stored per step of ref_tokens tokens; read them per step of the mean length.
        # Stored at the mean length of their moment, a batch size seen only early (speculation's,
        # before depth 0 took over) kept the early unit while the mean moved, and the fit mixed
        # units (docs/adaptive.md, "Estimates")
        scale = self.step_tokens.value / self.ref_tokens
        tb, ts, tv, db, ds = tb * scale, ts * scale, tv * scale, db * scale, ds * scale

        def prob(x: float) -> float:
            return min(max(x, 0.0), 1.0)
        return Estimates(self._alphas(prob), prob(self.alpha2.value),
                         tb, ts, db, ds, self.verify.value, max(self.load.value, 1.0),
                         self.step_tokens.value, max(self.launch.value, 0.0), tv,
                         self._spec_factor(), max(self.batch_seen0, self.target.largest),
                         self.in_flight)

    def _spec_factor(self) -> float:
        """Speculation's measured rate over its price, relative to depth 0's (observe_paid),
        within SPEC_FACTOR_BOUNDS. The prior's factor f0 is relative too, so speculation's own
        prior ratio is f0 times depth 0's measured ratio: with no speculative commit measured
        the factor is exactly f0, whatever depth 0 measured, and a factor carried from run to
        run is blended with what this run measures against the uncorrected price, never
        multiplied by it (it would compound)."""
        alone = self.paid[False].ratio()
        spec = self.paid[True].ratio(self.spec_factor0 * alone)
        lo, hi = SPEC_FACTOR_BOUNDS
        return min(max(spec / alone, lo), hi)

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
        and 4; worth 8, a deeper depth believed a few points below depth 1 on noise still took
        the tree shallower than the best static depth, since past the depth limit the closed
        form is flat in depth and a lower deep acceptance tips it.) Before any observation every
        depth is exactly its prior."""
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
