"""benchmarks/bench_contention_traces.py: a corpus's recorded side-by-side probes against its fit."""
import json
from pathlib import Path

import pytest

from benchmarks import bench_contention_traces as bct

ROOT = Path(__file__).resolve().parents[2]


def probed(t, target_alone, target_beside, er=False, passes=4):
    return {"run": {"flags": {"load_round": 0, "equal_resources": er},
                    "probe_at_start": {"t": t, "engines": {
                        "target": {"decode_s": target_alone, "contended_decode_s": target_beside,
                                   "contended_passes": passes},
                        "draft": {"decode_s": 0.1}}}}}


def test_each_probe_counts_once_and_the_equal_resources_ones_not_at_all():
    recs = [probed(1.0, 0.30, 0.33), probed(1.0, 0.30, 0.33),      # one block of two: one probe
            probed(2.0, 0.30, 0.36), probed(3.0, 0.10, 0.60, er=True),
            probed(4.0, 0.30, 0.30, passes=1)]                       # too few passes beside
    beside = {}
    got = bct.probes_c(recs, beside)
    assert got["target"] == pytest.approx([0.10, 0.20]) and got["draft"] == []
    assert beside == {"target": [4, 4]}
    assert bct.quartiles([0.1]) is None
    assert bct.quartiles([0.0, 0.1, 0.2, 0.3, 0.4]) == pytest.approx((0.1, 0.3))


def test_the_committed_result_is_what_the_traces_give():
    doc = json.loads((ROOT / "benchmarks/results/contention_traces.json").read_text())
    again = bct.measure(list(doc["corpora"]))
    for name, c in doc["corpora"].items():
        assert again["corpora"][name]["records"] == c["records"]
        for sel, row in c["rows"].items():
            for role, e in row.items():
                mine = again["corpora"][name]["rows"][sel][role]
                assert mine["c"] == pytest.approx(e["c"])
                assert mine["passes_median"] == e["passes_median"]
                assert mine["fitted_contention"] == pytest.approx(e["fitted_contention"], abs=1e-6)
