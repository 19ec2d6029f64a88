"""Kill test: `lr collect` survives SIGKILL at random points (resume: nothing lost, nothing twice,
every record valid, no orphan process) and stops cleanly on SIGTERM / SIGINT.

Fast part: the real `lr collect` code path on the deterministic fake engine in a subprocess
(tests/reliability/kill_fake_collect.py), killed many times. Real part (`real`): the vLLM CPU
engines with tiny budgets, a few kills, and one SIGTERM and one SIGINT.
"""
from __future__ import annotations

import signal
import sys
from pathlib import Path

import pytest

from harness.killtest import KillTestConfig, expected_keys, kill_test, signal_test

HERE = Path(__file__).resolve().parent
FAKE = [sys.executable, str(HERE / "kill_fake_collect.py")]
FAKE_ARGS = ["--mode", "lr", "--limit", "12", "--samples", "2", "--max-tokens", "200"]
FAKE_ENV = {"LR_FAKE_TOKEN_S": "0.024"}  # ~0.8 s per record: kills land mid-record, and the
# 24 records outlast most of the 16 kills on a fast machine too (0.012 s: 11 of 16 hit here)


def _fake_cfg(tmp_path, **kw) -> KillTestConfig:
    kw = {"kinds": ("timed", "timed", "on-write", "torn"), **kw}
    return KillTestConfig(collect_args=FAKE_ARGS, out=tmp_path / "t.jsonl", command=FAKE,
                          env=FAKE_ENV, tear_env="LR_FAKE_TEAR_AT", min_s=0.3, max_s=3.5,
                          orphan_timeout_s=10, **kw)


def _assert_exactly_once(res: dict) -> None:
    assert res["final_rc"] == 0, res
    assert (res["lost"], res["duplicated"], res["invalid"], res["unexpected"]) == (0, 0, 0, 0), res
    assert res["read_traces_ok"] and not res["torn_tail_left"], res
    assert res["orphans_after_kill"] == 0 and res["final_orphans"] == 0, res["kills"]


def test_fake_engine_kill_loop(tmp_path):
    """16 SIGKILLs (timed, on write, mid-line, before the engines are up) with resumes: every
    (problem, sample, mode) once. ("startup" kills: on a fast machine the fake engines are up
    before any "timed" kill lands, and none was killed during start-up.)"""
    res = kill_test(_fake_cfg(tmp_path, n=16, seed=0,
                              kinds=("timed", "timed", "on-write", "torn", "startup")),
                    expected_keys("gsm8k", 12, "lr", samples=2))
    _assert_exactly_once(res)
    assert res["kills_that_hit"] >= 12, res["kills"]         # most kills hit a live run
    assert res["torn_tails_dropped"] >= 1, res["kills"]      # a torn line was cut on resume
    assert res["kills_on_write"] >= 3 and res["kills_during_startup"] >= 1, res["kills"]
    assert any(k["engines_seen"] for k in res["kills"])      # the fake cores were up, then reaped


def test_fake_engine_kill_loop_with_requests_in_flight(tmp_path):
    """--concurrency 4: four (problem, sample) pairs in flight on the same engines when the kills
    land; the resumes (same load setting) still end with every key exactly once."""
    # 2.4 s per record: four at a time, the 24 records outlast the 8 kills (kinds in turn: timed,
    # timed, on-write, torn)
    cfg = _fake_cfg(tmp_path, n=8, seed=1, cycle_kinds=True)
    cfg.collect_args = [*FAKE_ARGS, "--concurrency", "4"]
    cfg.env = {"LR_FAKE_TOKEN_S": "0.072"}
    res = kill_test(cfg, expected_keys("gsm8k", 12, "lr", samples=2))
    _assert_exactly_once(res)
    assert res["kills_that_hit"] >= 6, res["kills"]
    assert res["kills_on_write"] >= 1, res["kills"]


@pytest.mark.parametrize("sig,group", [(signal.SIGTERM, False), (signal.SIGINT, True)])
def test_fake_engine_signal_stops_cleanly(tmp_path, sig, group):
    """SIGTERM (to the process) / SIGINT (to the group, like Ctrl-C): exit 128+N, one line,
    child processes stopped, the records written before the signal kept; a resume completes."""
    cfg = _fake_cfg(tmp_path, n=0)
    r = signal_test(cfg, sig, after_lines=2, group=group, exit_timeout_s=30)
    assert r["sent"] and r["rc"] == 128 + sig, r
    assert len(r["error_lines"]) == 1 and signal.Signals(sig).name in r["error_lines"][0], r
    assert r["orphans"] == 0, r
    assert r["records_after"] >= r["lines_before"] >= 2, r
    assert r["exit_s"] < 10, r
    res = kill_test(cfg, expected_keys("gsm8k", 12, "lr", samples=2))  # n=0: just finish
    _assert_exactly_once(res)


# ---------------------------------------------------------------------------------- real engines

REAL_ARGS = ["--mode", "lr", "--dataset", "gsm8k", "--limit", "2", "--max-tokens", "24", "--no-probe",
             "--max-step-tokens", "16", "--depth", "2"]
# The kill loop restarts the engines N + 1 times: one engine (AR) keeps it within CI's budget;
# the two-engine (LR) shutdown is covered by the signal tests and benchmarks/bench_kill.py.
REAL_KILL_ARGS = ["--mode", "ar", "--dataset", "gsm8k", "--limit", "2", "--max-tokens", "24",
                  "--no-probe"]



@pytest.fixture
def vllm_held(prepared_cache):
    """Prepared models and the machine-wide vLLM lock for the whole test: the runs we start
    proceed under it (the lock treats an ancestor's hold as theirs), so kill times are not
    skewed by waits for another vLLM run."""
    from lrreal.lock import vllm_lock

    with vllm_lock():
        yield prepared_cache


@pytest.mark.real
@pytest.mark.slow
def test_real_engines_kill_loop(tmp_path, vllm_held):
    """N=3 SIGKILLs of `lr collect` on the vLLM engine - at a random time in start-up, inside
    the second record, on the write of a record - resumed each time: both records exactly once,
    valid; no engine process left behind."""
    cfg = KillTestConfig(collect_args=[*REAL_KILL_ARGS, "--cache-dir", str(vllm_held)],
                         out=tmp_path / "t.jsonl", n=3, seed=3, min_s=5, max_s=50,
                         kinds=("timed", "mid-record", "on-write"), cycle_kinds=True, mid_s=10,
                         orphan_timeout_s=30)
    res = kill_test(cfg, expected_keys("gsm8k", 2, "ar"))
    _assert_exactly_once(res)
    assert res["max_linger_s"] < 15, res["kills"]


@pytest.mark.real
@pytest.mark.slow
@pytest.mark.parametrize("sig,group,after", [(signal.SIGTERM, False, 0), (signal.SIGINT, True, 1)])
def test_real_engines_signal_stops_cleanly(tmp_path, vllm_held, sig, group, after):
    """SIGTERM while the engines start, SIGINT to the group (Ctrl-C) after the first record:
    exit 143 / 130 with one line, within seconds, no engine process left, nothing lost."""
    cfg = KillTestConfig(collect_args=[*REAL_ARGS, "--cache-dir", str(vllm_held)],
                         out=tmp_path / "t.jsonl", n=0)
    r = signal_test(cfg, sig, after_lines=after, group=group, exit_timeout_s=60)
    assert r["sent"] and r["rc"] == 128 + sig, r
    assert len(r["error_lines"]) == 1 and signal.Signals(sig).name in r["error_lines"][0], r
    assert r["orphans"] == 0, r
    assert r["records_after"] >= r["lines_before"] >= after, r  # a record in flight may land
    assert r["exit_s"] < 30, r


# ---------------------------------------------------------------------------------- units

def test_kill_stale_stops_processes_a_dead_owner_left(tmp_path, monkeypatch):
    """The back-up for a reaper that died with its owner: the next run's guard stops what the
    registry lists for a dead owner (same pid *and* start time only: a reused pid is spared)."""
    import json
    import subprocess

    from lrreal import reaper

    monkeypatch.setattr(reaper, "registry_dir", lambda: tmp_path)
    left = subprocess.Popen(["sleep", "600"])
    spared = subprocess.Popen(["sleep", "600"])
    try:
        procs = [[left.pid, reaper.start_time(left.pid)], [spared.pid, 1]]  # 1: another process
        (tmp_path / "dead.json").write_text(json.dumps({"owner": "999999999:1", "procs": procs}))
        (tmp_path / "alive.json").write_text(json.dumps({"owner": reaper.owner_token(),
                                                         "procs": [[spared.pid, procs[0][1]]]}))
        assert reaper.kill_stale() == [left.pid]
        assert left.wait(timeout=10) is not None and spared.poll() is None
        assert not (tmp_path / "dead.json").exists() and (tmp_path / "alive.json").exists()
    finally:
        for p in (left, spared):
            p.kill()
            p.wait()


def test_interrupted_carries_the_shell_exit_code():
    from lrreal.shutdown import Interrupted

    assert Interrupted(signal.SIGINT).exit_code == 130 and Interrupted(signal.SIGTERM).exit_code == 143
    assert isinstance(Interrupted(signal.SIGTERM), KeyboardInterrupt)  # passes `except Exception`
