"""The physical latency model (lrsim/calib/physical.py) on synthetic passes of known parameters:
recovery within its error bars, parameters the data cannot identify fixed to 0 (never a 0-ms
pass), contention identified from probes, and the machine-speed correction."""
from __future__ import annotations

import numpy as np
import pytest

from lrsim.calib import physical as ph

TRUE = np.array([0.40, 0.015, 2e-5, 0.030, 0.12, 0.020])   # w, L (a = p + L = 0.045), c, p, beta, s


def synth(n=600, seed=0, noise=0.02, beta_data=True, f=None, sd=True) -> ph.PassData:
    """Passes of every kind: prefill (q 0), one decode, batches of 2-3 sequences (q = B), SD
    verification of 7 positions of one sequence (q 7, B 1), a decode beside a prefill chunk."""
    rng = np.random.default_rng(seed)
    kind = rng.choice(["pre", "one", "one", "one", "b2", "b3", "sd" if sd else "one", "mixed"], n)
    q = np.select([kind == "pre", kind == "b2", kind == "b3", kind == "sd"], [0, 2, 3, 7], 1).astype(float)
    B = np.select([kind == "b2", kind == "b3", kind == "mixed"], [2, 3, 2], 1).astype(float)
    P = np.where(kind == "pre", rng.integers(10, 120, n),
                 np.where(kind == "mixed", rng.integers(5, 40, n), 0)).astype(float)
    C = rng.uniform(100, 700, n)
    o = (rng.random(n) < 0.4).astype(float) * rng.uniform(0.5, 1, n) if beta_data else np.zeros(n)
    fd = np.ones(n) if f is None else f
    d = ph.PassData(q, B, P, C, o, fd, fd.copy(), np.zeros(n), np.array(["x"] * n, dtype=object))
    d.t = ph.predict(TRUE, d) * (1 + noise * rng.standard_normal(n))
    return d


def test_recovers_known_parameters_within_error_bars():
    e = ph.fit_physical(synth(), "target")
    se = e["fit"]["stderr"]
    for i, k in enumerate(ph.PARAMS):
        if k in se:
            v = e[k] if k in e else e["fit"][k]
            assert abs(v - TRUE[i]) <= 4 * se[k] + 1e-12, (k, v, TRUE[i], se[k])
    assert e["per_token_s"] == pytest.approx(0.045, rel=0.1)   # a = p + L
    assert e["base_s"] == pytest.approx(0.40, rel=0.02)
    assert e["contention"] == pytest.approx(0.12, abs=0.02)
    assert e["per_seq_s"] == pytest.approx(0.020, rel=0.15)      # an extra sequence: a + s
    assert e["fit"]["mape"] < 0.03
    # what the passes spanned: one to three sequences (synth's batches), up to 7 decode positions
    assert e["fit"]["ranges"]["sequences"] == [1.0, 3.0]
    assert e["fit"]["ranges"]["decode_positions"] == [0.0, 7.0]


def test_batches_alone_do_not_invent_a_per_position_cost():
    """Without SD passes every extra decode position is an extra sequence: L and s cannot be
    told apart, so L is fixed and s carries the batch cost; an SD pass is then priced at p per
    extra position (what an SD verification costs), not at the batch's p + s."""
    e = ph.fit_physical(synth(sd=False), "target")
    assert "logits_per_position_s" in e["fit"]["fixed"]
    assert "several positions of one sequence" in e["fit"]["fixed"]["logits_per_position_s"]
    assert e["per_token_s"] == pytest.approx(0.030, rel=0.1)
    assert e["per_seq_s"] == pytest.approx(0.020 + 0.015, rel=0.15)


def test_unidentified_parameters_are_fixed_not_invented():
    d = synth(beta_data=False)
    d.C[:] = 300.0                       # every pass read the same context
    e = ph.fit_physical(d, "target")
    assert e["contention"] == 0.0 and "contention" in e["fit"]["fixed"]
    assert e["per_ctx_token_s"] == 0.0 and "per_ctx_token_s" in e["fit"]["fixed"]
    assert e["base_s"] > 0.3             # the context term did not swallow the weight read


def test_base_never_collapses_to_zero():
    """The demo's old degenerate fit ('0.0 ms base') came from context and base being collinear;
    with a constant-ish context the weight read must still carry the decode pass."""
    d = synth(n=200, beta_data=False)
    d.C = 300.0 + d.q                  # context nearly constant
    e = ph.fit_physical(d, "target")
    assert e["base_s"] > 0.3


def test_machine_speed_factor_is_divided_out():
    rng = np.random.default_rng(3)
    f = np.where(rng.random(600) < 0.5, 1.0, 1.3)     # half the records on a 30% slower machine
    e = ph.fit_physical(synth(f=f), "target")
    assert e["base_s"] == pytest.approx(0.40, rel=0.02)
    assert e["fit"]["mape"] < 0.03


def _rec(probe_before, probe_after, passes=(), peer=(), t=0.0):
    return {"run": {"flags": {"corpus_config": "lr-d2"}},
            "probe": {"before": {"t": t, "engines": {"draft": {"decode_s": probe_before, "prefill_s": 1.0}}},
                      "after": {"t": t + 1, "engines": {"draft": {"decode_s": probe_after, "prefill_s": 1.0}}}},
            "engine_stats": {"draft": {"forward_passes": list(passes)},
                             "target": {"forward_passes": list(peer)}}, "steps": []}


def test_probes_identify_contention_of_an_engine_that_always_ran_beside_a_busy_one():
    """The draft only ever decodes while the target is busy (o = 1); the probes, taken with the
    target idle, show its alone speed, so the slowdown is measured rather than absorbed."""
    recs = []
    for i in range(10):
        passes = [{"batch_size": 1, "tokens_scheduled": 1, "prefill_tokens": 0, "duration_s": 0.168,
                   "start": j * 0.2, "kv_tokens": 300 + j} for j in range(20)]
        peer = [{"batch_size": 1, "tokens_scheduled": 1, "prefill_tokens": 0, "duration_s": 4.0, "start": 0.0}]
        recs.append(_rec(0.14, 0.14, passes, peer, t=10.0 * i))
    ref = ph.reference_probe(recs)
    assert ref["draft"]["decode_s"] == pytest.approx(0.14)
    d = ph.pass_data(recs, "draft", ref)
    assert (d.config == "probe").sum() == 40 and d.o.max() == 1.0   # decode + prefill per probe
    e = ph.fit_physical(d, "draft")
    assert e["base_s"] == pytest.approx(0.14, rel=0.01)
    assert e["contention"] == pytest.approx(0.20, abs=0.01)


def test_speed_factors_before_and_both():
    r = _rec(0.15, 0.17)
    ref = {"draft": {"decode_s": 0.1, "prefill_s": 1.0}}
    assert ph.speed_factors(r, "draft", ref, "before") == pytest.approx((1.5, 1.0))
    assert ph.speed_factors(r, "draft", ref, "both") == pytest.approx((1.6, 1.0))
    assert ph.speed_factors(r, "draft", ref, "none") == (1.0, 1.0)
    assert ph.speed_factors({"probe": None}, "draft", ref) == (1.0, 1.0)


def test_records_beside_others_are_priced_at_their_runs_probe():
    """A record run beside others (load level 2+) has no probe of its own: the fit, the reference
    speed and the replay all read its run's probe of the idle engines (both sides), so a slow
    sitting's passes are not priced at the reference speed in the fit while the replay scales them."""
    start = {"t": 5.0, "engines": {"draft": {"decode_s": 0.2, "prefill_s": 2.0}}}
    passes = [{"batch_size": 2, "tokens_scheduled": 2, "prefill_tokens": 0, "duration_s": 0.3,
               "start": 0.0, "kv_tokens": 100}]
    beside = [{"mode": "ar", "probe": None, "run": {"probe_at_start": start},
               "engine_stats": {"draft": {"forward_passes": passes}}, "steps": []} for _ in range(2)]
    lone = _rec(0.1, 0.1)
    assert ph.record_probe(beside[0]) == {"before": start, "after": start}
    assert ph.record_probe(lone) is lone["probe"] and ph.record_probe({"run": {}}) == {}
    ref = {"draft": {"decode_s": 0.1, "prefill_s": 1.0}}
    assert ph.speed_factors(beside[0], "draft", ref, "before") == pytest.approx((2.0, 2.0))
    assert ph.speed_factors(beside[0], "draft", ref, "both") == pytest.approx((2.0, 2.0))
    # each record's sides count in the median: the shared start probe weighs as its two records
    assert ph.reference_probe(beside + [lone])["draft"]["decode_s"] == pytest.approx(0.2)
    # an equal-resources record's probe (the target on every core) is no probe of this machine
    er = _rec(0.01, 0.01)
    er["run"]["flags"] = {"equal_resources": True}
    assert ph.reference_probe(beside + [lone, er, er])["draft"]["decode_s"] == pytest.approx(0.2)
    d = ph.pass_data(beside, "draft", ref)
    assert list(d.f_dec[d.config != "probe"]) == [2.0, 2.0]
    assert (d.config == "probe").sum() == 2    # the shared start probe once: decode + prefill


def test_config_label():
    assert ph.config_label({"mode": "lr", "run": {"flags": {"corpus_config": "lr-d3"}}}) == "lr-d3"
    assert ph.config_label({"mode": "ar", "run": {"flags": {}}}) == "ar"
    assert ph.config_label({"mode": "lr", "run": {"flags": {"depth": 2, "width": 1,
                                                            "verifier": "exact"}}}) == "lr-d2"
    assert ph.config_label({"mode": "lr+sd", "run": {"flags": {"depth": 2, "width": 2,
                                                               "verifier": "embedding:0.9"}}}) == "lr+sd-d2-w2-emb"


def test_a_decode_position_never_costs_less_than_a_prefill_token():
    """Calibrated on configurations without multi-position passes (ar + depth-1 lr has few), the
    logits term is not identified: a decode position then costs a prefill token's compute (what
    an SD verification pass needs to be priced), not nothing."""
    d = synth(beta_data=False)
    keep = d.q <= 1
    d = d.select(keep)
    e = ph.fit_physical(d, "target")
    assert "logits_per_position_s" in e["fit"]["fixed"]
    assert e["per_token_s"] == pytest.approx(e["prefill_per_token_s"]) and e["per_token_s"] > 0.02


def test_price_applies_a_fitted_entry_to_passes_it_was_not_fitted_on():
    """price(entry, d) is the fit's own prediction (knots included) rebuilt from the stored
    entry: on the fitted passes it gives the entry's sum_diff_pct, and on other passes of the
    same hardware it is as close as the fit was."""
    d = synth()
    e = ph.fit_physical(d, "target")
    pred = ph.price(e, d)
    assert 100 * (pred.sum() / d.t.sum() - 1) == pytest.approx(e["fit"]["sum_diff_pct"], abs=1e-9)
    other = synth(seed=1)
    assert float(np.mean(np.abs(ph.price(e, other) - other.t) / other.t)) < 0.03


def test_a_probe_without_a_plain_decode_pass_reads_its_side_by_side_pass(monkeypatch):
    """An SD engine's probe can time no plain decode pass (the n-gram proposer matched the probe's
    own output: decode_s None). With PROBE_DECODE_FALLBACK its speed is then read from the same
    pass beside the draft over the reference's (two passes at least), else from its prefill, not
    taken to be the reference speed (the default, kept until every result is rerun with it)."""
    ref = {"target": {"decode_s": 0.5, "prefill_s": 1.0, "contended_decode_s": 0.55}}
    side = {"decode_s": None, "decode_passes": 0, "prefill_s": 0.8, "contended_decode_s": 0.495,
            "contended_passes": 4}
    r = {"probe": {"before": {"engines": {"target": side}}, "after": {"engines": {"target": side}}}}
    assert ph.speed_factors(r, "target", ref) == pytest.approx((1.0, 0.8))      # the default
    monkeypatch.setattr(ph, "PROBE_DECODE_FALLBACK", True)
    assert ph.speed_factors(r, "target", ref) == pytest.approx((0.9, 0.8))      # beside: 0.495 / 0.55
    r["probe"]["after"] = {"engines": {"target": {"decode_s": 0.4, "prefill_s": 0.8}}}
    assert ph.speed_factors(r, "target", ref) == pytest.approx((0.85, 0.8))     # (0.9 + 0.8) / 2
    one = dict(side, contended_passes=1)                                         # one pass: too noisy
    r = {"probe": {"before": {"engines": {"target": one}}}}
    assert ph.speed_factors(r, "target", ref, "before") == pytest.approx((0.8, 0.8))   # its prefill
    r = {"probe": {"before": {"engines": {"target": side}}}}
    assert ph.speed_factors(r, "target", {"target": {"decode_s": 0.5, "prefill_s": 1.0}},
                            "before") == pytest.approx((0.8, 0.8))
    r = {"probe": {"before": {"engines": {"target": {"decode_s": None}}}}}
    assert ph.speed_factors(r, "target", ref, "before") == (1.0, 1.0)


def test_the_default_speed_factors_divide_the_sides_mean_by_the_reference():
    """Off, the factors are the old code's to the last digit (the committed results' fits): the
    mean of the sides' seconds over the reference's, not the mean of their ratios."""
    ref = {"target": {"decode_s": 0.3, "prefill_s": 0.7}}
    r = {"probe": {"before": {"engines": {"target": {"decode_s": 0.1, "prefill_s": 0.1}}},
                   "after": {"engines": {"target": {"decode_s": 0.2, "prefill_s": 0.2}}}}}
    assert ph.speed_factors(r, "target", ref) == ((0.1 + 0.2) / 2 / 0.3, (0.1 + 0.2) / 2 / 0.7)
