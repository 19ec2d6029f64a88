"""SD's accepted draft tokens per proposal drawn from a measured histogram (tokensd.AcceptedLengths):
an n-gram drafter is all-or-nothing, which no Geometric(alpha2) reproduces."""
import json
import random
from pathlib import Path

import numpy as np
import pytest

from lrcore.errors import UserError
from lrsim.sim.tokensd import AcceptedLengths, SDStats, SDStream
from lrsim.sim.traces import TraceWorkload
from lrsim.sim.workload import Synthetic

# the shape of a recorded n-gram SD run (traces/load/gsm8k/c2/sd.jsonl, one record): 6 drafted
ALL_OR_NOTHING = [94, 24, 8, 8, 4, 1, 6]
LOAD = Path(__file__).resolve().parents[2] / "traces" / "load" / "gsm8k"


def _pmf(draws, n):
    return np.bincount(draws, minlength=n) / len(draws)


def test_survival_and_mean_are_the_histograms():
    a = AcceptedLengths.from_hist(ALL_OR_NOTHING)
    n = sum(ALL_OR_NOTHING)
    assert a.survival[0] == pytest.approx(1 - 94 / n)
    assert a.survival[-1] == pytest.approx(6 / n)
    assert a.mean(6) == pytest.approx(sum(k * c for k, c in enumerate(ALL_OR_NOTHING)) / n)


def test_draws_follow_the_histogram():
    a = AcceptedLengths.from_hist(ALL_OR_NOTHING)
    got = _pmf(a.draw(np.random.default_rng(3), 200_000, 6), 7)
    want = np.array(ALL_OR_NOTHING) / sum(ALL_OR_NOTHING)
    assert np.abs(got - want).max() < 0.005


def test_a_shorter_cap_collapses_the_top():
    a = AcceptedLengths.from_hist(ALL_OR_NOTHING)
    got = _pmf(a.draw(np.random.default_rng(4), 200_000, 2), 3)
    n = sum(ALL_OR_NOTHING)
    assert got == pytest.approx([94 / n, 24 / n, sum(ALL_OR_NOTHING[2:]) / n], abs=0.005)
    assert a.mean(2) == pytest.approx((24 + 2 * sum(ALL_OR_NOTHING[2:])) / n)


def test_a_longer_cap_continues_at_the_last_conditional_rate():
    a = AcceptedLengths.from_hist(ALL_OR_NOTHING)
    s = a.surv(9)
    q = ALL_OR_NOTHING[6] / sum(ALL_OR_NOTHING[5:])          # P(X >= 6) / P(X >= 5)
    assert s[:6] == pytest.approx(list(a.survival))
    assert s[6:] == pytest.approx([s[5] * q, s[5] * q ** 2, s[5] * q ** 3])
    # nobody accepted everything: nothing continues
    assert AcceptedLengths.from_hist([5, 3, 0]).surv(4)[1:] == [0.0, 0.0, 0.0]


def test_no_passes_is_no_measurement():
    assert AcceptedLengths.from_hist([]) is None
    assert AcceptedLengths.from_hist([0, 0, 0]) is None
    assert AcceptedLengths.from_hist(None) is None
    assert AcceptedLengths.from_hist([7]) is None


def test_the_stream_emits_one_plus_the_mean_per_proposing_round():
    a = AcceptedLengths.from_hist(ALL_OR_NOTHING)
    for hit in (1.0, 0.6):
        s, st, rng = SDStream(7, 0.9, hit=hit, lengths=a), SDStats(), random.Random(5)
        for _ in range(3000):
            s.rounds_for(40, rng, st)
        proposing = sum(st.hist)
        assert st.accepted / proposing == pytest.approx(a.mean(6), rel=0.03)
        assert st.hist[1] / proposing == pytest.approx(94 / sum(ALL_OR_NOTHING), abs=0.02)


def test_a_geometric_alpha_cannot_reproduce_it():
    """The reason for the histogram: accepted / drafted as a geometric alpha gives far too few
    tokens per proposal, and the alpha that matches them the wrong shape."""
    a = AcceptedLengths.from_hist(ALL_OR_NOTHING)
    n = sum(ALL_OR_NOTHING)
    acc = sum(k * c for k, c in enumerate(ALL_OR_NOTHING))
    per_token = acc / (6 * n)
    assert sum(per_token ** j for j in range(1, 7)) < 0.5 * a.mean(6)
    # the alpha whose mean matches has too few empty proposals (1 - alpha: 54% against 65%) and
    # far too few that accept all six (alpha^6: under a quarter of the recorded 4%)
    alpha = next(x for x in np.linspace(0, 1, 10001) if sum(x ** j for j in range(1, 7)) >= a.mean(6))
    assert 1 - alpha < 0.9 * (94 / n)
    assert alpha ** 6 < 0.25 * (6 / n)


def test_synthetic_draws_its_histogram_and_checks_it():
    wl = Synthetic(alpha2=0.9, accepted_length_hist=tuple(ALL_OR_NOTHING))
    assert wl.token_lengths(None).survival == AcceptedLengths.from_hist(ALL_OR_NOTHING).survival
    assert Synthetic(alpha2=0.9).token_lengths(None) is None
    for bad in ((5,), (3, -1), (0, 0)):
        with pytest.raises(UserError, match="accepted_length_hist"):
            Synthetic(accepted_length_hist=bad)


def test_the_alpha2_what_if_replaces_the_measured_lengths():
    from lrsim.plan.whatif import WhatIf
    from lrsim.sim.config import Config

    cfg = Config.ideal_setup("sd", alpha1=0.5, c1=0.1, k2=7, alpha2=0.3, steps=5)
    cfg.workload = Synthetic(alpha2=0.3, accepted_length_hist=tuple(ALL_OR_NOTHING))
    out = WhatIf(alpha2=0.8).apply_config(cfg)
    assert out.workload.alpha2 == 0.8 and out.workload.token_lengths(None) is None


def test_a_scenario_takes_a_histogram(tmp_path):
    from lrsim.sim.scenario import load

    base = Path(__file__).resolve().parents[2] / "lrsim" / "scenarios" / "h100-paper.toml"
    text = base.read_text()
    assert "[workload]" in text
    good = tmp_path / "good.toml"
    good.write_text(text.replace("[workload]", "[workload]\naccepted_length_hist = [94, 24, 8, 8, 4, 1, 6]", 1))
    assert load(good).workload.accepted_length_hist == tuple(ALL_OR_NOTHING)
    bad = tmp_path / "bad.toml"
    bad.write_text(text.replace("[workload]", "[workload]\naccepted_length_hist = [1.5, 2]", 1))
    with pytest.raises(UserError, match="accepted_length_hist"):
        load(bad)


def _record(hist):
    return {"mode": "sd", "prompt_tokens": 50, "steps": [{"tokens": 30, "source": "target"}],
            "sd": {"drafted": 6 * sum(hist), "accepted": sum(k * c for k, c in enumerate(hist)),
                   "accepted_length_hist": hist}}


def test_a_trace_replays_its_own_histogram_else_the_files_when_asked():
    own, other = [10, 0, 0, 0, 0, 0, 10], [30, 5, 0, 0, 0, 0, 1]
    bare = _record([])
    bare["sd"] = {"drafted": 0, "accepted": 0}
    recs = [_record(own), _record(other), bare]
    plain = TraceWorkload(recs, "mem")
    assert all(plain.token_lengths(r) is None for r in plain.requests())   # Geometric by default
    wl = TraceWorkload(recs, "mem", sd_lengths=True)
    r0, r1, r2 = wl.requests()
    assert wl.token_lengths(r0).mean(6) == pytest.approx(3.0)
    assert wl.token_lengths(r1).mean(6) == pytest.approx(11 / 36)
    pooled = [a + b for a, b in zip(own, other)]
    assert wl.token_lengths(r2).survival == pytest.approx(AcceptedLengths.from_hist(pooled).survival)


@pytest.mark.skipif(not (LOAD / "c1" / "sd.jsonl").exists(), reason="no load corpus")
def test_a_calibrated_profile_hands_its_histogram_to_the_plan_when_asked():
    from lrsim.calib.calibrate import calibrate
    from lrsim.calib.profile import Profile, validate_doc

    prof = Profile(validate_doc(calibrate([LOAD / "c1" / "sd.jsonl", LOAD / "c1" / "ar.jsonl"],
                                          select_placement=False)))
    hist = [0] * 7
    for line in (LOAD / "c1" / "sd.jsonl").read_text().splitlines():
        for k, c in enumerate(json.loads(line)["sd"]["accepted_length_hist"]):
            hist[k] += c
    assert prof.workload(sd_lengths=True).accepted_length_hist == tuple(hist)
    assert prof.workload().accepted_length_hist is None                  # Geometric(alpha2) by default


def test_the_alpha1_what_if_replaces_the_measured_acceptance_by_depth():
    """A profile's workload draws each draft's verdict from its measured acceptance by depth, which
    overrides alpha1: `lr plan --profile P --alpha1 A` once changed alpha1 alone and planned the
    measured acceptance all the same."""
    from lrsim.plan.whatif import WhatIf
    from lrsim.sim.config import Config

    def measured():
        cfg = Config.ideal_setup("lr-async", alpha1=0.6, c1=0.1, depth=2, steps=5)
        cfg.workload = Synthetic(alpha1=0.6, alpha_by_depth=[0.58, 0.78])
        return cfg

    out = WhatIf(alpha1=0.2).apply_config(measured()).workload
    assert [out._alpha(d) for d in (1, 2, 3)] == [0.2, 0.2, 0.2]
    assert WhatIf(alpha2=0.3).apply_config(measured()).workload.alpha_by_depth == [0.58, 0.78]
