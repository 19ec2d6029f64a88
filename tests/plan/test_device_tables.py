"""The planner prices each device with the table measured on it (H100, H200), the roofline
elsewhere; benchmarks/results/device_rescale.json says what the two tables say."""
from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

import pytest

from lrsim.plan import catalog, modelspec, presets
from lrsim.plan.sources import PresetSource

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results" / "device_rescale.json"
OH = modelspec.ENGINE_OVERHEAD_MS


def table_ms(path: str, key: str, batch: int, context: int) -> float:
    m = json.loads(Path(path).read_text())["models"][key]
    [r] = [r for r in m["decode"] if r["batch"] == batch and r.get("query", 1) == 1
           and r["context"] == context]
    return r["ms"] + r.get("allreduce_ms_model", 0.0)


def step_ms(built, batch: int = 1, context: int = 2048) -> float:
    return built.latency.forward(batch, 0, batch, float(batch * context)) * 1e3


@pytest.mark.parametrize("kind, file", [("H100", "h100_paper_models.json"),
                                        ("H200", "h200_paper_models.json")])
def test_each_device_gets_the_table_measured_on_it(kind, file):
    path = modelspec.shipped_table(kind)
    assert Path(path).name == file and modelspec.table_device(path) == kind
    spec = modelspec.load("r1-distill-qwen-1.5b")
    b = modelspec.latency(spec, catalog.get(kind), 1)
    assert b.source == f"measured {kind} table ({file})"
    # the step is that table's model (its fit to the table's steps, plus the engine overhead), not
    # the other's: within the fit's error of the measurement, and exactly the fitted model's
    own = modelspec.measured(spec, 1, path)
    assert step_ms(b) == pytest.approx(own.forward(1, 0, 1, 2048.0) * 1e3)
    assert step_ms(b) == pytest.approx(table_ms(path, "r1-distill-qwen-1.5b", 1, 2048) + OH, rel=0.05)
    t2 = modelspec.latency(modelspec.load("qwen3-32b"), catalog.get(kind), 2)
    assert step_ms(t2, 1, 512) == pytest.approx(table_ms(path, "qwen3-32b-tp2", 1, 512) + OH, rel=0.05)


def test_h200_steps_differ_from_h100_and_other_devices_use_the_roofline():
    spec = modelspec.load("r1-distill-qwen-32b")
    h100, h200 = (step_ms(modelspec.latency(spec, catalog.get(k), 1)) for k in ("H100", "H200"))
    assert 1.3 < h100 / h200 < 1.4          # measured, not the 1.433 bandwidth ratio
    for kind in ("A100", "B200", "L40S"):
        b = modelspec.latency(spec, catalog.get(kind), 1)
        assert b.source == f"roofline ({kind})"
    assert modelspec.shipped_table("A100") is None


def test_preset_and_plan_report_the_device_table():
    p = presets.get("r1-gsm8k")
    assert p.latency_source().startswith("measured H100 table (h100_paper_models.json)")
    assert p.on_device("H200").latency_source().startswith("measured H200 table (h200_paper_models.json)")
    assert p.on_device("A100").latency_source().startswith("roofline (A100")
    src = PresetSource("qwen3-gsm8k").on_device("H200")
    assert src.latency_source().startswith("measured H200 table")
    # every role of the H200 preset reads the H200 file
    cfg = p.on_device("H200").to_config("lr-async")
    assert all("h200_paper_models.json" in getattr(cfg, r).latency.name for r in ("target", "draft", "judge"))


def test_a_user_table_applies_on_the_device_it_names(tmp_path):
    spec = modelspec.load("qwen3-1.7b")
    h200 = modelspec.shipped_table("H200")
    assert modelspec.latency(spec, catalog.get("H200"), 1, h200).source.startswith("measured H200")
    assert modelspec.latency(spec, catalog.get("H100"), 1, h200).source == "roofline (H100)"
    # a table whose device names no catalogue kind is taken as H100's, as before
    doc = json.loads(Path(h200).read_text())
    doc["device"] = "some GPU"
    legacy = tmp_path / "t.json"
    legacy.write_text(json.dumps(doc))
    b = modelspec.latency(spec, catalog.get("H100"), 1, str(legacy))
    assert b.source == "measured H100 table (t.json)"
    assert step_ms(b) == pytest.approx(step_ms(modelspec.latency(spec, catalog.get("H200"), 1, h200)))
    assert step_ms(b) == pytest.approx(table_ms(h200, "qwen3-1.7b", 1, 2048) + OH, rel=0.05)
    assert modelspec.latency(spec, catalog.get("H200"), 1, str(legacy)).source == "roofline (H200)"


def test_committed_rescale_results_match_the_tables():
    res = json.loads(RESULTS.read_text())
    src, dst = (json.loads(Path(modelspec.shipped_table(k)).read_text())["models"] for k in ("H100", "H200"))
    ratio = 3.35 / 4.8
    assert res["bandwidth_ratio"] == pytest.approx(ratio)
    key = "r1-distill-qwen-1.5b"

    def pts(m):
        return {(r["batch"], r.get("query", 1), r["context"]): r["ms"] + r.get("allreduce_ms_model", 0.0)
                for r in m["decode"]}
    a, b = pts(src[key]), pts(dst[key])
    errs = [a[p] * ratio / b[p] - 1 for p in a.keys() & b.keys()]
    m = res["models"][key]
    assert m["points"] == len(errs) == 63
    assert m["rescaled_err_median"] == pytest.approx(statistics.median(errs))
    assert m["rescaled_err_max_abs"] == pytest.approx(max(errs, key=abs))
    assert m["measured_speedup_median"] == pytest.approx(statistics.median(a[p] / b[p] for p in a.keys() & b.keys()))
    # what the run found: bandwidth rescaling is optimistic for every model, most for the drafts
    assert all(r["rescaled_err_median"] < 0 for r in res["models"].values())
    assert res["models"][key]["rescaled_err_median"] < res["models"]["r1-distill-qwen-32b"]["rescaled_err_median"]
    r1 = next(c for c in res["c1"] if c["draft"] == key)
    assert r1["h100_measured"] == pytest.approx(a[(1, 1, 2048)] / pts(src["r1-distill-qwen-32b"])[(1, 1, 2048)])
    assert r1["h200_measured"] == pytest.approx(b[(1, 1, 2048)] / pts(dst["r1-distill-qwen-32b"])[(1, 1, 2048)])
    assert r1["h200_rescaled"] == pytest.approx(r1["h100_measured"])
    assert r1["h200_measured"] > r1["h100_measured"]


def test_rendered_results_are_their_json_rendered():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import bench_device_rescale

    doc = json.loads(RESULTS.read_text())
    assert RESULTS.with_suffix(".md").read_text() == bench_device_rescale.render(doc)
    # the bandwidths it names are the catalog's, the ones the ratio came from
    h100, h200 = catalog.get("H100"), catalog.get("H200")
    assert f"({h200.hbm_tb_s:.3g} / {h100.hbm_tb_s:.3g} TB/s)" in bench_device_rescale.render(doc)
    bw, eff = doc["bandwidth_tb_s"], doc["bandwidth_efficiency"]
    assert doc["bandwidth_ratio"] == pytest.approx(bw["H100"] * eff["H100"] / (bw["H200"] * eff["H200"]))
    # and the JSON is what the benchmark computes from the committed tables today
    assert _close(json.loads(json.dumps(bench_device_rescale.bench())), doc)


def _close(a, b) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    if isinstance(a, float):
        return b == pytest.approx(a)
    return a == b


def test_held_out_h100_steps_are_predicted_from_the_table_as_committed():
    """benchmarks/results/latency_heldout.{json,md}: the H100 steps measured off the shipped
    table's grid, against the table's models, are what the benchmark computes from the three
    committed files today, and the .md is their rendering."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import bench_latency_heldout as blh

    doc = json.loads(blh.OUT.read_text())
    assert blh.OUT.with_suffix(".md").read_text() == blh.render(doc)
    assert _close(json.loads(json.dumps(blh.measure())), doc)
    # by hand, one point: the interpolation of R1-32B at batch 3, 1 query token, context 2048 is
    # midway between the table's 2- and 4-token steps there (4 tokens: batch 4 x 1 and batch 1 x 4,
    # averaged: the collapse the fitted model removes)
    t = json.loads(Path(modelspec.shipped_table("H100")).read_text())["models"]["r1-distill-qwen-32b"]
    ms = {(r["batch"], r.get("query", 1), r["context"]): r["ms"] for r in t["decode"]}
    four = (ms[(4, 1, 2048)] + ms[(1, 4, 2048)]) / 2
    [row] = [r for r in doc["rows"] if r["model"] == "r1-distill-qwen-32b" and r["step"] == "decode"
             and (r["batch"], r["query"], r["context"]) == (3, 1, 2048)]
    assert row["measured_ms"] * (1 + row["interpolated_error"]) == pytest.approx((ms[(2, 1, 2048)] + four) / 2)
    assert row["kind"] == "1 query token"
    # what the run found: off the grid the fitted model's worst error is well under the
    # interpolation's, for every model, and on the same day under 10% everywhere
    for name, by in doc["by_model"].items():
        assert by["fitted"]["max_abs"] < 0.75 * by["interpolated"]["max_abs"], name
        assert by["same_day_fitted"]["max_abs"] < 0.10, name
    # and on the H200, against its own table
    for name, by in doc["h200"]["by_model"].items():
        assert by["fitted"]["max_abs"] < 0.5 * by["interpolated"]["max_abs"] and by["fitted"]["max_abs"] < 0.08, name
