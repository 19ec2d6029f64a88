"""benchmarks/results/latency_table.{json,md} and latency_table_summary.md, which
docs/gpu-latency-profile.md and the README quote, are what benchmarks/bench_latency_table.py reads
off the shipped latency tables today: a table edited without rerunning the bench fails here."""
import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_latency_table as blt  # noqa: E402
import quote  # noqa: E402

from lrsim.plan import modelspec  # noqa: E402


def test_committed_results_are_the_shipped_tables_rendered():
    doc = json.loads(blt.OUT.read_text())
    assert json.loads(json.dumps(blt.bench())) == doc
    assert blt.OUT.with_suffix(".md").read_text() == blt.render(doc)
    assert blt.SUMMARY.read_text() == blt.render_summary(doc)


def test_the_docs_quote_them():
    quoted = {src: doc.name for doc in quote.documents() for src, _, _ in quote.blocks(doc)}
    assert quoted.get("benchmarks/results/latency_table.md") == "gpu-latency-profile.md"
    assert quoted.get("benchmarks/results/latency_table_summary.md") == "README.md"


def test_a_table_edit_changes_the_render(tmp_path, monkeypatch):
    """The check above is not vacuous: one decode entry changed in the H100 table moves the
    figures (here the R1-32B batch-1 step, which also sets c at batch 1)."""
    src = Path(modelspec.shipped_table("H100"))
    t = json.loads(src.read_text())
    r = next(r for r in t["models"]["r1-distill-qwen-32b"]["decode"]
             if (r["batch"], r.get("query", 1), r["context"]) == (1, 1, 2048))
    r["ms"] *= 1.1
    (tmp_path / src.name).write_text(json.dumps(t))
    shutil.copy(modelspec.shipped_table("H200"), tmp_path)
    monkeypatch.setattr(modelspec, "shipped_table", lambda d: str(tmp_path / modelspec.MEASURED_TABLES[d]))
    res = blt.bench()
    old = json.loads(blt.OUT.read_text())
    assert blt.render(res) != blt.render(old) and blt.render_summary(res) != blt.render_summary(old)
    assert res["devices"]["H200"] == old["devices"]["H200"]
