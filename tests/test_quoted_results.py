"""Figures the README and docs quote from benchmarks/results/ are quoted verbatim (benchmarks/quote.py):
a number typed into a quoted block by hand, or a rerun benchmark whose docs were not updated, fails."""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import quote  # noqa: E402


def test_quoted_blocks_match_their_results_files():
    assert quote.stale() == []


def test_the_docs_quote_results(tmp_path):
    quoted = {src for doc in quote.documents() for src, _, _ in quote.blocks(doc)}
    assert {"benchmarks/results/paper_table.md", "benchmarks/results/scenarios.md"} <= quoted


def test_a_hand_edited_block_is_caught(tmp_path, monkeypatch):
    (tmp_path / "docs").mkdir()
    (tmp_path / "r.md").write_text("| a | 1.00 |\n")
    (tmp_path / "README.md").write_text("x\n<!-- quote: r.md -->\n| a | 1.01 |\n<!-- /quote -->\n")
    monkeypatch.setattr(quote, "ROOT", tmp_path)
    [msg] = quote.stale()
    assert "README.md" in msg and "r.md" in msg
    assert quote.rewrite() == 1 and quote.stale() == []
    assert "| a | 1.00 |" in (tmp_path / "README.md").read_text()


def test_rendered_results_are_their_json_rendered():
    """A quoted .md that a benchmark renders from its .json is that rendering (so the figures
    trace back to the recorded run, not to an edit of the .md)."""
    import json

    import bench_demo
    import bench_kv
    import bench_theorems
    import bench_theory

    from lrsim.sim import validation

    res = ROOT / "benchmarks" / "results"
    for mod, name in ((bench_demo, "demo"), (bench_theorems, "theorems"), (bench_kv, "kv"),
                      (bench_theory, "theory"), (validation, "validation")):
        doc = json.loads((res / f"{name}.json").read_text())
        assert (res / f"{name}.md").read_text() == mod.render(doc), name
    quoted = {src for doc in quote.documents() for src, _, _ in quote.blocks(doc)}
    for mod, name in (("bench_kill", "kill"), ("bench_judge_faults", "judge_faults"),
                      ("bench_fuzz_files", "fuzz_files"), ("bench_fuzz_params", "fuzz_params"),
                      ("bench_real", "real"), ("bench_fleet", "fleet"),
                      ("bench_engine_faults", "engine_faults"), ("bench_models_prepare", "models_prepare"),
                      ("bench_verifiers", "verifiers"), ("bench_contention_probe", "contention_probe"),
                      ("bench_sim", "sim"), ("bench_sim_ab", "sim_native")):
        doc = json.loads((res / f"{name}.json").read_text())
        assert (res / f"{name}.md").read_text() == __import__(mod).render(doc), name
    assert {"benchmarks/results/demo.md", "benchmarks/results/theorems.md",
            "benchmarks/results/kill.md", "benchmarks/results/judge_faults.md",
            "benchmarks/results/fuzz_files.md", "benchmarks/results/fuzz_params.md",
            "benchmarks/results/real.md", "benchmarks/results/latency_heldout.md",
            "benchmarks/results/load_transfer.md",
            "benchmarks/results/load.md", "benchmarks/results/kv.md", "benchmarks/results/theory.md",
            "benchmarks/results/validation.md", "benchmarks/results/load_heldout.md",
            "benchmarks/results/fleet.md", "benchmarks/results/engine_faults.md",
            "benchmarks/results/models_prepare.md", "benchmarks/results/verifiers.md",
            "benchmarks/results/contention_probe.md", "benchmarks/results/sim.md",
            "benchmarks/results/sim_native.md"} <= quoted


def test_the_real_backend_figures_are_the_sample_traces_measured():
    """docs/real-backend.md's table and cost model (benchmarks/results/real.json) are what
    bench_real.py computes from the committed sample traces today."""
    import json

    import bench_real

    res = ROOT / "benchmarks" / "results" / "real.json"
    doc = json.loads(res.read_text())
    fresh = bench_real.measure(ROOT / doc["trace"], ROOT / doc["ar_1core"], ROOT / doc["embedding"], doc["depth"])
    assert json.loads(json.dumps(fresh)) == doc


def test_the_engine_fault_times_are_the_benchmarks():
    """The reliability rows (README, docs/reliability.md) carry bench_engine_faults' summary, and
    the benchmark refuses a fault that does not end in its one line (exit 2)."""
    import json

    import bench_engine_faults
    import pytest

    doc = json.loads((ROOT / "benchmarks" / "results" / "engine_faults.json").read_text())
    line = bench_engine_faults.summary(doc)
    assert line in (ROOT / "README.md").read_text()
    assert line in (ROOT / "docs" / "reliability.md").read_text()
    assert all(r["seconds"] < 10 for r in doc["faults"] if r["caught"] == "before")
    with pytest.raises(SystemExit, match="expected one line"):
        bench_engine_faults.time_fault(["-c", "pass"], "lr: error")
