"""`lr plan` and `lr plot` on a calibrated profile (lr calibrate on real-scheduler fake traces)."""
from __future__ import annotations

import json

import pytest

import cli


@pytest.fixture(scope="module")
def profile(tmp_path_factory, fake_traces):
    pytest.importorskip("lrsim.calib.profile")
    path = tmp_path_factory.mktemp("profile") / "profile.json"
    with pytest.raises(SystemExit) as exc:
        cli.main(["calibrate", str(fake_traces), "-o", str(path), "--json"])
    assert exc.value.code == 0 and path.is_file()
    return path


def test_plan_ranks_a_calibrated_profile(run_lr, profile):
    code, out, err = run_lr("plan", "--profile", str(profile), "--samples", "1", "--depth", "1,2",
                            "--modes", "lr", "--placement", "dedicated", "--jobs", "1", "--json")
    assert code == 0, err
    res = json.loads(out)
    assert res["source"] == f"profile {profile}"
    roles = {r["role"] for r in res["candidates"]}
    assert {"reference", "equal-resources", ""} <= roles
    # the fake draft is 3x faster than the target and most drafts are right: LR pays on the same devices
    lr = [r for r in res["candidates"] if r["mode"] == "lr"]
    assert max(r["speedup"] for r in lr) > 1.0


def test_plot_a_calibrated_profile_with_its_traces(run_lr, tmp_path, profile, fake_traces):
    code, out, err = run_lr("plot", "--profile", str(profile), "--traces", str(fake_traces), "--quick",
                            "--budget", "6", "--out", str(tmp_path), "--jobs", "1", "--json")
    assert code == 0, err
    res = json.loads(out)
    assert res["source"].startswith("profile") and (tmp_path / "report.html").is_file()
    # theory parameters come from the profile's fit
    assert 0 < res["theory"]["c1"] < 1 and 0 < res["theory"]["alpha1"] < 1


def test_plot_says_what_its_profile_never_measured(run_lr, tmp_path, profile, fake_traces):
    """The fake traces run no SD: the profile has no SD acceptance, and the plot's SD curves
    (speedup vs k2, the heatmap) price SD at alpha2 0; the section says so in the report, the
    JSON and the printed summary, as `lr plan --profile` does. Its LR acceptance was measured."""
    assert json.loads(profile.read_text())["sd"]["alpha2"] is None
    code, out, err = run_lr("plot", "--profile", str(profile), "--quick", "--budget", "4",
                            "--out", str(tmp_path), "--jobs", "1", "--json")
    assert code == 0, err
    notes = [n for n in json.loads(out)["sections"][0]["notes"] if "acceptance" in n]
    assert len(notes) == 1 and "measured no SD acceptance" in notes[0] and "alpha2 0" in notes[0]
    assert notes[0].endswith("lr plan --alpha2 sets one")     # lr plot itself has no --alpha2
    assert "Not measured: " in (tmp_path / "report.html").read_text()
    code, out, err = run_lr("plot", "--profile", str(profile), "--quick", "--budget", "4",
                            "--out", str(tmp_path / "again"), "--jobs", "1")
    assert code == 0, err
    assert "not measured: " in out


def _holding(tmp_path, name, sequences):
    """The shipped CPU test profile as if its traces' passes held `sequences` [fewest, most] in
    every latency entry (fit.ranges, which lr calibrate records)."""
    from pathlib import Path

    doc = json.loads((Path(__file__).resolve().parents[1] / "data" / "calib" / "cpu-gsm8k-profile.json").read_text())
    doc["sd"]["alpha2"] = 0.4
    for entry in doc["latency"].values():
        entry["fit"]["ranges"] = {"sequences": list(sequences)}
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(doc))
    return path


def test_plot_says_where_its_load_sweep_priced_passes_past_the_traces(run_lr, tmp_path):
    """lr plot's speedup-vs-load figure plans 1 and 4 in flight (--quick): a profile whose traces
    held at most 2 sequences a pass prices fuller passes by the fitted line's extrapolation, and
    the section says so (lr plan's 'not measured' note: the JSON's notes, the printed list, the
    figure's caption in report.html); a profile whose traces held 64 says nothing of passes."""
    got = {}
    for name, held in (("narrow", (1, 2)), ("wide", (1, 64))):
        code, out, err = run_lr("plot", "--profile", str(_holding(tmp_path, name, held)), "--quick",
                                "--budget", "4", "--out", str(tmp_path / name), "--jobs", "1", "--json")
        assert code == 0, err
        got[name] = [n for n in json.loads(out)["sections"][0]["notes"] if "passes of at most" in n]
    assert got["wide"] == []
    roles = {role for n in got["narrow"] for role in ("target", "draft") if f"measured {role} passes of at most 2 " in n}
    assert roles == {"target", "draft"} and len(got["narrow"]) == 2
    assert "calibrate on traces whose passes reached that size" in got["narrow"][0]
    html = (tmp_path / "narrow" / "report.html").read_text()
    assert "Not measured: " in html and "passes of at most 2 sequences" in html
    code, out, err = run_lr("plot", "--profile", str(_holding(tmp_path, "narrow2", (1, 2))), "--quick",
                            "--budget", "4", "--out", str(tmp_path / "printed"), "--jobs", "1")
    assert code == 0, err
    assert "not measured: " in out and "passes of at most 2" in " ".join(out.split())
