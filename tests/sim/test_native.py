"""The compiled hot path (lrsim/native.py): built from today's sources, used only while fresh, and
giving the plain-Python simulator's summaries bit for bit on every policy."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lrsim import native

ROOT = Path(__file__).resolve().parents[2]

# Each case: lr simulate's options (lrsim.sim.build.Options), and a verifier kind set after the
# build (None: the scenario's). Every policy, SD, width, the LLM and score verifiers, the KV
# cache, equal resources (shared devices), a paper preset and Poisson load.
H100 = {"scenario": "h100-paper", "seed": 3}
CASES = [
    ({**H100, "policy": "lr-async", "requests": 1, "steps": 300}, None),
    ({**H100, "policy": "lr-async", "requests": 24, "steps": 40, "rate": 4.0, "width": 2}, None),
    ({**H100, "policy": "lr-async", "requests": 16, "steps": 40, "k2": 4}, None),
    ({**H100, "policy": "lr-async", "requests": 8, "steps": 30}, "score"),
    ({"scenario": "h100-llm-judge-aime", "policy": "lr-async", "requests": 8, "steps": 30}, None),
    ({**H100, "policy": "lr-async", "requests": 12, "steps": 30, "kv_cache_tokens": 6000}, None),
    ({**H100, "policy": "lr-async", "requests": 8, "steps": 30, "equal_resources": True}, None),
    ({"preset": "r1-gsm8k", "policy": "lr-async", "requests": 8, "steps": 30, "k2": 5}, None),
    ({**H100, "policy": "lr-sync", "requests": 16, "steps": 40, "k1": 3}, None),
    ({**H100, "policy": "lr-stage", "requests": 8, "steps": 40}, None),
    ({**H100, "policy": "ar", "requests": 16, "steps": 40}, None),
    ({**H100, "policy": "sd", "requests": 16, "steps": 40, "k2": 4}, None),
    ({**H100, "policy": "lr-adaptive", "requests": 8, "steps": 40, "k2": 5}, None),
]

CHILD = r"""
import json, sys
sys.path.insert(0, ".")
from lrsim import native
from lrsim.sim.build import Options, build
from lrsim.sim.runner import run
from lrsim.sim.verifier import VerifierCost
out = {"in_use": native.in_use(), "runs": []}
for options, verifier in json.loads(sys.argv[1]):
    cfg = build(Options(**options))
    if verifier is not None:
        cfg.verifier = VerifierCost(verifier)
    s, world = run(cfg)
    out["runs"].append(json.dumps(s, sort_keys=True, default=repr))
print(json.dumps(out))
"""


def _child(env: dict) -> dict:
    r = subprocess.run([sys.executable, "-c", CHILD, json.dumps(CASES)], cwd=ROOT,
                       capture_output=True, text=True, env={**os.environ, **env}, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A build of today's sources in a folder of its own (the one `make` keeps is left alone)."""
    where = tmp_path_factory.mktemp("native")
    os.environ["LRSIM_NATIVE_ROOT"] = str(where)
    pure = os.environ.pop("LRSIM_PURE", None)     # this suite run on plain Python (LRSIM_PURE=1)
    #                                               checks the build all the same
    try:
        st = native.build(quiet=True)
    finally:
        del os.environ["LRSIM_NATIVE_ROOT"]
        if pure is not None:
            os.environ["LRSIM_PURE"] = pure
    assert st["fresh"] and st["active"], st
    return where


def test_compiled_and_plain_python_give_the_same_summaries(built):
    compiled = _child({"LRSIM_NATIVE_ROOT": str(built), "LRSIM_PURE": ""})
    plain = _child({"LRSIM_NATIVE_ROOT": str(built), "LRSIM_PURE": "1"})
    assert compiled["in_use"] and not plain["in_use"]
    assert len(compiled["runs"]) == len(CASES)
    for case, a, b in zip(CASES, compiled["runs"], plain["runs"]):
        assert a == b, case


def test_a_changed_source_sends_the_simulator_back_to_plain_python(built, tmp_path, monkeypatch):
    monkeypatch.delenv("LRSIM_PURE", raising=False)
    stale = tmp_path / "stale"
    stale.mkdir()
    manifest = json.loads((built / "manifest.json").read_text())
    manifest["sources"]["lrsim/sim/engine.py"] = "0" * 64      # as if engine.py were edited
    (stale / "manifest.json").write_text(json.dumps(manifest))
    monkeypatch.setenv("LRSIM_NATIVE_ROOT", str(stale))
    st = native.state()
    assert st["built"] and not st["fresh"] and not st["active"]
    assert st["reason"] == "stale: lrsim/sim/engine.py changed since the build"
    monkeypatch.setenv("LRSIM_NATIVE_ROOT", str(built))
    assert native.state()["active"]
    monkeypatch.setenv("LRSIM_PURE", "1")
    st = native.state()
    assert st["fresh"] and not st["active"] and st["reason"] == "LRSIM_PURE is set"


def test_another_python_or_no_build_is_plain_python(built, tmp_path, monkeypatch):
    other = tmp_path / "other"
    other.mkdir()
    manifest = json.loads((built / "manifest.json").read_text())
    manifest["abi"] = "cpython-39.cpython-39-x86_64-linux-gnu.so"
    (other / "manifest.json").write_text(json.dumps(manifest))
    monkeypatch.setenv("LRSIM_NATIVE_ROOT", str(other))
    st = native.state()
    assert st["built"] and not st["active"] and st["reason"].startswith("built for cpython-39")
    monkeypatch.setenv("LRSIM_NATIVE_ROOT", str(tmp_path / "none"))
    st = native.state()
    assert not st["built"] and st["reason"].startswith("not built")


def test_make_builds_it_and_this_suite_runs_it():
    """This process runs the compiled modules exactly when the build is fresh; under `make`
    (`make test` builds before pytest) they must be, unless LRSIM_PURE is set."""
    st = native.state()
    assert native.in_use() == st["active"], st
    if os.environ.get("MAKELEVEL") and not os.environ.get("LRSIM_PURE"):
        assert st["active"], st


def test_two_builds_at_once_build_once(tmp_path, monkeypatch):
    """`make test` and `make demo` started together: the second waits for the first's build and
    finds it fresh."""
    env = {**os.environ, "LRSIM_NATIVE_ROOT": str(tmp_path / "native")}
    cmd = [sys.executable, "-m", "lrsim.native", "build", "--if-stale"]
    procs = [subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=600)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0]
    assert sorted("up to date" in o for o in outs) == [False, True], outs
    monkeypatch.setenv("LRSIM_NATIVE_ROOT", env["LRSIM_NATIVE_ROOT"])
    assert native.state()["fresh"]
