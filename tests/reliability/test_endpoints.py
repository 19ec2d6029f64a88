"""The judge endpoints: request bodies are capped, a bad request is a 4xx (never a
traceback or a dropped connection), and an API key is required when set (`lr judge serve
--api-key`, vLLM's flag; the fault judge implements the same rule) and sent by the client
($LR_JUDGE_API_KEY).
"""
from __future__ import annotations

import asyncio
import io
import socket
from contextlib import redirect_stderr

import httpx
import pytest

from harness.fault_judge import MAX_BODY_BYTES, FaultConfig, FaultJudge
from lrcore.errors import UserError
from lrreal.verifiers import JudgeConfig, JudgeVerifier, make_verifier

CHAT = b'{"model": "fault-judge", "messages": [{"role": "system", "content": "x"}, ' \
       b'{"role": "user", "content": "s1: 1\\n\\ns2: 1"}], "max_tokens": 1}'


def raw_request(url: str, head: str, body: bytes = b"") -> tuple[int, bytes]:
    """Send one hand-made HTTP request; (status, the whole reply)."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(head.encode() + b"\r\n\r\n" + body)
        reply = b""
        while b"\r\n\r\n" not in reply or len(reply) < reply.index(b"\r\n\r\n") + 4 + _length(reply):
            chunk = s.recv(65536)
            if not chunk:
                break
            reply += chunk
    return int(reply.split(b" ", 2)[1]), reply


def _length(reply: bytes) -> int:
    for line in reply.split(b"\r\n\r\n", 1)[0].split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return int(line.split(b":", 1)[1])
    return 0


@pytest.mark.parametrize("length,status", [
    (str(8 * 2**30), 413),              # announces 8 GB: refused before a byte is read
    (str(MAX_BODY_BYTES + 1), 413),
    ("abc", 400), ("-5", 400), ("1e9", 400), ("9" * 40, 400), ("", 400),
])
def test_fault_judge_refuses_bad_or_huge_bodies_with_a_4xx(length, status):
    err = io.StringIO()
    with redirect_stderr(err), FaultJudge(FaultConfig(mode="ok")) as fj:
        code, reply = raw_request(fj.url, f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                                          f"Content-Type: application/json\r\nContent-Length: {length}")
        assert code == status, reply[:300]
        assert b'"code": ' + str(status).encode() in reply
        # the server is still there and answers a good request
        ok = httpx.post(fj.url + "/v1/chat/completions", content=CHAT,
                        headers={"Content-Type": "application/json"}, timeout=10)
        assert ok.status_code == 200
        assert fj.stats()["chat_requests"] == 1     # refused bodies are not judge requests
    assert "Traceback" not in err.getvalue()


def test_fault_judge_body_within_the_cap_is_read():
    with FaultJudge(FaultConfig(mode="ok")) as fj:
        code, _ = raw_request(fj.url, f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                                      f"Content-Length: {len(CHAT)}", CHAT)
        assert code == 200


def test_api_key_is_required_when_set_and_sent_by_the_client(monkeypatch):
    with FaultJudge(FaultConfig(mode="ok", api_key="s3cret")) as fj:
        assert httpx.get(fj.url + "/v1/models", timeout=10).status_code == 401
        assert httpx.get(fj.url + "/v1/models", timeout=10,
                         headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert httpx.get(fj.url + "/health", timeout=10).status_code == 200   # as vLLM: open

        async def ask(v):
            try:
                await v.warm_up()
                return await v.verify("She sells 9 eggs.", "She sells 10 eggs, 9 of them.")
            finally:
                await v.aclose()

        monkeypatch.delenv("LR_JUDGE_API_KEY", raising=False)
        with pytest.raises(UserError, match="LR_JUDGE_API_KEY"):
            asyncio.run(ask(make_verifier("judge", judge_url=fj.url, judge_timeout_s=5,
                                          judge_retries=0)))
        monkeypatch.setenv("LR_JUDGE_API_KEY", "s3cret")
        r = asyncio.run(ask(make_verifier("judge", judge_url=fj.url, judge_timeout_s=5,
                                          judge_retries=0)))
        assert r.error is None
        monkeypatch.setenv("LR_JUDGE_API_KEY", "wrong")
        with pytest.raises(UserError, match="refused"):
            asyncio.run(ask(JudgeVerifier(JudgeConfig(fj.url, timeout_s=5, retries=0,
                                                      api_key="wrong"))))


@pytest.mark.parametrize("key", ["two words", "tab\tkey", "caf\u00e9"])
def test_a_key_that_cannot_be_an_http_header_is_one_line(monkeypatch, key):
    monkeypatch.setenv("LR_JUDGE_API_KEY", key)
    with pytest.raises(UserError, match="LR_JUDGE_API_KEY"):
        make_verifier("judge", judge_url="http://127.0.0.1:9")


def test_judge_serve_passes_the_key_to_vllm_in_its_environment_not_its_arguments():
    from lrreal.judge_server import JudgeServer, JudgeServerConfig

    srv = JudgeServer(JudgeServerConfig("draft", api_key="s3cret"))
    srv.port, srv.model_path = 8000, "/models/draft"
    assert srv.environment()["VLLM_API_KEY"] == "s3cret"
    assert "s3cret" not in " ".join(srv.command())
    assert "s3cret" not in repr(srv.config)


def test_judge_serve_refuses_a_bad_api_key_before_anything_starts(run_lr):
    code, out, err = run_lr("judge", "serve", "--model", "draft", "--api-key", "two words")
    assert code == 2 and err.startswith("lr: error: --api-key") and err.count("\n") == 1
