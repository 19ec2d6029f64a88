"""The roofline figures of docs/gpu-latency-profile.md ("Roofline check and anomalies",
benchmarks/results/latency_roofline.md) are what benchmarks/bench_roofline.py computes from the
shipped H100 table and the committed GPU peaks: a table edited, or h100_peaks.json committed,
without rerunning the bench fails here; tests/test_quoted_results.py pins the doc to the .md.
benchmarks/gpu_peaks.py, which measures those peaks, refuses a machine without CUDA in one line.
The method figures of its "How" section (benchmarks/results/latency_method.md) are likewise what
benchmarks/bench_latency_method.py reads from the measured files, and no measured quantity is typed
into the doc outside a quoted block."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import bench_latency_method as bm
from benchmarks import bench_roofline as br
from benchmarks import quote
from lrsim.plan import modelspec

ROOT = Path(__file__).resolve().parents[2]


def test_committed_results_are_the_shipped_table_rendered():
    doc = json.loads(br.OUT.read_text())
    assert json.loads(json.dumps(br.bench())) == doc
    assert br.OUT.with_suffix(".md").read_text() == br.render(doc)


def test_the_doc_quotes_them():
    quoted = {src: doc.name for doc in quote.documents() for src, _, _ in quote.blocks(doc)}
    assert quoted.get("benchmarks/results/latency_roofline.md") == "gpu-latency-profile.md"


def test_the_shapes_give_the_tables_own_byte_counts():
    """The bench reads each entry's shapes through the profiler's Arch: they must give back the
    weight, KV and parameter figures the table recorded, or they are not the measured models."""
    doc = json.loads(Path(modelspec.shipped_table(br.DEVICE)).read_text())
    for key, m in doc["models"].items():
        a = br.arch(key, m)
        assert round(a.streamed_bytes_per_step() / 1e9, 2) == m["streamed_gb_per_decode_step"], key
        assert a.kv_bytes_per_token() == m["kv_kb_per_token_per_gpu"] * 1024, key
        if a.tp == 1:
            assert round(a.params() / 1e9, 3) == m["params_b"], key


def _peaks(path: Path, device: str) -> Path:
    path.write_text(json.dumps({"env": {"device_name": device}, "copy": {"tb_s": 3.0},
                                "gemm": {"tflops": 790.0}}))
    return path


def test_measured_peaks_replace_not_measured(tmp_path, monkeypatch):
    """With gpu_peaks.py's output present, the copy-bandwidth roofline and the prefill's share of
    the GEMM peak are computed from it; absent, they are null and say so."""
    device = json.loads(Path(modelspec.shipped_table(br.DEVICE)).read_text())["device"]
    monkeypatch.setattr(br, "PEAKS", tmp_path / "absent.json")
    bare = br.bench()
    assert bare["peaks"]["copy_tb_s"] is None and br.NOT_MEASURED in br.render(bare)
    monkeypatch.setattr(br, "PEAKS", _peaks(tmp_path / "h100_peaks.json", device))
    res = br.bench()
    s = res["steps"]["r1-distill-qwen-32b"]
    assert s["roofline_ms_copy"] == pytest.approx(s["weights_gb"] / 3.0)
    p = res["prefill"][0]
    assert p["share_of_gemm_peak"] == pytest.approx(p["tflops"] / 790.0)
    assert br.NOT_MEASURED not in br.render(res)


def test_peaks_from_another_gpu_are_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(br, "PEAKS", _peaks(tmp_path / "h100_peaks.json", "NVIDIA A100-SXM4-80GB"))
    with pytest.raises(SystemExit, match="measured on 'NVIDIA A100"):
        br.bench()


def test_a_census_edit_changes_the_figures(tmp_path, monkeypatch):
    """The committed-results check is not vacuous: the draft's GEMM time in the kernel census
    moves the GEMM-only c."""
    src = Path(modelspec.shipped_table(br.DEVICE))
    t = json.loads(src.read_text())
    next(c for c in t["kernel_census"] if c["model"] == "r1-distill-qwen-1.5b")["kernel_time_by_kind_ms"]["gemm"] *= 1.1
    (tmp_path / src.name).write_text(json.dumps(t))
    monkeypatch.setattr(modelspec, "shipped_table", lambda d: str(tmp_path / src.name))
    old = json.loads(br.OUT.read_text())
    res = br.bench()
    assert res["gemm_only_c"][0]["c"] == pytest.approx(1.1 * old["gemm_only_c"][0]["c"])
    assert br.render(res) != br.render(old)


def test_gpu_peaks_without_cuda_exits_with_one_line(tmp_path):
    out = tmp_path / "peaks.json"
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "PYTHONWARNINGS": "ignore"}
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu_peaks.py"), "--out", str(out)],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode != 0
    assert len(r.stderr.strip().splitlines()) == 1 and r.stderr.startswith("gpu_peaks: "), r.stderr
    assert "CUDA" in r.stderr and not out.exists()


def test_committed_method_figures_are_the_files_rendered():
    doc = json.loads(bm.OUT.read_text())
    assert json.loads(json.dumps(bm.bench())) == doc
    assert bm.OUT.with_suffix(".md").read_text() == bm.render(doc)
    quoted = {src: d.name for d in quote.documents() for src, _, _ in quote.blocks(d)}
    assert quoted.get("benchmarks/results/latency_method.md") == "gpu-latency-profile.md"


def test_the_table_agrees_with_the_profilers_formulas():
    """Every fits_real flag and modelled all-reduce the table recorded is what gpu_latency_profile's
    formulas give from the shapes, and every parameter count matched transformers'."""
    r = bm.bench()
    assert r["memory"]["flags_reproduced"] == r["memory"]["flags"] > 0
    assert r["allreduce"]["reproduced"] == r["allreduce"]["entries"] > 0
    assert all(s["match"] and s["params"] == s["transformers"] for s in r["shapes"])
    for t in r["memory"]["targets"]:       # the first batch flagged is the first past the KV room
        b = r["grid"]["batches"]
        first = b.index(t["first_unfit_batch"])
        assert t["first_unfit_batch"] * (r["memory"]["context"] + 1) > t["kv_tokens"]
        assert first == 0 or b[first - 1] * (r["memory"]["context"] + 1) <= t["kv_tokens"]


def test_a_validation_edit_changes_the_method_figures(tmp_path, monkeypatch):
    src = bm.FILES[0]
    t = json.loads(src.read_text())
    t["validation"]["cycling"]["decode_b1_L2048_weight_sets_4_ms"] = 30.0
    t["models"]["r1-distill-qwen-32b"]["decode"][0]["fits_real"] ^= True
    (tmp_path / src.name).write_text(json.dumps(t))
    monkeypatch.setattr(bm, "FILES", (tmp_path / src.name, *bm.FILES[1:]))
    res = bm.bench()
    assert res["cycling"]["weights"]["ms"]["4"] == 30.0 and "30.00 ms with 4 weight sets" in bm.render(res)
    assert res["memory"]["flags_reproduced"] == res["memory"]["flags"] - 1


def test_the_exact_mask_line_reads_its_run(tmp_path, monkeypatch):
    """The exact verify mask's cost comes from its committed run (h100_exact_verify_mask.json):
    several times the packed step there; without the file the line says "not measured"."""
    x = bm.bench()["exact_mask"]
    assert x["exact_ms"] > 2 * x["packed_ms"] and (x["batch"], x["query"], x["context"]) == (64, 8, 8192)
    doc = json.loads(bm.EXACT_MASK.read_text())
    doc["exact"]["models"][x["model"]]["decode"][0]["ms"] = 999.0
    (tmp_path / bm.EXACT_MASK.name).write_text(json.dumps(doc))
    monkeypatch.setattr(bm, "EXACT_MASK", tmp_path / bm.EXACT_MASK.name)
    assert "999.0 ms with the exact" in bm.render(bm.bench())
    monkeypatch.setattr(bm, "EXACT_MASK", tmp_path / "absent.json")
    assert "Exact verify mask: not measured" in bm.render(bm.bench())


MEASURED = re.compile(r"\d[\d.,]*(?:\s+(?:ms|µs|s|GB|GiB|MB|KiB|TB/s|GB/s|TFLOP/s)(?![\w/])|%)")


def test_the_doc_types_no_measured_figure_outside_quotes():
    """docs/gpu-latency-profile.md: a time, size, rate or percentage outside a quoted block (or a
    code block) is one typed by hand; it belongs in a bench's rendered results, quoted."""
    text = (ROOT / "docs" / "gpu-latency-profile.md").read_text()
    text = re.sub(r"<!-- quote: .*?<!-- /quote -->|```.*?```", "", text, flags=re.S)
    assert MEASURED.findall(text) == [], [m.group(0) for m in MEASURED.finditer(text)]
