"""The README's main command runs the demo; this checks it end to end (it must not rot)."""
import json
from pathlib import Path

import pytest

from analysis import demo

CORPUS = Path(__file__).parent / "analysis" / "data" / "corpus"   # gsm8k/0 in ar and lr-d2


def test_demo_writes_plots_and_summary(tmp_path):
    summary = demo.main(["--out", str(tmp_path), "--theory-only"])
    for name in ("blog_figure.png", "split_heatmap.png", "demo_summary.json"):
        assert (tmp_path / name).stat().st_size > 0
    saved = json.loads((tmp_path / "demo_summary.json").read_text())
    assert saved["blog_peaks"]["sd"][1] == summary["blog_peaks"]["sd"][1]
    assert all(r["theorem"]["agrees"] is not False for r in saved["splits"])
    assert len(saved["implied_c1"]) == 4
    assert "prediction" not in saved


def test_quick_flow_predicts_from_the_corpus_before_comparing(tmp_path, monkeypatch, capsys):
    """--quick: calibrate from the corpus (real `lr calibrate`), predict, compare; no engine
    command, plan and report commands as printed (stubbed here: they have their own tests)."""
    ran = []
    real_lr = demo.lr

    def lr(console, *args, **kw):
        ran.append(args)
        if args[0] == "calibrate":
            return real_lr(console, *args, **kw)
        console.print(f"$ lr {kw.get('shown') or ' '.join(args)}")
        return ""
    monkeypatch.setattr(demo, "lr", lr)
    out = tmp_path / "out"
    summary = demo.main(["--out", str(out), "--quick", "--corpus", str(CORPUS)])
    text = capsys.readouterr().out
    cmds = [a[0] for a in ran]
    assert cmds == ["calibrate", "plan", "plan", "plot"]          # no models, probe or collect
    assert ran[0][-2:] == ("-o", str(out / "profile.json"))
    assert sorted(Path(a).resolve() for a in ran[0][1:-2]) == sorted((CORPUS / "gsm8k").glob("*.jsonl"))
    assert ran[1][:3] == ("plan", "--profile", str(out / "profile.json"))
    assert ran[2] == ("plan", "--preset", "r1-gsm8k")
    plot = ran[3]
    assert plot[plot.index("--profile") + 1] == str(out / "profile.json")
    assert Path(plot[plot.index("--traces") + 1]).resolve() == CORPUS / "gsm8k"
    assert plot[plot.index("--preset") + 1] == "r1-gsm8k"
    # the prediction is printed before the comparison, and both are in the summary
    assert text.index("6. Prediction") < text.index("7. Measure") < text.index("8. Predicted vs measured")
    saved = json.loads((out / "demo_summary.json").read_text())
    assert saved["problem"] == "gsm8k/0" and list(saved["prediction"]) == ["ar", "lr-d2"]
    rows = {r["config"]: r for r in saved["comparison"]}
    assert set(rows) == {"ar", "lr-d2"}
    for cfg, r in rows.items():
        assert r["predicted_s"] == pytest.approx(saved["prediction"][cfg]["latency_s"])
        assert r["measured_s"] > 0 and r["correct"] is True and r["same_text"] is True
    assert rows["ar"]["meas_speedup"] == 1.0 and rows["lr-d2"]["pred_speedup"] > 0
    assert summary["report"] == str(out / "report" / "report.html")


def test_quick_flow_without_a_corpus_stops_with_a_message(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        demo.main(["--out", str(tmp_path), "--quick", "--corpus", str(tmp_path / "none")])
    assert exc.value.code == 2 and "no GSM8K trace corpus" in capsys.readouterr().out


@pytest.mark.slow
def test_quick_demo_end_to_end(tmp_path):
    """Every `lr` command of the quick flow for real (plan and plot included)."""
    summary = demo.main(["--out", str(tmp_path), "--quick", "--corpus", str(CORPUS)])
    html = Path(summary["report"]).read_text()
    assert "<h2 id='machine'>" in html and "<h2 id='preset-r1-gsm8k'>" in html
    assert (tmp_path / "profile.json").is_file() and len(summary["comparison"]) == 2
