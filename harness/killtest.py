"""Kill test: SIGKILL `lr collect` at random points N times, resume each time, then check the file.

    res = kill_test(collect_args, n=20, seed=0, expected=expected_keys("gsm8k", 2, "lr"))
    assert res["lost"] == res["duplicated"] == res["invalid"] == res["orphans_after_kill"] == 0

Each run is `python -m cli collect ARGS --out OUT --resume --json` in its own session, so every
process it starts (engine cores, their workers, the reaper) is found by session id even after
re-parenting. Kill points (seeded) are of these kinds:
- "timed":    SIGKILL after a uniform random delay in [min_s, max_s] from process start (covers
              start-up, engine loading and the middle of a record);
- "startup":  SIGKILL after a uniform random delay in [0, min_s]: before the engines are up on
              any machine (a fast one loads them before a "timed" kill can land);
- "on-write": SIGKILL the moment the trace file grows, i.e. during or right after a record's
              write()/fsync();
- "mid-record": once this run has written a record, SIGKILL after a further uniform random
              delay in [0, mid_s] (inside the next record, with the engines warm);
- "torn":     (fake engine only, `tear_env`) the writer SIGKILLs itself halfway through a line, a
              deterministic torn tail.
After each kill the parent is gone; its session must empty within `orphan_timeout_s` (survivors
are counted as orphans, then killed so the next run is not starved of memory). A final run
without kills must finish with exit 0; then every expected (problem, sample, mode) key must be
in the file exactly once and every line must validate.

`signal_test` sends SIGTERM/SIGINT once and checks the clean shutdown (exit code, one-line
message, no process left, nothing already written lost).
"""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from lrreal.reaper import cmdline, session_members

ROOT = Path(__file__).resolve().parents[1]
ORPHAN_TIMEOUT_S = 20.0   # reaper: SIGTERM, 5 s grace, SIGKILL; engines usually go in 1-6 s
POLL_S = 0.002            # "on-write" kills watch the file size this often


@dataclass
class KillTestConfig:
    collect_args: list[str]                       # e.g. ["--mode", "lr", "--limit", "2", ...]
    out: Path
    n: int = 5
    seed: int = 0
    min_s: float = 0.5                            # "timed" kill window after process start
    max_s: float = 60.0
    kinds: tuple[str, ...] = ("timed", "timed", "on-write")   # drawn uniformly per kill
    cycle_kinds: bool = False                     # True: kinds in order, kill i gets kinds[i % k]
    mid_s: float = 20.0                           # "mid-record": delay window after a write
    command: list[str] = field(default_factory=lambda: [sys.executable, "-m", "cli"])
    env: dict = field(default_factory=dict)       # extra environment of every run
    tear_env: str | None = None                   # env var that makes the writer tear line k
    run_timeout_s: float = 900.0                  # the final (unkilled) run
    orphan_timeout_s: float = ORPHAN_TIMEOUT_S


def expected_keys(dataset: str, limit: int | None, mode: str, samples: int = 1,
                  offset: int = 0) -> set[tuple]:
    from lrreal.datasets import load_problems, with_samples

    return {(p.id, s, mode) for p, s in with_samples(load_problems(dataset, limit, offset), samples)}


def _argv(cfg: KillTestConfig) -> list[str]:
    return [*cfg.command, "collect", *cfg.collect_args, "--out", str(cfg.out), "--resume", "--json"]


def _start(cfg: KillTestConfig, extra_env: dict | None = None, log=None) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), **cfg.env, **(extra_env or {})}
    return subprocess.Popen(_argv(cfg), cwd=ROOT, env=env, start_new_session=True,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=log if log is not None else subprocess.DEVNULL)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _line_count(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except OSError:
        return 0


def _engines_seen(sid: int) -> bool:
    return any("VLLM::" in cmdline(p) for p in session_members(sid))


def wait_session_empty(sid: int, timeout_s: float) -> tuple[list[int], float]:
    """Wait until no process of session SID is left; (survivors, seconds waited)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout_s:
        if not session_members(sid):
            return [], time.monotonic() - t0
        time.sleep(0.05)
    return session_members(sid), time.monotonic() - t0


def _kill_leftovers(pids: list[int]) -> None:
    for p in pids:
        try:
            os.kill(p, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _kill_once(cfg: KillTestConfig, kind: str, delay: float, tear_at: int) -> dict:
    """One run killed by SIGKILL; returns what happened."""
    before = _size(cfg.out)
    extra = {cfg.tear_env: str(tear_at)} if kind == "torn" and cfg.tear_env else {}
    t0 = time.monotonic()
    p = _start(cfg, extra)
    engines = False
    killed_at = mid_deadline = None
    while p.poll() is None:
        now = time.monotonic() - t0
        if not engines and int(now / 0.25) != int((now - POLL_S) / 0.25):
            engines = _engines_seen(p.pid)  # a /proc scan: only every 0.25 s
        if kind == "mid-record" and mid_deadline is None and _size(cfg.out) != before:
            mid_deadline = now + delay
        if ((kind in ("timed", "startup") and now >= delay)
                or (kind == "on-write" and _size(cfg.out) != before)
                or (mid_deadline is not None and now >= mid_deadline)):
            os.kill(p.pid, signal.SIGKILL)  # the parent only, as the OOM killer or `kill -9` do
            killed_at = now
            break
        time.sleep(POLL_S)
    p.wait()
    survivors, linger = wait_session_empty(p.pid, cfg.orphan_timeout_s)
    _kill_leftovers(survivors)
    if p.stdout:
        p.stdout.close()
    grew = _size(cfg.out) != before
    if killed_at is None and p.returncode != -signal.SIGKILL:
        phase = "finished first"
    elif kind in ("on-write", "torn"):
        phase = "writing a record"
    elif kind == "mid-record":
        phase = "mid-record (after a write)"
    else:
        phase = ("mid-record (after a write)" if grew else
                 "engines up, first record" if engines else "start-up (no engine yet)")
    return {"kind": kind, "phase": phase,
            "t_s": round(killed_at if killed_at is not None else time.monotonic() - t0, 3),
            "rc": p.returncode, "killed": killed_at is not None or p.returncode == -signal.SIGKILL,
            "engines_seen": engines, "grew": grew,
            "lines_after": _line_count(cfg.out), "orphans": len(survivors),
            "orphan_cmds": [cmdline(x)[:80] for x in survivors], "linger_s": round(linger, 2)}


def check_file(path: Path, expected: set[tuple]) -> dict:
    """Exactly-once and validity of every expected key, straight from the file's lines."""
    from lrcore.errors import UserError
    from lrcore.traces import TraceError, read_traces, record_key, validate_record

    counts: dict[tuple, int] = {}
    invalid, errors = 0, []
    data = path.read_bytes() if path.exists() else b""
    lines = data.split(b"\n")
    torn_tail = bool(lines and lines[-1].strip())
    for i, raw in enumerate(lines[:-1] if lines else []):
        if not raw.strip():
            continue
        try:
            rec = validate_record(json.loads(raw), f"{path}:{i + 1}")
        except (ValueError, TraceError, UserError) as e:
            invalid += 1
            errors.append(str(e)[:200])
            continue
        k = record_key(rec)
        counts[k] = counts.get(k, 0) + 1
    try:
        read_ok = len(read_traces(path, strict=True)) == sum(counts.values())
    except (UserError, TraceError) as e:
        read_ok, errors = False, errors + [str(e)[:200]]
    return {"expected": len(expected), "present": len(counts),
            "lost": len(expected - set(counts)), "duplicated": sum(c - 1 for c in counts.values()),
            "unexpected": len(set(counts) - expected), "invalid": invalid, "torn_tail": torn_tail,
            "read_traces_ok": read_ok, "errors": errors[:5]}


def kill_test(cfg: KillTestConfig, expected: set[tuple], progress=None) -> dict:
    """N SIGKILLs with resumes, then a final run; the result dict the tests and benchmark use."""
    rng = random.Random(cfg.seed)
    t0 = time.monotonic()
    kills = []
    for i in range(cfg.n):
        kind = cfg.kinds[i % len(cfg.kinds)] if cfg.cycle_kinds else rng.choice(cfg.kinds)
        delay = (rng.uniform(0.0, cfg.mid_s) if kind == "mid-record" else
                 rng.uniform(0.0, cfg.min_s) if kind == "startup" else rng.uniform(cfg.min_s, cfg.max_s))
        tear_at = rng.randint(1, 3)
        kills.append(_kill_once(cfg, kind, delay, tear_at))
        if progress:
            progress(i + 1, kills[-1])
    with open(cfg.out.with_name(cfg.out.name + ".final.log"), "w") as log:
        p = _start(cfg, log=log)
        try:
            out, _ = p.communicate(timeout=cfg.run_timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, _ = p.communicate()
    final_left, _ = wait_session_empty(p.pid, cfg.orphan_timeout_s)
    _kill_leftovers(final_left)
    try:
        final = json.loads(out.decode().strip().splitlines()[-1])
    except (ValueError, IndexError):
        final = None
    check = check_file(cfg.out, expected)
    dropped = sorted(x.name for x in cfg.out.parent.glob(cfg.out.name + ".truncated-*"))
    return {"N": cfg.n, "seed": cfg.seed, "expected": check["expected"], "lost": check["lost"],
            "duplicated": check["duplicated"], "invalid": check["invalid"],
            "unexpected": check["unexpected"], "read_traces_ok": check["read_traces_ok"],
            "torn_tail_left": check["torn_tail"], "errors": check["errors"],
            "orphans_after_kill": sum(k["orphans"] for k in kills),
            "max_linger_s": max((k["linger_s"] for k in kills), default=0.0),
            "kills_that_hit": sum(k["killed"] for k in kills),
            "kills_during_startup": sum(k["killed"] and not k["engines_seen"] for k in kills),
            "kills_on_write": sum(k["killed"] and k["kind"] in ("on-write", "torn") for k in kills),
            "torn_tails_dropped": len(dropped),
            "phases": {ph: sum(k["phase"] == ph for k in kills) for ph in sorted({k["phase"] for k in kills})},
            "kill_times": [k["t_s"] for k in kills], "kills": kills,
            "final_rc": p.returncode, "final_written": final and final.get("written"),
            "final_skipped": final and final.get("skipped"), "final_orphans": len(final_left),
            "wall_s": round(time.monotonic() - t0, 1)}


def signal_test(cfg: KillTestConfig, sig: int, after_lines: int = 1, group: bool = False,
                timeout_s: float = 600.0, exit_timeout_s: float = 60.0) -> dict:
    """Start a run, wait until the file has `after_lines` more lines (0: until engines are up),
    send SIG (to the process, or its whole group like Ctrl-C in a terminal), and check it stops
    cleanly: exit code 128+SIG, a one-line `lr: error:` message, no process of its session left,
    every line written before the signal still there and valid."""
    start_lines = _line_count(cfg.out)
    log_path = cfg.out.with_name(f"{cfg.out.name}.{signal.Signals(sig).name}.log")
    t0 = time.monotonic()
    with open(log_path, "w") as log:
        p = _start(cfg, log=log)
        while p.poll() is None and time.monotonic() - t0 < timeout_s:
            if (after_lines and _line_count(cfg.out) >= start_lines + after_lines) or \
               (not after_lines and _engines_seen(p.pid)):
                break
            time.sleep(0.05)
        lines_before = _line_count(cfg.out)
        t_sig = time.monotonic()
        sent = p.poll() is None
        if sent:
            (os.killpg if group else os.kill)(p.pid, sig)
        try:
            p.wait(timeout=exit_timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        exit_s = time.monotonic() - t_sig
    survivors, _ = wait_session_empty(p.pid, 2.0)  # the reaper may take a moment after we exit
    _kill_leftovers(survivors)
    if p.stdout:
        p.stdout.close()
    err = [ln for ln in log_path.read_text(errors="replace").splitlines() if ln.startswith("lr: error:")]
    from lrcore.traces import load_traces
    kept = len(load_traces(cfg.out).records) if cfg.out.exists() else 0
    return {"signal": signal.Signals(sig).name, "group": group, "sent": sent, "rc": p.returncode,
            "exit_s": round(exit_s, 2), "signalled_at_s": round(t_sig - t0, 2),
            "error_lines": err, "lines_before": lines_before, "records_after": kept,
            "orphans": len(survivors), "orphan_cmds": [cmdline(x)[:80] for x in survivors],
            "log": str(log_path)}
