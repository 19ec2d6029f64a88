"""`lr calibrate probe` on the real engines: a corpus profile rescaled to this machine's speed now.

Starts the target and the draft (about 1-2 min on 2 cores), probes once, stops them."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.real, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]


def test_probe_rescales_a_corpus_profile(prepared_cache, tmp_path):
    from lrsim.calib.calibrate import calibrate
    from lrsim.calib.profile import load_profile, save_profile

    files = [str(ROOT / "traces/corpus/gsm8k" / f) for f in ("ar.jsonl", "lr-d2.jsonl")]
    if not all(Path(f).is_file() for f in files):
        pytest.skip("no corpus traces")
    doc = calibrate(files, select_placement=False)
    doc["source"]["hardware"]["cpu_model"] = "Another CPU"   # not this machine: a warning
    src = save_profile(doc, tmp_path / "corpus.json")
    out = tmp_path / "today.json"
    p = subprocess.run([sys.executable, str(ROOT / "cli.py"), "calibrate", "probe", "--profile",
                        str(src), "-o", str(out), "--repeats", "1", "--cache-dir",
                        str(prepared_cache), "--json"],
                       capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert p.returncode == 0, p.stderr[-2000:]
    res = json.loads(p.stdout)
    before, after = load_profile(src), load_profile(out)
    for role in ("target", "draft"):
        f_dec, f_pre = res["factors"][role]["decode"], res["factors"][role]["prefill"]
        assert 0.2 < f_dec < 5 and 0.2 < f_pre < 5, res
        assert after.doc["latency"][role]["base_s"] == pytest.approx(
            before.doc["latency"][role]["base_s"] * f_dec)
        assert res["probe"]["engines"][role]["decode_s"] > 0
        assert res["probe"]["engines"][role]["contended_decode_s"] > 0   # side by side too
    # the corpus's traces predate the side-by-side probe: its contention stays as fitted
    assert res["contention"] == res["contention_measured"] == {} and "contention" not in after.doc["rescaled"]
    assert res["probe"]["cores"] == {"target": "0", "draft": "1"}   # the corpus's binding
    assert after.doc["rescaled"]["factors"]["target"]["decode"] == res["factors"]["target"]["decode"]
    # the probe names this machine, which is not the profile's: the rescale is only the intercept
    from lrsim.calib.rescale import machine

    here = machine(res["probe"]["hardware"])
    assert here and after.doc["rescaled"]["probe"]["hardware"] == res["probe"]["hardware"]
    assert res["warnings"] == [f"the profile describes Another CPU; this machine is {here}: a "
                               "probe carries a profile's speed within one machine model, not the "
                               "shape of its batch curve to another; calibrate on traces of that "
                               "machine"]
