"""Verifiers: exact/random/embedding (real MiniLM) and the judge client against a fake server."""
from __future__ import annotations

import asyncio
import json
import math
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from lrreal.verifiers import (EmbeddingVerifier, ExactVerifier, JudgeConfig, JudgeVerifier,
                              RandomVerifier, Verdict, make_verifier, normalize)
from lrcore.errors import UserError
from lrreal.verifiers.judge import judge_messages, p_aligned, reply_accepts

S1 = "In May she sold half as many clips: 48 / 2 = 24."
S2 = "Natalia sold 48/2 = 24 clips in May."
OTHER = "Altogether she sold 48 + 24 = 72 clips in April and May."


def run(coro):
    return asyncio.run(coro)


def test_exact_verifier_ignores_whitespace_and_case():
    v = ExactVerifier()
    yes = run(v.verify("The answer is 72.\n", "the  answer is\n72."))
    no = run(v.verify("The answer is 72.", "The answer is 73."))
    assert yes.accepted and not no.accepted
    assert yes.method == "exact" and yes.shortcut is False and yes.error is None
    assert 0 <= yes.end - yes.start < 0.1
    assert normalize(" A b\tC\n") == "abc"


def test_verdict_to_trace_is_relative_and_schema_shaped():
    v = Verdict(False, "judge", None, False, "timed out", start=100.5, end=101.0)
    assert v.to_trace(100.0) == {"start": 0.5, "end": 1.0, "verdict": False, "method": "judge",
                                 "score": None, "shortcut": False, "error": "timed out"}
    assert Verdict(True, "exact", None, False, None, 1.0, 1.0).to_trace(0.0)["verdict"] is True


def test_random_verifier_is_seeded_and_order_independent():
    pairs = [(f"step {i}", f"draft {i}") for i in range(400)]

    async def verdicts(v, order):
        return {i: (await v.verify(*pairs[i])).accepted for i in order}

    a = run(verdicts(RandomVerifier(0.3, seed=7), range(400)))
    b = run(verdicts(RandomVerifier(0.3, seed=7), reversed(range(400))))
    c = run(verdicts(RandomVerifier(0.3, seed=8), range(400)))
    assert a == b and a != c
    assert 0.22 < sum(a.values()) / 400 < 0.38
    assert run(RandomVerifier(0.0).verify("x", "x")).shortcut  # exact shortcut first
    assert not run(RandomVerifier(0.0, shortcut=False).verify("x", "x")).accepted
    with pytest.raises(UserError, match="random:P"):
        RandomVerifier(1.5)


@pytest.fixture(scope="module")
def minilm():
    v = EmbeddingVerifier(threshold=0.9)
    run(v.warm_up())
    return v


def test_embedding_verifier_with_the_real_minilm(minilm):
    same = run(minilm.verify(S2, "In May, Natalia sold half of 48, which is 24 clips."))
    nxt = run(minilm.verify(S2, OTHER))
    unrelated = run(minilm.verify(S2, "The weather in Paris is rainy today."))
    assert same.accepted and same.score > 0.9 and not same.shortcut
    assert not nxt.accepted and 0.5 < nxt.score < 0.9
    assert not unrelated.accepted and unrelated.score < 0.3
    assert same.method == "embedding" and same.end - same.start < 5
    assert run(minilm.verify("A  B", "a b")).shortcut


def test_embedding_verifier_model_loads_once_under_concurrency():
    v = EmbeddingVerifier(threshold=0.5)

    async def many():
        return await asyncio.gather(*(v.verify(S1, f"{S2} {i}") for i in range(4)))

    out = run(many())
    assert all(r.error is None and r.score is not None for r in out)
    assert v._model is not None and v.describe()["threshold"] == 0.5


def test_make_verifier_specs():
    assert isinstance(make_verifier("exact"), ExactVerifier)
    assert make_verifier("embedding:0.8").threshold == 0.8
    assert make_verifier("random:0.25", seed=3).p == 0.25
    j = make_verifier("judge-logprob:0.7", judge_url="http://127.0.0.1:1/v1")
    assert j.method == "judge-logprob" and j.config.logprob_threshold == 0.7 and j.base == "http://127.0.0.1:1"
    for spec, msg in [("nli", "unknown verifier"), ("embedding:x", "not a number"),
                      ("judge", "needs --judge-url"), ("exact:1", "no parameter")]:
        with pytest.raises(UserError, match=msg):
            make_verifier(spec)
    with pytest.raises(UserError, match="--judge-url"):
        make_verifier("judge", judge_url="localhost:8000")


# ---------------------------------------------------------------- judge protocol and client

def test_reference_accept_rule_and_prompt_shape():
    assert reply_accepts("aligned") and reply_accepts("aligned]")
    assert not reply_accepts("unal") and not reply_accepts("unaligned") and not reply_accepts("")
    m = judge_messages(S1, S2)
    assert [x["role"] for x in m] == ["system", "user", "assistant"] and m[2]["content"] == "["
    assert S1 in m[1]["content"] and S2 in m[1]["content"]
    assert "[aligned]" in m[1]["content"] and "[unaligned]" in m[1]["content"]
    assert m[1]["content"].index(S1) < m[1]["content"].index(S2)  # s1 = target, s2 = draft


def test_p_aligned_from_top_logprobs():
    top = [{"token": "aligned", "logprob": math.log(0.6)}, {"token": "unal", "logprob": math.log(0.3)},
           {"token": "x", "logprob": math.log(0.1)}]
    assert p_aligned(top) == pytest.approx(0.6 / 0.9)
    assert p_aligned([{"token": "x", "logprob": 0.0}]) is None


class FakeJudge:
    """A tiny OpenAI-compatible server: each POST takes the next scripted response."""

    def __init__(self, script):
        self.script, self.requests = list(script), []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _reply(self, status, body, delay=0.0):
                time.sleep(delay)
                raw = body if isinstance(body, bytes) else json.dumps(body).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(raw)))
                    self.end_headers()
                    self.wfile.write(raw)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def do_GET(self):
                fake.requests.append(("GET", self.path, None))
                self._reply(200, {"object": "list", "data": [{"id": "fake-judge"}]})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.requests.append(("POST", self.path, body))
                step = fake.script.pop(0) if len(fake.script) > 1 else fake.script[0]
                self._reply(*step)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def posts(self):
        return [r for r in self.requests if r[0] == "POST"]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def chat(content, top=None):
    choice = {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "length"}
    if top is not None:
        choice["logprobs"] = {"content": [{"token": content, "logprob": top[0]["logprob"], "top_logprobs": top}]}
    return {"id": "x", "object": "chat.completion", "choices": [choice]}


@pytest.fixture
def fake():
    servers = []

    def make(*script):
        servers.append(FakeJudge(script))
        return servers[-1]

    yield make
    for s in servers:
        s.close()


def judge(url, **kw):
    kw.setdefault("backoff_s", 0.01)
    return JudgeVerifier(JudgeConfig(url, **kw))


async def verify_once(v, a, b):
    try:
        return await v.verify(a, b)
    finally:
        await v.aclose()


def test_judge_aligned_and_unaligned_with_the_reference_request(fake):
    srv = fake((200, chat("aligned")), (200, chat("unal")))
    v = judge(srv.url + "/v1/")

    async def both():
        try:
            return await v.verify(S1, S2), await v.verify(S1, OTHER)
        finally:
            await v.aclose()

    yes, no = run(both())
    assert yes.accepted and yes.method == "judge" and yes.error is None and not yes.shortcut
    assert not no.accepted and no.error is None
    assert srv.requests[0][:2] == ("GET", "/v1/models")  # served model name discovered once
    posts = srv.posts()
    assert len(posts) == 2 and posts[0][1] == "/v1/chat/completions"
    body = posts[0][2]
    assert body["model"] == "fake-judge" and body["temperature"] == 0 and body["max_tokens"] == 1
    assert body["continue_final_message"] is True and body["add_generation_prompt"] is False
    assert body["messages"][-1] == {"role": "assistant", "content": "["}
    assert "logprobs" not in body


def test_judge_shortcut_skips_the_call(fake):
    srv = fake((200, chat("unal")))
    r = run(verify_once(judge(srv.url, model="m"), "x = 2", "X=2"))
    assert r.accepted and r.shortcut and r.method == "judge" and srv.requests == []


def test_judge_retries_http_500_then_succeeds(fake):
    srv = fake((500, {"error": "busy"}), (500, {"error": "busy"}), (200, chat("aligned")))
    r = run(verify_once(judge(srv.url, model="m", retries=2), S1, S2))
    assert r.accepted and r.error is None and len(srv.posts()) == 3


def test_judge_persistent_500_is_a_rejection_after_bounded_attempts(fake):
    srv = fake((500, {"error": "boom"}))
    r = run(verify_once(judge(srv.url, model="m", retries=2), S1, S2))
    assert not r.accepted and "HTTP 500" in r.error and "3 attempts" in r.error
    assert len(srv.posts()) == 3
    assert r.to_trace(r.start)["verdict"] is False and r.to_trace(r.start)["error"] == r.error


def test_judge_4xx_is_not_retried(fake):
    srv = fake((400, {"error": "bad model"}))
    r = run(verify_once(judge(srv.url, model="m", retries=3), S1, S2))
    assert not r.accepted and "HTTP 400" in r.error and len(srv.posts()) == 1


@pytest.mark.parametrize("reply, msg", [
    (b"<html>oops</html>", "non-JSON reply"),
    ({"choices": []}, "unexpected reply shape"),
    ({"nothing": 1}, "unexpected reply shape"),
])
def test_judge_garbage_is_a_rejection_not_a_crash(fake, reply, msg):
    srv = fake((200, reply))
    r = run(verify_once(judge(srv.url, model="m"), S1, S2))
    assert not r.accepted and msg in r.error


def test_judge_timeout_is_bounded(fake):
    srv = fake((200, chat("aligned"), 3.0))
    t0 = time.monotonic()
    r = run(verify_once(judge(srv.url, model="m", timeout_s=0.3, retries=1), S1, S2))
    assert not r.accepted and "timed out after 0.3 s (2 attempts)" in r.error
    assert time.monotonic() - t0 < 2.0 and r.end - r.start < 2.0


def test_judge_unreachable_server_is_a_rejection():
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    r = run(verify_once(judge(f"http://127.0.0.1:{port}", retries=1), S1, S2))
    assert not r.accepted and "connection failed" in r.error


def test_judge_logprob_variant_thresholds_p_aligned(fake):
    top = [{"token": "aligned", "logprob": math.log(0.7)}, {"token": "unal", "logprob": math.log(0.3)}]
    srv = fake((200, chat("aligned", top)))
    hi = run(verify_once(judge(srv.url, model="m", logprob_threshold=0.8), S1, S2))
    lo = run(verify_once(judge(srv.url, model="m", logprob_threshold=0.6), S1, S2))
    assert not hi.accepted and lo.accepted and lo.score == pytest.approx(0.7)
    assert lo.method == "judge-logprob" and lo.error is None
    body = srv.posts()[0][2]
    assert body["logprobs"] is True and body["top_logprobs"] == 20
    srv2 = fake((200, chat("x", [{"token": "x", "logprob": 0.0}])))
    r = run(verify_once(judge(srv2.url, model="m", logprob_threshold=0.5), S1, S2))
    assert not r.accepted and "no [aligned]/[unaligned] token" in r.error


def test_judge_concurrent_calls_share_one_client(fake):
    srv = fake((200, chat("aligned"), 0.2))
    v = judge(srv.url, model="m")

    async def many():
        try:
            return await asyncio.gather(*(v.verify(S1, f"{S2} ({i})") for i in range(8)))
        finally:
            await v.aclose()

    t0 = time.monotonic()
    out = run(many())
    assert all(r.accepted for r in out) and len(srv.posts()) == 8
    assert time.monotonic() - t0 < 1.5  # concurrent, not 8 x 0.2 s in sequence
