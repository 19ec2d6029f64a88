"""The decision rule: the candidates (depth, width, k2), each one's expected committed tokens per
second under the paper's closed forms with the measured overheads (expected_rate), the argmax and
the plateau the Controller moves along."""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..theory import f_async, f_sync, geometric_sum
from .config import MIN_STEP_S, AdaptiveConfig, Estimates


# Two candidates whose expected rates differ by less than this relative amount tie, and the
# cheaper one (smaller depth, then width, then k2) wins: far above float rounding (~1e-15), far
# below anything measurable (the same tolerance as lrsim/theory/optimize.py).
TIE_RTOL = 1e-12


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


def batch_positions(est: Estimates, c: Choice) -> float:
    """Target positions in one step's batch when the requests in flight (Estimates.requests_now)
    all run `c`: n P k2, P the tree's positions 1 + W + ... + W^D (expected_rate's T_sd(n P) at
    k2)."""
    return est.requests_now() * sum(c.width ** d for d in range(c.depth + 1)) * c.k2


def within_reach(est: Estimates, c: Choice, cfg: AdaptiveConfig) -> bool:
    """The cheapest candidate (depth 0 at the shortest k2 on offer: plain AR where k2 1 is) always;
    any other choice if its batch is within Estimates.reach: the step costs are not extrapolated
    past batch_reach times the largest batch they were measured at."""
    return ((c.depth == 0 and c.k2 == min(cfg.k2s))
            or batch_positions(est, c) <= est.reach(cfg) * (1.0 + TIE_RTOL))


def expected_rate(est: Estimates, c: Choice, cfg: AdaptiveConfig) -> float:
    """Expected committed tokens per second of one request running choice `c` while `est.load`
    requests in flight all run it (the closed forms of lrcore/theory.py with measured costs).

    With a_d = est.alpha(d), T_t(x) / T_d(x) the target / draft step seconds at x positions in
    the engine's batch, T_v the verdict time, T_l the launch a speculative target step pays, n the
    load, L tokens per step, c2 = sd_draft_ratio:

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

    Where the drafter slows the target (est.target_draft_s = k_v > 0: engines sharing cores), a
    round's target step runs beside v = n sum_{d=1..D} W^d T_d(n W^d) / T_round draft requests on
    average (the drafting a round needs, over the round; at most its n (P - 1) drafts), and
    T_round takes T_sd(n P) with k_v v added to T_t before the SD factor (first order: v from the
    round without it).

    Every speculative rate is then multiplied by est.spec_factor: what the run measured its
    speculative commits to earn over this price, relative to its depth-0 commits (the prior's
    until a speculative commit is measured; Estimator.observe_paid).

    With flat costs (T_t, T_d constant), T_v = T_l = 0, W = 1, n = 1 and constant acceptance, rate over
    the AR rate L / T_t(1) is exactly the paper's f(alpha1, c1, k1 = D + 1) at depth D >= 1, g(k2)
    at depth 0, and f(alpha1, c1 g(k2), D + 1) g(k2) = h(k1, k2) (Sec. 3.3 eq. 1) for the hybrid,
    c1 measured against the SD-accelerated target step as the simulator's ideal setup does.
    """
    return _rates(est, [c], cfg)[0][1]


def ranked(est: Estimates, cfg: AdaptiveConfig) -> list[tuple[Choice, float]]:
    """Every candidate within reach (within_reach; plain AR always is) with its expected rate,
    in candidate order."""
    return _rates(est, [c for c in candidates(cfg) if within_reach(est, c, cfg)], cfg)


def _rates(est: Estimates, choices: list[Choice],
           cfg: AdaptiveConfig) -> list[tuple[Choice, float]]:
    """expected_rate of each choice: the per-choice terms in plain floats, then one vectorised
    call of the closed forms (one call per candidate costs ~0.3 ms in numpy overhead)."""
    n, L = est.load, est.step_tokens
    k2s = sorted({c.k2 for c in choices})
    m = dict(zip(k2s, np.atleast_1d(geometric_sum(est.alpha2, np.array(k2s, dtype=float)))))

    def t_sd(sequences: float, k2: int, beside: float = 0.0) -> float:
        sd_cost = 1.0 + cfg.sd_draft_ratio * (k2 - 1)
        return max(est.target_time(sequences * k2, beside), MIN_STEP_S) * sd_cost / float(m[k2])

    rates = [L / t_sd(n, c.k2) if c.depth == 0 else None for c in choices]
    alphas, c1s, k1s, rounds = [], [], [], []
    for c in choices:
        if c.depth == 0:
            continue
        D, W = c.depth, c.width
        levels = [1.0 - (1.0 - est.alpha(d)) ** (W ** cfg.width_exponent) for d in range(1, D + 1)]
        positions = sum(W ** d for d in range(D + 1))
        t_round = t_sd(n * positions, c.k2) + est.launch_s + est.verify_s
        if est.target_draft_s > 0.0:      # the drafter beside the round slows the target
            drafted = n * sum(W ** d * max(est.draft_time(n * W ** d), 0.0) for d in range(1, D + 1))
            beside = min(drafted / t_round, n * (positions - 1))
            t_round = t_sd(n * positions, c.k2, beside) + est.launch_s + est.verify_s
        t_draft = sum(max(est.draft_time(n * W ** d), 0.0) for d in range(1, D + 1)) / D
        alphas.append(math.prod(levels) ** (1.0 / D))
        c1s.append(t_draft / t_round)
        k1s.append(D + 1.0)
        rounds.append(t_round)
    if alphas:
        f = (f_async if cfg.mode == "async" else f_sync)(np.array(alphas), np.array(c1s),
                                                         np.array(k1s))
        # spec_factor: the price checked against the run's own commits (1 until observed)
        spec = iter(L * float(fk) / t * est.spec_factor for fk, t in zip(np.atleast_1d(f), rounds))
        rates = [r if r is not None else next(spec) for r in rates]
    return list(zip(choices, rates))


def best_choice(est: Estimates, cfg: AdaptiveConfig) -> tuple[Choice, float]:
    """The argmax of expected_rate over the candidates within reach; a tie (within TIE_RTOL) goes to the
    cheaper candidate."""
    return argmax(ranked(est, cfg))


def argmax(rated: list[tuple[Choice, float]]) -> tuple[Choice, float]:
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
    best, best_rate = argmax(rated)
    pick, pick_rate = best, best_rate
    for c, r in rated:
        if c.depth > pick.depth and on_plateau(c, r, best, best_rate, cfg):
            pick, pick_rate = c, r
    return pick, pick_rate
