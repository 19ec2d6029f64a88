"""Measured corrections of the physical latency model by batch size (physical.batch_factor_knots,
models.FittedRoofline.batch_factor; `lr calibrate --batch-factors`): on a CPU whose plain decode
pass of 3-4 sequences takes less time than one of 1 or 2 (benchmarks/results/batch_curve.md: the
AMD EPYC of family 25 model 17), no line follows the curve; the factors price every batch size
the traces measured at what they measured, in the fit and the simulator alike, and are opt-in."""
from __future__ import annotations

import numpy as np
import pytest

from lrcore.errors import UserError
from lrsim.calib import physical as ph
from lrsim.calib.models import FittedRoofline
from lrsim.calib.profile import latency_from_doc
from tests.calib.test_physical import TRUE

DIP = {3: 0.80, 4: 0.70}     # a pass of 3 (4) sequences takes 80% (70%) of the line's time


def dipped(n=1500, seed=2) -> ph.PassData:
    """Plain decode passes of 1-4 sequences, prefills and SD verifications of one sequence,
    priced by TRUE's line, the 3- and 4-sequence passes made faster by DIP."""
    rng = np.random.default_rng(seed)
    kind = rng.choice(["pre", "b1", "b2", "b3", "b4", "sd"], n)
    B = np.select([kind == "b2", kind == "b3", kind == "b4"], [2, 3, 4], 1).astype(float)
    q = np.select([kind == "pre", kind == "sd"], [0, 7], B).astype(float)
    P = np.where(kind == "pre", rng.integers(10, 120, n), 0).astype(float)
    C = rng.uniform(100, 700, n)
    o = np.zeros(n)
    d = ph.PassData(q, B, P, C, o, np.ones(n), np.ones(n), np.zeros(n), np.array(["x"] * n, dtype=object))
    d.t = ph.predict(TRUE, d) * (1 + 0.01 * rng.standard_normal(n))
    for b, f in DIP.items():
        d.t = np.where((d.B == b) & (d.P == 0), d.t * f, d.t)
    return d


def test_opt_in_only():
    assert "batch_factors" not in ph.fit_physical(dipped(), "target")


def test_every_measured_batch_size_adds_up_to_its_measured_time():
    d = dipped()
    e = ph.fit_physical(d, "target", batch_factors=True)
    knots = dict(map(tuple, e["batch_factors"]))
    assert set(knots) == {1.0, 2.0, 3.0, 4.0}
    # the dip is what the factors hold: 3 and 4 sequences below 1 and 2
    assert max(knots[3.0], knots[4.0]) < min(knots[1.0], knots[2.0])
    x = np.array([e["base_s"], e["fit"]["logits_per_position_s"], e["per_ctx_token_s"],
                  e["prefill_per_token_s"], e["contention"], e["per_seq_s"]])
    for b in (1, 2, 3, 4):
        m = (d.B == b) & (d.P == 0) & (d.q == b)
        priced = ph.predict(x, d, e.get("position_factors"), e["batch_factors"])[m].sum()
        assert priced == pytest.approx(d.t[m].sum(), rel=0.005)
    line = ph.fit_physical(d, "target")
    m4 = (d.B == 4) & (d.P == 0)
    assert ph.price(line, d)[m4].sum() / d.t[m4].sum() - 1 > 0.05     # the line alone misses
    assert abs(ph.price(e, d)[m4].sum() / d.t[m4].sum() - 1) < 0.005   # price() applies them


def test_a_size_with_few_passes_gets_no_knot():
    d = dipped()
    rare = np.flatnonzero((d.B == 4) & (d.P == 0))[ph.MIN_KNOT_PASSES - 1:]
    keep = np.ones(len(d), bool)
    keep[rare] = False
    e = ph.fit_physical(d.select(keep), "target", batch_factors=True)
    assert 4.0 not in dict(map(tuple, e["batch_factors"]))


def test_simulator_interpolates_and_holds_the_largest_batch():
    m = FittedRoofline(base_s=0.4, per_seq_s=0.02, batch_factors=((1, 1.0), (2, 1.1), (4, 0.7)))
    linear = FittedRoofline(base_s=0.4, per_seq_s=0.02)
    assert m.batch_factor(1) == 1.0 and m.batch_factor(3) == pytest.approx(0.9)
    assert m.forward(4, 0, 4, 0.0) == pytest.approx(0.7 * linear.forward(4, 0, 4, 0.0))
    # 8 sequences, past the largest batch measured: its corrected time plus the line's increment
    # from 4 to 8 (the correction held as a time, not as a ratio of a longer pass)
    assert m.forward(8, 0, 8, 0.0) == pytest.approx(
        0.7 * linear.forward(4, 0, 4, 0.0) + linear.forward(8, 0, 8, 0.0) - linear.forward(4, 0, 4, 0.0))
    # SD verification (several positions of one sequence) keeps the line: position_factors price it
    assert m.forward(7, 0, 1, 0.0) == linear.forward(7, 0, 1, 0.0)
    assert m.forward(14, 0, 2, 0.0) == linear.forward(14, 0, 2, 0.0)
    # a pass with a prefill in it is not a plain decode pass (the factors were measured without)
    p = FittedRoofline(base_s=0.4, prefill_per_token_s=0.03, batch_factors=((1, 1.0), (2, 0.5)))
    line = FittedRoofline(base_s=0.4, prefill_per_token_s=0.03)
    assert p.forward(2, 100, 2, 0.0) == line.forward(2, 100, 2, 0.0)
    assert p.forward(2, 0, 2, 0.0) == pytest.approx(0.5 * line.forward(2, 0, 2, 0.0))


def test_fit_and_simulator_price_a_pass_alike():
    e = ph.fit_physical(dipped(), "target", batch_factors=True)
    model = latency_from_doc(e)
    x = np.array([e["base_s"], e["fit"]["logits_per_position_s"], e["per_ctx_token_s"],
                  e["prefill_per_token_s"], 0.0, e["per_seq_s"]])
    for q, B, P in ((1, 1, 0), (2, 2, 0), (3, 3, 0), (4, 4, 0), (6, 6, 0), (7, 1, 0), (14, 2, 0), (3, 3, 40)):
        one = ph.PassData(*(np.array([v], float) for v in (q, B, P, 300, 0, 1, 1, 0)),
                          np.array(["x"], dtype=object))
        assert model.forward(q, P, B, 300.0) == pytest.approx(
            float(ph.predict(x, one, e.get("position_factors"), e["batch_factors"])[0]), rel=1e-9)


@pytest.mark.parametrize("bad", [((2, 1.1), (1, 1.0)), ((1, 1.0), (1, 1.1)), ((1, 0.0), (2, 1.0)),
                                 ((0, 1.0), (2, 1.0))])
def test_bad_factors_are_refused(bad):
    with pytest.raises(UserError, match="batch_factors"):
        FittedRoofline(base_s=0.4, batch_factors=bad)


def test_profile_round_trip_keeps_the_factors():
    m = FittedRoofline(base_s=0.4, per_seq_s=0.02, batch_factors=((1, 1.0), (4, 0.7)))
    back = latency_from_doc({"kind": "roofline", **m.params()})
    assert back == m and back.batch_factor(2.5) == pytest.approx(0.85)
    assert "batch_factors" not in FittedRoofline(base_s=0.4).params()


def test_calibrate_on_the_fourth_cpus_real_records_prices_a_batch_of_four(tmp_path):
    """`lr calibrate --batch-factors` on the real ar and lr-d2-emb records of
    traces/load-cold-epyc-f25m17 at 1 and 2 in flight (an AMD EPYC family 25 model 17): the target's
    factors hold the measured dip (3 and 4 sequences below 1 and 2), the summary names them, and
    the AR passes of 4 requests in flight, which the profile never saw, are priced far nearer their
    measured total than by the line alone (+72.8% without the factors, +18.4% with them)."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    from lrsim.calib.calibrate import calibrate, read_records

    root = Path(__file__).resolve().parents[2]
    load = root / "traces" / "load-cold-epyc-f25m17" / "gsm8k"
    files = [str(load / c / f"{m}.jsonl") for c in ("c1", "c2") for m in ("ar", "lr-d2-emb")]
    out = tmp_path / "p.json"
    r = subprocess.run([sys.executable, str(root / "cli.py"), "calibrate", *files, "--batch-factors", "-o", str(out)],
                       capture_output=True, text=True, cwd=root, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "target batch factors" in " ".join(r.stdout.split())
    doc = json.loads(out.read_text())
    assert doc["source"]["batch_factors"] is True
    knots = dict(map(tuple, doc["latency"]["target"]["batch_factors"]))
    assert set(knots) == {1.0, 2.0, 3.0, 4.0} and max(knots[3.0], knots[4.0]) < 0.85 < 1.0 < knots[2.0]
    line = calibrate(files)
    assert "batch_factors" not in line["latency"]["target"] and "batch_factors" not in line["source"]
    d = ph.pass_data(read_records(str(load / "c4" / "ar.jsonl")), "target", doc.get("probe"), probes=False)
    dec = d.P == 0
    with_, without = (ph.price(p["latency"]["target"], d)[dec].sum() / d.t[dec].sum() - 1 for p in (doc, line))
    assert without > 0.5 and abs(with_) < 0.25


def test_with_the_table_model_is_a_one_line_error(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    trace = root / "traces" / "load-cold-epyc-f25m17" / "gsm8k" / "c1" / "ar.jsonl"
    r = subprocess.run([sys.executable, str(root / "cli.py"), "calibrate", str(trace), "--batch-factors",
                        "--latency-model", "table", "-o", str(tmp_path / "p.json")],
                       capture_output=True, text=True, cwd=root, timeout=120)
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert "--batch-factors" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "p.json").exists()
