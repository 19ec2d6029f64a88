"""Measured corrections of the physical latency model by SD verification positions
(physical.position_factors, models.FittedRoofline.position_factor): a pass whose cost is not
linear in its positions (a CPU's matrix kernels tile the rows) is priced at what the traces
measured, in the fit and in the simulator alike; plain batches keep the line."""
from __future__ import annotations

import numpy as np
import pytest

from lrcore.errors import UserError
from lrsim.calib import physical as ph
from lrsim.calib.models import FittedRoofline
from lrsim.calib.profile import latency_from_doc
from tests.calib.test_physical import TRUE, synth

BUMP = 1.10     # an SD verification of 7 positions costs 10% more than the line says


def bumped(n=1200, seed=1) -> ph.PassData:
    """synth's passes, half of its SD verifications made two sequences' (q 14, B 2, as at two
    requests in flight), and every 7-position pass BUMP slower than the true line: with two SD
    sizes the per-position cost L cannot absorb the bump."""
    rng = np.random.default_rng(seed)
    d = synth(n=n, seed=seed)
    two = (d.q == 7) & (rng.random(n) < 0.5)
    d.q[two], d.B[two] = 14, 2
    d.t = ph.predict(TRUE, d) * (1 + 0.01 * rng.standard_normal(n))
    d.t = np.where((d.q == 7) & (d.P == 0), d.t * BUMP, d.t)
    return d


def test_a_size_the_line_misprices_gets_its_measured_factor():
    d = bumped()
    e = ph.fit_physical(d, "target")
    knots = dict(map(tuple, e["position_factors"]))
    # verification positions v = q - B: plain decoding and batches 0, SD of one sequence 6, of
    # two sequences 12 (every count with enough decode-only passes)
    assert set(knots) == {0.0, 6.0, 12.0}
    # factors are measured against the fitted line, which tilts towards the bump (its slope per
    # position is fitted on both SD sizes): 6 positions are corrected up, 12 down; plain
    # decoding and batches stay on the line
    assert knots[6.0] > 1.04 and knots[12.0] < 0.99
    assert abs(knots[0.0] - 1) < 0.01
    x = np.array([e["base_s"], e["fit"]["logits_per_position_s"], e["per_ctx_token_s"],
                  e["prefill_per_token_s"], e["contention"], e["per_seq_s"]])
    for q in (7, 14):
        m = (d.q == q) & (d.P == 0)
        assert ph.predict(x, d, e["position_factors"])[m].sum() == pytest.approx(d.t[m].sum(), rel=0.005)
        assert abs(ph.predict(x, d)[m].sum() / d.t[m].sum() - 1) > 0.03      # the line alone
    assert abs(e["fit"]["sum_diff_pct"]) < 0.5


def test_one_count_is_no_shape():
    e = ph.fit_physical(synth(n=400, sd=False), "target")     # batches only: v = 0 everywhere
    assert "position_factors" not in e


def test_a_count_with_few_passes_gets_no_knot():
    d = bumped()
    rare = np.flatnonzero((d.q == 7) & (d.P == 0))[ph.MIN_KNOT_PASSES - 1:]
    keep = np.ones(len(d), bool)
    keep[rare] = False
    e = ph.fit_physical(d.select(keep), "target")
    assert 6.0 not in dict(map(tuple, e["position_factors"]))


def test_simulator_interpolates_and_holds_the_ends():
    m = FittedRoofline(base_s=0.4, per_token_s=0.05, prefill_per_token_s=0.03,
                       position_factors=((0, 1.0), (6, 1.12), (12, 1.02)))
    assert m.position_factor(0) == 1.0
    assert m.position_factor(3) == pytest.approx(1.06)
    assert m.position_factor(6) == pytest.approx(1.12)
    assert m.position_factor(9) == pytest.approx(1.07)
    assert m.position_factor(40) == pytest.approx(1.02)
    linear = FittedRoofline(base_s=0.4, per_token_s=0.05, prefill_per_token_s=0.03)
    # one sequence verifying 7 positions: v = 6
    assert m.forward(7, 0, 1, 0.0) == pytest.approx(1.12 * linear.forward(7, 0, 1, 0.0))
    # a batch of 8 plain decodes (v = 0) keeps the line, however many positions it has
    assert m.forward(8, 0, 8, 0.0) == pytest.approx(linear.forward(8, 0, 8, 0.0))
    # the decode part is scaled, a prefill in the same pass keeps its slope
    assert m.forward(7, 100, 1, 0.0) - m.forward(7, 0, 1, 0.0) == pytest.approx(100 * 0.03)


def test_fit_and_simulator_price_a_pass_alike():
    e = ph.fit_physical(bumped(), "target")
    model = latency_from_doc(e)
    x = np.array([e["base_s"], e["fit"]["logits_per_position_s"], 0.0, e["prefill_per_token_s"], 0.0,
                  e["per_seq_s"]])
    for q, B, P in ((1, 1, 0), (7, 1, 0), (5, 1, 0), (8, 2, 0), (3, 1, 40)):
        one = ph.PassData(*(np.array([v], float) for v in (q, B, P, 0, 0, 1, 1, 0)),
                          np.array(["x"], dtype=object))
        assert model.forward(q, P, B, 0.0) == pytest.approx(
            float(ph.predict(x, one, e["position_factors"])[0]), rel=1e-9)


@pytest.mark.parametrize("bad", [((6, 1.1), (0, 1.0)), ((0, 1.0), (0, 1.1)), ((0, 0.0), (6, 1.0))])
def test_bad_factors_are_refused(bad):
    with pytest.raises(UserError, match="position_factors"):
        FittedRoofline(base_s=0.4, position_factors=bad)


def test_profile_round_trip_keeps_the_factors():
    m = FittedRoofline(base_s=0.4, per_token_s=0.05, position_factors=((0, 1.0), (6, 1.1)))
    back = latency_from_doc({"kind": "roofline", **m.params()})
    assert back == m and back.position_factor(3) == pytest.approx(1.05)
    assert "position_factors" not in FittedRoofline(base_s=0.4).params()


def test_calibrate_on_real_sd_records_measures_and_shows_the_factors(tmp_path):
    """`lr calibrate` on the load corpus's real ar and sd records at 1 and 2 in flight: the
    profile carries the target's factors at 0, 6 and 12 verification positions (n-gram SD
    proposes 6 tokens, for one or both requests), the rich summary names them, and with them
    sd's passes add up to their measured total, which the line alone misses (it cannot run
    through both SD sizes)."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    load = root / "traces" / "load" / "gsm8k"
    files = [str(load / c / f"{m}.jsonl") for c in ("c1", "c2") for m in ("ar", "sd")]
    out = tmp_path / "p.json"
    r = subprocess.run([sys.executable, str(root / "cli.py"), "calibrate", *files, "-o", str(out)],
                       capture_output=True, text=True, cwd=root, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "target position factors" in " ".join(r.stdout.split())
    lat = json.loads(out.read_text())["latency"]["target"]
    assert [v for v, _ in lat["position_factors"]] == [0.0, 6.0, 12.0]
    sd = lat["fit"]["by_config"]["sd"]
    assert abs(sd["sum_diff_pct"]) < 1.0 < abs(sd["linear_sum_diff_pct"])
