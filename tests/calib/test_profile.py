"""Profile format: round trip, to_config, and one-line errors naming the field."""
import json

import pytest

from lrcore.errors import UserError
from lrsim.calib.models import FittedRoofline
from lrsim.calib.profile import Profile, load_profile, save_profile
from lrsim.sim.runner import run, simulate


def test_round_trip_is_identical_and_indented(tmp_path, minimal_doc):
    p = save_profile(Profile(minimal_doc), tmp_path / "p.json")
    text = p.read_text()
    assert text.startswith("{\n  ")                 # human-readable
    prof = load_profile(p)
    assert prof.doc == minimal_doc
    save_profile(prof, tmp_path / "q.json")
    assert (tmp_path / "q.json").read_text() == text


@pytest.mark.parametrize("mode,policy,k2", [("ar", "ar", 1), ("sd", "sd", 7), ("lr", "lr-async", 1),
                                             ("lr+sd", "lr-async", 7), ("lr-sync", "lr-sync", 1),
                                             ("lr-stage", "lr-stage", 1)])
def test_to_config_runs_every_mode(minimal_doc, mode, policy, k2):
    cfg = Profile(minimal_doc).to_config(mode, requests=2, steps=4)
    assert cfg.policy == policy and cfg.k2 == k2
    summary, _ = run(cfg)
    assert summary["requests"] == 2 and summary["wall_s"] > 0


def test_to_config_placement_and_knobs(minimal_doc):
    prof = Profile(minimal_doc)
    shared = prof.to_config("lr", depth=3)
    assert shared.draft.devices == shared.target.devices and shared.depth == 3
    apart = prof.to_config("lr", shared=False)
    assert apart.draft.devices != apart.target.devices and apart.depth == 2
    assert isinstance(shared.target.latency, FittedRoofline)
    # the per-step scheduling gap rides on the verdict delay
    assert shared.verifier.kind == "constant" and shared.verifier.seconds == pytest.approx(0.03)
    assert prof.to_config("lr", per_step_overhead=False).verifier.seconds == pytest.approx(0.01)
    res = simulate(prof.to_config("lr", requests=1, steps=6))
    assert res["speedup"] > 0


def test_to_config_takes_the_recorded_judge_timing(tmp_path, minimal_doc):
    """placement.defaults.judge_timing: when the calibrated LR runs judged a draft; a profile
    without it was calibrated from runs made before the option, which were deferred."""
    assert Profile(minimal_doc).to_config("lr").judge_timing == "deferred"
    minimal_doc["placement"]["defaults"]["judge_timing"] = "eager"
    prof = load_profile(save_profile(Profile(minimal_doc), tmp_path / "p.json"))   # schema-valid
    assert prof.to_config("lr").judge_timing == "eager"
    assert prof.to_config("lr", judge_timing="deferred").judge_timing == "deferred"
    minimal_doc["placement"]["defaults"]["judge_timing"] = "soon"
    with pytest.raises(UserError, match="judge_timing"):
        load_profile(save_profile(Profile(minimal_doc), tmp_path / "bad.json"))


def test_role_at_mode_latency_is_preferred(minimal_doc):
    minimal_doc["latency"]["target@lr"] = {"kind": "roofline", "base_s": 0.8}
    prof = Profile(minimal_doc)
    assert prof.to_config("lr").target.latency.base_s == 0.8
    assert prof.to_config("ar").target.latency.base_s == 0.4


def _write(tmp_path, doc):
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(doc))
    return p


@pytest.mark.parametrize("mutate,field", [
    (lambda d: d.pop("verifier"), "verifier"),
    (lambda d: d["latency"]["target"].pop("base_s"), "latency.target.base_s"),
    (lambda d: d["latency"]["target"].__setitem__("base_s", -1), "latency.target.base_s"),
    (lambda d: d["latency"]["draft"].__setitem__("kind", "magic"), "latency.draft.kind"),
    (lambda d: d["step_acceptance"].__setitem__("rate", 1.5), "step_acceptance.rate"),
    (lambda d: d["source"]["traces"][0].__setitem__("sha256", "xyz"), "source.traces.0.sha256"),
    (lambda d: d["steps"].pop("mean_tokens"), "steps.mean_tokens"),
    (lambda d: d["latency"]["target"]["fit"].__setitem__("ranges", {"sequences": [1.0]}),
     "latency.target.fit.ranges.sequences"),
])
def test_schema_errors_name_file_and_field(tmp_path, minimal_doc, mutate, field):
    mutate(minimal_doc)
    p = _write(tmp_path, minimal_doc)
    with pytest.raises(UserError) as e:
        load_profile(p)
    msg = str(e.value)
    assert "\n" not in msg and str(p) in msg and f"field {field}" in msg


def test_version_not_json_and_missing_file(tmp_path, minimal_doc):
    minimal_doc["profile_version"] = 2
    with pytest.raises(UserError, match="profile_version.*found 2"):
        load_profile(_write(tmp_path, minimal_doc))
    bad = tmp_path / "nj.json"
    bad.write_text("{not json")
    with pytest.raises(UserError, match="nj.json:1: not JSON"):
        load_profile(bad)
    with pytest.raises(UserError, match="cannot read profile"):
        load_profile(tmp_path / "missing.json")
    nan = tmp_path / "nan.json"
    nan.write_text('{"profile_version": NaN}')
    with pytest.raises(UserError, match="NaN"):
        load_profile(nan)


def test_unknown_policy_is_a_user_error(minimal_doc):
    with pytest.raises(UserError, match="policy must be one of"):
        Profile(minimal_doc).to_config("beam")
