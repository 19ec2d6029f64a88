"""Judge faults: a judge that is slow, returns garbage, returns HTTP errors or dies mid-run.

Every case must end as a rejection whose `error` names the cause, within a bounded time, never an
exception out of the run; `lr collect` finishes and its summary counts the failed verifications.
The judge is `harness.fault_judge` (real HTTP on loopback, in-process or as its own process); the
collect-level tests run on the deterministic fake engine, the last test on real vLLM engines.
"""
from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from harness.fault_judge import KINDS, FaultConfig, FaultJudge
from lrcore.errors import UserError
from lrreal import collect as collect_mod
from lrreal.summary import summarize, verify_cause
from lrreal.verifiers import JudgeConfig, JudgeVerifier

ROOT = Path(__file__).resolve().parents[2]
S1 = "She sells 16 - 3 - 4 = 9 eggs."
S2 = "After 16 - 3 - 4 = 9, nine eggs are left."  # same numbers: the toy judge says aligned
S3 = "She sells 10 eggs."                          # different numbers: unaligned
TIMEOUT_S, RETRIES, BACKOFF_S = 0.5, 1, 0.05
SLACK_S = 1.5                                      # loopback, thread start-up, a busy 2-core CI box
CAUSE = {"slow": "timeout", "garbage": "bad reply", "http": "http", "die": "connection"}


def bound_s(timeout_s=TIMEOUT_S, retries=RETRIES, backoff_s=BACKOFF_S) -> float:
    """One exchange's worst case: every attempt runs to its deadline, plus the back-offs."""
    return (retries + 1) * timeout_s + backoff_s * (2 ** retries - 1)


def verifier(url, logprob=None, **kw):
    cfg = dict(timeout_s=TIMEOUT_S, retries=RETRIES, backoff_s=BACKOFF_S, logprob_threshold=logprob) | kw
    return JudgeVerifier(JudgeConfig(url, **cfg))


async def warm_and_verify(v, pairs):
    try:
        await v.warm_up()
        out = []
        for a, b in pairs:
            t0 = time.monotonic()
            out.append((await v.verify(a, b), time.monotonic() - t0))
        return out
    finally:
        await v.aclose()


# ------------------------------------------------------------------------- the fault server

def test_fault_server_binds_loopback_and_answers_the_judge_protocol():
    with FaultJudge(FaultConfig(mode="ok")) as fj:
        assert fj._server.server_address[0] == "127.0.0.1" and fj.url.startswith("http://127.0.0.1:")
        assert httpx.get(fj.url + "/v1/models").json()["data"][0]["id"] == "fault-judge"
        [(yes, _), (no, _)] = asyncio.run(warm_and_verify(verifier(fj.url), [(S1, S2), (S1, S3)]))
        assert yes.accepted and yes.error is None and not no.accepted and no.error is None
        [(lp, _)] = asyncio.run(warm_and_verify(verifier(fj.url, logprob=0.5), [(S1, S2)]))
        assert lp.accepted and lp.score == pytest.approx(0.9) and lp.method == "judge-logprob"
        assert fj.served == {"ok": 3} and fj.injected() == 0
        assert httpx.get(fj.url + "/faults").json()["served"] == {"ok": 3}


def test_mixed_schedule_is_seeded_and_follows_the_weights():
    def kinds(seed, n):
        fj = FaultJudge(FaultConfig(mode="mixed", seed=seed))
        return [fj.next_kind() for _ in range(n)], fj

    a, fj = kinds(0, 4000)
    assert a == kinds(0, 4000)[0] and a != kinds(1, 4000)[0]
    fams = {f: sum(n for k, n in fj.served.items() if k.split(":")[0] == f) / 4000
            for f in ("ok", "slow", "garbage", "http")}
    for fam, want in (("ok", 0.55), ("slow", 0.1), ("garbage", 0.15), ("http", 0.2)):
        assert abs(fams[fam] - want) < 0.03, (fam, fams)
    assert set(fj.served) == set(KINDS) - {"die"}  # every sub-kind occurs
    assert fj.injected() == 4000 - fj.served["ok"]
    with pytest.raises(ValueError, match="--mode"):
        FaultConfig(mode="flaky")


# ------------------------------------------------------- each fault kind against the verifier

@pytest.mark.parametrize("logprob", [None, 0.5], ids=["judge", "judge-logprob"])
@pytest.mark.parametrize("kind", [k for k in KINDS if k != "ok"])
def test_each_fault_is_a_rejection_with_its_cause_in_bounded_time(kind, logprob):
    # slow: 30 s, so only the client's deadline can end it; die: on the first chat request
    cfg = FaultConfig(mode=kind, slow_s=30.0, trickle_s=0.1, die_after=0 if kind == "die" else None)
    with FaultJudge(cfg) as fj:
        [(r, took)] = asyncio.run(warm_and_verify(verifier(fj.url, logprob), [(S1, S3)]))
    assert not r.accepted and r.error, r
    assert verify_cause(r.error) == CAUSE[kind.split(":")[0]], r.error
    assert took < bound_s() + SLACK_S and r.duration_s < bound_s() + SLACK_S
    assert r.to_trace(r.start)["verdict"] is False and r.to_trace(r.start)["error"] == r.error
    retryable = kind.startswith("slow") or kind in ("http:500", "http:503", "http:429", "die")
    if kind != "die":  # a dead server saw only the first attempt
        assert fj.chat_requests == (RETRIES + 1 if retryable else 1)
        assert f"({RETRIES + 1} attempts)" in r.error if retryable else "attempt" not in r.error


def test_trickled_reply_is_cut_at_the_deadline_not_at_the_read_gap():
    """Bytes every 0.1 s never trip a per-read timeout of 0.5 s; the whole-reply deadline must."""
    with FaultJudge(FaultConfig(mode="slow:trickle", slow_s=60.0, trickle_s=0.1)) as fj:
        [(r, took)] = asyncio.run(warm_and_verify(verifier(fj.url, retries=0), [(S1, S3)]))
    assert "timed out after 0.5 s" in r.error and took < bound_s(retries=0) + SLACK_S


def test_a_judge_down_at_start_up_is_a_user_error_not_a_run_of_rejections():
    fj = FaultJudge(FaultConfig()).start()
    url = fj.url
    fj.stop()
    with pytest.raises(UserError, match=r"--judge-url .*did not answer GET /v1/models.*lr judge serve"):
        asyncio.run(warm_and_verify(verifier(url), []))


def test_a_dead_judge_costs_one_refused_connection_per_step_and_is_used_again_when_back():
    fj = FaultJudge(FaultConfig(mode="die", die_after=1)).start()
    port = int(fj.url.rsplit(":", 1)[1])
    v = verifier(fj.url, retries=2, backoff_s=0.2)

    async def scenario():
        try:
            await v.warm_up()
            first, dying, dead = [await v.verify(S1, S2) for _ in range(3)]
            t0 = time.monotonic()
            dead2 = await v.verify(S1, S2)
            fast = time.monotonic() - t0
            with FaultJudge(FaultConfig(mode="ok", port=port)):  # the judge is restarted
                back = await v.verify(S1, S2)
            return first, dying, dead, dead2, fast, back
        finally:
            await v.aclose()

    first, dying, dead, dead2, fast, back = asyncio.run(scenario())
    assert first.accepted and first.error is None
    assert "(3 attempts)" in dying.error and dying.duration_s >= 0.6  # the full retry budget once
    for r in (dead, dead2):
        assert verify_cause(r.error) == "connection" and "(1 attempt; judge unreachable" in r.error
    assert fast < 0.5
    assert back.accepted and back.error is None


def start_process(*args, stats=None):
    cmd = [sys.executable, "-m", "harness.fault_judge", "--port", "0", *args]
    cmd += ["--stats-file", str(stats)] if stats else []
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    url = proc.stdout.readline().strip()
    assert url.startswith("http://127.0.0.1:"), proc.stderr.read()
    return proc, url


def test_judge_process_dying_mid_run_turns_later_checks_into_connection_rejections(tmp_path):
    proc, url = start_process("--mode", "die", "--die-after", "2", stats=tmp_path / "s.json")
    try:
        out = asyncio.run(warm_and_verify(verifier(url), [(S1, S2), (S1, S3), (S1, S3), (S1, S3)]))
        assert proc.wait(timeout=10) == 3  # the process really exited
    finally:
        if proc.poll() is None:
            proc.kill()
    (a, _), (b, _), (c, t_c), (d, t_d) = out
    assert a.accepted and a.error is None and not b.accepted and b.error is None  # answered before
    for r, took in ((c, t_c), (d, t_d)):  # the death, then refused connections
        assert not r.accepted and verify_cause(r.error) == "connection", r.error
        assert took < bound_s() + SLACK_S
    stats = json.loads((tmp_path / "s.json").read_text())
    assert stats["served"] == {"ok": 2, "die": 1} and stats["dead"]
    assert json.loads(proc.stdout.read().splitlines()[-1])["died"]["chat_requests"] == 3


def _burst(url: str, n: int) -> None:
    """n judge chat requests at once, each on its own connection (errors are expected: it dies)."""
    body = {"model": "m", "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": S1}]}

    async def one(client):
        try:
            await client.post(f"{url}/v1/chat/completions", json=body)
        except httpx.HTTPError:
            pass

    async def main():
        async with httpx.AsyncClient(timeout=10, limits=httpx.Limits(max_keepalive_connections=0)) as c:
            await asyncio.gather(*(one(c) for _ in range(n)))

    asyncio.run(main())


def test_judge_process_stats_file_is_whole_json_when_it_dies_mid_burst(tmp_path):
    """Handler threads rewrite the stats file while another dies with os._exit: the file left
    behind must be whole JSON (CI once read an empty one: a writer's truncation outlived the death)."""
    for attempt in range(5):
        stats = tmp_path / f"s{attempt}.json"
        proc, url = start_process("--mode", "mixed", "--mix", "garbage=1,http-error=1",
                                  "--die-after", "6", stats=stats)
        try:
            _burst(url, 24)
            assert proc.wait(timeout=10) == 3
        finally:
            if proc.poll() is None:
                proc.kill()
        got = json.loads(stats.read_text())
        # the file is the dying process's last word, as it printed it (no later write lost it)
        assert got == json.loads(proc.stdout.read().splitlines()[-1])["died"]
        assert got["dead"] and got["served"].get("die", 0) >= 1 and got["chat_requests"] >= 7
        assert not list(tmp_path.glob("*.tmp"))  # the temp files were all renamed into place


def test_judge_process_cli_prints_its_url_and_counts_until_sigterm():
    proc, url = start_process("--mode", "http-error", "--seed", "0")
    try:
        for _ in range(3):
            httpx.post(url + "/v1/chat/completions", json={"messages": [{}, {"content": "s1: a\n\ns2: b"}]})
        assert httpx.get(url + "/faults").json()["served"] == {"http:500": 1, "http:503": 1, "http:429": 1}
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
    assert json.loads(proc.stdout.read().splitlines()[-1])["stopped"]["injected"] == 3
    bad = subprocess.run([sys.executable, "-m", "harness.fault_judge", "--mode", "flaky"], cwd=ROOT,
                         capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert bad.returncode == 2 and bad.stderr.startswith("fault_judge: error: --mode 'flaky'")


# ------------------------------------------------------ `lr collect` on the fake engine



@pytest.fixture
def fake_collect(fake_collector):
    """`collect()` with fake engines whose drafts differ from the target at steps 1-3 (so every
    drafted step goes to the judge); the tests set the judge client's timeout/retries."""
    return fake_collector(0.004, 0.0002, wrong=lambda step, seed: step >= 1)


def judge_checks(recs):
    return [s["verify"] for r in recs for s in r["steps"]
            if s.get("verify") and s["verify"]["method"] == "judge" and not s["verify"]["shortcut"]]


def test_collect_against_a_mixed_judge_records_every_fault(fake_collect):
    """retries 0: one chat request per verification, so the trace's failures must equal the
    server's injected faults exactly, kind for cause."""
    from lrcore.traces import read_traces

    out = fake_collect
    with FaultJudge(FaultConfig(mode="mixed", seed=3, slow_s=5.0, trickle_s=0.05)) as fj:
        t0 = time.monotonic()
        s = collect_mod.collect(collect_mod.CollectSpec(mode="lr", limit=12, depth=2, max_tokens=200,
                                                        verifier="judge", judge_url=fj.url, out=str(out),
                                                        judge_timeout_s=0.3, judge_retries=0,
                                                        # every judge call decides a position
                                                        # (eager judging also asks for drafts a
                                                        # rejection then cancels: unrecorded)
                                                        judge_timing="deferred"))
        wall = time.monotonic() - t0
        served = dict(fj.served)
    assert s.written == 12 and s.failed == []
    recs = read_traces(out)
    checks = judge_checks(recs)
    errors = [v for v in checks if v["error"]]
    assert len(checks) == sum(served.values()) >= 12  # every request is a recorded verification
    assert all(v["verdict"] is False for v in errors)
    [row] = summarize(recs)
    assert row["verifications_failed"] == len(errors) == fj.injected() > 0
    by_family = {}
    for kind, n in served.items():
        if kind != "ok":
            cause = CAUSE[kind.split(":")[0]]
            by_family[cause] = by_family.get(cause, 0) + n
    assert row["verification_failures_by_cause"] == by_family
    assert wall < 12 * 3 * (0.3 + SLACK_S)  # each check ends by its deadline


def test_collect_survives_a_judge_dying_mid_run_and_the_json_summary_counts_it(fake_collect, run_lr, tmp_path):
    from lrcore.traces import read_traces

    out = fake_collect
    proc, url = start_process("--mode", "die", "--die-after", "5", stats=tmp_path / "s.json")
    try:
        code, stdout, err = run_lr("collect", "--mode", "lr", "--limit", "6", "--depth", "2",
                                   "--max-tokens", "200", "--verifier", "judge", "--judge-url", url,
                                   "--judge-timeout", "2", "--judge-retries", "1",
                                   "--judge-timing", "deferred",  # every call is a recorded check
                                   "--out", out, "--json")
        assert proc.wait(timeout=10) == 3
    finally:
        if proc.poll() is None:
            proc.kill()
    assert code == 0, err
    res = json.loads(stdout)
    assert res["written"] == 6 and res["failed"] == []
    [row] = res["summary"]
    checks = judge_checks(read_traces(out))
    errors = [v for v in checks if v["error"]]
    assert json.loads((tmp_path / "s.json").read_text())["served"] == {"ok": 5, "die": 1}
    assert len(checks) - len(errors) == 5  # the answers before it died; everything after failed
    assert row["verifications_failed"] == len(errors) > 5
    assert row["verification_failures_by_cause"] == {"connection": len(errors)}
    assert all(v["verdict"] is False and "connection failed" in v["error"] for v in errors)


# ------------------------------------------------------------- end to end on real engines
# tests/real/test_engine_real.py::test_lr_collect_against_a_faulty_judge_that_dies_mid_run, on that
# module's engines (an engine start of its own cost more than the test)
