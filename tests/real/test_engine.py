"""Engine plumbing without vLLM: stat sink, SD histogram, lock, n-gram config."""
from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from types import SimpleNamespace as NS

import pytest

from lrreal.engine import _StatSink, finish_of, ngram_config, sd_summary, terminate_zmq
from lrcore.errors import UserError
from lrreal.lock import vllm_lock

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _stats(details=None, sd=None):
    return NS(iteration_details=details, spec_decoding_stats=sd)


def test_stat_sink_records_passes_and_sd_counters():
    sink = _StatSink()
    mark = sink.mark()
    sink.record(_stats(NS(is_dummy=False, num_ctx_requests=1, num_ctx_tokens=120,
                          num_generation_requests=2, num_generation_tokens=2, elapsed_ms=400.0)))
    sink.record(_stats(NS(is_dummy=True, num_ctx_requests=0, num_ctx_tokens=0,
                          num_generation_requests=0, num_generation_tokens=0, elapsed_ms=0.0)))
    # 3 verification passes accepting 0, 2 and 3 of 4 drafted tokens.
    sink.record(_stats(None, NS(num_drafts=3, num_draft_tokens=12, num_accepted_tokens=5,
                                num_accepted_tokens_per_pos=[2, 2, 1, 0])))
    sink.record(None)
    assert len(sink.passes) == 1
    p = sink.passes[0]
    assert (p["batch_size"], p["tokens_scheduled"], p["duration_s"]) == (3, 122, 0.4)
    sd = sd_summary(mark[1], sink.mark()[1], num_spec=4)
    assert sd["drafted"] == 12 and sd["accepted"] == 5 and sd["num_drafts"] == 3
    assert sd["accepted_length_hist"] == [1, 0, 1, 1, 0]
    assert sum(k * n for k, n in enumerate(sd["accepted_length_hist"])) == sd["accepted"]


def test_finish_of_reads_vllm_s_finish_and_stop_reasons():
    """vLLM reports EOS as finish "stop" without a stop string (None, or a stop token id); an
    abort, error or repetition end is no answer, not an EOS."""
    assert finish_of("length", None) == "length"
    assert finish_of("stop", "\n\n") == "stop"
    assert finish_of("stop", None) == "eos" and finish_of("stop", 151643) == "eos"
    for reason in ("abort", "error", "repetition", None):
        with pytest.raises(RuntimeError, match="finish reason"):
            finish_of(reason, None)


def test_terminate_zmq_closes_the_client_s_sockets_and_its_context():
    """A stopped client's context is terminated at once (its queued message dropped: linger 0),
    so the garbage collector never meets it open; a socket the client does not list keeps the
    context alive without blocking the caller, and the context ends once that socket closes."""
    zmq = pytest.importorskip("zmq")
    import time

    import socket as so

    with so.socket() as probe:           # a port no one listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    ctx = zmq.Context()
    pull = ctx.socket(zmq.PULL)
    pull.bind("inproc://out")
    push = ctx.socket(zmq.PUSH)          # as to a dead engine core: the send stays queued, and
    push.connect(f"tcp://127.0.0.1:{port}")   # with the default linger term() would wait for ever
    push.send(b"abort")
    res = NS(ctx=ctx, output_socket=pull, input_socket=push, first_req_send_socket=None)
    assert terminate_zmq(res, wait_s=5.0) and ctx.closed and pull.closed and push.closed
    assert terminate_zmq(res) and terminate_zmq(NS())          # already done; nothing to do

    ctx = zmq.Context()
    stray = ctx.socket(zmq.PAIR)         # not one of the client's: term() waits for it
    t0 = time.monotonic()
    assert terminate_zmq(NS(ctx=ctx), wait_s=0.2) is False
    assert time.monotonic() - t0 < 2.0 and not ctx.closed
    stray.close(linger=0)
    for _ in range(100):
        if ctx.closed:
            break
        time.sleep(0.02)
    assert ctx.closed


def test_sd_summary_is_a_window_difference():
    before = {"num_drafts": 2, "drafted": 8, "accepted": 3, "per_pos": [2, 1]}
    after = {"num_drafts": 5, "drafted": 20, "accepted": 7, "per_pos": [4, 2, 1]}
    sd = sd_summary(before, after, num_spec=4)
    assert sd["num_drafts"] == 3 and sd["drafted"] == 12 and sd["accepted"] == 4
    assert sd["accepted_per_position"] == [2, 1, 1, 0]
    assert sum(sd["accepted_length_hist"]) == 3
    assert sum(k * n for k, n in enumerate(sd["accepted_length_hist"])) == 4


def test_vllm_lock_is_exclusive(tmp_path):
    path = str(tmp_path / "lock")
    # another process holds it: this one refuses at once (its one-line error) with wait=False
    code = ("import sys; from lrreal.lock import vllm_lock\n"
            "with vllm_lock(sys.argv[1]):\n    print('held', flush=True); sys.stdin.read()")
    holder = subprocess.Popen([sys.executable, "-c", code, path], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, cwd=Path(__file__).parents[2])
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(UserError, match="another vLLM run is active on this machine"):
            with vllm_lock(path, wait=False):
                pass
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)
    with vllm_lock(path):
        fd = os.open(path, os.O_RDWR)
        with pytest.raises(BlockingIOError):  # a plain flock(1) sees it held
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.close(fd)
        with vllm_lock(path, wait=False):  # this process holds it: reentrant (the judge's case)
            pass
    with vllm_lock(path, wait=False):  # released on exit
        pass


def test_ngram_config_uses_vllm_names():
    cfg = ngram_config(6, 2)
    assert cfg == {"method": "ngram", "num_speculative_tokens": 6, "prompt_lookup_max": 2,
                   "prompt_lookup_min": 1}


def test_vllm_lock_inside_an_outer_flock_command(tmp_path):
    """`flock LOCK lr collect ...` (the team convention) must not deadlock on our own lock."""
    import subprocess
    import sys

    path = tmp_path / "lock"
    code = ("import sys; sys.path.insert(0, %r)\n"
            "from lrreal.lock import vllm_lock\n"
            "with vllm_lock(%r, wait=False):\n    print('inside')\n") % (str(ROOT), str(path))
    p = subprocess.run(["flock", str(path), sys.executable, "-c", code], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "inside"
