"""Measured latency curves: the file format plugs into a profile; a real run on the 0.5B model."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lrcore.errors import UserError
from lrsim.calib.curve import curve_entry
from lrsim.calib.profile import Profile, validate_doc
from lrsim.sim.latency import load_measurements

ROOT = Path(__file__).resolve().parents[2]
CURVE = {"device": "test", "models": {"m": {"tp": 1, "dtype": "float32",
         "decode": [{"batch": 1, "context": 128, "ms": 100.0, "passes": 5},
                    {"batch": 4, "context": 128, "ms": 130.0, "passes": 5}],
         "prefill": [{"tokens": 128, "ms": 700.0}, {"tokens": 512, "ms": 2600.0}]}}}


def test_curve_plugs_into_a_profile(tmp_path, minimal_doc):
    p = tmp_path / "c.json"
    p.write_text(json.dumps(CURVE))
    minimal_doc["latency"]["draft"] = curve_entry(p)
    prof = Profile(validate_doc(minimal_doc))
    lat = prof.latency("draft")
    assert lat.forward(1, 0, 1, 128.0) == pytest.approx(0.100)
    assert lat.forward(4, 0, 4, 512.0) == pytest.approx(0.130)
    assert lat.forward(0, 128, 1, 0.0) == pytest.approx(0.700)
    assert prof.to_config("lr").draft.latency is lat


def test_bad_curve_names_the_file(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text(json.dumps({"models": {"m": {"decode": [{"batch": 1}]}}}))
    with pytest.raises(UserError, match="bad.json"):
        curve_entry(p)


@pytest.mark.real
@pytest.mark.slow
def test_measure_on_the_real_draft_model(tmp_path):
    """`lr calibrate measure` on the packaged 0.5B model (vLLM CPU, under the machine-wide lock)."""
    pytest.importorskip("vllm")
    from lrreal import models

    try:
        models.resolve("draft", None)
    except UserError as e:
        pytest.skip(f"packaged draft model not prepared: {e}")
    out = tmp_path / "curve.json"
    r = subprocess.run([sys.executable, str(ROOT / "cli.py"), "calibrate", "measure", "--model", "draft",
                        "--batch-sizes", "1,2", "--context", "64", "--decode-tokens", "6", "-o", str(out),
                        "--json"], capture_output=True, text=True, cwd=ROOT, timeout=900,
                       env=os.environ | {"HF_HUB_OFFLINE": "1"})
    assert r.returncode == 0, r.stderr[-2000:]
    doc = json.loads(r.stdout)
    (name, m), = doc["models"].items()
    assert {d["batch"] for d in m["decode"]} == {1, 2}
    assert all(0.005 < d["ms"] / 1e3 < 10 for d in m["decode"])
    assert m["prefill"] and all(p["tokens"] > 0 for p in m["prefill"])
    load_measurements(out)                       # the simulator reads it as is
    assert curve_entry(out)["kind"] == "table"
