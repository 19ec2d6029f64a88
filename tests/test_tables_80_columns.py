"""Every table `lr` prints stays readable in an 80-column terminal or CI log.

Each command runs through the real CLI (typer's CliRunner) with COLUMNS=80, on inputs that need no
engines: no output line may be wider than 80 characters and nothing may be cut with an ellipsis
(rich cuts a squeezed no-wrap cell to "spe…"). The printers of commands that need real engines or
long runs (`lr collect`'s summary, `lr plan --paper-table`) are called directly with result dicts
of the shape those commands build.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

import cli
from lrcore.tables import WIDTH

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "traces" / "samples"
ENV = {"COLUMNS": str(WIDTH)}


def assert_fits(out: str) -> None:
    assert out.strip(), "nothing was printed"
    wide = [line for line in out.splitlines() if len(line) > WIDTH]
    assert not wide, f"{len(wide)} line(s) wider than {WIDTH} columns:\n" + "\n".join(wide) + "\n\n" + out
    assert "…" not in out, "a header or cell was cut short:\n" + out


def lr(*args) -> str:
    r = CliRunner().invoke(cli.app, [str(a) for a in args], env=ENV)
    assert r.exit_code == 0, (r.output, r.exception)
    assert_fits(r.output)
    return r.output


@pytest.fixture
def printed(monkeypatch, capsys):
    """What a printer writes to stdout, through the commands' console factory, at 80 columns."""
    monkeypatch.setenv("COLUMNS", str(WIDTH))

    def run(fn, *args, **kw) -> str:
        capsys.readouterr()
        fn(*args, **kw)
        text = capsys.readouterr().out
        assert_fits(text)
        return text
    return run


# --- lr theory ----------------------------------------------------------------------------------

@pytest.mark.parametrize("args", [
    ["speedup", "--alpha1", "0.63", "--c1", "0.1", "--k1", "6", "--mode", "async", "--alpha2", "0.5", "--k2", "4"],
    ["speedup", "--alpha1", "0.6", "--c1", "0.2", "--k1", "2"],
    ["optimize", "--alpha1", "0.63", "--c1", "0.05", "--alpha2", "0.6", "--c2", "0.0", "--budget", "16",
     "--mode", "async"],
    # many ties and the async plateau: the longest "ties" cell
    ["optimize", "--alpha1", "1", "--c1", "0.5", "--budget", "64", "--mode", "async"],
    ["optimize", "--alpha1", "0.9", "--c1", "0.3", "--alpha2", "0.2", "--c2", "0.4", "--budget", "1024"],
])
def test_theory(args):
    out = lr("theory", *args)
    assert "f (step level)" in out or "optimum (k1, k2)" in out


# --- lr simulate / lr sweep ---------------------------------------------------------------------

@pytest.mark.parametrize("args", [
    ["--scenario", "cpu-2core", "--policy", "lr-async", "--requests", "2", "--steps", "8"],
    # four devices and token-level SD: the longest utilisation and SD rows
    ["--scenario", "h100-paper", "--policy", "lr-async", "--k2", "3", "--alpha2", "0.5", "--width", "2",
     "--equal-resources", "--requests", "2", "--steps", "8"],
    ["--policy", "sd", "--k2", "4", "--alpha2", "0.5", "--requests", "4", "--rate", "2", "--steps", "8"],
    # a streamed run: its extra row
    ["--policy", "sd", "--k2", "4", "--requests", "4", "--rate", "2", "--steps", "8", "--stream"],
    ["--policy", "lr-async", "--alpha1", "0.63", "--c1", "0.1", "--depth", "3", "--ideal", "--steps", "50"],
])
def test_simulate(args):
    out = lr("simulate", *args)
    assert "speedup vs AR" in out and "utilisation" in out


def test_sweep():
    out = lr("sweep", "--scenario", "cpu-2core", "--policy", "lr-async", "--depth", "1-2", "--width", "1,2",
             "--k2", "1,3", "--alpha2", "0.5", "--requests", "2", "--steps", "6", "--jobs", "1")
    assert "speedup" in out and "best:" in out


# --- lr plan ------------------------------------------------------------------------------------

def test_plan_preset():
    out = lr("plan", "--preset", "r1-gsm8k", "--samples", "1", "--steps", "6", "--jobs", "1")
    # the latency table wraps its headers at 80 columns ("p90" over "ms/tok")
    assert "configuration" in out and "vs eq-res" in out and "ms/tok" in out and "95% CI" in out
    assert "ar [reference]" in out      # escaped: rich used to swallow "[reference]" as markup
    assert "ar equal-resources" in out  # configuration names whole, not folded


def test_plan_slo_and_long_labels():
    """The SLO columns, and the longest configuration names (tree width, sync, shared)."""
    out = lr("plan", "--preset", "r1-aime24", "--samples", "1", "--steps", "6", "--jobs", "1",
             "--devices", "8", "--concurrency", "4", "--slo-ms", "20", "--modes", "lr+sd,lr-sync+sd",
             "--depth", "4", "--width", "2", "--k1", "5", "--k2", "9", "--top", "4")
    assert "goodput" in out and "SLO ok" in out
    assert "lr+sd depth=4 width=2 k2=9" in out and "lr-sync+sd k1=5 k2=9 shared" in out


def test_plan_list_presets():
    out = lr("plan", "--list-presets")
    assert "r1-gsm8k" in out and "qwen3-aime24" in out and "hardware:" in out and "latency:" in out


def test_plan_break_even_printer(printed):
    """`lr plan --find-break-even` runs many plans; its printer gets a result of the shape
    lrsim.plan.breakeven.find returns, with the longest labels and every cell kind."""
    from lrsim.plan.cli import _print_break_even

    def side(status, be, win, mono=True):
        return {"status": status, "break_even": be, "last_win": win, "monotone": mono}

    rows = [{"label": "lr+sd depth=4 width=2 k2=9 shared", "mode": "lr+sd", "placement": "shared",
             "speedup_at_lo": 12.34, "vs_ar": side("beyond", None, 64), "vs_equal": side("found", 17, 16, False)},
            {"label": "lr-sync+sd k1=5 k2=9 shared", "mode": "lr-sync+sd", "placement": "shared",
             "speedup_at_lo": 0.91, "vs_ar": side("never", 1, None), "vs_equal": side("n/a", None, None)}]
    res = {"axis": "concurrency", "unit": "requests in flight", "range": [1, 64], "source": "preset r1-aime24",
           "hardware": {"devices": 16, "kind": "cpu-2core"}, "rows": rows, "plans": 14,
           "levels_evaluated": list(range(1, 15)), "elapsed_s": 123.4,
           "sentence": "Searching 1-64 requests in flight: lr+sd depth=4 width=2 k2=9 shared still beats AR "
                       "at 64 and stops beating AR on equal resources at 17 (wins at 16)."}
    out = printed(_print_break_even, res)
    text = " ".join(out.split())
    assert ">64" in text and "17?" in text and "never" in text and "lr-sync+sd k1=5 k2=9 shared" in text


def test_plan_paper_table_printer(printed):
    """`lr plan --paper-table` simulates minutes of presets; its printer gets rows of the shape
    lrsim.plan.table1.compare_table1 returns (the widest values that fit: speedups below 10x; the
    paper's are 1.12-2.11x)."""
    from lrsim.plan.cli import _print_paper_table
    from lrsim.plan.presets import PRESETS

    rows = []
    for name, p in PRESETS.items():
        sim = {"lr": 9.87, "sd": 1.07, "lr+sd": 9.99}
        rows.append({"preset": name, "pair": p.pair, "alpha1": p.alpha1_used, "alpha2": p.alpha2,
                     "paper_alpha1": p.paper.alpha1, "alpha1_source": p.alpha1_source, "c1": 0.214,
                     "latency": p.latency_source(), "sim": sim, "seeds": 128,
                     "sim_ci": {m: (v * 0.99, v * 1.01) for m, v in sim.items()},
                     "paper": {"lr": 1.71, "sd": 1.26, "lr+sd": 2.11},
                     "product_ratio": sim["lr+sd"] / (sim["lr"] * sim["sd"])})
    out = printed(_print_paper_table, rows)
    assert "9.87/1.71" in out and "qwen3-aime24" in out and "128 seeds" in out


# --- lr models list -----------------------------------------------------------------------------

def test_models_list(tmp_path):
    out = lr("models", "list", "--cache-dir", tmp_path / "cache")
    assert "parts installed" in out and "qwen2.5-coder-1.5b-instruct" in out


def test_models_list_ready_paths(monkeypatch, tmp_path):
    """Ready models print their folder under the table; a long cache path wraps, never cuts."""
    from lrreal import models

    deep = tmp_path / ("a-rather-long-cache-directory-name" * 2) / "lr-toolkit"
    real = models.status

    def ready(cache):
        return [r | {"ready": True} for r in real(cache)]

    monkeypatch.setattr(models, "status", ready)
    out = lr("models", "list", "--cache-dir", deep)
    assert out.count("folder:") == 2


# --- lr collect (summary printer) ---------------------------------------------------------------

def test_collect_summary_printer(printed):
    """`lr collect` needs real engines; its summary printer gets what the command builds: the
    summary of a shipped trace file plus a mode with failed judge verifications (wide values:
    hundreds of tokens/s, a thousand verifications)."""
    from lrcore.traces import read_traces
    from lrreal.summary import summarize
    from lrreal.collect_cli import _print_summary

    rows = summarize(read_traces(str(SAMPLES / "gsm8k-cpu.jsonl")))
    rows.append(rows[-1] | {"mode": "lr-sync", "accuracy": 1.0, "tokens_per_s": 123.45, "speedup_vs_ar": 10.5,
                            "verifications": 1041, "verifications_failed": 213,
                            "verification_failures_by_cause": {"timeout": 200, "http": 12, "bad reply": 1}})
    result = {"out": "traces/run.jsonl", "written": 3, "skipped": 1, "summary": rows,
              "failed": [{"problem_id": "gsm8k/7", "sample": 0, "error": "judge: connection refused"}]}
    out = printed(_print_summary, result)
    assert "213/1041" in out and "bad reply 1, http 12, timeout 200" in out
    assert "│ lr-sync │" in out and "│ lr+sd   │" in out     # names whole, not folded


# --- lr calibrate / lr replay -------------------------------------------------------------------

def test_calibrate_and_replay(tmp_path):
    prof = tmp_path / "p.json"
    out = lr("calibrate", SAMPLES / "gsm8k-cpu.jsonl", "-o", prof)
    assert "latency per engine" in out
    out = lr("replay", "--profile", prof, SAMPLES / "gsm8k-cpu.jsonl", "--per-record")
    assert "MAPE" in out and "per record" in out


def test_calibrate_three_trace_files_and_calibrate_on(tmp_path):
    files = [SAMPLES / n for n in ("gsm8k-cpu.jsonl", "gsm8k-cpu-lr-embedding.jsonl", "gsm8k-cpu-ar-1core.jsonl")]
    lr("calibrate", *files, "-o", tmp_path / "p.json")
    lr("replay", SAMPLES / "gsm8k-cpu.jsonl", "--calibrate-on", "ar,lr-d2")


# --- make demo's theory tables (python -m analysis.demo) -----------------------------------------

def test_demo_theory_tables(printed):
    from analysis.demo import implied_overheads, split_tables
    from lrcore.tables import console

    def both():
        c = console()
        split_tables(c)
        implied_overheads(c)

    printed(both)
