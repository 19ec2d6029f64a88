"""Adaptive records (`lr collect --mode lr-adaptive`) in the simulator's readers: the trace
schema checks their `adaptive` object with one-line errors, and `lr calibrate` / `lr replay` take
them as lr records (no engine: the committed real CPU traces, relabelled)."""
import copy
import json
from pathlib import Path

import pytest

from lrcore.adaptive import AdaptiveConfig, Controller, Estimates
from lrcore.errors import UserError
from lrcore.traces import validate_record
from lrsim.calib.calibrate import calibrate
from lrsim.calib.profile import Profile
from lrsim.calib.replay import replay

OWN = Path(__file__).resolve().parents[1] / "data/calib/cpu-gsm8k.jsonl"


def adaptive_object(n: int = 2, max_depth: int = 4) -> dict:
    cfg = AdaptiveConfig(max_depth=max_depth, widths=(1,), k2s=(1,))
    ctl = Controller(cfg)
    decisions = [{"position": i, **ctl.decide(Estimates()).to_dict()} for i in range(n)]
    return {"config": {**cfg.__dict__, "widths": [1], "k2s": [1]},
            "prior": Estimates().to_dict(), "decisions": decisions}


def as_adaptive(rec: dict) -> dict:
    """A real lr record relabelled as lr-adaptive, with decisions at its first steps."""
    r = copy.deepcopy(rec)
    r["mode"] = r["run"]["flags"]["mode"] = "lr-adaptive"
    r["adaptive"] = adaptive_object(min(2, len(r["steps"])))
    return r


@pytest.fixture(scope="module")
def records():
    if not OWN.is_file():
        pytest.skip("no committed real traces")
    return [json.loads(line) for line in OWN.read_text().splitlines() if line.strip()]


def test_an_adaptive_record_is_valid_and_bad_ones_get_one_line_errors(records):
    lr = next(r for r in records if r["mode"] == "lr")
    good = as_adaptive(lr)
    validate_record(good)
    cases = [
        (lambda r: r.update(mode="lr", run={**r["run"], "flags": {**r["run"]["flags"], "mode": "lr"}}),
         "adaptive: only records of lr-adaptive"),
        (lambda r: r["adaptive"]["decisions"][1].update(index=5), r"decisions\[1\].index: is 5"),
        (lambda r: r["adaptive"]["decisions"][0].update(depth=9), r"decisions\[0\].depth: 9 is over"),
        (lambda r: r["adaptive"]["decisions"][0].update(width=3), r"decisions\[0\].width: 3 is not"),
        (lambda r: r["adaptive"]["decisions"][1].update(position=999), r"decisions\[1\].position"),
        (lambda r: r["adaptive"]["decisions"][0].pop("reason"), r"decisions\[0\].reason: is required"),
        (lambda r: r["adaptive"]["decisions"][0]["estimates"].update(alpha2=2.0), "alpha2"),
        (lambda r: r["adaptive"].update(config="x"), "adaptive.config"),
    ]
    for mutate, message in cases:
        bad = copy.deepcopy(good)
        mutate(bad)
        with pytest.raises(UserError, match=message) as e:
            validate_record(bad)
        assert "\n" not in str(e.value)


def test_calibrate_and_replay_take_adaptive_records_as_lr_records(records, tmp_path):
    mixed = [r for r in records if r["mode"] == "ar"] + \
        [as_adaptive(r) for r in records if r["mode"] == "lr"]
    path = tmp_path / "mixed.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in mixed))
    doc = calibrate([str(path)])
    assert doc["source"]["modes"] == {"ar": 3, "lr-adaptive": 3}
    assert doc["step_acceptance"]["proposed"] > 0        # their verdicts count
    out = replay(Profile(doc), mixed)
    assert set(out["modes"]) == {"ar", "lr-adaptive"}
    # the same records replayed as the lr records they are: their recorded decisions (the
    # Controller's first pick from the neutral estimates, depth 4, the records' own depth) are
    # followed, so the simulator's lr-adaptive runs lr-async at their depth: the same error
    plain = [r for r in records if r["mode"] in ("ar", "lr")]
    path = tmp_path / "plain.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in plain))
    lr = replay(Profile(calibrate([str(path)])), plain)["modes"]["lr"]["mape"]
    adaptive = out["modes"]["lr-adaptive"]["mape"]
    assert {d["depth"] for r in mixed if r["mode"] == "lr-adaptive" for d in r["adaptive"]["decisions"]} \
        == {r["run"]["flags"]["depth"] for r in plain if r["mode"] == "lr"} == {4}
    assert adaptive == pytest.approx(lr, abs=1e-12) and adaptive <= 0.15, (adaptive, lr)


def _replayed(prof, rec, **workload):
    """One record replayed as predict_record does, and the world's decisions and drafts."""
    from lrsim.calib.replay import ReplayWorkload, _knobs
    from lrsim.sim.runner import run

    wl = ReplayWorkload([rec], source="test", **workload)
    summary, world = run(prof.to_config(rec["mode"], workload=wl, **_knobs(rec, prof)))
    return summary, world.decisions.summary(), world.stats.proposed


def test_a_replay_follows_the_recorded_decisions(records, tmp_path):
    """An adaptive record replays the depth its run chose at each root (its last decision at or
    before the root's position), as its verdicts and step lengths replay what happened; with
    recorded_decisions off the simulator's lr-adaptive decides afresh."""
    lr = [r for r in records if r["mode"] == "lr"]
    path = tmp_path / "lr.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lr))
    prof = Profile(calibrate([str(path)]))
    rec = as_adaptive(max(lr, key=lambda r: len(r["steps"])))
    n = len(rec["steps"])
    template = rec["adaptive"]["decisions"][0]

    def decided(depths: dict) -> dict:
        r = copy.deepcopy(rec)
        r["adaptive"]["decisions"] = [{**template, "position": p, "index": i, "depth": d}
                                      for i, (p, d) in enumerate(sorted(depths.items()))]
        return r

    s0, log0, drafts0 = _replayed(prof, decided({p: 0 for p in range(n)}))
    assert log0["by_depth"] == {"0": n} and drafts0 == 0        # depth 0 throughout: no draft
    # depth 2 from the third root on, recorded once: the last decision at or before a root holds
    s2, log2, drafts2 = _replayed(prof, decided({0: 0, 2: 2}))
    assert log2["by_depth"] == {"0": 2, "2": n - 2} and drafts2 > 0
    assert s2["wall_s"] != s0["wall_s"]
    # afresh: the Controller's own choices, from the neutral prior (not the recorded ones)
    _, fresh, _ = _replayed(prof, decided({p: 0 for p in range(n)}), recorded_decisions=False)
    assert fresh["decisions"] == n and fresh["by_depth"] != {"0": n}


def test_lr_replay_adaptive_afresh_changes_only_the_adaptive_records(records, tmp_path, run_lr):
    """`lr replay --adaptive-afresh`: the adaptive records' predictions follow the simulator's
    own decisions (the neutral prior's first pick is depth 4 too, as recorded here, but what the
    request then observes moves them), every other record's are unchanged."""
    mixed = [r for r in records if r["mode"] == "ar"] + \
        [as_adaptive(r) for r in records if r["mode"] == "lr"]
    path = tmp_path / "mixed.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in mixed))
    prof = tmp_path / "p.json"
    code, _, err = run_lr("calibrate", path, "-o", prof)
    assert code == 0, err
    outs = []
    for extra in ((), ("--adaptive-afresh",)):
        code, out, err = run_lr("replay", path, "--profile", prof, "--per-record", "--json", *extra)
        assert code == 0, err
        outs.append({(r["mode"], r["problem_id"]): r["predicted_s"]
                     for r in json.loads(out)["per_record"]})
    recorded, afresh = outs
    assert recorded.keys() == afresh.keys()
    assert all(recorded[k] == afresh[k] for k in recorded if k[0] == "ar")
    assert any(recorded[k] != afresh[k] for k in recorded if k[0] == "lr-adaptive")
