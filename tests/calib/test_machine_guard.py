"""A profile carried to another machine model: `lr calibrate` warns when its traces ran on several,
`lr replay` when the replayed records ran on another than the profile's, `lr calibrate probe`
(tests/real/test_engine_real.py, test_calibrate_probe_rescales_a_corpus_profile) when this machine is another. On the committed traces: traces/load
ran on an AMD EPYC, traces/load-cold on an Intel Xeon (benchmarks/results/load_cold.md)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lrsim.calib.calibrate import calibrate, read_records
from lrsim.calib.profile import Profile, save_profile, validate_doc
from lrsim.calib.replay import replay
from lrsim.calib.rescale import machine_warning, machines, profile_machine

ROOT = Path(__file__).resolve().parents[2]
EPYC, XEON = "AMD EPYC", "Intel(R) Xeon(R) Processor @ 2.50GHz"
WARM_AR = ROOT / "traces/load/gsm8k/c1/ar.jsonl"       # EPYC
COLD = [ROOT / "traces/load-cold/gsm8k/c1" / f for f in ("ar.jsonl", "lr-d2-emb.jsonl")]  # Xeon


def _doc(cpu, rescaled_to=None):
    doc = {"source": {"hardware": {"cpu_model": cpu}}}
    if rescaled_to:       # what `lr calibrate probe` writes: the probe and the machine it ran on
        doc["rescaled"] = {"probe": {"hardware": {"cpu_model": rescaled_to}}}
    return doc


def test_the_machine_a_profile_describes():
    assert profile_machine(_doc("A")) == "A"
    # a probe rescale moves the speed, not the batch curve: the profile still describes A
    assert profile_machine(_doc("A", rescaled_to="B")) == "A"
    assert profile_machine({"source": {"hardware": {"cpu_model": "A", "gpu": "H200"}}}) == "H200"
    assert machine_warning(_doc("A"), {"A": 3}, "x") is None
    assert machine_warning(_doc("A"), {}, "x") is None
    assert machine_warning({"source": {"hardware": {}}}, {"B": 1}, "x") is None   # nothing to compare
    w = machine_warning(_doc("A"), {"A": 3, "B": 2}, "the replayed records ran on")
    assert w.startswith("the profile describes A; the replayed records ran on B (2 records)")
    assert machine_warning(_doc("A"), {"B": None}, "this machine is").startswith(
        "the profile describes A; this machine is B:")
    assert machine_warning(_doc("A", rescaled_to="B"), {"B": 4}, "x").startswith("the profile describes A;")
    assert machine_warning(_doc("A", rescaled_to="B"), {"A": 4}, "x") is None


@pytest.fixture(scope="module")
def xeon_profile():
    return Profile(validate_doc(calibrate([str(p) for p in COLD], select_placement=False)))


def test_the_committed_corpora_name_their_machines():
    assert machines(read_records(WARM_AR)) == {EPYC: len(read_records(WARM_AR))}
    assert set(machines([r for p in COLD for r in read_records(p)])) == {XEON}


def test_replay_warns_on_records_of_another_machine(xeon_profile):
    assert profile_machine(xeon_profile.doc) == XEON
    own = replay(xeon_profile, [r for p in COLD for r in read_records(p)])
    assert not any("the profile describes" in w for w in own["warnings"])
    warm = read_records(WARM_AR)
    out = replay(xeon_profile, warm)
    w = [w for w in out["warnings"] if w.startswith("the profile describes")]
    assert w == [f"the profile describes {XEON}; the replayed records ran on {EPYC} ({len(warm)} "
                 "records): a probe carries a profile's speed within one machine model, not the "
                 "shape of its batch curve to another; calibrate on traces of that machine"]


def test_calibrating_traces_of_two_machines_warns():
    doc = calibrate([str(WARM_AR), str(COLD[0])], select_placement=False)
    n_warm, n_cold = len(read_records(WARM_AR)), len(read_records(COLD[0]))
    mixed = [w for w in doc["warnings"] if w.startswith("the traces ran on")]
    assert mixed == [f"the traces ran on 2 machines ({EPYC}: {n_warm} records, {XEON}: {n_cold} "
                     "records): the probes correct each record's speed, not the batch curve's "
                     "shape, which differs between machine models; calibrate one machine's "
                     "traces per profile"]
    one = calibrate([str(p) for p in COLD], select_placement=False)
    assert not any(w.startswith("the traces ran on") for w in one["warnings"])


def test_lr_replay_prints_the_warning(xeon_profile, tmp_path):
    prof = save_profile(xeon_profile, tmp_path / "xeon.json")
    base = [sys.executable, str(ROOT / "cli.py"), "replay", str(WARM_AR), "--profile", str(prof)]
    p = subprocess.run([*base, "--json"], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert p.returncode == 0, p.stderr[-2000:]
    assert any(w.startswith(f"the profile describes {XEON}") for w in json.loads(p.stdout)["warnings"])
    p = subprocess.run(base, capture_output=True, text=True, timeout=300, cwd=ROOT,
                       env={**os.environ, "COLUMNS": "80"})
    assert p.returncode == 0, p.stderr[-2000:]
    assert "warning: the profile describes Intel(R) Xeon(R)" in " ".join(p.stdout.split())
