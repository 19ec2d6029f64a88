"""Reliability, second pass: outputs never destroy inputs, work is bounded before it
starts, JSON output is strict, and text from files reaches the terminal inert.

Unit tests of lrcore/outputs.py, lrcore/limits.py (with lrsim/work.py), lrcore/jsonout.py and the
console of lrcore/tables.py, then each guarantee through the `lr` commands (in-process, one line,
exit 2).
"""
from __future__ import annotations

import copy
import errno
import json
import os
import stat
from pathlib import Path

import pytest

from lrcore import jsonout, limits
from lrcore.errors import UserError
from lrcore.outputs import (atomic_path, check_output, check_output_dir, distinct_inputs,
                            same_file, write_atomic)
from lrsim import work

ROOT = Path(__file__).resolve().parents[2]
TRACE = ROOT / "traces" / "samples" / "gsm8k-cpu.jsonl"
SCENARIO = ROOT / "lrsim" / "scenarios" / "cpu-2core.toml"
PROFILE = ROOT / "tests" / "data" / "calib" / "cpu-gsm8k-profile.json"
ROOT_USER = os.geteuid() == 0


def one_line(code, err, *expect):
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("lr: error: "), (code, err)
    assert "Traceback" not in err
    for e in expect:
        assert e in lines[0], f"{e!r} not in {lines[0]!r}"
    return lines[0]


# --- lrcore/outputs.py -----------------------------------------------------------------------
def test_same_file_by_inode_through_symlinks_and_hard_links(tmp_path):
    a = tmp_path / "a.json"
    a.write_text("{}")
    (tmp_path / "link.json").symlink_to(a)
    os.link(a, tmp_path / "hard.json")
    for other in ("link.json", "hard.json", "./a.json"):
        assert same_file(a, tmp_path / other)
        with pytest.raises(UserError, match="is an input"):
            check_output(tmp_path / other, "-o", inputs=[a])
    assert not same_file(a, tmp_path / "missing.json")


@pytest.mark.parametrize("target,why", [
    ("/dev/null", "character device"), ("/dev/full", "character device"),
    ("<dir>", "is a directory"), ("<fifo>", "FIFO"), ("<under-file>", "is a file, not a directory"),
])
def test_check_output_refuses_what_is_not_a_writable_regular_file(tmp_path, target, why):
    if target == "<dir>":
        target = tmp_path
    elif target == "<fifo>":
        target = tmp_path / "pipe"
        os.mkfifo(target)
    elif target == "<under-file>":
        (tmp_path / "notes.txt").write_text("x")
        target = tmp_path / "notes.txt" / "deeper" / "out.json"
    elif not Path(target).exists():
        pytest.skip(f"{target} missing here")
    with pytest.raises(UserError, match=why):
        check_output(target, "--out")


@pytest.mark.skipif(ROOT_USER, reason="root writes whatever the permissions")
def test_check_output_refuses_read_only_files_and_folders(tmp_path):
    ro = tmp_path / "ro.json"
    ro.write_text("{}")
    ro.chmod(0o444)
    with pytest.raises(UserError, match="read-only"):
        check_output(ro, "--out")
    d = tmp_path / "locked"
    d.mkdir()
    d.chmod(0o555)
    try:
        with pytest.raises(UserError, match="permission denied"):
            check_output(d / "x" / "out.json", "--out")
    finally:
        d.chmod(0o755)


def test_check_output_formats_and_missing_folders(tmp_path):
    with pytest.raises(UserError, match=r"unsupported file type '.txt'; use one of .*\.png"):
        check_output(tmp_path / "f.txt", "--out", suffixes=(".png", ".pdf"))
    assert check_output(tmp_path / "new" / "deep" / "f.PNG", "--out", suffixes=(".png",))


def test_check_output_dir(tmp_path):
    with pytest.raises(UserError, match="system directory"):
        check_output_dir("/", "--out")
    if Path("/etc").is_dir():
        with pytest.raises(UserError, match="system directory /etc"):
            check_output_dir("/etc", "--out")
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(UserError, match="is a regular file, not a directory"):
        check_output_dir(f, "--out")
    with pytest.raises(UserError, match="is a file, not a directory"):
        check_output_dir(f / "sub", "--out")
    out = tmp_path / "report"
    (out / "machine").mkdir(parents=True)
    inside = out / "machine" / "t.jsonl"
    inside.write_text("x")
    with pytest.raises(UserError, match="would overwrite the input"):
        check_output_dir(out, "--out", inputs=[inside], writes=["report.html", "*/"])
    prof = out / "profile.json"
    prof.write_text("{}")
    check_output_dir(out, "--out", inputs=[prof], writes=["report.html", "*/"])      # read only
    with pytest.raises(UserError, match="would overwrite the input"):
        check_output_dir(out, "--out", inputs=[prof], writes=["report.html", "profile.json"])


def test_distinct_inputs_refuses_the_same_file_twice(tmp_path):
    a = tmp_path / "a.jsonl"
    a.write_text("x")
    (tmp_path / "b.jsonl").symlink_to(a)
    with pytest.raises(UserError, match="same file is given twice"):
        distinct_inputs([a, a], "TRACES")
    with pytest.raises(UserError, match="b.jsonl: the same file"):
        distinct_inputs([a, tmp_path / "b.jsonl"], "TRACES")
    assert distinct_inputs([a, tmp_path / "missing"], "TRACES") == [a, tmp_path / "missing"]


def test_write_atomic_keeps_the_old_file_on_failure_and_its_mode(tmp_path, monkeypatch):
    p = tmp_path / "p.json"
    write_atomic(p, "old")
    p.chmod(0o640)
    write_atomic(p, "new")
    assert p.read_text() == "new" and stat.S_IMODE(p.stat().st_mode) == 0o640

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(UserError, match="No space left on device.*previous file is unchanged"):
        write_atomic(p, "newer")
    assert p.read_text() == "new"
    assert sorted(x.name for x in tmp_path.iterdir()) == ["p.json"]      # no temporary left


def test_atomic_path_keeps_the_extension_for_format_sniffing_writers(tmp_path):
    with atomic_path(tmp_path / "fig.png") as tmp:
        assert tmp.suffix == ".png" and tmp.parent == tmp_path
        tmp.write_bytes(b"png")
    assert (tmp_path / "fig.png").read_bytes() == b"png"


# --- the commands: outputs -------------------------------------------------------------------
def _copy(src: Path, dst: Path) -> Path:
    dst.write_bytes(src.read_bytes())
    return dst


def test_commands_refuse_to_overwrite_their_inputs(run_lr, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    t = _copy(TRACE, tmp_path / "T.jsonl")
    s = _copy(SCENARIO, tmp_path / "S.toml")
    p = _copy(PROFILE, tmp_path / "P.json")
    before = {f: f.read_bytes() for f in (t, s, p)}
    cases = [
        (["calibrate", "fit", t, "-o", t], "--out"),
        (["replay", t, "--holdout", "0.5", "--save-profile", t], "--save-profile"),
        (["replay", t, "--profile", p, "--save-profile", p], "--save-profile"),
        (["sweep", "--scenario", s, "--k1", "2", "--out", s], "--out"),
        (["calibrate", "probe", "--profile", p, "-o", p], "--out"),
        (["plot", "--traces", t, "--out", t, "--quick"], "--out"),
        (["collect", "--dataset", t, "--out", t, "--resume"], "--out"),
    ]
    for argv, flag in cases:
        code, out, err = run_lr(*argv)
        one_line(code, err, flag)
    assert {f: f.read_bytes() for f in before} == before


def test_commands_refuse_devices_directories_and_system_folders(run_lr, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("x")
    cases = [
        (["calibrate", "fit", TRACE, "-o", "/dev/null"], "character device"),
        (["calibrate", "fit", TRACE, "-o", str(tmp_path)], "is a directory"),
        (["calibrate", "fit", TRACE, "-o", "afile/p.json"], "is a file, not a directory"),
        (["sweep", "--policy", "lr-sync", "--ideal", "--alpha1", "0.5", "--c1", "0.1", "--steps",
          "4", "--requests", "1", "--k1", "2", "--out", "/dev/null"], "character device"),
        (["plot", "--out", "/", "--quick"], "system directory"),
        (["plot", "--out", "afile", "--quick"], "not a directory"),
        (["theory", "figure", "--out", "f.txt"], "unsupported file type '.txt'; use one of"),
        (["theory", "figure", "--out", str(tmp_path)], "is a directory"),
        (["collect", "--out", "/dev/null", "--limit", "1"], "character device"),
        (["collect", "--out", str(tmp_path), "--limit", "1"], "is a directory"),
        (["calibrate", "fit", TRACE, TRACE, "-o", "p.json"], "same file is given twice"),
        (["replay", TRACE, str(TRACE).replace("/samples/", "/samples/../samples/"), "--profile",
          PROFILE], "same file is given twice"),
    ]
    for argv, why in cases:
        code, out, err = run_lr(*argv)
        one_line(code, err, why)


def test_calibrate_fit_writes_its_profile_atomically(run_lr, tmp_path):
    out = tmp_path / "sub" / "p.json"
    code, _, err = run_lr("calibrate", "fit", TRACE, "-o", out, "--json")
    assert code == 0, err
    json.loads(out.read_text())
    assert sorted(x.name for x in out.parent.iterdir()) == ["p.json"]


# --- lrcore/limits.py, lrsim/work.py: bounded work --------------------------------------------
@pytest.mark.parametrize("argv,expect", [
    (["simulate", "--requests", "1000000"], "MAX_SIM_POSITIONS"),
    (["simulate", "--ideal", "--alpha1", "0.5", "--c1", "0.1", "--steps", "1000000"], "MAX_STEPS_PER_REQUEST"),
    (["simulate", "--ideal", "--alpha1", "0.5", "--c1", "0.1", "--requests", "1000000"], "MAX_SIM_POSITIONS"),
    (["plan", "--concurrency", "1000000", "--jobs", "1"], "MAX_SIM_POSITIONS"),
    (["plan", "--rate", "1", "--requests", "1000000", "--jobs", "1"], "MAX_SIM_POSITIONS"),
    (["sweep", "--policy", "lr-async", "--depth", "1-10", "--k2", "1-10", "--requests", "3000",
      "--steps", "1000", "--jobs", "1"], "MAX_COMMAND_POSITIONS"),
])
def test_work_over_the_caps_is_refused_before_it_starts(run_lr, argv, expect):
    line = one_line(*run_lr(*argv)[::2], expect)
    assert "over the cap" in line


def test_documented_uses_fit_under_the_caps():
    """README/docs/benchmarks sizes stay below the caps (the caps' docstring lists them)."""
    from lrsim.sim.build import Options, build
    from lrsim.sim.sweep import parallel_dim

    one_k = build(Options(policy="lr-async", requests=1000, rate=2.0, scenario="h100-paper"))
    assert work.check_simulation(one_k) <= limits.MAX_SIM_POSITIONS            # bench_sim point
    sweep = work.workload_shape(one_k.workload)[1] * sum(
        parallel_dim("lr-async", 0, d, 1, 1) for d in range(1, 11) for _ in range(1, 11))
    assert sweep <= limits.MAX_COMMAND_POSITIONS                                # bench_sim sweep


def _scenario(tmp_path, mutate) -> Path:
    import tomllib

    import tomli_w

    doc = tomllib.loads(SCENARIO.read_text())
    mutate(doc)
    p = tmp_path / "s.toml"
    p.write_text(tomli_w.dumps(doc))
    return p


@pytest.mark.parametrize("mutate,field", [
    (lambda d: d["workload"].__setitem__("requests", 10**9), "workload.requests"),
    (lambda d: d["workload"].__setitem__("steps", 10**7), "workload.steps"),
    (lambda d: d["workload"].__setitem__("seed", -1), "workload.seed"),
    (lambda d: d["policy"].__setitem__("depth", 10**6), "policy.depth"),
    (lambda d: d["models"]["target"].__setitem__("latency", {"kind": "roofline", "params_b": 0}),
     "params_b"),
    (lambda d: d["models"]["target"].__setitem__("max_seqs", 10**12), "max_seqs"),
])
def test_absurd_scenario_values_are_refused_by_name(run_lr, tmp_path, mutate, field):
    pytest.importorskip("tomli_w")
    one_line(*run_lr("simulate", "--scenario", _scenario(tmp_path, mutate), "--json")[::2], field)


def test_profile_with_an_acceptance_table_one_billion_deep_is_refused(run_lr, tmp_path):
    doc = json.loads(PROFILE.read_text())
    doc["step_acceptance"]["by_depth"]["1000000000"] = [1, 1]
    p = tmp_path / "deep.json"
    p.write_text(json.dumps(doc))
    one_line(*run_lr("plan", "--profile", p, "--jobs", "1")[::2], "MAX_PROFILE_DEPTH",
             "step_acceptance.by_depth.1000000000")


def _trace_with(tmp_path, steps: list[dict]) -> Path:
    rec = json.loads(TRACE.read_text().splitlines()[0])       # an ar record
    rec["steps"] = steps
    rec["output_tokens"] = sum(s["tokens"] for s in steps)
    p = tmp_path / "t.jsonl"
    p.write_text(json.dumps(rec) + "\n")
    return p


def _step(i, tokens):
    return {"index": i, "source": "target", "tokens": tokens, "depth": 0, "draft": None,
            "target": {"start": 0.0, "end": 0.001, "tokens": tokens}, "verify": None, "cancelled": []}


def test_traces_with_absurd_steps_are_refused_before_any_work(run_lr, tmp_path):
    many = _trace_with(tmp_path, [_step(i, 1) for i in range(200_000)])
    for argv in (["calibrate", "fit", many, "-o", tmp_path / "p.json"],
                 ["replay", many, "--profile", PROFILE]):
        one_line(*run_lr(*argv)[::2], "MAX_RECORD_STEPS", "200,000 steps")
    huge = _trace_with(tmp_path, [_step(0, 10**9)])
    one_line(*run_lr("calibrate", "fit", huge, "-o", tmp_path / "p.json")[::2],
             "1000000000 is greater than the maximum of 1000000")


def test_readers_stop_at_their_byte_cap(tmp_path, monkeypatch, run_lr):
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero")
    monkeypatch.setattr(limits, "MAX_TRACE_BYTES", 1 << 20)
    monkeypatch.setattr(limits, "MAX_TEXT_FILE_BYTES", 1 << 20)
    for argv in (["calibrate", "fit", "/dev/zero", "-o", tmp_path / "p.json"],
                 ["replay", "/dev/zero", "--profile", PROFILE],
                 ["simulate", "--scenario", "/dev/zero"],
                 ["replay", TRACE, "--profile", "/dev/zero"]):
        one_line(*run_lr(*argv)[::2], "/dev/zero", "1 MiB cap")
    big = tmp_path / "big.jsonl"
    big.write_bytes(b"\n" * ((1 << 20) + 10))
    one_line(*run_lr("calibrate", "fit", big, "-o", tmp_path / "p.json")[::2], "over the 1 MiB cap")


# --- strict JSON out ---------------------------------------------------------------------------
def test_jsonout_never_writes_infinity_or_nan():
    import numpy as np

    text = jsonout.dumps({"a": float("inf"), "b": [float("nan"), 1.5, np.float64("-inf")],
                          "c": (np.int64(3),), "d": "Infinity"})
    assert json.loads(text, parse_constant=lambda c: pytest.fail(c)) == \
        {"a": None, "b": [None, 1.5, None], "c": [3], "d": "Infinity"}


def test_json_output_of_a_non_finite_result_is_null(run_lr, monkeypatch):
    import lrsim.sim.runner as runner

    real = runner.simulate

    def simulate(cfg):
        out = real(cfg)
        return out | {"speedup": float("inf"), "tokens_per_s": float("nan")}
    monkeypatch.setattr(runner, "simulate", simulate)
    code, out, err = run_lr("simulate", "--policy", "lr-sync", "--ideal", "--alpha1", "0.5",
                            "--c1", "0.1", "--steps", "4", "--requests", "1", "--json")
    assert code == 0, err
    doc = json.loads(out, parse_constant=lambda c: pytest.fail(f"{c} in --json output"))
    assert doc["speedup"] is None and doc["tokens_per_s"] is None


# --- text from files reaches the terminal inert ------------------------------------------------
HOSTILE = "p[/]x[bold]\x1b[2J\x1b]0;owned\x07:smile:"


def test_console_prints_file_text_literally_without_control_characters(capsys):
    from lrcore.tables import console, styled, table

    t = table(f"t {HOSTILE}", ("name", "n"), text=("name",))
    t.add_row(HOSTILE, "1")
    c = console()
    c.print(t)
    c.print(HOSTILE)
    c.print(styled(("warning:", "yellow"), " ", HOSTILE))
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert "p[/]x[bold]" in out and "\\x1b[2J" in out and ":smile:" in out


def test_replay_per_record_and_collect_summary_with_hostile_problem_ids(run_lr, tmp_path):
    lines = TRACE.read_text().splitlines()
    recs = [json.loads(x) for x in lines]
    for r in recs:
        r["problem_id"] = r["problem_id"] + HOSTILE
    p = tmp_path / "t.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in recs))
    code, out, err = run_lr("replay", p, "--profile", PROFILE, "--per-record")
    assert code == 0, err                # no MarkupError from "[/]"
    assert "\x1b" not in out + err

    from lrreal.summary import summarize
    from lrreal.collect_cli import _print_summary

    _print_summary({"out": str(p), "written": 1, "skipped": 0, "summary": summarize(recs),
                    "failed": [{"problem_id": HOSTILE, "sample": 0, "error": HOSTILE}]})


def test_error_lines_escape_control_characters(run_lr, tmp_path):
    bad = tmp_path / "s.toml"
    bad.write_text('"pol\\u001b[2Jicy" = 1\n' + SCENARIO.read_text())
    code, out, err = run_lr("simulate", "--scenario", bad)
    assert "\x1b" not in err
    one_line(code, err, "pol\\x1b[2Jicy: unknown field")
