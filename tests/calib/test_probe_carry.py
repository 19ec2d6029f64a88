"""`lr calibrate probe --carry-contention`: the side-by-side probe's c now over the profile's is
measured and reported always, and scales the profile's fitted contention only when asked (across
two sittings of one host the carry brought fewer replayed points within 10%: docs/load.md,
"Two sittings with side-by-side probes"). The probe itself is monkeypatched here (its real run:
tests/real/test_engine_real.py, test_calibrate_probe_rescales_a_corpus_profile)."""
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import cli
from lrsim.calib.profile import load_profile, save_profile

DATA = Path(__file__).resolve().parents[1] / "data" / "calib"


@pytest.fixture()
def side_profile(tmp_path, monkeypatch):
    doc = json.loads((DATA / "corpus-profile.json").read_text())
    doc["probe"]["target"].update(contended_decode_s=0.426, contention=0.10)   # c = 0.10 then
    for role in ("target", "draft"):
        doc["latency"][role]["contention"] = 0.05
    src = tmp_path / "p.json"
    save_profile(doc, src)
    today = {"engines": {"target": {"decode_s": 0.3875, "prefill_s": 1.35, "contended_decode_s": 0.465},
                         "draft": {"decode_s": 0.1512, "prefill_s": 0.4358}},
             "cores": {"target": "0", "draft": "1"}, "hardware": {}}
    monkeypatch.setattr("lrreal.probe.probe_machine", lambda *a, **k: today)
    monkeypatch.setattr("lrreal.binding.check_cores", lambda *a: None)
    return src


@pytest.mark.parametrize("carry", [False, True])
def test_the_contention_is_measured_always_and_carried_only_when_asked(side_profile, tmp_path, carry):
    out = tmp_path / "today.json"
    args = ["calibrate", "probe", "--profile", str(side_profile), "-o", str(out), "--json"]
    r = CliRunner().invoke(cli.app, args + (["--carry-contention"] if carry else []))
    assert r.exit_code == 0, r.output
    res = json.loads(r.output)
    assert res["contention_measured"] == {"target": pytest.approx(2.0, rel=1e-3)}   # c 0.20 / 0.10
    assert res["contention"] == (res["contention_measured"] if carry else {})
    after = load_profile(out)
    assert after.contention("target") == pytest.approx(0.10 if carry else 0.05, rel=1e-3)
    assert after.contention("draft") == pytest.approx(0.05)
    r = CliRunner().invoke(cli.app, args[:-1] + (["--carry-contention"] if carry else []),
                           env={"COLUMNS": "80"})
    assert r.exit_code == 0, r.output
    said = ("target: contention beside the other engine x2.00 (5% -> 10%)" if carry else
            "target: contention beside the other engine measured x2.00, not carried (5% as fitted;")
    assert said in " ".join(r.output.split())
