"""`lr calibrate` / `lr replay` through the real CLI entry (one JSON object; one-line errors)."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from faketraces import FIXTURE

ROOT = Path(__file__).resolve().parents[2]


def lr(*args):
    return subprocess.run([sys.executable, str(ROOT / "cli.py"), *map(str, args)],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)


@pytest.fixture(scope="module")
def fake():
    return str(ROOT / FIXTURE)


def test_calibrate_then_replay_json(fake, tmp_path):
    prof = tmp_path / "p.json"
    r = lr("calibrate", fake, "-o", prof, "--json")
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    assert s["profile_version"] == 1 and "target" in s["latency"] and s["out"] == str(prof)
    r = lr("replay", "--profile", prof, fake, "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert {"mape", "pearson_r", "modes"} <= set(out)
    assert {"mape", "pearson_r", "speedup", "tokens_per_s", "latency"} <= set(out["modes"]["lr"])


def test_calibrate_holdout_then_replay_same_split(fake, tmp_path):
    prof = tmp_path / "h.json"
    assert lr("calibrate", fake, "-o", prof, "--holdout", "0.25", "--seed", "2", "--json").returncode == 0
    r = lr("replay", "--profile", prof, fake, "--holdout", "0.25", "--seed", "2", "--json")
    assert r.returncode == 0, r.stderr
    assert len(json.loads(r.stdout)["holdout"]["validated_problems"]) == 2


@pytest.mark.parametrize("args,needle", [
    (["calibrate", "missing.jsonl", "-o", "x.json"], "missing.jsonl: trace file not found"),
    (["replay", "--profile", "missing.json", "t.jsonl"], "missing.json: cannot read profile"),
    (["calibrate", "measure", "--model", "m", "-o", "c.json", "--batch-sizes", "1,x"], "--batch-sizes"),
    (["calibrate", "FAKE", "-o", "x.json", "--latency-model", "cubic"], "--latency-model"),
    (["calibrate", "FAKE", "-o", "x.json", "--holdout", "2"], "--holdout"),
])
def test_errors_are_one_line(fake, args, needle):
    r = lr(*[fake if a == "FAKE" else a for a in args])
    assert r.returncode == 2
    assert r.stderr.startswith("lr: error:") and needle in r.stderr and r.stderr.count("\n") == 1
