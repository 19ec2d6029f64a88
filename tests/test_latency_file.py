"""The latency-measurement file (lrcore/latency_file.py): what `lr calibrate measure` writes is
what every reader in the simulator takes, and a malformed file or document is a one-line error
naming where."""
import json

import pytest

from lrcore import latency_file
from lrcore.errors import UserError
from lrsim.calib.curve import curve_entry
from lrsim.sim.latency import load_measurements

GOOD = {"device": "cpu", "models": {"m": {
    "tp": 1, "dtype": "float32",
    "decode": [{"batch": 1, "context": 128, "ms": 100.0, "passes": 5},
               {"batch": 4, "query": 2, "context": 128, "ms": 180.0, "allreduce_ms_model": 2.0}],
    "prefill": [{"tokens": 128, "ms": 400.0}]}}}


def test_rows_read_the_columns_and_their_defaults(tmp_path):
    dec, pre = latency_file.rows("f.json", "m", GOOD["models"]["m"])
    assert dec == [(1.0, 1.0, 128.0, 100.0), (4.0, 2.0, 128.0, 180.0)]
    assert pre == [(128.0, 400.0)]
    dec, _ = latency_file.rows("f.json", "m", GOOD["models"]["m"], extra_ms="allreduce_ms_model")
    assert [r[3] for r in dec] == [100.0, 182.0]


def test_a_checked_document_is_what_the_simulator_reads(tmp_path):
    latency_file.check(GOOD, "out.json")
    path = tmp_path / "curve.json"
    path.write_text(json.dumps(GOOD))
    model = load_measurements(path)["m"]
    assert model.forward(1, 0, 1, 128.0) == pytest.approx(0.1, rel=0.05)
    entry = curve_entry(path)
    assert entry["decode"] == [[1.0, 128.0, 100.0], [8.0, 128.0, 180.0]]   # batch x query positions
    assert entry["prefill"] == [[128.0, 400.0]]


@pytest.mark.parametrize("doc, message", [
    ({}, "field 'models' must be a non-empty object"),
    ({"models": {}}, "field 'models' must be a non-empty object"),
    ({"models": {"m": {"decode": []}}}, "models.m: tabulated latency needs at least one decode"),
    ({"models": {"m": {"decode": [{"batch": 1}]}}}, "models.m: bad decode/prefill entry"),
    ({"models": {"m": {"decode": [{"batch": "x", "ms": 1}]}}}, "models.m: bad decode/prefill entry"),
    ({"models": {"m": {"decode": [{"batch": 1, "ms": 1}], "prefill": [[1, 2]]}}},
     "models.m: bad decode/prefill entry"),
    ({"models": {"m": "not a model"}}, "models.m: bad decode/prefill entry"),
])
def test_a_bad_document_is_refused_before_writing_and_on_reading(tmp_path, doc, message):
    with pytest.raises(UserError, match=message) as e:
        latency_file.check(doc, "out.json")
    assert str(e.value).startswith("out.json: ") and "\n" not in str(e.value)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(UserError, match=message) as e:
        load_measurements(path)
    assert str(e.value).startswith(f"{path}: ") and "\n" not in str(e.value)


def test_an_unreadable_file_is_one_line(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text("[" * 100000 + "]" * 100000)
    with pytest.raises(UserError, match="nested too deeply|cannot read") as e:
        latency_file.load(path)
    assert "\n" not in str(e.value)
    with pytest.raises(UserError, match="cannot read latency measurements"):
        latency_file.load(tmp_path / "missing.json")
