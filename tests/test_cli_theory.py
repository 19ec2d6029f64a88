"""`lr theory ...`: the stable CLI interface (keys, errors, speed of import)."""
import json
import subprocess
import sys

import pytest


def test_speedup_json_keys(run_lr):
    code, out, _ = run_lr("theory", "speedup", "--alpha1", "0.63", "--c1", "0.1", "--k1", "6",
                          "--mode", "async", "--alpha2", "0.5", "--c2", "0.0", "--k2", "4", "--json")
    assert code == 0
    res = json.loads(out)
    assert res["f"] == pytest.approx(2.2580, abs=5e-5)
    assert res["g"] == pytest.approx(1.875)
    assert res["h"] == pytest.approx(res["f"] * res["g"])


def test_speedup_table(run_lr):
    code, out, _ = run_lr("theory", "speedup", "--alpha1", "0.6", "--c1", "0.2", "--k1", "2")
    assert code == 0 and "1.3333" in out  # f_sync(2) = (1 + 0.6)/(1 + 0.2)


def test_optimize_json_interface(run_lr):
    code, out, _ = run_lr("theory", "optimize", "--alpha1", "0.63", "--c1", "0.05",
                          "--alpha2", "0.6", "--c2", "0.0", "--budget", "16", "--mode", "async", "--json")
    assert code == 0
    res = json.loads(out)
    for key in ("k1", "k2", "speedup", "pure_sd", "pure_lr", "ties", "theorem"):
        assert key in res
    assert set(res["pure_sd"]) >= {"k2", "speedup"} and set(res["pure_lr"]) >= {"k1", "speedup"}
    assert set(res["theorem"]) >= {"name", "applies", "prediction"}
    assert res["theorem"]["applies"] and res["theorem"]["prediction"] == "hybrid"
    assert res["theorem"]["agrees"] is True
    assert res["k1"] * res["k2"] <= 16 and res["k1"] >= 2 and res["k2"] >= 2
    assert all(isinstance(t, list) and len(t) == 2 for t in res["ties"])


def test_optimize_table(run_lr):
    code, out, _ = run_lr("theory", "optimize", "--alpha1", "0.7", "--c1", "0.1",
                          "--alpha2", "0.6", "--c2", "0.05", "--budget", "8")
    assert code == 0 and "Optimal split" in out and "Theorem 3" in out


def test_figure_writes_png(run_lr, tmp_path):
    out_png = tmp_path / "sub" / "blog.png"
    code, out, _ = run_lr("theory", "figure", "--out", str(out_png))
    assert code == 0
    assert out_png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "1.63x at gamma = 3.45" in out and "2.66x at gamma = 9.66" in out


@pytest.mark.parametrize("args,flag", [
    (["speedup", "--alpha1", "1.5", "--c1", "0.1", "--k1", "2"], "--alpha1"),
    (["speedup", "--alpha1", "0.5", "--c1", "-0.1", "--k1", "2"], "--c1"),
    (["speedup", "--alpha1", "0.5", "--c1", "0.1", "--k1", "0"], "--k1"),
    (["speedup", "--alpha1", "0.5", "--c1", "0.1", "--k1", "2", "--k2", "0"], "--k2"),
    (["speedup", "--alpha1", "0.5", "--c1", "0.1", "--k1", "2", "--alpha2", "2"], "--alpha2"),
    (["optimize", "--alpha1", "0.5", "--c1", "0.1", "--budget", "0"], "--budget"),
    (["optimize", "--alpha1", "0.5", "--c1", "0.1", "--c2", "1.01", "--budget", "4"], "--c2"),
    (["optimize", "--alpha1", "0.5", "--c1", "0.1", "--budget", "4", "--mode", "turbo"], "--mode"),
    (["optimize", "--alpha1", "x", "--c1", "0.1", "--budget", "4"], "--alpha1"),
    (["optimize", "--c1", "0.1", "--budget", "4"], "--alpha1"),
    (["optimize", "--alpha1", "0.5", "--c1", "0.1", "--budget", "4", "--bogus"], "--bogus"),
])
def test_invalid_input_is_one_line_exit_2(run_lr, args, flag):
    code, out, err = run_lr("theory", *args)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("lr: error:") and flag in err
    assert "Traceback" not in err + out


def test_subprocess_error_has_no_traceback():
    r = subprocess.run([sys.executable, "-m", "cli", "theory", "speedup", "--alpha1", "7", "--c1",
                        "0.1", "--k1", "2"], capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.startswith("lr: error:") and "Traceback" not in r.stderr


def test_no_heavy_imports_on_fast_paths():
    """`lr --help` and `lr theory ...` must not import torch, vLLM or matplotlib."""
    code = (
        "import sys, cli\n"
        "for argv in (['--help'], ['theory', 'optimize', '--alpha1', '0.6', '--c1', '0.1',"
        " '--budget', '1024', '--json']):\n"
        "    try:\n"
        "        cli.main(argv)\n"
        "    except SystemExit as e:\n"
        "        assert e.code == 0, e.code\n"
        "heavy = sorted(m for m in ('torch', 'vllm', 'matplotlib', 'transformers',"
        " 'sentence_transformers') if m in sys.modules)\n"
        "print('HEAVY=' + ','.join(heavy))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "HEAVY=\n" in r.stdout, r.stdout[-300:]


def test_exit_and_abort_from_a_command(run_lr, monkeypatch):
    """typer.Exit keeps its code; typer.Abort / Ctrl-C are one line with exit 130."""
    import typer

    from analysis import theory_cli

    def boom(*a, **k):
        raise typer.Abort()

    monkeypatch.setattr(theory_cli, "blog_curves", boom, raising=False)
    monkeypatch.setattr("lrsim.theory.figure.blog_curves", boom)
    code, _, err = run_lr("theory", "figure", "--out", "/tmp/never.png")
    assert code == 130 and err.startswith("lr: error:")
