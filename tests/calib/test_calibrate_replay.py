"""Calibrate and replay on traces recorded through the real scheduler with fake engines of known
speed (no vLLM): the fitted latencies match the engines, replay reproduces the measurement."""
import json
import math

import numpy as np
import pytest

from pathlib import Path

from faketraces import DRAFT_S_PER_TOKEN, FIXTURE, TARGET_S_PER_TOKEN
from lrcore.errors import UserError
from lrsim.calib import overheads as oh
from lrsim.calib.calibrate import calibrate, split_problems
from lrsim.calib.profile import Profile, load_profile, save_profile, validate_doc
from lrsim.calib.replay import compare, replay, replay_files

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def fake():
    """Recorded once by faketraces.py (asyncio timings on a loaded 2-core machine: noisy, but
    committed, so every assertion below is deterministic)."""
    return str(ROOT / FIXTURE)


@pytest.fixture(scope="module")
def doc(fake):
    return calibrate([fake])


def test_profile_records_sources_and_is_valid(fake, doc, tmp_path):
    src = doc["source"]
    assert src["traces"][0]["path"] == fake and len(src["traces"][0]["sha256"]) == 64
    assert src["modes"] == {"ar": 6, "lr": 6}
    assert src["problems"] == [f"fake/{i}" for i in range(6)]
    assert src["hardware"] == {"cpu_model": "fake"}
    prof = load_profile(save_profile(doc, tmp_path / "p.json"))
    assert prof.shared is False                    # target_cores "0" vs draft_cores "1"
    assert prof.doc["placement"]["defaults"]["depth"] == 2


def test_latency_fit_matches_the_fake_engines(doc, fake):
    """The fitted models reproduce the engines' measured seconds per token (the fake engines
    sleep per token, plus event-loop overhead that grows when the machine is loaded)."""
    from lrsim.calib.calibrate import read_records
    from lrsim.calib.fit import predict

    recs = read_records(fake)
    for engine, nominal in (("target", TARGET_S_PER_TOKEN), ("draft", DRAFT_S_PER_TOKEN)):
        pts = oh.span_points(recs, engine)
        pred = predict(Profile(doc).latency(engine), pts) / pts.tokens
        meas = pts.seconds / pts.tokens
        assert np.median(pred) == pytest.approx(np.median(meas), rel=0.35), engine
        assert np.median(meas) >= 0.9 * nominal
    for k, e in doc["latency"].items():
        assert e["fit"]["points"] >= 3 and math.isfinite(e["fit"]["mape"]), k


def test_workload_statistics(doc):
    sa = doc["step_acceptance"]
    assert 0 < sa["rate"] < 1 and set(sa["by_depth"]) <= {"1", "2"}
    assert sum(p for p, _ in sa["by_depth"].values()) == sa["proposed"]
    st = doc["steps"]
    assert 4 <= st["mean_tokens"] <= 12 and st["steps_per_request"] >= 6
    assert set(st["length_hist"]) >= {"all", "target", "draft"}
    assert doc["verifier"]["by_method"]["exact"]["n"] > 0
    assert doc["sd"]["alpha2"] is None and doc["sd"]["k2"] == 1
    assert doc["overheads"]["per_step_s"] >= 0


def test_replay_reproduces_measured_latency(doc, fake):
    out, _ = replay_files([fake], Profile(validate_doc(doc)))
    assert set(out["modes"]) == {"ar", "lr"}
    for mode, e in out["modes"].items():
        assert e["mape"] < 0.3, (mode, e["mape"])
        assert e["pearson_r"] is not None and e["pearson_r"] > 0.7
        assert set(e["latency"]) == {"mean", "p50", "p90"}
    sp = out["modes"]["lr"]["speedup"]
    assert sp["pairs"] == 6 and sp["measured"] > 1.1 and abs(sp["diff_pct"]) < 25
    assert math.isfinite(out["mape"]) and out["pearson_r"] > 0.7


def test_holdout_calibrates_and_validates_disjoint_problems(fake):
    out, prof = replay_files([fake], None, holdout=0.5, seed=3)
    h = out["holdout"]
    assert set(h["validated_problems"]).isdisjoint(h["calibration_problems"])
    assert {r["problem_id"] for r in out["per_record"]} == set(h["validated_problems"])
    assert math.isfinite(out["mape"])
    # a profile that saw a held-out problem is refused
    full = Profile(validate_doc(calibrate([fake])), "full.json")
    with pytest.raises(UserError, match="held-out"):
        replay_files([fake], full, holdout=0.5, seed=3)


def test_split_is_deterministic_and_checked():
    ids = [f"p{i}" for i in range(10)]
    a, b = split_problems(ids, 0.3, 7)
    assert (a, b) == split_problems(list(reversed(ids)), 0.3, 7)
    assert len(b) == 3 and a | b == set(ids) and not a & b
    with pytest.raises(UserError, match="--holdout"):
        split_problems(ids, 1.5)
    with pytest.raises(UserError, match="at least 2"):
        split_problems(["x"], 0.5)


def test_compare_statistics_by_hand():
    rows = [{"mode": "ar", "key": (i, 0), "tokens": 10, "measured_s": m, "predicted_s": p}
            for i, (m, p) in enumerate([(1.0, 1.1), (2.0, 1.8), (4.0, 4.0)])]
    rows += [{"mode": "lr", "key": (i, 0), "tokens": 10, "measured_s": m, "predicted_s": p}
             for i, (m, p) in enumerate([(0.5, 0.5), (1.0, 1.0), (2.0, 2.2)])]
    out = compare(rows)
    ar = out["modes"]["ar"]
    assert ar["mape"] == pytest.approx((0.1 + 0.1 + 0.0) / 3)
    assert ar["latency"]["p50"]["diff_pct"] == pytest.approx(-10.0)
    lr = out["modes"]["lr"]
    assert lr["speedup"]["measured"] == pytest.approx(7.0 / 3.5)
    assert lr["speedup"]["predicted"] == pytest.approx(6.9 / 3.7)
    measured = [1.0, 2.0, 4.0, 0.5, 1.0, 2.0]
    predicted = [1.1, 1.8, 4.0, 0.5, 1.0, 2.2]
    assert out["pearson_r"] == pytest.approx(float(np.corrcoef(measured, predicted)[0, 1]))


def test_span_concurrency_reconstruction():
    rec = {"mode": "lr", "prompt_tokens": 10, "steps": [
        {"index": 0, "source": "target", "tokens": 5, "depth": 0, "draft": None,
         "target": {"start": 0.0, "end": 1.0, "tokens": 5}, "verify": None,
         "cancelled": [{"kind": "target", "start": 0.5, "end": 1.0, "tokens": 2, "depth": 1}]},
    ]}
    sp = oh.spans(rec)
    assert [s.engine for s in sp] == ["target", "target"]
    assert oh.mean_concurrency(sp, 0) == pytest.approx(1.5)
    assert oh.mean_concurrency(sp, 1) == pytest.approx(2.0)
    assert sp[0].prefill == 10 and sp[0].ctx == 10


def test_replay_needs_a_profile_or_holdout(fake):
    with pytest.raises(UserError, match="--profile"):
        replay_files([fake])


def test_fresh_fake_traces_calibrate_and_replay(tmp_path):
    """Recorded now (timing assertions live in the deterministic tests above)."""
    from faketraces import write_fake_traces

    path = write_fake_traces(tmp_path / "t.jsonl", problems=2)
    out, prof = replay_files([path], Profile(validate_doc(calibrate([path]))))
    assert out["records"] == 4 and math.isfinite(out["mape"]) and "target" in prof.doc["latency"]


def test_replay_sd_record_uses_histogram_alpha(doc, fake):
    """An `sd` record replays as the simulator's `sd` policy with k2 from the run flags and the
    per-token alpha2 of its accepted-length histogram (the one whose truncated geometric accepts
    the histogram's mean per proposal): more acceptance -> shorter prediction."""
    import copy

    from lrsim.calib.calibrate import read_records
    from lrsim.calib.replay import ReplayWorkload, predict_record

    base = next(r for r in read_records(fake) if r["mode"] == "ar")
    prof = Profile(validate_doc(doc))
    lat = {}
    for name, hist in (("low", [40, 4, 1, 0, 0, 0, 0]), ("high", [2, 2, 3, 4, 6, 8, 20])):
        rec = copy.deepcopy(base)
        rec["mode"] = "sd"
        rec["run"]["flags"]["num_speculative_tokens"] = 6
        rec["sd"] = {"drafted": 6 * sum(hist), "accepted": sum(k * c for k, c in enumerate(hist)),
                     "accepted_length_hist": hist}
        (req,) = ReplayWorkload([rec]).requests()
        alpha = ReplayWorkload([rec]).token_alpha(req)
        assert sum(alpha ** j for j in range(1, 7)) == pytest.approx(
            sum(k * c for k, c in enumerate(hist)) / sum(hist))
        lat[name] = predict_record(prof, rec)["latency_s"]
    assert lat["high"] < lat["low"]
