"""benchmarks/bench_make_test.py: pytest's summary line read right, and the committed run (quoted in
the README's "The two commands") a green suite inside CI's 90 minutes."""
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_make_test as bm  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
CI_LIMIT_S = 90 * 60      # CI's limit on `.ci/run` (a clean clone, 2 cores)


@pytest.mark.parametrize("line, want", [
    ("1 failed, 4963 passed, 14 skipped, 1 xfailed in 2582.25s (0:43:02)",
     {"failed": 1, "passed": 4963, "skipped": 14, "xfailed": 1, "pytest_s": 2582.25}),
    ("===== 12 passed, 2 warnings in 3.10s =====", {"passed": 12, "failed": 0, "pytest_s": 3.10}),
    ("2 errors, 5 passed in 1.00s", {"errors": 2, "passed": 5, "pytest_s": 1.0}),
    ("1 error in 0.50s", {"errors": 1, "passed": 0, "pytest_s": 0.5}),
])
def test_the_summary_line_is_read(line, want):
    got = bm.parse_summary(f"collecting ...\n....\n{line}\n")
    assert {k: got[k] for k in want} == want


def test_the_last_summary_counts_and_none_is_an_error():
    text = "3 passed in 1.00s\nmore output\n7 passed, 1 skipped in 9.00s\n"
    assert bm.parse_summary(text)["passed"] == 7
    with pytest.raises(SystemExit, match="no pytest summary"):
        bm.parse_summary("make: *** [test] Error 1\n")


def test_a_clone_inside_the_checkout_is_refused(monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "argv", ["bench_make_test.py", "--clone", str(ROOT / "x"), "--out", str(tmp_path / "m.json")])
    with pytest.raises(SystemExit, match="inside it"):
        bm.main()
    assert not (ROOT / "x").exists()


def test_the_committed_run_is_green_within_cis_limit():
    if not (RESULTS / "make_test.json").exists():     # the commit the first run measured
        pytest.skip("no committed make_test.json yet")
    doc = json.loads((RESULTS / "make_test.json").read_text())
    p = doc["pytest"]
    assert doc["venv_rc"] == 0 and doc["test_rc"] == 0
    assert p["failed"] == p["errors"] == 0 and p["passed"] > 4000
    assert doc["venv_s"] + doc["test_s"] < CI_LIMIT_S
    assert (RESULTS / "make_test.md").read_text() == bm.render(doc)
    assert "<!-- quote: benchmarks/results/make_test.md -->" in (ROOT / "README.md").read_text()
