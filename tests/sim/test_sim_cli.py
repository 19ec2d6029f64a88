"""`lr simulate` / `lr sweep` end to end through the top-level CLI."""
import json

import pytest

import cli


def _run(argv, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    out = capsys.readouterr()
    return e.value.code, out.out, out.err


def test_simulate_json_has_the_stable_fields(capsys):
    code, out, _ = _run(["simulate", "--policy", "lr-async", "--alpha1", "0.63", "--c1", "0.1",
                         "--depth", "3", "--ideal", "--steps", "300", "--json"], capsys)
    assert code == 0
    d = json.loads(out)
    for k in ("speedup", "tokens_per_s", "accepted_steps", "proposed_steps", "latency_s",
              "utilisation", "step_acceptance_rate", "ttft_s", "tpot_s"):
        assert k in d
    assert 1.5 < d["speedup"] < 2.3


@pytest.mark.parametrize("argv", [
    ["simulate", "--scenario", "cpu-2core", "--policy", "lr-sync", "--k1", "3"],
    ["simulate", "--policy", "sd", "--k2", "4", "--alpha2", "0.5", "--requests", "4", "--rate", "2"],
    ["simulate", "--policy", "lr-async", "--k2", "3", "--alpha2", "0.5", "--c2", "0.1", "--width", "2",
     "--equal-resources", "--steps", "20"],
])
def test_simulate_table(capsys, argv):
    code, out, _ = _run(argv, capsys)
    assert code == 0 and "speedup vs AR" in out and "utilisation" in out


def test_sweep_writes_json(tmp_path, capsys):
    out_file = tmp_path / "sweep.json"
    code, out, _ = _run(["sweep", "--policy", "lr-sync", "--ideal", "--alpha1", "0.7", "--c1", "0.1",
                         "--k1", "1-4", "--k2", "1,2", "--alpha2", "0.6", "--budget", "6",
                         "--steps", "200", "--jobs", "1", "--out", str(out_file)], capsys)
    assert code == 0 and "best:" in out
    d = json.loads(out_file.read_text())
    assert all(p["parallel"] <= 6 for p in d["points"])
    assert {(p["k1"], p["k2"]) for p in d["points"]} == {(1, 1), (2, 1), (3, 1), (4, 1), (1, 2), (2, 2), (3, 2)}


@pytest.mark.parametrize("argv,flag", [
    (["simulate", "--alpha1", "1.5"], "--alpha1"),
    (["simulate", "--c1", "-0.1"], "--c1"),
    (["simulate", "--k1", "0"], "--k1"),
    (["simulate", "--k1", "2", "--depth", "2"], "--depth"),
    (["simulate", "--rate", "0"], "--rate"),
    (["simulate", "--policy", "sd", "--k2", "1"], "--k2"),
    (["simulate", "--ideal", "--alpha1", "0.5"], "--c1"),
    (["simulate", "--scenario", "nope.toml"], "--scenario"),
    (["sweep", "--k2", "a-b"], "--k2"),
    (["sweep", "--depth", "1-3", "--budget", "1", "--k2", "2"], "--budget"),
    # closed ranges checked by Typer (min=/max=), still one line
    (["simulate", "--depth", "0"], "--depth"),
    (["simulate", "--width", "1025"], "--width"),
    (["simulate", "--kv-cache-tokens", "1"], "--kv-cache-tokens"),
    (["simulate", "--seed", "-1"], "--seed"),
    (["simulate", "--budget", "0.5"], "--budget"),
    (["sweep", "--jobs", "-1"], "--jobs"),
])
def test_bad_flags_are_one_line_errors(capsys, argv, flag):
    code, out, err = _run(argv, capsys)
    assert code == 2
    assert err.startswith("lr: error:") and flag in err and err.count("\n") == 1


def test_bad_scenario_file_error_names_file(tmp_path, capsys):
    p = tmp_path / "x.toml"
    p.write_text('[devices]\ng = "gpu"\n[models.target]\ndevices = ["g"]\nlatency = {kind = "nope"}\n')
    code, _, err = _run(["simulate", "--scenario", str(p)], capsys)
    assert code == 2 and "x.toml" in err and "models.target.latency.kind" in err
