"""benchmarks/results/adaptive_real.{json,md} (benchmarks/bench_adaptive_real.py): the figure the
README quotes is what the committed records in traces/load-adaptive/ give, and it carries what the
README says of them."""
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
RESULTS = ROOT / "benchmarks" / "results"


@pytest.mark.parametrize("name,traces", [("adaptive_real", "load-adaptive"),
                                         ("adaptive_real_v1", "load-adaptive-v1")])
def test_the_committed_result_is_its_records_rendered(name, traces):
    from benchmarks.bench_adaptive_real import bench, render

    doc = json.loads((RESULTS / f"{name}.json").read_text())
    assert (RESULTS / f"{name}.md").read_text() == render(doc)
    assert bench(ROOT / "traces" / traces) == doc


def test_where_static_lr_loses_the_learned_runs_do_not_speculate():
    """At 2 and 4 in flight every lr-adaptive decision was depth 0 (its estimator had learned
    from the problems before), while static lr-d2 lost at every level."""
    doc = json.loads((RESULTS / "adaptive_real.json").read_text())
    for n, table in doc["levels"].items():
        assert table["lr-d2"]["speedup_vs_ar"] < 0.9
        if n != "1":
            assert table["lr-adaptive-d2"]["depth0_share"] == 1.0
            assert table["lr-adaptive-d2"]["first_problem_records"] == 0
            assert table["lr-adaptive-d2"]["speedup_vs_ar"] > table["lr-d2"]["speedup_vs_ar"] + 0.1
