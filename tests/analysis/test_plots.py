"""`lr plot`: measured numbers from traces, valid PNGs, a self-contained HTML report, one-line errors."""
from __future__ import annotations

import base64
import json
import re
from html.parser import HTMLParser

import numpy as np
import pytest

from analysis import measured, plots

PNG = b"\x89PNG\r\n\x1a\n"


def is_png(data: bytes) -> bool:
    # signature, then an IHDR chunk with a plausible size
    if not data.startswith(PNG) or data[12:16] != b"IHDR":
        return False
    w, h = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    return 200 < w < 3000 and 200 < h < 3000


def test_union_of_spans():
    assert measured._union([(0, 1), (0.5, 2), (3, 4), (3.2, 3.5)]) == pytest.approx(3.0)
    assert measured._union([]) == 0.0


def test_measured_numbers_from_real_scheduler_traces(fake_traces):
    recs = measured.load([fake_traces])
    sp = measured.speedups(recs)
    assert set(sp) == {"lr-d2", "lr-sync-d2"}           # per configuration, not per mode
    assert sp["lr-d2"]["pairs"] == 3 and sp["lr-d2"]["depth"] == 2 and sp["lr-d2"]["mode"] == "lr"
    # draft 3x faster than the target and most drafts right: LR beats AR on the fake engine
    assert sp["lr-d2"]["speedup"] > 1.05
    acc = measured.acceptance_by_depth(recs, modes=("lr",))
    lr_total = [sum(r["step_acceptance"]["proposed"] for r in recs if r["mode"] == "lr"),
                sum(r["step_acceptance"]["accepted"] for r in recs if r["mode"] == "lr")]
    assert [sum(v[0] for v in acc.values()), sum(v[1] for v in acc.values())] == lr_total
    bd = measured.breakdown(recs)
    assert bd["ar"]["draft"] == 0.0 and bd["ar"]["target"] > 0.95
    assert 0 < bd["lr-d2"]["draft"] < 1 and bd["lr-d2"]["verify"] < 0.05
    for shares in bd.values():
        assert all(0.0 <= v <= 1.0 for v in shares.values())
        assert shares["target idle"] == pytest.approx(1 - shares["target"])


def test_each_plot_writes_a_valid_png(tmp_path):
    k = np.arange(1, 7)
    files = [
        plots.plot_depth({"k1": k, "theory_sync": k * 0 + 1.2, "theory_async": k * 0 + 1.5,
                          "sim_async": [(2, 1.1), (3, 1.3)], "sim_sync": [(2, 1.1)],
                          "measured": [(3, 1.2, "lr (n=3)")], "alpha1": 0.6, "c1": 0.1, "source": "x"},
                         tmp_path / "a.png"),
        plots.plot_k2({"k2": k, "theory": k * 0 + 1.3, "ceiling": 1.4, "theory_hybrid": k * 0 + 2, "k1": 5,
                       "sim_sd": [(3, 1.2)], "sim_hybrid": [(1, 1.5), (3, 1.9)], "measured": [],
                       "alpha2": 0.3, "c2": 0.0, "source": "x"}, tmp_path / "b.png"),
        plots.plot_heatmaps({"grid": np.random.default_rng(0).uniform(1, 2, (8, 8)), "best": (3, 2, 1.9), "budget": 8},
                            {"values": {(2, 1): 1.2, (2, 3): 1.5, (4, 2): 1.6}, "best": (4, 2, 1.6), "source": "x"},
                            tmp_path / "c.png"),
        plots.plot_acceptance({"alpha1": 0.6, "sim": {1: (0.6, 10), 2: (0.5, 8)}, "measured": {1: (0.7, 5)},
                               "source": "x"}, tmp_path / "d.png"),
        plots.plot_breakdown({"sim lr": {"draft": 0.5, "target": 0.9, "verify": 0.02, "target idle": 0.1}},
                             tmp_path / "e.png"),
        plots.plot_load({"concurrency": [1, 2, 4], "series": {"lr": [1.4, 1.2, 0.9], "ar equal-resources": [1.6] * 3},
                         "hardware": "4x H100", "source": "x"}, tmp_path / "f.png"),
    ]
    for f in files:
        assert is_png(f.read_bytes()), f


class _Doc(HTMLParser):
    def __init__(self):
        super().__init__()
        self.imgs, self.tables, self.external = [], 0, []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "img":
            self.imgs.append(a.get("src", ""))
        if tag == "table":
            self.tables += 1
        for key in ("src", "href"):
            if key in a and not a[key].startswith(("data:", "#")):
                self.external.append(a[key])


def test_lr_plot_report_is_self_contained_with_measurement(run_lr, tmp_path, fake_traces):
    """Traces alone: a profile is calibrated from them, and their configurations are measured
    points on that profile's axes (the "this machine" section)."""
    out = tmp_path / "report"
    code, stdout, err = run_lr("plot", "--quick", "--budget", "8", "--traces", str(fake_traces),
                               "--out", str(out), "--no-paper-table", "--jobs", "1", "--json")
    assert code == 0, err
    res = json.loads(stdout)
    assert [s["key"] for s in res["sections"]] == ["machine"]
    assert set(res["sections"][0]["figures"]) == {"depth", "k2", "heatmap", "acceptance", "breakdown", "load"}
    assert set(res["figures"]) == {f"machine/{k}" for k in res["sections"][0]["figures"]}
    for path in res["figures"].values():
        assert is_png(open(path, "rb").read()), path
        assert "/machine/" in path
    assert res["source"] == f"profile {out / 'profile.json'}" and (out / "profile.json").is_file()
    assert res["records"] == 9 and res["measured_speedups"]["lr-d2"]["pairs"] == 3
    html = (out / "report.html").read_text()
    doc = _Doc()
    doc.feed(html)
    assert len(doc.imgs) == 6 and doc.external == []
    for src in doc.imgs:
        assert src.startswith("data:image/png;base64,")
        assert is_png(base64.b64decode(src.split(",", 1)[1]))
    assert doc.tables == 7              # one per figure + measured vs replayed per configuration
    # the numbers behind the figures: measured LR speedup and acceptance, theory columns
    assert "3: measured lr-d2 (n=3)" in html and "theory f_async" in html
    assert re.search(r"measured lr-d2</td>", html)
    assert "Measured vs simulated per configuration" in html


def test_lr_plot_table_output(run_lr, tmp_path):
    code, stdout, _ = run_lr("plot", "--quick", "--budget", "6", "--scenario", "h100-paper",
                             "--out", str(tmp_path), "--no-paper-table", "--jobs", "1")
    assert code == 0
    assert "report:" in stdout and (tmp_path / "report.html").is_file()


@pytest.mark.parametrize("args, flag", [
    (["--traces", "/nonexistent.jsonl"], "--traces"),
    (["--budget", "1"], "--budget"),
    (["--samples", "0"], "--samples"),
    (["--preset", "nope"], "--preset"),
    (["--profile", "/nonexistent.json"], "--profile"),
])
def test_bad_input_is_one_line_exit_2(run_lr, tmp_path, args, flag):
    code, _, err = run_lr("plot", "--quick", "--out", str(tmp_path), *args)
    assert code == 2 and err.startswith("lr: error:") and flag in err and err.count("\n") == 1


def test_out_must_be_a_directory(run_lr, tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    code, _, err = run_lr("plot", "--quick", "--out", str(f))
    assert code == 2 and "--out" in err
