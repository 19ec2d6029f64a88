"""A measured batch curve shapes the fitted line (physical.curve_batch_knots; `lr calibrate
--target-batch-curve`): traces at 1-2 requests in flight hold batches of a few sequences, and a
line fitted there extrapolates their slope; a curve of `lr calibrate measure` at 1..24 sequences
gives the line its shape in the batch size, relative to the batch sizes the traces measured, while
the traces keep its level and every other term."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from lrcore.errors import UserError
from lrsim.calib import physical as ph
from lrsim.calib.profile import latency_from_doc
from tests.calib.test_batch_factors import dipped
from tests.calib.test_physical import TRUE

ROOT = Path(__file__).resolve().parents[2]
CTX = 200.0


def line(x, b, ctx=CTX):
    """The physical model's plain decode pass of b sequences of ctx tokens each, alone."""
    w, L, c, p, _beta, s = x
    return w + c * b * ctx + (p + L + s) * (b - 1)


def concave(b):
    """A curve whose time per added sequence falls with the batch (seconds, another machine speed)."""
    return 0.9 * (1.0 + 0.08 * (b - 1) ** 0.7)


def test_a_curve_on_the_line_at_another_speed_changes_nothing():
    pts = [(b, CTX, 1.7 * line(TRUE, b)) for b in (1, 2, 4, 8, 16)]
    knots = ph.curve_batch_knots(TRUE, pts)
    assert [k[0] for k in knots] == [1, 2, 4, 8, 16]
    assert all(f == pytest.approx(1.0, abs=1e-4) for _, f in knots)


def test_a_concave_curve_prices_each_batch_at_its_shape():
    bs = (1, 2, 3, 4, 6, 8, 12, 16, 24)
    knots = ph.curve_batch_knots(TRUE, [(b, CTX, concave(b)) for b in bs])
    assert knots[0] == [1.0, 1.0] and knots[-1][1] < 0.8       # a large batch costs less than the line
    # (no anchor: the one-sequence pass) the simulator's price of a plain pass, relative to one
    # sequence, is the curve's
    m = latency_from_doc({"kind": "roofline", "base_s": TRUE[0], "knee_tokens": 1.0,
                          "per_token_s": TRUE[3] + TRUE[1], "prefill_per_token_s": TRUE[3],
                          "per_ctx_token_s": TRUE[2], "per_seq_s": TRUE[5], "batch_factors": knots})
    one = m.forward(1, 0, 1, CTX)
    for b in bs:
        assert m.forward(b, 0, b, b * CTX) / one == pytest.approx(concave(b) / concave(1), rel=1e-3)
    # SD verification and prefills keep the line: the curve measured plain decode passes only
    lin = latency_from_doc({"kind": "roofline", "base_s": TRUE[0], "knee_tokens": 1.0,
                            "per_token_s": TRUE[3] + TRUE[1], "prefill_per_token_s": TRUE[3],
                            "per_ctx_token_s": TRUE[2], "per_seq_s": TRUE[5]})
    assert m.forward(7, 0, 1, CTX) == lin.forward(7, 0, 1, CTX)
    assert m.forward(4, 50, 4, CTX) == lin.forward(4, 50, 4, CTX)


def test_the_level_is_the_traces_where_they_measured():
    """Anchored on the sizes the traces measured (1 and 2), a curve whose one-sequence point ran
    slow keeps the shape past them but not its own level at 1: the factors at 1 and 2 average 1.
    (Three sizes: too few to smooth, the points as measured.)"""
    pts = [(b, CTX, line(TRUE, b) * (1.1 if b == 1 else 0.95 if b == 8 else 1.0)) for b in (1, 2, 8)]
    knots = dict(map(tuple, ph.curve_batch_knots(TRUE, pts, anchor={1.0, 2.0})))
    assert (knots[1.0] + knots[2.0]) / 2 == pytest.approx(1.0, abs=1e-4)
    assert knots[8.0] == pytest.approx(0.95 / 1.05, abs=1e-3)
    # anchored on one sequence alone (no anchor given), the slow point sets the level
    assert dict(map(tuple, ph.curve_batch_knots(TRUE, pts)))[8.0] == pytest.approx(0.95 / 1.1, abs=1e-3)


def test_a_slow_point_is_smoothed_away():
    """Four sizes or more are smoothed by t = a + b (B - 1)^g: a curve of that form comes back as
    it was; one point 10% slow (a median of a few passes) comes back about 7% slow, and moves the
    others by under 2%."""
    bs = (1, 2, 3, 4, 6, 8, 12, 16, 24)
    exact = {float(b): concave(b) for b in bs}
    assert all(v == pytest.approx(exact[b], rel=1e-4) for b, v in ph.smooth_curve(exact).items())
    slow = {**exact, 1.0: 1.1 * exact[1.0]}
    back = ph.smooth_curve(slow)
    assert 0.06 < back[1.0] / exact[1.0] - 1 < 0.08
    assert all(abs(back[b] / exact[b] - 1) < 0.02 for b in exact if b > 2)
    three = {1.0: 1.0, 2.0: 0.9, 4.0: 1.3}
    assert ph.smooth_curve(three) == three


def test_contexts_are_averaged_and_a_curve_needs_one_sequence():
    pts = [(b, ctx, line(TRUE, b, ctx) * (0.8 if b == 8 else 1.0)) for ctx in (100.0, 400.0) for b in (1, 8)]
    assert dict(map(tuple, ph.curve_batch_knots(TRUE, pts)))[8.0] == pytest.approx(0.8, abs=1e-3)
    with pytest.raises(UserError, match="one sequence"):
        ph.curve_batch_knots(TRUE, [(2, CTX, 1.0), (4, CTX, 1.2)], "c.json")


def test_the_fit_takes_the_curves_factors_and_names_it():
    d = dipped()
    pts = [(b, CTX, concave(b)) for b in (1, 2, 4, 8)]
    e = ph.fit_physical(d, "target", batch_curve=("c.json", pts))
    x = np.array([e["base_s"], e["fit"]["logits_per_position_s"], e["per_ctx_token_s"],
                  e["prefill_per_token_s"], e["contention"], e["per_seq_s"]])
    anchor = ph.plain_sizes(d)
    assert anchor == {1.0, 2.0, 3.0, 4.0}         # every size of dipped() has 50+ plain passes
    assert e["batch_factors"] == ph.curve_batch_knots(x, pts, "c.json", anchor)
    assert e["fit"]["batch_factors_from"] == "c.json"
    assert "batch_factors_from" not in ph.fit_physical(d, "target")["fit"]


def write_curve(path: Path, times: dict, contexts: dict | None = None) -> Path:
    path.write_text(json.dumps({"device": "cpu", "models": {"target": {"tp": 1, "dtype": "float32", "decode": [
        {"batch": b, "context": (contexts or {}).get(b, 256), "ms": 1000 * t} for b, t in times.items()],
        "prefill": []}}}))
    return path


def calibrate_cli(*args):
    return subprocess.run([sys.executable, str(ROOT / "cli.py"), "calibrate", *map(str, args)],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)


def test_lr_calibrate_shapes_a_real_profile_by_the_curve(tmp_path):
    """`lr calibrate --target-batch-curve` on real records (traces/load-f6m207, the ar and lr-d2
    blocks at 1 and 2 in flight): the target's factors are the curve's, the source names the file,
    the summary says so, and the draft keeps its line."""
    load = ROOT / "traces" / "load-f6m207" / "gsm8k"
    files = [load / c / f"{m}.jsonl" for c in ("c1", "c2") for m in ("ar", "lr-d2")]
    curve = write_curve(tmp_path / "curve.json", {b: concave(b) for b in (1, 2, 4, 8, 16, 24)})
    out = tmp_path / "p.json"
    r = calibrate_cli(*files, "--target-batch-curve", curve, "-o", out)
    assert r.returncode == 0, r.stderr
    assert ("target batch factors (sequences in a plain decode pass: curve curve.json / line, relative to "
            "the traces' batch sizes)") in " ".join(r.stdout.split())
    doc = json.loads(out.read_text())
    assert doc["source"]["batch_curves"]["target"]["path"] == str(curve)
    knots = dict(map(tuple, doc["latency"]["target"]["batch_factors"]))
    assert set(knots) == {1.0, 2.0, 4.0, 8.0, 16.0, 24.0} and knots[24.0] < 0.9 < knots[1.0] < 1.1
    assert "batch_factors" not in doc["latency"]["draft"]
    assert doc["latency"]["target"]["fit"]["batch_factors_from"] == "curve.json"


@pytest.mark.parametrize("extra, says", [
    (["--target-curve", "CURVE"], "--target-curve replaces"),
    (["--batch-factors"], "use one or the other"),
    (["--latency-model", "table"], "--latency-model table"),
    (["--draft-batch-curve", "MISSING"], "no such file"),
])
def test_conflicting_or_missing_curves_are_one_line_errors(tmp_path, extra, says):
    curve = write_curve(tmp_path / "curve.json", {1: 1.0, 4: 1.2})
    trace = ROOT / "traces" / "load-f6m207" / "gsm8k" / "c1" / "ar.jsonl"
    extra = [str(curve) if a == "CURVE" else str(tmp_path / "none.json") if a == "MISSING" else a for a in extra]
    out = tmp_path / "p.json"
    r = calibrate_cli(trace, "--target-batch-curve", curve, *extra, "-o", out)
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert says in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not out.exists()


def test_a_curve_of_one_batch_size_is_refused(tmp_path):
    curve = write_curve(tmp_path / "curve.json", {4: 1.0})
    trace = ROOT / "traces" / "load-f6m207" / "gsm8k" / "c1" / "ar.jsonl"
    r = calibrate_cli(trace, "--target-batch-curve", curve, "-o", tmp_path / "p.json")
    assert r.returncode != 0 and "two batch sizes" in r.stderr and "Traceback" not in r.stderr


def test_a_curve_without_two_sizes_at_one_context_is_refused(tmp_path):
    """One size at each context gives no shape: a one-line error, not a profile that names the
    curve and ignores it."""
    curve = write_curve(tmp_path / "curve.json", {1: 1.0, 4: 1.2}, contexts={1: 128, 4: 256})
    trace = ROOT / "traces" / "load-f6m207" / "gsm8k" / "c1" / "ar.jsonl"
    r = calibrate_cli(trace, "--target-batch-curve", curve, "-o", tmp_path / "p.json")
    assert r.returncode != 0 and "two batch sizes" in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and not (tmp_path / "p.json").exists()


def test_a_dipping_curve_as_measured_keeps_its_dip():
    """A CPU whose pass of three or four sequences beats one of one or two (the AMD EPYC family 25
    model 17's target: 419, 504, 378, 349 ms at 1-4, traces/curves/f25m17-target.json): the
    smoothed curve rises with the batch and loses the dip; `smooth=False` (`lr calibrate
    --batch-curve-as-measured`) prices each size at its own point over the line."""
    ms = {1: 419, 2: 504, 3: 378, 4: 349, 6: 378, 8: 453, 12: 534, 16: 640, 24: 933}
    pts = [(b, CTX, ms[b] / 1000) for b in ms]
    smooth = dict(map(tuple, ph.curve_batch_knots(TRUE, pts)))
    raw = dict(map(tuple, ph.curve_batch_knots(TRUE, pts, smooth=False)))
    assert all(smooth[a] * line(TRUE, a) <= smooth[b] * line(TRUE, b) + 1e-12
               for a, b in zip(sorted(smooth), sorted(smooth)[1:]))          # rises: no dip
    for b in ms:                       # as measured: the point over the line, relative to one sequence
        assert raw[b] == pytest.approx(ms[b] / line(TRUE, b) / (ms[1] / line(TRUE, 1)), abs=1e-4)
    assert raw[4.0] * line(TRUE, 4) < raw[1.0] * line(TRUE, 1) < raw[2.0] * line(TRUE, 2)


def test_as_measured_needs_a_curve(tmp_path):
    from lrsim.calib.calibrate import calibrate

    with pytest.raises(UserError, match="batch-curve-as-measured"):
        calibrate([str(tmp_path / "none.jsonl")], smooth_curves=False)


def test_the_load_benchmarks_calibrate_as_measured_when_asked(monkeypatch):
    """bench_load.py --batch-curve-as-measured (load_replay.CURVE_AS_MEASURED) reaches the plan's
    profile: its source says the curves were taken as measured, and its factors keep the dip."""
    from benchmarks import load_plan, load_replay

    curves = {r: str(ROOT / "traces" / "curves" / f"f25m17-{r}.json") for r in ("target", "draft")}
    paths = load_replay.calib_paths(ROOT / "traces" / "load-cold-epyc-f25m17-3")
    monkeypatch.setattr(load_replay, "BATCH_CURVES", curves)
    smooth = load_plan.plan_profile(paths, load_plan.PLAN_PROFILES["emb"][0], None)
    monkeypatch.setattr(load_replay, "CURVE_AS_MEASURED", True)
    raw = load_plan.plan_profile(paths, load_plan.PLAN_PROFILES["emb"][0], None)
    assert raw.doc["source"]["batch_curves_as_measured"] is True
    assert "batch_curves_as_measured" not in smooth.doc["source"]
    f = {k: dict(map(tuple, p.doc["latency"]["target"]["batch_factors"])) for k, p in (("raw", raw), ("smooth", smooth))}
    assert f["raw"][4.0] / f["raw"][2.0] < f["smooth"][4.0] / f["smooth"][2.0]


def test_lr_calibrate_keeps_a_dipping_curve_as_measured(tmp_path):
    """`lr calibrate --target-batch-curve C --batch-curve-as-measured` on real records: the profile
    says so in its source and its target factors keep the curve's dip (four sequences cheaper than
    one over the line's rise); without a curve the flag is a one-line error."""
    load = ROOT / "traces" / "load-f6m207" / "gsm8k"
    files = [load / c / f"{m}.jsonl" for c in ("c1", "c2") for m in ("ar", "lr-d2")]
    ms = {1: 0.419, 2: 0.504, 3: 0.378, 4: 0.349, 6: 0.378, 8: 0.453}
    curve = write_curve(tmp_path / "curve.json", ms)
    docs = {}
    for flag in ([], ["--batch-curve-as-measured"]):
        out = tmp_path / f"p{len(flag)}.json"
        r = calibrate_cli(*files, "--target-batch-curve", curve, *flag, "-o", out)
        assert r.returncode == 0, r.stderr
        docs[bool(flag)] = json.loads(out.read_text())
    assert docs[True]["source"]["batch_curves_as_measured"] is True
    assert "batch_curves_as_measured" not in docs[False]["source"]
    raw = dict(map(tuple, docs[True]["latency"]["target"]["batch_factors"]))
    smooth = dict(map(tuple, docs[False]["latency"]["target"]["batch_factors"]))
    e = docs[True]["latency"]["target"]
    x = np.array([e["base_s"], e["fit"]["logits_per_position_s"], e["per_ctx_token_s"],
                  e["prefill_per_token_s"], e["contention"], e["per_seq_s"]])
    for b in ms:               # each size at its own point over the line (context 256 a sequence)
        assert raw[b] / raw[1.0] == pytest.approx(ms[b] / line(x, b, 256) / (ms[1] / line(x, 1, 256)), rel=1e-3)
    assert raw[4.0] / raw[2.0] < smooth[4.0] / smooth[2.0]      # the smoothed curve rises from 2 to 4
    r = calibrate_cli(files[0], "--batch-curve-as-measured", "-o", tmp_path / "q.json")
    assert r.returncode != 0 and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert "--batch-curve-as-measured" in r.stderr and not (tmp_path / "q.json").exists()
