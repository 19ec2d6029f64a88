"""benchmarks/results/load_summary.* (benchmarks/load_summary.py), the README's table of every
prediction of a real load corpus: it is what the committed bench_load results say now (a result
rerun without the summary fails here), it lists every bench_load result, and its counts are the
ones each result's own .md renders."""
from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"


def test_the_summary_is_the_committed_results_now():
    from benchmarks.load_summary import PREDICTIONS, render, summarise

    rows = [summarise(*p) for p in PREDICTIONS]
    doc = json.loads((RESULTS / "load_summary.json").read_text())
    assert doc["results"] == json.loads(json.dumps(rows))
    assert (RESULTS / "load_summary.md").read_text() == render(rows)


def test_every_bench_load_result_is_in_the_summary():
    from benchmarks.load_summary import PREDICTIONS

    listed = {p[0] for p in PREDICTIONS}
    made = {f.stem for f in RESULTS.glob("load*.json")
            if isinstance(json.loads(f.read_text()).get("calibrated_on"), dict)
            and "planned" in json.loads(f.read_text())}
    assert made == listed


def test_the_counts_are_the_ones_each_result_renders():
    from benchmarks.load_summary import PREDICTIONS, summarise

    for p in PREDICTIONS:
        row, md = summarise(*p), (RESULTS / f"{p[0]}.md").read_text()
        rep = re.search(r"Replayed: speedup within 10% of measured at (\d+) of (\d+)", md)
        assert rep and (int(rep[1]), int(rep[2])) == (row["replayed"]["within"], row["replayed"]["pairs"]), p[0]
        plan = re.search(r"\nPlanned: speedup within 10% of measured at (\d+) of (\d+) \(configuration, "
                         r"level\) pairs, largest error ([\d.]+)%", md)
        sp, er = row["planned"], row["ar_er_planned"]
        assert plan and (int(plan[1]), int(plan[2])) == (sp["within"] + er["within"], sp["pairs"] + er["pairs"]), p[0]
        assert f"{max(sp['largest'], er['largest'] or 0):.1%}" == f"{plan[3]}%"
        assert sp["pairs"] == row["replayed"]["pairs"] or row["result"] == "load_transfer"
        assert row["held_out"] == ("Held out:" in md), p[0]
        assert f"Load corpus: {row['records']} records" in md


def test_a_result_of_another_corpus_is_refused(tmp_path, monkeypatch):
    import pytest

    import benchmarks.load_summary as ls

    doc = json.loads((RESULTS / "load.json").read_text()) | {"corpus": "traces/elsewhere"}
    (tmp_path / "load.json").write_text(json.dumps(doc))
    monkeypatch.setattr(ls, "RESULTS", tmp_path)
    with pytest.raises(SystemExit, match="predicted traces/elsewhere"):
        ls.summarise("load", "traces/load", "x", "y")
