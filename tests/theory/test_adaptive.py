"""The adaptive lookahead policy (lrcore/adaptive/): estimator, decision rule,
hysteresis and the Decision record, checked against the closed forms (lrcore/theory.py)."""
import itertools
import json
import math
from dataclasses import replace

import numpy as np
import pytest

from lrcore.adaptive import (AR, MAX_BATCH_BIN, AdaptiveConfig, BatchCost, Choice, Controller,
                             DecayedMean, Decision, Estimates, Estimator, best_choice, candidates, expected_rate,
                             preferred, ranked)
from lrcore.adaptive.estimator import batch_bin
from lrcore.errors import UserError
from lrcore.theory import f_async, f_sync, geometric_sum, sd_speedup

REL = 1e-12
L = 40.0


def flat(alpha=0.6, draft=0.1, verify=0.0, **kw) -> Estimates:
    """The theory's world: flat batch costs, one request, a target step of 1 s."""
    by_depth = alpha if isinstance(alpha, tuple) else (alpha,)
    return Estimates(alpha_by_depth=by_depth, target_step_s=1.0, draft_step_s=draft,
                     verify_s=verify, step_tokens=L, **kw)


def brute_rate(e: Estimates, c: Choice, cfg: AdaptiveConfig) -> float:
    """The extended closed form, written out from scratch (expected_rate's docstring)."""
    m = float(geometric_sum(e.alpha2, c.k2))

    def t_sd(x):
        c2 = cfg.sd_draft_ratio
        return (e.target_step_s + e.target_slope_s * (x * c.k2 - 1)) * (1 - c2 + c2 * c.k2) / m
    if c.depth == 0:
        return e.step_tokens / t_sd(e.load)
    D, W = c.depth, c.width
    a = [e.alpha_by_depth[min(d, len(e.alpha_by_depth)) - 1] for d in range(1, D + 1)]
    acc = [1 - (1 - x) ** (W ** cfg.width_exponent) for x in a]
    alpha = float(np.prod(acc)) ** (1 / D)
    t_round = t_sd(e.load * sum(W ** d for d in range(D + 1))) + e.launch_s + e.verify_s
    c1 = np.mean([e.draft_step_s + e.draft_slope_s * (e.load * W ** d - 1)
                  for d in range(1, D + 1)]) / t_round
    f = f_async if cfg.mode == "async" else f_sync
    return e.step_tokens * float(f(alpha, c1, D + 1)) / t_round


# --- estimator -----------------------------------------------------------------------------------

def test_decayed_mean_starts_at_the_prior_and_forgets_at_the_decay():
    m = DecayedMean(prior=0.5, prior_weight=2.0, decay=0.9)
    assert m.value == 0.5
    m.observe(1.0)
    assert m.value == pytest.approx((2 * 0.5 + 1.0) / (2 + 1), rel=REL)
    m.observe(0.0)
    assert m.value == pytest.approx((2 * 0.5 + 0.9 * 1.0) / (2 + 0.9 + 1), rel=REL)
    # n observations of x: the data weigh S = (1 - d^n) / (1 - d), the prior 2 for ever
    m = DecayedMean(prior=0.5, prior_weight=2.0, decay=0.9)
    for _ in range(30):
        m.observe(0.2)
    s = (1 - 0.9 ** 30) / (1 - 0.9)
    assert m.value == pytest.approx((2 * 0.5 + 0.2 * s) / (2 + s), rel=REL)
    # a weighted observation (counts) is one observation of that weight
    m = DecayedMean(prior=0.5, prior_weight=2.0, decay=0.9)
    m.observe(0.75, weight=4)
    assert m.value == pytest.approx((1.0 + 3.0) / 6.0, rel=REL)


def test_an_aging_prior_decays_with_the_data_and_forgetting_keeps_the_value():
    m = DecayedMean(prior=0.5, prior_weight=2.0, decay=0.9, ages=True)
    assert m.value == 0.5
    for _ in range(30):
        m.observe(0.2)
    s = (1 - 0.9 ** 30) / (1 - 0.9)
    p = 2.0 * 0.9 ** 30
    assert m.value == pytest.approx((p * 0.5 + 0.2 * s) / (p + s), rel=REL)
    # after ~60 observations the data alone decide: acceptance 0 is believed ~0, not >= 0.045
    z = DecayedMean(prior=0.5, prior_weight=2.0, decay=0.95, ages=True)
    for _ in range(100):
        z.observe(0.0)
    assert z.value == pytest.approx(2 * 0.95 ** 100 * 0.5 / (2 * 0.95 ** 100 + 20 * (1 - 0.95 ** 100)),
                                    rel=REL)
    assert z.value < 1e-3
    # forgetting without observations keeps the value (prior and data decay alike), through the
    # rescaling that stops the sums underflowing
    v = m.value
    for _ in range(20000):
        m.forget()
    assert m.value == pytest.approx(v, rel=1e-9) and math.isfinite(m.prior_mass)
    n = DecayedMean(prior=0.3, prior_weight=2.0, decay=0.9, ages=True)
    for _ in range(20000):
        n.forget()
    assert n.value == pytest.approx(0.3, rel=REL)


def test_acceptance_zero_falls_below_the_break_even_only_with_an_aging_prior():
    # the paper's hardware in seconds: a 0.82 s target step, 0.21 s draft step, 16 ms verdict
    costs = dict(target_step_s=0.82, target_slope_s=0.004, draft_step_s=0.21, verify_s=0.016,
                 step_tokens=45.0)
    for ages, speculates in ((False, True), (True, False)):
        cfg = AdaptiveConfig(max_depth=4, widths=(1,), prior_ages=ages)
        est = Estimator(cfg, Estimates(**costs))
        for _ in range(60):
            est.observe_verdict(1, False)
        snap = est.snapshot()
        w = 2 * 0.95 ** 60 if ages else 2.0
        assert snap.alpha(1) == pytest.approx(w * 0.5 / (w + 20 * (1 - 0.95 ** 60)), rel=REL)
        assert (best_choice(snap, cfg)[0] != AR) == speculates, (ages, snap.alpha(1))


def test_the_estimator_starts_at_its_prior_exactly():
    cfg = AdaptiveConfig(max_depth=4)
    prior = Estimates(alpha_by_depth=(0.7, 0.6), alpha2=0.4, target_step_s=0.8,
                      target_slope_s=0.01, draft_step_s=0.05, draft_slope_s=0.002, verify_s=0.02,
                      load=3.0, step_tokens=35.0)
    snap = Estimator(cfg, prior).snapshot()
    # the acceptance table is extended to max_depth with its deepest value
    assert snap == Estimates(**{**prior.to_dict(), "alpha_by_depth": (0.7, 0.6, 0.6, 0.6)})
    assert Estimator(cfg).snapshot() == Estimates(alpha_by_depth=(0.5,) * 4)


def test_acceptance_by_depth_decays_on_one_clock():
    cfg = AdaptiveConfig(max_depth=3, decay=0.8, prior_weight=2.0, prior_ages=False,
                         depth_pool_weight=2.0)
    est = Estimator(cfg, Estimates(alpha_by_depth=(0.6,)))
    est.observe_verdict(1, True)
    est.observe_verdict(1, False)
    est.observe_verdict(2, False)
    est.observe_acceptance(7, judged=4, accepted=3)     # deeper than max_depth: counts at 3
    a = est.snapshot().alpha_by_depth
    # one decay per verdict for every depth: depth 1 saw 1, 0, then forgot twice (depths 2, 3)
    assert a[0] == pytest.approx((1.2 + 0.8 ** 3) / (2 + 0.8 ** 3 + 0.8 ** 2), rel=REL)
    # a deeper depth's prior is the estimate of the depth above it (the prior's ratio: 1 here)
    assert a[1] == pytest.approx((2 * a[0] + 0.0) / (2 + 0.8), rel=REL)
    assert a[2] == pytest.approx((2 * a[1] + 3.0) / (2 + 4), rel=REL)
    with pytest.raises(ValueError):
        est.observe_verdict(0, True)


def test_an_unjudged_depth_follows_the_depth_above_it():
    # depth 1 never accepted, deeper depths never judged (a rejection kills them): all near 0,
    # so no tree looks worth running; the prior's shape (falling with depth) is kept
    cfg = AdaptiveConfig(max_depth=4, explore_every=0)
    est = Estimator(cfg, Estimates(alpha_by_depth=(0.6, 0.3)))
    for _ in range(60):
        est.observe_verdict(1, False)
    a = est.snapshot().alpha_by_depth
    assert a[0] < 0.06 and a[1] == pytest.approx(a[0] * 0.5, rel=REL) and a[3] == pytest.approx(a[1])
    snap = est.snapshot()        # a deep tree no longer looks better than depth 1
    assert expected_rate(snap, Choice(4, 1, 1), cfg) <= expected_rate(snap, Choice(1, 1, 1), cfg) * 1.001


def test_a_deeper_depth_is_pooled_with_the_depth_above_for_depth_pool_weight_verdicts():
    cfg = AdaptiveConfig(max_depth=3, decay=0.9, depth_pool_weight=8.0)
    est = Estimator(cfg, Estimates(alpha_by_depth=(0.5,)))
    verdicts = [(1, True), (2, False), (1, True), (3, True), (2, False), (1, False), (2, True)]
    for depth, ok in verdicts:
        est.observe_verdict(depth, ok)
    n = len(verdicts)

    def sums(depth):        # decayed weight and total of one depth's own verdicts
        w = [0.9 ** (n - 1 - i) for i, (d, _) in enumerate(verdicts) if d == depth]
        t = [0.9 ** (n - 1 - i) for i, (d, ok) in enumerate(verdicts) if d == depth and ok]
        return sum(w), sum(t)
    a = est.snapshot().alpha_by_depth
    w1, t1 = sums(1)
    p1 = 2.0 * 0.9 ** n                          # depth 1: its own prior, aged n clock ticks
    assert a[0] == pytest.approx((p1 * 0.5 + t1) / (p1 + w1), rel=REL)
    w2, t2 = sums(2)
    assert a[1] == pytest.approx((8 * a[0] + t2) / (8 + w2), rel=REL)
    w3, t3 = sums(3)
    assert a[2] == pytest.approx((8 * a[1] + t3) / (8 + w3), rel=REL)


def test_sd_acceptance_counts_tokens_as_bernoulli_trials():
    est = Estimator(AdaptiveConfig(prior_ages=False), Estimates(alpha2=0.0))
    est.observe_sd(accepted=30, rejected=10)
    assert est.snapshot().alpha2 == pytest.approx((0 + 0.75 * 40) / (2 + 40), rel=REL)
    est = Estimator(AdaptiveConfig(), Estimates(alpha2=0.0))     # the default: the prior ages
    est.observe_sd(accepted=30, rejected=10)
    assert est.snapshot().alpha2 == pytest.approx((0 + 0.75 * 40) / (2 * 0.95 + 40), rel=REL)


def test_batch_cost_is_the_ridge_least_squares_fit_through_each_batch_sizes_decayed_mean():
    bc = BatchCost(base0=1.0, slope0=0.05, prior_weight=2.0, decay=0.9)
    obs = [(1.1, 1), (1.3, 4), (1.2, 2), (1.9, 16), (1.25, 3), (1.0, 1), (1.4, 4), (1.35, 4.2)]
    for t, x in obs:
        bc.observe(t, x)
    # each batch size (x - 1 rounded) decays only with its own observations
    by_bin: dict[int, list] = {}
    for t, x in obs:
        by_bin.setdefault(round(x - 1), []).append((t, x - 1))
    rows, rhs = [], []
    for seen in by_bin.values():
        n = len(seen)
        w = [0.9 ** (n - 1 - i) for i in range(n)]
        wb = sum(w)
        ub = sum(wi * u for wi, (_, u) in zip(w, seen)) / wb
        tb = sum(wi * t for wi, (t, _) in zip(w, seen)) / wb
        rows.append([math.sqrt(wb), math.sqrt(wb) * ub])
        rhs.append(math.sqrt(wb) * tb)
    rows += [[math.sqrt(2.0), 0.0], [0.0, math.sqrt(2.0)]]
    rhs += [math.sqrt(2.0) * 1.0, math.sqrt(2.0) * 0.05]
    (base, slope), *_ = np.linalg.lstsq(np.array(rows), np.array(rhs), rcond=None)
    got = bc.fit()
    assert got[0] == pytest.approx(base, rel=1e-10) and got[1] == pytest.approx(slope, rel=1e-10)


def test_batch_cost_keeps_a_batch_size_it_no_longer_sees():
    """A run that settles at batch 1 (depth 0 alone) keeps the slope it measured at batch 3:
    with one clock for every size, 100 steps at batch 1 left 0.9^100 of it, and the slope was
    its prior (0: speculation free) again."""
    bc = BatchCost(base0=1.0, slope0=0.0, prior_weight=2.0, decay=0.9)
    for _ in range(20):
        bc.observe(1.0, 1)
        bc.observe(1.4, 3)
    before = bc.fit()
    for _ in range(100):
        bc.observe(1.0, 1)
    base, slope, drafting = bc.fit()
    assert 0.17 < before[1] < 0.2          # 0.2 s per sequence, shrunk a little by the prior
    assert slope == pytest.approx(before[1], rel=0.01) and base == pytest.approx(1.0, rel=0.02)
    # larger batches keep bins ~9% wide (8 per doubling), up to a bound whatever the batch
    bc.observe(9.0, 1000)
    bc.observe(9.5, 1100)
    assert len(bc.bins) == 4 and max(bc.bins) < MAX_BATCH_BIN
    bc.observe(99.0, 1e15)
    assert max(bc.bins) == MAX_BATCH_BIN


def test_batch_cost_tells_batches_past_64_apart():
    """At 128 requests the batch runs 128-256 sequences: one bin for every size >= 64 held them in
    one point, the line ran through it and the prior's base (1 s), and the slope was whatever
    joined the two (here 0.0003 s where the data's is 0.004; docs/adaptive.md, "Estimates").
    Bins 8 per doubling keep 128 and 256 apart: the ridge fit through both."""
    bc = BatchCost(base0=1.0, slope0=0.0, prior_weight=2.0, decay=0.95)
    for _ in range(40):
        bc.observe(0.3 + 0.004 * 127, 128)
        bc.observe(0.3 + 0.004 * 255, 256)
    assert batch_bin(127) != batch_bin(255) and len(bc.bins) == 2
    w = math.sqrt(sum(0.95 ** i for i in range(40)))
    r2 = math.sqrt(2.0)
    rows = [[w, w * 127], [w, w * 255], [r2, 0.0], [0.0, r2]]
    rhs = [w * (0.3 + 0.004 * 127), w * (0.3 + 0.004 * 255), r2 * 1.0, 0.0]
    want, *_ = np.linalg.lstsq(np.array(rows), np.array(rhs), rcond=None)
    base, slope, drafting = bc.fit()
    assert (base, slope) == pytest.approx(tuple(want), rel=1e-10)
    assert slope > 0.0025                       # the prior's base shrinks it; one bin: 0.0003


def test_batch_cost_at_batch_one_keeps_the_prior_slope_and_never_slopes_down():
    bc = BatchCost(base0=1.0, slope0=0.05, prior_weight=2.0, decay=0.9)
    bc.observe(1.3, 1)
    bc.observe(1.5, 1)
    base, slope, drafting = bc.fit()
    assert slope == pytest.approx(0.05, rel=REL)
    ref = DecayedMean(1.0, 2.0, 0.9)
    ref.observe(1.3)
    ref.observe(1.5)
    assert base == pytest.approx(ref.value, rel=REL)
    # bigger batches observed faster than batch 1: the slope is refitted at 0
    bc = BatchCost(base0=1.0, slope0=0.0, prior_weight=2.0, decay=0.9)
    for t, x in [(2.0, 1), (1.0, 8), (2.0, 1), (1.0, 8)]:
        bc.observe(t, x)
    base, slope, drafting = bc.fit()
    assert slope == 0.0
    # (batch 1 and batch 8 each seen twice: decayed counts 1.9 each)
    assert base == pytest.approx((2.0 * 1.0 + 2.0 * 1.9 + 1.0 * 1.9) / (2.0 + 1.9 + 1.9), rel=REL)


def test_batch_cost_with_the_drafter_beside_is_the_ridge_fit_of_a_plane():
    """Steps run beside v draft requests (a shared CPU): T = base + slope (x - 1) + drafting v,
    the ridge least-squares fit through each (batch, v) bin's decayed mean, as np.linalg.lstsq
    finds it; without such steps the drafting cost is its prior and the line is unchanged."""
    bc = BatchCost(base0=1.0, slope0=0.05, prior_weight=2.0, decay=0.9, drafting0=0.01)
    line = BatchCost(base0=1.0, slope0=0.05, prior_weight=2.0, decay=0.9, drafting0=0.01)
    obs = [(1.0, 1, 0.0), (1.1, 1, 0.8), (1.3, 3, 0.0), (1.45, 3, 0.9), (1.02, 1, 0.0),
           (1.12, 1, 0.7), (1.6, 5, 1.6)]
    for t, x, v in obs:
        bc.observe(t, x, v)
        if v == 0:
            line.observe(t, x)
    assert line.fit()[2] == 0.01                 # no step beside the drafter: its prior
    by_bin: dict[tuple, list] = {}
    for t, x, v in obs:
        by_bin.setdefault((round(x - 1), round(2 * v) if v > 0 else -1), []).append((t, x - 1, v))
    rows, rhs = [], []
    for seen in by_bin.values():
        n = len(seen)
        w = [0.9 ** (n - 1 - i) for i in range(n)]
        wb = sum(w)
        ub, vb, tb = (sum(wi * o[j] for wi, o in zip(w, seen)) / wb for j in (1, 2, 0))
        rows.append([math.sqrt(wb), math.sqrt(wb) * ub, math.sqrt(wb) * vb])
        rhs.append(math.sqrt(wb) * tb)
    r2 = math.sqrt(2.0)
    rows += [[r2, 0, 0], [0, r2, 0], [0, 0, r2]]
    rhs += [r2 * 1.0, r2 * 0.05, r2 * 0.01]
    want, *_ = np.linalg.lstsq(np.array(rows), np.array(rhs), rcond=None)
    assert want[2] > 0.05                       # the drafter's cost is seen
    assert bc.fit() == pytest.approx(tuple(want), rel=1e-10)


def test_batch_cost_never_fits_a_drafter_that_speeds_the_step_up():
    bc = BatchCost(base0=1.0, slope0=0.0, prior_weight=2.0, decay=0.9)
    for _ in range(10):
        bc.observe(1.0, 1)
        bc.observe(0.8, 1, 1.0)                 # beside the drafter, faster: refitted at 0
        bc.observe(1.4, 3)
    base, slope, drafting = bc.fit()
    assert drafting == 0.0
    # the fit with the drafting cost held at 0: the line through the three bins' means
    w = math.sqrt(sum(0.9 ** i for i in range(10)))
    r2 = math.sqrt(2.0)
    rows = [[w, 0.0], [w, 0.0], [w, 2.0 * w], [r2, 0.0], [0.0, r2]]
    rhs = [w * 1.0, w * 0.8, w * 1.4, r2 * 1.0, 0.0]
    want, *_ = np.linalg.lstsq(np.array(rows), np.array(rhs), rcond=None)
    assert (base, slope) == pytest.approx(tuple(want), rel=1e-10)


def test_the_drafter_beside_the_round_prices_speculation():
    """target_draft_s > 0 makes every speculative round's target step slower by k_v v, v the
    drafting a round needs over the round; depth 0 is unchanged."""
    cfg = AdaptiveConfig(max_depth=2, widths=(1,))
    e = Estimates(alpha_by_depth=(0.5,), target_step_s=1.0, draft_step_s=0.3)
    slow = replace(e, target_draft_s=0.1)
    assert expected_rate(slow, AR, cfg) == expected_rate(e, AR, cfg)
    for depth in (1, 2):
        c = Choice(depth, 1, 1)
        t_round = 1.0 + 0.013                                   # T_t(1) + T_v
        v = depth * 0.3 / t_round
        alpha = 0.5
        rate = 40.0 * float(f_async(alpha, 0.3 / (1.0 + 0.1 * v + 0.013), depth + 1))
        assert expected_rate(slow, c, cfg) == pytest.approx(rate / (1.0 + 0.1 * v + 0.013),
                                                            rel=1e-12)
        assert expected_rate(slow, c, cfg) < expected_rate(e, c, cfg)


def test_the_price_checked_against_the_runs_commits():
    """observe_paid: committed tokens' seconds against those their price allowed, speculating
    and not; spec_factor is speculation's ratio over depth 0's (a prior of 1 worth 2 mean
    observations in each), within its bounds, and exactly the prior's until observed."""
    from lrcore.adaptive.estimator import SPEC_FACTOR_BOUNDS

    cfg = AdaptiveConfig(prior_weight=2.0, decay=0.9)
    est = Estimator(cfg, Estimates(spec_factor=1.0))
    assert est.snapshot().spec_factor == 1.0
    only_alone = Estimator(cfg, Estimates(spec_factor=0.8))     # no speculative commit yet:
    only_alone.observe_paid(False, tokens=40, seconds=1.25, priced_tps=40.0)
    assert only_alone.snapshot().spec_factor == pytest.approx(0.8, rel=REL)   # the prior's
    est.observe_paid(True, tokens=40, seconds=2.0, priced_tps=40.0)    # allowed 1 s, took 2
    est.observe_paid(False, tokens=40, seconds=1.0, priced_tps=40.0)   # the price held
    spec = (1.0 + 2.0 * 2.0) / (2.0 + 2.0 * 2.0)                       # (allowed + prior) / (taken + prior)
    assert est.snapshot().spec_factor == pytest.approx(spec / 1.0, rel=REL)
    est.observe_paid(True, tokens=40, seconds=1.0, priced_tps=80.0)    # decayed sums
    allowed, taken, n = 0.9 * 1.0 + 0.5, 0.9 * 2.0 + 1.0, 0.9 + 1.0
    prior = 2.0 * taken / n
    assert est.snapshot().spec_factor == pytest.approx((allowed + prior) / (taken + prior), rel=REL)
    est.observe_paid(False, tokens=40, seconds=2.0, priced_tps=40.0)   # depth 0 slower too:
    alone = (0.9 * 1.0 + 1.0 + 2.0 * (0.9 * 1.0 + 2.0) / 1.9) / (0.9 * 1.0 + 2.0 + 2.0 * (0.9 * 1.0 + 2.0) / 1.9)
    spec = (allowed + alone * prior) / (taken + prior)                # speculation's prior: f0 x alone
    assert est.snapshot().spec_factor == pytest.approx(spec / alone, rel=REL)
    for _ in range(200):                                               # far slower than priced
        est.observe_paid(True, tokens=40, seconds=100.0, priced_tps=40.0)
    assert est.snapshot().spec_factor == SPEC_FACTOR_BOUNDS[0]
    carried = Estimator(cfg, Estimates(spec_factor=0.7))       # a factor carried from a run
    assert carried.snapshot().spec_factor == 0.7
    carried.observe_paid(True, tokens=40, seconds=1.0, priced_tps=40.0 / 0.7)   # it held again
    carried.observe_paid(False, tokens=40, seconds=1.0, priced_tps=40.0)
    assert carried.snapshot().spec_factor == pytest.approx(0.7, rel=REL)         # not 0.49
    with pytest.raises(ValueError):
        est.observe_paid(True, tokens=-1, seconds=1.0, priced_tps=1.0)


def test_spec_factor_scales_every_speculative_rate_and_not_depth_zero():
    cfg = AdaptiveConfig(max_depth=3, widths=(1, 2))
    e = Estimates(alpha_by_depth=(0.6,), target_step_s=1.0, target_slope_s=0.05, draft_step_s=0.2)
    half = replace(e, spec_factor=0.5)
    for (c, r), (c2, r2) in zip(ranked(e, cfg), ranked(half, cfg)):
        assert c == c2 and r2 == pytest.approx(r * (0.5 if c.depth else 1.0), rel=1e-12)


def test_an_sd_target_step_is_stored_as_its_plain_equivalent():
    cfg = AdaptiveConfig(sd_draft_ratio=0.1, prior_weight=2.0)
    est = Estimator(cfg, Estimates(target_step_s=1.0))
    est.observe_target_step(0.6, batch=1, k2=3, tokens_per_pass=2.0)   # 0.6 * 2 / 1.2 at x = 3
    assert list(est.target.bins) == [2]
    assert est.target.bins[2] == pytest.approx([1.0, 2.0, 1.0], rel=REL)


def test_step_costs_keep_one_unit_while_the_mean_step_length_moves():
    """Step seconds are stored per step of the prior's length (ref_tokens) and read at the mean
    length: a batch seen only while steps were long (a tree's, early) and one seen after they
    shortened (depth 0, later) hold the same per-token speed, so the fitted slope is 0 and the
    base is the speed at the mean length. Stored at the mean length of their moment, the early
    bins kept the early unit and the line came out sloped (a test that fails on that)."""
    cfg = AdaptiveConfig(prior_weight=2.0, decay=0.95)
    est = Estimator(cfg, Estimates(target_step_s=2.0, step_tokens=40.0))    # 0.05 s per token
    for _ in range(20):                      # early: 40-token steps at batch 3
        est.observe_step_tokens(40)
        est.observe_target_step(2.0, batch=3, tokens=40)
    for _ in range(60):                      # later: 10-token steps at batch 1, the same speed
        est.observe_step_tokens(10)
        est.observe_target_step(0.5, batch=1, tokens=10)
    snap = est.snapshot()
    assert snap.target_slope_s == pytest.approx(0.0, abs=1e-12)
    assert snap.target_step_s == pytest.approx(0.05 * est.step_tokens.value, rel=1e-9)
    assert est.ref_tokens == 40.0
    shared = Estimator(cfg, Estimates(step_tokens=7.0)).share_costs(est)
    assert shared.ref_tokens == 40.0 and shared.snapshot().target_step_s == snap.target_step_s


def test_a_launched_target_step_learns_its_launch_apart_from_its_batch_cost():
    """A tree's target step is a request of its own: the seconds before its first token (queue,
    prefill) are its launch, learned apart; the rest is the step's cost, as a step of depth 0
    (written by a request already running, launch_s None) would pay it."""
    cfg = AdaptiveConfig(prior_weight=2.0, prior_ages=False)
    est = Estimator(cfg, Estimates(target_step_s=1.0))
    est.observe_target_step(1.5, batch=1, launch_s=0.5)
    assert est.launch.value == pytest.approx((2 * 0.0 + 0.5) / 3, rel=REL)
    assert est.target.bins == {0: pytest.approx([1.0, 0.0, 1.0], rel=REL)}
    est.observe_target_step(1.0, batch=1)                       # depth 0: no launch observed
    assert est.launch.weight == 1.0                             # ... nor forgotten
    assert est.snapshot().launch_s == pytest.approx(est.launch.value, rel=REL)
    with pytest.raises(ValueError):
        est.observe_target_step(1.0, launch_s=-0.1)


def test_the_launch_is_paid_by_every_speculative_round_not_by_depth_zero():
    """This machine's case (traces/load-adaptive-v1): acceptance ~0.2, batching nearly free, a
    draft on its own core. Without the launch every depth beats AR; a launch of half a step per
    round (a fresh request's prefill) makes AR the best, as the real runs measured."""
    cfg = AdaptiveConfig()
    e = flat(0.2, draft=0.35, verify=0.005)
    assert best_choice(e, cfg)[0] != AR
    launched = Estimates(**{**e.to_dict(), "alpha_by_depth": e.alpha_by_depth, "launch_s": 0.5})
    assert expected_rate(launched, AR, cfg) == L             # depth 0 pays none
    t_round = 1.0 + 0.5 + 0.005
    assert expected_rate(launched, Choice(1, 1, 1), cfg) == pytest.approx(
        L * float(f_async(0.2, 0.35 / t_round, 2)) / t_round, rel=REL)
    for c in candidates(cfg):
        assert expected_rate(launched, c, cfg) == pytest.approx(brute_rate(launched, c, cfg), rel=REL)
    assert best_choice(launched, cfg)[0] == AR


# --- the decision rule against the closed forms ------------------------------------------------

@pytest.mark.parametrize("mode", ["async", "sync"])
@pytest.mark.parametrize("alpha", [0.3, 0.63, 0.9])
@pytest.mark.parametrize("c1", [0.05, 0.1, 0.5])
def test_in_the_theorys_world_the_rate_is_the_papers_speedup(mode, alpha, c1):
    cfg = AdaptiveConfig(mode=mode)
    f = f_async if mode == "async" else f_sync
    e = flat(alpha, draft=c1, alpha2=0.7)
    ar = expected_rate(e, AR, cfg)
    assert ar == L
    for depth in range(1, 9):
        assert expected_rate(e, Choice(depth, 1, 1), cfg) / ar == \
            pytest.approx(float(f(alpha, c1, depth + 1)), rel=REL)
    for k2 in (2, 4, 7):
        g = float(sd_speedup(0.7, 0.0, k2))
        assert expected_rate(e, Choice(0, 1, k2), cfg) / ar == pytest.approx(g, rel=REL)
        # the hybrid: h = f(c1 measured against the SD-accelerated step) g (Sec. 3.3 eq. 1)
        assert expected_rate(e, Choice(3, 1, k2), cfg) / ar == \
            pytest.approx(float(f(alpha, c1 * g, 4)) * g, rel=REL)


def test_sd_drafter_cost_enters_as_the_papers_c2():
    cfg = AdaptiveConfig(sd_draft_ratio=0.05)
    e = flat(alpha2=0.6)
    for k2 in (2, 5):
        assert expected_rate(e, Choice(0, 1, k2), cfg) / L == \
            pytest.approx(float(sd_speedup(0.6, 0.05, k2)), rel=REL)


GRID = list(itertools.product(
    ["async", "sync"],
    [(0.3,), (0.6,), (0.9,), (0.9, 0.8, 0.5, 0.2)],   # acceptance by depth
    [0.02, 0.2, 0.8],                                  # draft step (target step = 1 s)
    [0.0, 0.1],                                        # verifier
    [(1.0, 0.0), (4.0, 0.05)],                         # (load, target slope per position)
))


@pytest.mark.parametrize("mode,alpha,draft,verify,load_slope", GRID)
def test_the_decision_is_the_brute_force_argmax(mode, alpha, draft, verify, load_slope):
    load, slope = load_slope
    cfg = AdaptiveConfig(mode=mode, max_depth=6, widths=(1, 2), k2s=(1, 3))
    # batch_seen: costs measured at every batch the candidates put (test_batch_reach: otherwise)
    e = Estimates(alpha_by_depth=alpha, alpha2=0.5, target_step_s=1.0, target_slope_s=slope,
                  draft_step_s=draft, draft_slope_s=draft * 0.1, verify_s=verify, load=load,
                  step_tokens=L, batch_seen=4 * 127 * 3)
    brute = {(d, w, k2): brute_rate(e, Choice(d, w, k2), cfg)
             for d in range(7) for w in ((1,) if d == 0 else (1, 2)) for k2 in (1, 3)}
    assert {tuple(c): r for c, r in ranked(e, cfg)} == pytest.approx(brute, rel=REL)
    best, rate = best_choice(e, cfg)
    top = max(brute.values())
    assert rate == pytest.approx(top, rel=REL)
    # ties go to the first candidate (cheapest) within the tolerance
    first = next(c for c in candidates(cfg) if brute[tuple(c)] >= top * (1 - 1e-12))
    assert best == first


def test_no_speculation_when_draft_and_verifier_overheads_lose():
    cfg = AdaptiveConfig()
    e = flat(0.3, draft=0.5, verify=0.3)
    best, rate = best_choice(e, cfg)
    assert best == AR and rate == L
    # the best speculation, exactly: depth 1 (S2, below the depth limit ceil(1.3/0.5) = 3) ...
    t_round, c1 = 1.3, 0.5 / 1.3
    d1 = expected_rate(e, Choice(1, 1, 1), cfg)
    assert d1 == pytest.approx(L * (1.3 / (1 + c1 * 0.3 * 0.7)) / t_round, rel=REL)
    # ... and from depth 2 on the drafter-bound ceiling S1 = 1 / (c1 + (1 - c1)(1 - alpha))
    assert expected_rate(e, Choice(4, 1, 1), cfg) == \
        pytest.approx(L / (c1 + (1 - c1) * 0.7) / t_round, rel=REL)
    assert all(r < L for c, r in ranked(e, cfg) if c != AR)
    # a compute-bound target (every extra position costs a step: CPU) loses even with a cheap
    # draft and acceptance 0.5: depth 1 doubles the batch, T_round = 2 s
    e = flat(0.5, draft=0.1, verify=0.013, target_slope_s=1.0)
    best, rate = best_choice(e, cfg)
    assert best == AR and rate == L
    assert expected_rate(e, Choice(1, 1, 1), cfg) == \
        pytest.approx(L * float(f_async(0.5, 0.1 / 2.013, 2)) / 2.013, rel=REL)


def test_deep_speculation_when_acceptance_is_high_and_the_draft_cheap():
    cfg = AdaptiveConfig(widths=(1,))
    e = flat(0.9, draft=0.02)
    best, rate = best_choice(e, cfg)
    assert best == Choice(cfg.max_depth, 1, 1)
    assert rate == pytest.approx(L * float(f_async(0.9, 0.02, cfg.max_depth + 1)), rel=REL)
    # with acceptance falling with depth the best depth is interior, as the brute force says
    e = flat((0.9, 0.85, 0.3, 0.1), draft=0.02)
    best, _ = best_choice(e, cfg)
    assert best == max(candidates(cfg), key=lambda c: (brute_rate(e, c, cfg), -c.depth))
    assert 1 <= best.depth < cfg.max_depth


def test_batch_reach_keeps_choices_within_twice_the_largest_batch_measured():
    cfg = AdaptiveConfig(max_depth=4, widths=(1,), k2s=(1, 3))
    e = flat(0.9, draft=0.02, load=128.0, alpha2=0.5)   # flat costs: any batch looks free
    assert best_choice(replace(e, batch_seen=1e6), cfg)[0] == Choice(4, 1, 3)
    # nothing measured: plain AR (always a candidate) counts as measured at its batch, 128, so
    # choices of up to 256 positions: depth 1 without SD
    assert [c for c, _ in ranked(e, cfg)] == [AR, Choice(1, 1, 1)]
    assert [c for c, _ in ranked(replace(e, batch_seen=128.0), cfg)] == [AR, Choice(1, 1, 1)]
    # measured at 192: up to 384 positions (SD k2 3 at depth 0, depth 2), the best within reach
    assert {c for c, _ in ranked(replace(e, batch_seen=192.0), cfg)} == {
        AR, Choice(0, 1, 3), Choice(1, 1, 1), Choice(2, 1, 1)}
    assert best_choice(replace(e, batch_seen=192.0), cfg)[0] == Choice(2, 1, 1)
    # one request: its tree of <= 32 positions is within reach before anything is measured
    assert [c for c, _ in ranked(replace(e, load=1.0), cfg)] == candidates(cfg)
    # the reach counts the requests in flight now where the smoothed load lags a burst
    assert [c for c, _ in ranked(replace(e, load=8.0, in_flight=128.0), cfg)] == [AR, Choice(1, 1, 1)]
    est = Estimator(cfg)
    est.observe_load(128)
    snap = est.snapshot()
    # the load: the aging prior (2 x 0.95 observations of 1) and the count
    assert snap.load == pytest.approx((1.9 * 1 + 128) / 2.9, rel=REL) and snap.in_flight == 128.0
    assert snap.requests_now() == 128.0
    # the cheapest candidate is always within reach where AR is not on offer
    sd_only = AdaptiveConfig(max_depth=2, widths=(1,), k2s=(9,))
    assert [c for c, _ in ranked(e, sd_only)] == [Choice(0, 1, 9)]
    # batch_seen: the largest target batch a step was measured at, in positions (an SD step at
    # k2 holds batch x k2), kept however the costs decay; a prior's counts
    est = Estimator(cfg)
    assert est.snapshot().batch_seen == 0.0
    est.observe_target_step(1.0, batch=100, k2=3, tokens_per_pass=2.0)
    est.observe_target_step(1.0, batch=128)
    for _ in range(200):
        est.observe_target_step(1.0, batch=2)
    assert est.snapshot().batch_seen == 300.0
    assert Estimator(cfg, Estimates(batch_seen=500.0)).snapshot().batch_seen == 500.0
    with pytest.raises(UserError, match="batch_reach"):
        AdaptiveConfig(batch_reach=0.5)


def test_a_choice_past_the_reach_moves_at_once_when_the_load_rises():
    cfg = AdaptiveConfig(max_depth=4, widths=(1,), explore_every=0)
    ctl = Controller(cfg)
    e = flat(0.9, draft=0.02, batch_seen=10.0)           # reach: the floor, 32 positions
    assert ctl.decide(e).choice == Choice(4, 1, 1)
    # 8 requests in flight: depth 4's 40 positions are past the reach; depth 3's 32 are not
    d = ctl.decide(replace(e, load=8.0))
    assert d.choice == Choice(3, 1, 1)
    assert "past the reach of the measured costs, 32" in d.reason
    # at depth 0 the probe of depth 1 waits until it is within reach (at the default reach of 2
    # it always is: twice AR's batch)
    ctl = Controller(AdaptiveConfig(explore_every=2, batch_reach=1.5))
    far, near = flat(0.3, load=64.0, **NEAR), flat(0.3, load=64.0, batch_seen=86.0, **NEAR)
    assert [ctl.decide(far).depth for _ in range(6)] == [0] * 6
    assert [ctl.decide(near).depth for _ in range(3)] == [1, 0, 0]


# --- hysteresis, exploration, the record -----------------------------------------------------

NEAR = dict(draft=0.5, verify=0.3)       # AR ~ depth 1 at acceptance ~0.42 (max_depth 1)


def test_hysteresis_keeps_the_choice_while_estimates_oscillate_near_a_boundary():
    lo, hi = flat(0.40, **NEAR), flat(0.45, **NEAR)
    cfg = AdaptiveConfig(max_depth=1, widths=(1,), explore_every=0)
    # the boundary is real: the argmax flips, by less than the 3% margin
    assert best_choice(lo, cfg)[0] == AR and best_choice(hi, cfg)[0] == Choice(1, 1, 1)
    r_lo = L * (1.4 / (1 + 0.5 / 1.3 * 0.4 * 0.6)) / 1.3
    r_hi = L * (1.45 / (1 + 0.5 / 1.3 * 0.45 * 0.55)) / 1.3
    assert expected_rate(lo, Choice(1, 1, 1), cfg) == pytest.approx(r_lo, rel=REL)
    assert L / r_lo - 1 < 0.03 and r_hi / L - 1 < 0.03
    seq = [lo, hi] * 10
    flapping = Controller(AdaptiveConfig(max_depth=1, widths=(1,), explore_every=0, margin=0.0))
    assert [flapping.decide(e).depth for e in seq] == [0, 1] * 10
    ctl = Controller(cfg)
    decisions = [ctl.decide(e) for e in seq]
    assert [d.depth for d in decisions] == [0] * 20
    assert decisions[1].best == (1, 1, 1) and decisions[1].reason.startswith("keep depth 0")
    # a real change clears the margin and switches
    d = ctl.decide(flat(0.6, **NEAR))
    assert d.choice == Choice(1, 1, 1) and d.reason.startswith("switch from depth 0")
    assert d.expected_tps == pytest.approx(L * (1.6 / (1 + 0.5 / 1.3 * 0.6 * 0.4)) / 1.3, rel=REL)


def test_a_lasting_gain_below_the_margin_switches_after_dwell_decisions():
    lo, hi = flat(0.40, **NEAR), flat(0.45, **NEAR)
    cfg = AdaptiveConfig(max_depth=1, widths=(1,), explore_every=0)
    assert (cfg.margin, cfg.min_gain, cfg.dwell) == (0.03, 0.005, 5)
    gain = (1.45 / (1 + 0.5 / 1.3 * 0.45 * 0.55)) / 1.3 - 1          # depth 1 over AR at hi
    assert cfg.min_gain < gain < cfg.margin
    ctl = Controller(cfg)
    decisions = [ctl.decide(e) for e in [lo] + [hi] * 6]
    assert [d.depth for d in decisions] == [0, 0, 0, 0, 0, 1, 1]
    assert decisions[4].reason.startswith("keep depth 0") and "4 of 5 in a row" in decisions[4].reason
    assert decisions[5].reason.startswith("switch from depth 0") and "5 decisions in a row" in \
        decisions[5].reason
    assert decisions[5].expected_tps / decisions[5].ar_tps - 1 == pytest.approx(gain, rel=1e-9)
    # an interruption restarts the count; a gain below min_gain never switches
    ctl = Controller(cfg)
    assert [ctl.decide(e).depth for e in [lo] + [hi] * 4 + [lo] + [hi] * 4] == [0] * 10
    ctl = Controller(AdaptiveConfig(max_depth=1, widths=(1,), explore_every=0, min_gain=0.02))
    assert [ctl.decide(e).depth for e in [lo] + [hi] * 30] == [0] * 31


def test_the_target_is_the_deepest_depth_on_the_plateau_of_the_best():
    # c1 = 0.26: past the depth limit ceil(1/0.26) = 4 (depth >= 3) the async closed form is
    # flat (S1); a small batch slope makes each deeper level ~0.4% dearer
    cfg = AdaptiveConfig(max_depth=8, widths=(1,), k2s=(1, 3))
    e = flat(0.6, draft=0.26, target_slope_s=0.004)
    rated = ranked(e, cfg)
    best, best_rate = best_choice(e, cfg)
    assert best == Choice(3, 1, 1)
    s1 = float(f_async(0.6, 0.26 / 1.012, 4))
    assert best_rate == pytest.approx(L * s1 / 1.012, rel=REL)
    pick, pick_rate = preferred(rated, cfg)
    want = max(d for d in range(1, 9)
               if brute_rate(e, Choice(d, 1, 1), cfg) >= best_rate * (1 - cfg.depth_rtol))
    assert 3 < want < 8 and pick == Choice(want, 1, 1)
    assert pick_rate == pytest.approx(brute_rate(e, pick, cfg), rel=REL)
    # the controller runs it; depth_rtol 0 is the plain argmax
    assert Controller(cfg).decide(e).choice == pick
    assert preferred(rated, AdaptiveConfig(max_depth=8, widths=(1,), depth_rtol=0.0))[0] == best
    # a steep batch cost leaves no plateau; when not speculating is best, it stays the target
    e = flat(0.6, draft=0.26, target_slope_s=0.05)
    assert preferred(ranked(e, cfg), cfg)[0] == best_choice(e, cfg)[0]
    e = flat(0.3, draft=0.5, verify=0.3)
    assert best_choice(e, cfg)[0] == AR and preferred(ranked(e, cfg), cfg)[0] == AR


def test_at_depth_zero_it_explores_depth_one_once_every_explore_every_decisions():
    cfg = AdaptiveConfig(explore_every=5)
    ctl = Controller(cfg)
    e = flat(0.3, **NEAR)
    depths = [ctl.decide(e).depth for _ in range(13)]
    assert depths == [0] * 5 + [1] + [0] * 5 + [1] + [0]
    assert ctl.current == AR


def test_the_decision_record_round_trips_through_json():
    ctl = Controller(AdaptiveConfig())
    est = Estimator(AdaptiveConfig(), Estimates(alpha_by_depth=(0.7, 0.6)))
    est.observe_verdict(1, True)
    est.observe_target_step(0.9, batch=3)
    d = ctl.decide(est.snapshot())
    text = d.to_json()
    assert Decision.from_json(text) == d
    doc = json.loads(text)
    assert doc["depth"] == d.depth and doc["best"] == list(d.best)
    assert doc["estimates"]["alpha_by_depth"] == list(d.estimates.alpha_by_depth)
    assert Decision.from_dict(doc).estimates == d.estimates


def test_decisions_are_deterministic():
    def run():
        cfg = AdaptiveConfig()
        est, ctl, out = Estimator(cfg), Controller(cfg), []
        for i in range(60):
            d = ctl.decide(est.snapshot())
            out.append(d.to_json())
            for depth in range(1, d.depth + 1):
                est.observe_verdict(depth, accepted=(i * depth) % 3 != 0)
            est.observe_target_step(1.0 + 0.01 * (i % 4), batch=1 + d.depth)
            est.observe_draft_step(0.1, batch=d.width)
        return out
    assert run() == run()


def test_bad_config_is_a_user_error():
    with pytest.raises(UserError, match="mode"):
        AdaptiveConfig(mode="fast")
    with pytest.raises(UserError, match="widths"):
        AdaptiveConfig(widths=())
    with pytest.raises(UserError, match="decay"):
        AdaptiveConfig(decay=1.5)
    with pytest.raises(UserError, match="depth_pool_weight"):
        AdaptiveConfig(depth_pool_weight=0)
    with pytest.raises(UserError, match="dwell"):
        AdaptiveConfig(dwell=0)
    with pytest.raises(UserError, match="depth_rtol"):
        AdaptiveConfig(depth_rtol=-0.1)
    with pytest.raises(UserError, match="alpha_by_depth"):
        Estimates(alpha_by_depth=(1.2,))
