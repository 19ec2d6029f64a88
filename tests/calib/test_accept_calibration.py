"""`lr calibrate` and `lr replay` with records of the acceptance protocol (mode "accept", recorded
through the real scheduler on the fake engines): alpha1 and its 95% Wilson interval come from
them, the LR records keep the acceptance by depth and the LR loop's overheads, a corpus without
them calibrates exactly as before, and nothing that replays or simulates traces trips on them."""
import pytest
from scipy.stats import binomtest

from faketraces import record, script
from lrcore.errors import UserError
from lrcore.traces import TraceWriter
from lrsim.calib import overheads as oh
from lrsim.calib.calibrate import calibrate, read_records
from lrsim.calib.profile import Profile, load_profile, save_profile, validate_doc
from lrsim.calib.replay import replay, replay_files

PROBLEMS = 4


def _rec(mode: str, p: int, verifier: str = "exact") -> dict:
    r = record(mode, p)
    r["run"]["flags"]["verifier"] = verifier
    return r


def _write(path, recs) -> str:
    with TraceWriter(str(path), resume=False) as w:
        for r in recs:
            w.write(r)
    return str(path)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("accept")
    return {
        "lr": _write(d / "ar-lr.jsonl", [_rec(m, p) for m in ("ar", "lr") for p in range(PROBLEMS)]),
        "accept": _write(d / "accept.jsonl", [_rec("accept", p) for p in range(PROBLEMS)]),
        # labelled with two verifiers (the fake run judged all of them exactly)
        "two": _write(d / "accept-two.jsonl",
                      [_rec("accept", p, "exact" if p % 2 else "embedding:0.9") for p in range(PROBLEMS)]),
    }


def _counts(path) -> tuple[int, int]:
    recs = read_records(path)
    return (sum(r["step_acceptance"]["proposed"] for r in recs),
            sum(r["step_acceptance"]["accepted"] for r in recs))


def _wilson(k: int, n: int) -> list[float]:
    ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    return [ci.low, ci.high]


def test_accept_records_count_the_known_pattern(files):
    """faketraces' draft writes step i of problem p wrong when (i + p) % 3 == 0; the first step
    (after the chat prompt) is never judged; the output is the target's own text."""
    for r in read_records(files["accept"]):
        p = int(r["problem_id"].split("/")[1])
        sc = script(p)
        judged = len(sc) - 1
        wrong = sum(1 for i in range(1, len(sc)) if (i + p) % 3 == 0)
        sa = r["step_acceptance"]
        assert (sa["proposed"], sa["accepted"]) == (judged, judged - wrong)
        assert sa["by_depth"] == {"1": [judged, judged - wrong]}
        assert "".join(s["text"] for s in r["steps"]) == "\n\n".join(sc)
        assert all(s["source"] == "target" for s in r["steps"])


def test_corpus_without_accept_records_calibrates_as_before(files):
    doc = calibrate([files["lr"]])
    sa = doc["step_acceptance"]
    assert set(sa) == {"rate", "by_depth", "proposed", "accepted"}   # no new keys
    lr = [r for r in read_records(files["lr"]) if r["mode"] == "lr"]
    assert sa == oh.step_acceptance(lr)                                  # the LR records' own
    assert "alpha1_ci95" not in Profile(validate_doc(doc)).summary()


def test_calibrate_prefers_the_accept_records_alpha1(files, tmp_path):
    base = calibrate([files["lr"]])
    both = calibrate([files["lr"], files["accept"]])
    n, k = _counts(files["accept"])
    assert n > k > 0
    sa = both["step_acceptance"]
    assert sa["source"] == "accept" and sa["rate"] == pytest.approx(k / n)
    assert (sa["proposed"], sa["accepted"]) == (n, k)
    proto = sa["accept"]
    assert (proto["judged"], proto["accepted"], proto["records"]) == (n, k, PROBLEMS)
    assert proto["ci95"] == pytest.approx(_wilson(k, n))
    assert proto["ci95"][0] <= sa["rate"] <= proto["ci95"][1]
    assert proto["confidence"] == 0.95 and proto["ci_method"] == "wilson"
    [group] = proto["groups"]
    assert (group["verifier"], group["dataset"], group["judged"], group["accepted"]) == ("exact", "fake", n, k)
    # the LR records keep the acceptance by depth (the simulated tree's) and their pooled rate
    old = base["step_acceptance"]
    assert sa["by_depth"] == old["by_depth"]
    assert sa["lr"] == {"rate": old["rate"], "proposed": old["proposed"], "accepted": old["accepted"]}
    # the LR loop's overheads and the verifier latency are the LR records' alone
    for key in ("per_step_s", "per_request_s", "per_request_s_by_mode", "launch_gap_s"):
        assert both["overheads"][key] == base["overheads"][key], key
    assert both["verifier"] == base["verifier"]
    assert both["source"]["modes"] == {"accept": PROBLEMS, "ar": PROBLEMS, "lr": PROBLEMS}
    assert both["source"]["configs"]["accept"] == PROBLEMS
    assert not any("accept" in w for w in both["warnings"])   # one verifier, the LR records' own
    prof = load_profile(save_profile(both, tmp_path / "p.json"))   # through the profile schema
    assert prof.alpha1() == pytest.approx(k / n)
    s = prof.summary()
    assert s["alpha1"] == pytest.approx(k / n) and s["alpha1_source"] == "accept"
    assert s["alpha1_ci95"] == pytest.approx(_wilson(k, n)) and s["alpha1_judged"] == n


def test_profile_from_accept_records_alone(files):
    from lrsim.sim.runner import run

    doc = calibrate([files["accept"]])
    n, k = _counts(files["accept"])
    sa = doc["step_acceptance"]
    assert sa["source"] == "accept" and sa["rate"] == pytest.approx(k / n)
    assert sa["by_depth"] == {"1": [n, k]} and "lr" not in sa
    assert doc["source"]["modes"] == {"accept": PROBLEMS}
    assert {"target", "draft"} <= set(doc["latency"])          # real passes of both engines
    assert doc["overheads"]["per_request_s"] == 0.0 and doc["overheads"]["per_request_s_by_mode"] == {}
    assert doc["verifier"]["by_method"]["exact"]["n"] == n    # the protocol's own verifier calls
    prof = Profile(validate_doc(doc))
    assert prof.alpha_by_depth() == [pytest.approx(k / n)]
    summary, _ = run(prof.to_config("lr", depth=2, steps=12))  # a synthetic LR run from alpha1
    assert summary["output_tokens"] > 0


def test_warnings_name_pooled_and_foreign_verifiers(files, run_lr, tmp_path):
    doc = calibrate([files["lr"], files["two"]])
    assert len(doc["step_acceptance"]["accept"]["groups"]) == 2
    text = " ".join(doc["warnings"])
    assert "accept-mode records of 2 verifiers (embedding:0.9, exact)" in text
    assert "the LR records were judged with exact" in text
    code, out, err = run_lr("calibrate", files["lr"], files["two"], "-o", tmp_path / "p.json")
    assert code == 0, err
    assert "(accept mode)" in out and "alpha1 95% CI (Wilson)" in out
    assert "verifier, data set" in out and "LR records' acceptance" in out
    assert max(len(line) for line in out.splitlines()) <= 80


def test_replay_skips_accept_records(files):
    prof = Profile(validate_doc(calibrate([files["lr"]])))
    out, _ = replay_files([files["lr"], files["accept"]], prof)
    assert set(out["modes"]) == {"ar", "lr"} and out["records"] == 2 * PROBLEMS
    assert out["not_replayed"] == {"accept": PROBLEMS}
    assert any("accept-mode record" in w for w in out["warnings"])
    with pytest.raises(UserError, match="accept-mode record"):
        replay(prof, read_records(files["accept"]))
    # a profile calibrated on ar + accept predicts the LR configuration it never saw
    out, prof2 = replay_files([files["lr"], files["accept"]], calibrate_on={"ar", "accept"})
    assert set(out["modes"]) == {"lr"} and out["mape"] == out["mape"]   # finite, not NaN
    assert prof2.doc["step_acceptance"]["source"] == "accept"


def test_analysis_and_trace_workloads_take_accept_records(files):
    from analysis.measured import speedups
    from lrsim.sim.runner import run
    from lrsim.sim.traces import TraceWorkload

    recs = read_records(files["lr"]) + read_records(files["accept"])
    sp = speedups(recs)
    assert "lr-d2" in sp and not any(v["mode"] == "accept" for v in sp.values())
    prof = Profile(validate_doc(calibrate([files["lr"], files["accept"]])))
    wl = TraceWorkload(read_records(files["accept"]), source="accept")
    summary, _ = run(prof.to_config("lr", depth=2, workload=wl))
    assert summary["output_tokens"] > 0
