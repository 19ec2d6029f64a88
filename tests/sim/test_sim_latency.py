"""Latency models: roofline shape, tabulated interpolation, the measurement-file format."""
import json

import numpy as np
import pytest

from lrcore.errors import UserError
from lrsim.sim.latency import Ideal, Roofline, Tabulated, load_measurements


def test_roofline_flat_to_knee_then_linear_plus_context():
    r = Roofline(base_s=0.010, knee_tokens=100, per_ctx_token_s=1e-7)
    assert r.forward(1, 0, 1, 0) == r.forward(100, 0, 100, 0) == pytest.approx(0.010)
    assert r.forward(200, 0, 200, 0) == pytest.approx(0.020)          # continuous slope base/knee
    assert r.forward(1, 0, 1, 10_000) == pytest.approx(0.010 + 1e-3)  # KV read term
    assert r.forward(50, 100, 2, 0) == pytest.approx(0.015)          # prefill tokens count as batch


def test_roofline_from_hardware_is_bytes_over_bandwidth():
    r = Roofline.from_hardware(32e9, 2, tp=1, hbm_bytes_per_s=3.2e12, bandwidth_efficiency=1.0)
    assert r.base_s == pytest.approx(0.020)
    r2 = Roofline.from_hardware(32e9, 2, tp=2, hbm_bytes_per_s=3.2e12, bandwidth_efficiency=1.0,
                                tp_efficiency=1.0)
    assert r2.base_s == pytest.approx(0.010)


def test_tabulated_interpolates_and_extrapolates_with_slope():
    t = Tabulated([(1, 0, 0.388), (2, 0, 0.437), (4, 0, 0.509), (8, 0, 0.572)], [(1, 0.388), (300, 6.3)])
    assert t.forward(1, 0, 1, 0) == pytest.approx(0.388)
    assert t.forward(3, 0, 3, 0) == pytest.approx((0.437 + 0.509) / 2)
    assert t.forward(16, 0, 16, 0) > 0.572                                   # never flat past the table
    assert t.forward(0, 150, 1, 0) == pytest.approx(0.388 + (6.3 - 0.388) * 149 / 299)
    # decode + chunked prefill: one pass over n = 302 tokens (weights read once), prefill curve
    assert t.forward(2, 300, 3, 0) == pytest.approx(6.3 + 2 * (6.3 - 0.388) / 299)
    assert t.forward(2, 2, 3, 0) == pytest.approx(0.509)                    # small prefill rides along


def test_tabulated_context_axis():
    t = Tabulated([(1, 512, 0.010), (1, 2048, 0.012), (8, 512, 0.011), (8, 2048, 0.016)])
    assert t.forward(1, 0, 1, 512) == pytest.approx(0.010)
    assert t.forward(1, 0, 2, 2 * 1280) == pytest.approx(0.011)              # mean context 1280


def test_load_measurement_file(tmp_path):
    doc = {"device": "H100", "models": {"m": {"tp": 1, "dtype": "bf16",
           "decode": [{"batch": 1, "context": 512, "ms": 10.0}, {"batch": 4, "context": 512, "ms": 12.0},
                      {"batch": 2, "query": 2, "context": 512, "ms": 12.0}],
           "prefill": [{"tokens": 128, "ms": 20.0}, {"tokens": 512, "ms": 50.0}]}}}
    p = tmp_path / "lat.json"
    p.write_text(json.dumps(doc))
    m = load_measurements(p)["m"]
    assert m.forward(1, 0, 1, 512) == pytest.approx(0.010)
    assert m.forward(4, 0, 4, 2048) == pytest.approx(0.012)                 # batch*query = 4 averaged
    assert m.forward(0, 128, 1, 0) == pytest.approx(0.020)


@pytest.mark.parametrize("doc", [{}, {"models": {}}, {"models": {"m": {"decode": [{"batch": 1}]}}}])
def test_bad_measurement_file_is_a_user_error(tmp_path, doc):
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(doc))
    with pytest.raises(UserError, match="bad.json"):
        load_measurements(p)


def test_ideal_budget():
    i = Ideal(1.0, budget=4)
    assert i.forward(4, 0, 4, 0) == 1.0 and i.forward(5, 0, 5, 0) == 2.0


def test_roofline_forward_is_its_formula_on_every_number_type():
    """Roofline.forward (through roofline_time, the function the compiled engine calls) gives
    (overhead + base) + slope * max(0, decode + prefill - knee) + per_ctx * context for int,
    float and NumPy arguments, bit for bit as Python's own arithmetic on them."""
    r = Roofline(base_s=0.021, knee_tokens=187.5, per_token_s=1.3e-4, per_ctx_token_s=2.7e-8,
                 overhead_s=0.0031)
    for dec, pre, ctx in [(1, 0, 0.0), (256, 40, 12345.0), (3.25, 17, 999), (0, 0, 0),
                          (np.int64(300), np.int64(5), np.float64(77.5)), (187, 0.5, 1e6)]:
        over = dec + pre - r.knee_tokens
        want = r.overhead_s + r.base_s + r.per_token_s * max(0.0, over) + r.per_ctx_token_s * ctx
        assert r.forward(dec, pre, 1, ctx) == want
    # the slope defaults to base / knee (continuous at the knee)
    r2 = Roofline(base_s=0.02, knee_tokens=100.0)
    assert r2.forward(150, 0, 1, 0.0) == 0.02 + (0.02 / 100.0) * 50.0
