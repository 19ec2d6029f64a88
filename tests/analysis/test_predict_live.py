"""The demo's prediction of a live run and its side-by-side (analysis/predict_live.py), on real
corpus records (tests/analysis/data/corpus: GSM8K problem 0 in ar and lr-d2, copied from
traces/corpus) and no engines."""
from __future__ import annotations

import copy
import io
from pathlib import Path

import pytest
from rich.console import Console

from analysis import predict_live as pl
from lrcore.errors import UserError

CORPUS = Path(__file__).parent / "data" / "corpus" / "gsm8k"


@pytest.fixture(scope="module")
def corpus():
    from lrsim.calib.calibrate import read_records

    return [r for p in sorted(CORPUS.glob("*.jsonl")) for r in read_records(str(p))]


@pytest.fixture(scope="module")
def profile():
    from lrsim.calib.calibrate import calibrate
    from lrsim.calib.profile import Profile, validate_doc

    return Profile(validate_doc(calibrate([str(p) for p in sorted(CORPUS.glob("*.jsonl"))])))


def _as_live(rec: dict) -> dict:
    """The record as `lr collect` writes it outside the corpus: no corpus_config label."""
    rec = copy.deepcopy(rec)
    rec["run"]["flags"].pop("corpus_config", None)
    return rec


def test_prediction_replays_the_corpus_record_of_the_problem(profile, corpus):
    pred = pl.predict(profile, corpus, "gsm8k/0")
    assert list(pred) == ["ar", "lr-d2"]
    by_cfg = {r["run"]["flags"]["corpus_config"]: r for r in corpus}
    for cfg, p in pred.items():
        assert p["tokens"] == by_cfg[cfg]["output_tokens"]
        assert p["latency_s"] > 0 and p["tokens_per_s"] == pytest.approx(p["tokens"] / p["latency_s"])
        assert p["text"] == by_cfg[cfg]["output_text"]
    assert pred["ar"]["speedup"] == 1.0
    assert pred["lr-d2"]["speedup"] == pytest.approx(pred["lr-d2"]["tokens_per_s"] / pred["ar"]["tokens_per_s"])
    assert pl.predict(profile, corpus, "gsm8k/0") == pred          # deterministic


def test_prediction_uses_the_given_profile_speed_as_is(profile, corpus):
    """probe="none": today's rescaled profile is not scaled back by the record's old probe."""
    base = pl.predict(profile, corpus, "gsm8k/0", ("ar",))["ar"]["latency_s"]
    slow = profile.rescaled({"target": (2.0, 2.0), "draft": (2.0, 2.0)}, "test")
    assert pl.predict(slow, corpus, "gsm8k/0", ("ar",))["ar"]["latency_s"] > 1.6 * base


def test_side_by_side_with_live_records(profile, corpus):
    live = [_as_live(r) for r in corpus]
    rows = pl.predicted_vs_measured(profile, corpus, live, "gsm8k/0")
    assert [r["config"] for r in rows] == ["ar", "lr-d2"]
    meas = {pl._label(r): r for r in live}
    for r in rows:
        rec = meas[r["config"]]
        assert r["measured_s"] == rec["wall_time_s"] and r["tokens"] == rec["output_tokens"]
        assert r["diff_pct"] == pytest.approx(100 * (r["predicted_s"] - r["measured_s"]) / r["measured_s"])
        assert r["correct"] is True and r["same_text"] is True
    assert rows[0]["meas_speedup"] == 1.0
    assert rows[1]["meas_speedup"] == pytest.approx(rows[1]["meas_tokens_per_s"] / rows[0]["meas_tokens_per_s"])
    # in-sample on its own calibration records: the replay lands near the measurement
    assert all(abs(r["diff_pct"]) < 50 for r in rows)


def test_a_missing_live_record_leaves_its_row_unmeasured(profile, corpus):
    live = [_as_live(r) for r in corpus if r["mode"] == "ar"]
    rows = pl.compare(pl.predict(profile, corpus, "gsm8k/0"), live, "gsm8k/0")
    lr = rows[1]
    assert lr["config"] == "lr-d2" and lr["measured_s"] is None and lr["meas_speedup"] is None
    assert lr["predicted_s"] > 0


def test_a_configuration_missing_from_the_corpus_is_a_user_error(profile, corpus):
    with pytest.raises(UserError, match="no lr-d3 record of gsm8k/0.*ar, lr-d2"):
        pl.predict(profile, corpus, "gsm8k/0", ("ar", "lr-d3"))
    with pytest.raises(UserError, match="gsm8k/5"):
        pl.predict(profile, corpus, "gsm8k/5")


def test_tables_fit_80_columns(profile, corpus):
    pred = pl.predict(profile, corpus, "gsm8k/0")
    rows = pl.compare(pred, [_as_live(r) for r in corpus], "gsm8k/0")
    buf = io.StringIO()
    con = Console(width=80, file=buf, record=True)
    con.print(pl.prediction_table(pred, "prediction"))
    con.print(pl.comparison_table(rows, "gsm8k/0: predicted (step 6) vs measured (step 7)"))
    text = con.export_text()
    assert all(len(line) <= 80 for line in text.splitlines())
    assert "…" not in text
    for r in rows:
        assert f"{r['predicted_s']:.1f}" in text and f"{r['measured_s']:.1f}" in text
    assert "right" in text and "lr-d2" in text
