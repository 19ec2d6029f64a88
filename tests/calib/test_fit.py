"""Fits recover known parameters from synthetic measurements."""
import numpy as np
import pytest

from lrcore.errors import UserError
from lrsim.calib.fit import Points, errors, fit_roofline, predict, table_from_passes
from lrsim.calib.models import FittedRoofline
from lrsim.sim.latency import Tabulated

TRUE = FittedRoofline(base_s=0.40, knee_tokens=4, per_token_s=0.03, prefill_per_token_s=0.021,
                      per_ctx_token_s=2e-5)


def _passes(model, n=300, noise=0.0, seed=0):
    g = np.random.default_rng(seed)
    dec = g.integers(0, 17, n).astype(float)
    pre = np.where(g.random(n) < 0.3, g.integers(1, 400, n), 0).astype(float)
    dec[(dec == 0) & (pre == 0)] = 1
    ctx = g.uniform(0, 4000, n) * np.maximum(dec, 1)
    sec = np.array([model.forward(d, p, max(1, int(d)), c) for d, p, c in zip(dec, pre, ctx)])
    sec *= 1 + noise * g.standard_normal(n)
    return Points("passes", dec, pre, ctx, sec)


def test_roofline_recovers_parameters_from_passes():
    model, rep = fit_roofline(_passes(TRUE))
    assert model.knee_tokens == 4
    for k, v in TRUE.params().items():
        assert getattr(model, k) == pytest.approx(v, rel=1e-6, abs=1e-9), k
    assert rep.rmse_s < 1e-9 and rep.mape < 1e-9 and rep.points == 300


def test_roofline_with_noise_reports_its_error():
    model, rep = fit_roofline(_passes(TRUE, noise=0.05, n=2000, seed=1))
    assert model.base_s == pytest.approx(TRUE.base_s, rel=0.05)
    assert model.prefill_per_token_s == pytest.approx(TRUE.prefill_per_token_s, rel=0.05)
    assert model.per_token_s == pytest.approx(TRUE.per_token_s, rel=0.15)
    assert 0.02 < rep.mape < 0.06           # ~ E|N(0, 0.05)| = 0.04


def test_roofline_recovers_parameters_from_spans():
    true = FittedRoofline(base_s=0.1, knee_tokens=1, per_token_s=0.02, prefill_per_token_s=0.005)
    g = np.random.default_rng(2)
    n = 200
    batch = g.uniform(1, 4, n)
    tokens = g.integers(5, 100, n).astype(float)
    pre = g.integers(0, 80, n).astype(float)
    ctx = np.zeros(n)
    pts = Points("spans", batch, pre, ctx, np.zeros(n), tokens)
    pts.seconds = predict(true, pts)
    model, rep = fit_roofline(pts, use_ctx=False)
    assert model.base_s == pytest.approx(0.1, rel=1e-6)
    assert model.per_token_s == pytest.approx(0.02, rel=1e-6)
    assert model.prefill_per_token_s == pytest.approx(0.005, rel=1e-6)
    assert np.allclose(predict(model, pts), pts.seconds)


def test_table_from_passes_matches_decode_curve():
    true = FittedRoofline(base_s=0.388, knee_tokens=1, per_token_s=0.026)
    pts = _passes(true, n=400)
    pts.ctx[:] = 0
    doc = table_from_passes(pts)
    tab = Tabulated([(b, c, ms / 1e3) for b, c, ms in doc["decode"]],
                    [(t, ms / 1e3) for t, ms in doc["prefill"]])
    for b in (1, 2, 8, 16):
        assert tab.forward(b, 0, b, 0.0) == pytest.approx(true.forward(b, 0, b, 0.0), rel=1e-6)


def test_too_few_points_is_a_user_error():
    p = Points("passes", np.ones(2), np.zeros(2), np.zeros(2), np.ones(2))
    with pytest.raises(UserError, match="at least 3"):
        fit_roofline(p)


def test_errors_rmse_mape():
    rmse, mape = errors(np.array([1.1, 1.8]), np.array([1.0, 2.0]))
    assert rmse == pytest.approx(np.sqrt((0.01 + 0.04) / 2))
    assert mape == pytest.approx(0.1)


def test_sd_alpha2_from_accepted_length_histogram():
    """Both estimators recover the simulator's per-token alpha2 from its own (geometric) draws (not
    accepted/drafted); the profile's alpha2 is the one whose mean accepted tokens per proposal is
    the measured mean, which the MLE overshoots on an n-gram drafter's bimodal lengths."""
    import random

    from lrsim.calib.overheads import geometric_alpha, mean_alpha, sd_acceptance
    from lrsim.sim.tokensd import accepted_run

    rng = random.Random(0)
    gamma = 6
    for alpha in (0.2, 0.5, 0.8):
        hist = [0] * (gamma + 1)
        for _ in range(20000):
            hist[accepted_run(alpha, gamma, rng)] += 1
        assert geometric_alpha(hist) == pytest.approx(alpha, abs=0.01)
        assert mean_alpha(hist) == pytest.approx(alpha, abs=0.01)
    # bimodal, as n-gram SD's: most accept nothing, some all gamma (the load corpus's pooled one)
    bimodal = [2938, 747, 302, 218, 136, 96, 264]
    mean = sum(k * c for k, c in enumerate(bimodal)) / sum(bimodal)          # 0.98
    model_mean = lambda a: sum(a ** j for j in range(1, gamma + 1))          # noqa: E731
    assert model_mean(mean_alpha(bimodal)) == pytest.approx(mean, rel=1e-9)
    assert model_mean(geometric_alpha(bimodal)) > mean + 0.03
    assert mean_alpha([5, 0, 0]) == 0.0 and mean_alpha([0, 0, 3]) == 1.0
    assert mean_alpha([]) is None and mean_alpha([0, 0]) is None
    # an n-gram SD run measured on this project's 2-core CPU machine: 45 drafts of 6, accepted
    # by position [17, 10, 10, 8, 4, 2]
    at_least = [45, 17, 10, 10, 8, 4, 2]
    hist = [at_least[k] - (at_least[k + 1] if k < 6 else 0) for k in range(7)]
    rec = {"sd": {"drafted": 270, "accepted": 51, "accepted_length_hist": hist},
           "run": {"flags": {"num_speculative_tokens": 6}}}
    sd = sd_acceptance([rec])
    assert sd["acceptance_rate"] == pytest.approx(51 / 270)      # 18.9%, the metrics' definition
    assert geometric_alpha(hist) == pytest.approx(51 / (51 + 43))  # 43 passes stopped short of 6
    assert sum(sd["alpha2"] ** j for j in range(1, 7)) == pytest.approx(51 / 45)   # the mean
    assert sd["k2"] == 7 and sd["mean_accepted_length"] == pytest.approx(1 + 51 / 45)
