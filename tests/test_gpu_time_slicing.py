"""benchmarks/gpu_time_slicing.py (docs/planning.md, Limits) runs end to end on the CPU at toy
sizes (its smoke mode; the figures it exists for need a GPU), writes its JSON and the Markdown
rendered from it, and turns bad input into a one-line error."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "gpu_time_slicing.py"


def test_a_cpu_smoke_run_writes_both_roles(tmp_path):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import gpu_time_slicing as ts

    out = tmp_path / "ts.json"
    p = subprocess.run([sys.executable, str(SCRIPT), "--device", "cpu", "--target-gb", "0.02",
                        "--draft-gb", "0.002", "--seconds", "0.3", "--out", str(out)],
                       capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    assert list(doc["roles"]) == ["target", "draft"] and doc["device_name"] == "CPU"
    t, d = doc["roles"]["target"], doc["roles"]["draft"]
    assert t["bytes"] > d["bytes"] > 0 and t["steps_together"] > 0 and d["steps_together"] > 0
    for x in (t, d):    # the two models' predictions follow from the alone times
        assert x["slowdown"] == pytest.approx(x["together_ms"] / x["alone_ms"], rel=1e-9)
    assert t["alternation_ms"] == pytest.approx(t["alone_ms"] + d["alone_ms"], rel=1e-9)
    assert d["alternation_ms"] == pytest.approx(t["alternation_ms"], rel=1e-9)
    assert t["bandwidth_ms"] == pytest.approx(t["alone_ms"] * (t["bytes"] + d["bytes"]) / t["bytes"], rel=1e-9)
    assert out.with_suffix(".md").read_text() == ts.render(doc)


def test_bad_sizes_are_one_line_errors(tmp_path):
    p = subprocess.run([sys.executable, str(SCRIPT), "--device", "cpu", "--seconds", "0",
                        "--out", str(tmp_path / "x.json")], capture_output=True, text=True, timeout=120)
    assert p.returncode != 0 and "Traceback" not in p.stderr
    assert p.stderr.strip().splitlines() == ["gpu_time_slicing: --target-gb, --draft-gb and --seconds must be > 0"]


def test_a_worker_that_dies_ends_the_run_with_one_line(tmp_path):
    """A worker that cannot allocate its weights (a GPU out of memory, here 10 PB on the CPU)
    leaves the other waiting at the barrier: the run ends at once, its last line naming the role."""
    p = subprocess.run([sys.executable, str(SCRIPT), "--device", "cpu", "--target-gb", "1e7",
                        "--draft-gb", "0.001", "--seconds", "0.3", "--out", str(tmp_path / "x.json")],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode != 0 and not (tmp_path / "x.json").exists()
    assert p.stderr.strip().splitlines()[-1] == "gpu_time_slicing: the target process exited (see its error above)"
