"""The paper presets vs the paper's Table 1: direction and rough magnitude (docs/planning.md).

The presets are NOT fitted to Table 1's LR or LR+SD speedups (its step acceptance is an input, and
its SD speedup only through the n-gram acceptance it implies), so the check is deliberately loose:
every speedup > 1, LR+SD beats both parts, LR falls with the step acceptance and SD rises with the
n-gram acceptance like the paper's, and each prediction is within TOLERANCE of the paper's
(18% with the measured table, whose README figure is 14.0%; 23% with the roofline). Both latency sources are checked: the measured H100 table (when shipped) and the
roofline. The four settings the reference publishes are simulated with few seeds (fast); all 14
once more with short answers, for their shape.
"""
from __future__ import annotations

import json

import pytest

from lrcore.errors import UserError
from lrsim.plan import presets as P
from lrsim.plan.presets import PRESETS, build_presets, implied_alpha2
from lrsim.plan.table1 import TABLE_HEADER, compare_table1, format_rows

SOURCES = ["roofline"] + (["auto"] if "measured" in PRESETS["r1-gsm8k"].latency_source() else [])
PUBLISHED = ["r1-gsm8k", "r1-aime24", "qwen3-gsm8k", "qwen3-aime24"]


# How far a published row may be from the paper: the worst the docs quote, from runs with every
# speedup known to +-2% - 14.0% with the measured H100 table (benchmarks/results/paper_table.md,
# README) and 18.7% with the roofline (paper_table_roofline.md, docs/planning.md) - plus ~4 points
# for the sampling noise of these shorter runs (2 seeds).
TOLERANCE = {"auto": 0.18, "roofline": 0.23}


@pytest.fixture(scope="module", params=SOURCES)
def rows(request):
    latency = None if request.param == "auto" else request.param
    out = compare_table1(seeds=2, jobs=2, latency_file=latency, names=PUBLISHED)
    for r in out:
        r["_tolerance"] = TOLERANCE[request.param]
    return out


def test_every_mode_speeds_up_and_the_hybrid_beats_its_parts(rows):
    for r in rows:
        sim = r["sim"]
        assert sim["lr"] > 1.0 and sim["sd"] > 1.0, r["preset"]
        assert sim["lr+sd"] > max(sim["lr"], sim["sd"]), r["preset"]
        # measured LR+SD is 0.88-0.99 of LR x SD in the paper: sub-multiplicative, roughly
        assert 0.8 < r["product_ratio"] < 1.1, r["preset"]
        # every speedup comes with its interval over the seeds it ran
        for m in ("lr", "sd", "lr+sd"):
            lo, hi = r["sim_ci"][m]
            assert lo <= sim[m] <= hi


def test_lr_follows_step_acceptance_and_sd_follows_the_data_set_like_the_paper(rows):
    by = {r["preset"]: r for r in rows}
    for pair in ("r1", "qwen3"):
        gsm, aime = by[f"{pair}-gsm8k"], by[f"{pair}-aime24"]
        assert gsm["alpha1"] > aime["alpha1"]
        assert gsm["sim"]["lr"] > aime["sim"]["lr"] and gsm["paper"]["lr"] > aime["paper"]["lr"]
        # SD gains more on AIME in the paper; the simulator now says so too (alpha2 per data set)
        assert aime["alpha2"] > gsm["alpha2"]
        assert aime["sim"]["sd"] > gsm["sim"]["sd"] and aime["paper"]["sd"] > gsm["paper"]["sd"]
    # the largest acceptance (R1 on GSM8K, 0.63) gives the largest LR speedup, as in Table 1
    assert max(rows, key=lambda r: r["sim"]["lr"])["preset"] == "r1-gsm8k"


def test_predictions_within_rough_magnitude_of_table1(rows, capsys):
    with capsys.disabled():
        print(f"\n{rows[0]['latency']}")
        print(" | ".join(TABLE_HEADER))
        for cells in format_rows(rows):
            print(" | ".join(cells))
    for r in rows:
        for mode, ratio in r["ratio"].items():
            assert abs(ratio - 1.0) <= r["_tolerance"], (r["preset"], mode, ratio)


def test_all_fourteen_settings_are_presets_and_simulate():
    assert len(PRESETS) == 14
    assert {p.pair for p in PRESETS.values()} == {"R1-Distill 32B/1.5B", "Qwen3 32B/1.7B"}
    assert {p.dataset for p in PRESETS.values()} == {"GSM8K", "AIME24", "AMC23", "HumanEval",
                                                     "LiveCodeBench", "GPQA", "MT-Bench"}
    rows = compare_table1(seeds=2, jobs=1, names=list(PRESETS), steps=6, min_steps=0)
    assert [r["preset"] for r in rows] == list(PRESETS)
    for r in rows:
        published = r["preset"] in PUBLISHED
        assert (r["paper"]["lr"] is not None) == published and (r["ratio"]["lr"] is not None) == published
        assert (r["paper_alpha1"] is not None) == published
    cells = format_rows(rows, sep="/")
    assert cells[2][1].endswith("*") and cells[0][1] == "0.63"       # assumed alpha1 marked
    assert cells[2][4].endswith("/-")                                  # no paper value: "-"


def test_acceptance_assumptions_are_named_and_defensible():
    # alpha2: the closed form g(9) with c2 = 0 gives back Table 1's SD speedup
    from lrsim.theory.formulas import sd_speedup

    r1 = PRESETS["r1-gsm8k"]
    assert r1.alpha2 == pytest.approx(implied_alpha2(1.39)) and r1.alpha2_source.startswith("implied")
    assert float(sd_speedup(r1.alpha2, 0.0, 9)) == pytest.approx(1.39, abs=1e-9)
    # unpublished rows: the pair's mean alpha1, alpha2 between the pair's published ones
    amc = PRESETS["r1-amc23"]
    assert amc.alpha1 == pytest.approx((0.63 + 0.47) / 2) and amc.alpha1_source.startswith("assumed")
    assert PRESETS["r1-gsm8k"].alpha2 <= amc.alpha2 <= PRESETS["r1-aime24"].alpha2
    assert P.get("qwen3-livecodebench").name == "qwen3-lcb"              # alias
    with pytest.raises(UserError, match="--preset: unknown preset"):
        P.get("r1-imagenet")


def test_a_table1_file_fills_in_what_the_reference_lacks(tmp_path):
    doc = json.loads((P.resources.files("lrsim") / "data" / P.TABLE1_FILE).read_text())
    for r in doc["rows"]:
        if (r["pair"], r["dataset"]) == ("r1", "gpqa"):
            r.update(alpha1=0.58, lr=1.5, sd=1.45, **{"lr+sd": 1.9})
    f = tmp_path / "table1.json"
    f.write_text(json.dumps(doc))
    p = build_presets(str(f))["r1-gpqa"]
    assert p.alpha1 == 0.58 and p.alpha1_source == "Table 1" and p.paper.lr == 1.5
    assert p.alpha2 == pytest.approx(implied_alpha2(1.45))
    bad = dict(doc, rows=[dict(doc["rows"][0], alpha1=1.5)])
    f.write_text(json.dumps(bad))
    with pytest.raises(UserError, match=r"rows\[0\]\.alpha1: must be a probability"):
        build_presets(str(f))


def test_presets_are_built_from_published_facts():
    p = PRESETS["r1-gsm8k"]
    cfg = p.to_config("lr-async")
    assert cfg.target.tp == 2 and len(cfg.devices) == 4
    # the 7B judge's 13 ms was measured on H200: priced for the H100 the preset runs on
    assert cfg.verifier.kind == "constant" and cfg.verifier.seconds == pytest.approx(0.0161, abs=5e-4)
    assert p.on_device("H200").to_config("ar").verifier.seconds == pytest.approx(0.013)
    assert cfg.workload.alpha1 == pytest.approx(0.63) and cfg.depth == 4
    assert p.to_config("sd").k2 == 9                      # 8 n-gram speculative tokens
    # the draft is a small fraction of the target per token, larger than the parameter ratio
    assert 0.05 < cfg.c1 < 0.35
