"""The README's main command runs the demo; this checks it end to end (it must not rot)."""
import json

from analysis import demo


def test_demo_writes_plots_and_summary(tmp_path):
    summary = demo.main(["--out", str(tmp_path), "--theory-only"])
    for name in ("blog_figure.png", "split_heatmap.png", "demo_summary.json"):
        assert (tmp_path / name).stat().st_size > 0
    saved = json.loads((tmp_path / "demo_summary.json").read_text())
    assert saved["blog_peaks"]["sd"][1] == summary["blog_peaks"]["sd"][1]
    assert all(r["theorem"]["agrees"] is not False for r in saved["splits"])
    assert len(saved["implied_c1"]) == 4
