"""The report keeps setups apart: this machine's figures take theory, simulation and measurement
from its one calibrated profile and its traces; a paper preset gets its own section, simulated
only, never with measured points on its axes."""
from __future__ import annotations

import json
import re

import pytest

from analysis import measured, plots, report
from lrsim.plan.sources import PresetSource

PLOTS = ("plot_depth", "plot_k2", "plot_acceptance", "plot_load")   # the ones whose data name a source


@pytest.fixture(scope="module")
def profile(tmp_path_factory, fake_traces):
    path = tmp_path_factory.mktemp("profile") / "profile.json"
    return report.calibrated_source([fake_traces], path.parent)


@pytest.fixture
def drawn(monkeypatch):
    """Every data dict handed to a plot function, by function name."""
    seen: dict[str, list[dict]] = {}
    for name in PLOTS + ("plot_heatmaps", "plot_breakdown"):
        real = getattr(plots, name)

        def spy(*args, _real=real, _name=name, **kw):
            seen.setdefault(_name, []).append(args[1] if _name == "plot_heatmaps" else args[0])
            return _real(*args, **kw)
        monkeypatch.setattr(plots, name, spy)
    return seen


def _st():
    return report.Settings.quick(jobs=1, budget=6, steps=4, loads=(1,))


def test_measured_records_never_share_a_preset_section(tmp_path, fake_traces):
    recs = measured.load([fake_traces])
    with pytest.raises(ValueError, match="preset r1-gsm8k: measured records share axes only"):
        report._section(PresetSource("r1-gsm8k"), recs, _st(), tmp_path, "x", "x", "x")


def test_machine_section_is_one_profile_and_its_traces(tmp_path, profile, fake_traces, drawn):
    sec = report.machine_section(profile, [fake_traces], _st(), tmp_path)
    assert sec.key == "machine" and sec.title.startswith(f"This machine: {profile.label}")
    for name in PLOTS:
        assert [d["source"] for d in drawn[name]] == [profile.label], name
    assert drawn["plot_heatmaps"][0]["source"] == profile.label
    depth = drawn["plot_depth"][0]
    # measured per configuration, at x = depth + 1, and the replay of the same records beside them
    assert {lab for _, _, lab in depth["measured"]} == {"lr-d2 (n=3)", "lr-sync-d2 (n=3)"}
    assert {x for x, _, _ in depth["measured"]} == {3}
    assert {lab for _, _, lab in depth["replayed"]} == {"lr-d2", "lr-sync-d2"}
    # the closed form uses this profile's alpha1 and c1 (what the profile itself says)
    from lrsim.calib.profile import load_profile

    prof = load_profile(profile.path)
    assert depth["c1"] == pytest.approx(prof.summary()["c1"], rel=1e-6)
    assert sec.meta["depth_ref"] == 2             # the LR depth measured
    assert set(drawn["plot_breakdown"][0]) >= {"sim lr (depth 2)", "measured ar", "measured lr-d2"}
    assert all(p.parent == tmp_path / "machine" for p in (f.path for f in sec.figures))


def test_preset_section_has_no_measurement(tmp_path, drawn):
    sec = report.reference_section(PresetSource("r1-gsm8k"), _st(), tmp_path, paper=False)
    assert sec.key == "preset-r1-gsm8k" and sec.title.startswith("Paper setup: preset r1-gsm8k")
    assert sec.meta["records"] == 0 and sec.meta["measured_speedups"] == {}
    for name in PLOTS:
        for d in drawn[name]:
            assert d["source"] == "preset r1-gsm8k" and not d.get("measured") and not d.get("replayed")
    assert drawn["plot_acceptance"][0]["measured"] == {}
    assert not any(k.startswith("measured") for k in drawn["plot_breakdown"][0])
    for f in sec.figures:
        assert not any("measured" in str(c) for row in f.rows for c in row), f.key


def test_lr_plot_sections_with_profile_traces_and_preset(run_lr, tmp_path, profile, fake_traces):
    out = tmp_path / "report"
    code, stdout, err = run_lr("plot", "--profile", profile.path, "--traces", str(fake_traces.parent),
                               "--preset", "r1-gsm8k", "--no-paper-table", "--quick", "--budget", "6",
                               "--steps", "4", "--jobs", "1", "--out", str(out), "--json")
    assert code == 0, err
    res = json.loads(stdout)
    machine, paper = res["sections"]
    assert machine["key"] == "machine" and machine["source"] == profile.label
    assert machine["records"] == 9 and set(machine["measured_speedups"]) == {"lr-d2", "lr-sync-d2"}
    assert paper["key"] == "preset-r1-gsm8k" and paper["records"] == 0 and paper["measured_speedups"] == {}
    assert paper["theory"]["c1"] != machine["theory"]["c1"]
    html = (out / "report.html").read_text()
    i_machine, i_paper = html.index("<h2 id='machine'>"), html.index("<h2 id='preset-r1-gsm8k'>")
    assert i_machine < i_paper
    assert re.search(r"measured (ar|lr|sd)", html[i_machine:i_paper])
    assert not re.search(r"measured (ar|lr|sd)", html[i_paper:])      # no CPU point on H100 axes


def test_a_directory_of_traces_and_its_errors(tmp_path, fake_traces):
    assert measured.expand([fake_traces.parent]) == [fake_traces]
    (tmp_path / "empty").mkdir()
    from lrcore.errors import UserError

    with pytest.raises(UserError, match="empty: a directory without"):
        measured.expand([tmp_path / "empty"])


def test_latency_needs_a_preset(run_lr, tmp_path, fake_traces):
    code, _, err = run_lr("plot", "--traces", str(fake_traces), "--latency", "roofline",
                          "--out", str(tmp_path), "--quick")
    assert code == 2 and "--latency applies to presets only" in err
