"""A small OpenAI-compatible judge server that injects faults, to rehearse a collection run
against a judge that is slow, returns garbage, returns HTTP errors or dies mid-run.

    python -m harness.fault_judge --mode mixed --seed 0 --port 0    # prints its URL, then serves
    lr collect --mode lr --verifier judge --judge-url http://127.0.0.1:PORT ...

    with FaultJudge(FaultConfig(mode="garbage")) as fj:             # in-process (tests)
        ... fj.url ...; fj.served  # {"ok": 3, "garbage:non-json": 1, ...}

It serves GET /v1/models, GET /health, GET /faults (what it served so far, by kind) and
POST /v1/chat/completions, in the shapes `lrreal.verifiers.judge` reads (a one-token reply, and
`logprobs.content[0].top_logprobs` when the request asks for logprobs). It binds 127.0.0.1 only.

Each chat request gets one *kind*, from the fixed mode or from a seeded random mix:

  ok           a verdict: "aligned" when s1 and s2 state the same numbers (or, with no numbers,
               the same words), else "unaligned" (a toy judge, deterministic)
               (s1 and s2 as the shipped judge prompts show them: "s1: ...", or between
               <s1>...</s1> and <s2>...</s2> markers)
  slow:stall   answers after `slow_s` (longer than any sane client timeout)
  slow:trickle sends headers at once, then the body one byte every `trickle_s` (each gap is
               short; only a deadline on the whole reply catches it)
  garbage:*    non-json, wrong-shape (JSON without choices), empty-choices, no-verdict (a reply
               without an [aligned]/[unaligned] token)
  http:CODE    500, 503, 429, 400, 404 with a JSON error body
  die          the server dies on this request without answering (a separate process exits;
               in-process it closes its sockets and refuses everything after)

Modes: ok | slow | garbage | http-error | die | mixed, or one kind (e.g. `http:503`,
`garbage:no-verdict`). A family mode cycles through its kinds in order. `die_after=K` (any mode;
mode `die` = ok with K=3 by default) answers K chat requests, then dies on the next.
/v1/models never faults (a judge that is down at start-up is a start-up error, not a verdict).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import signal
import sys
import tempfile
import threading
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HOST = "127.0.0.1"  # loopback only: a rehearsal server must not be reachable from elsewhere
MODEL_ID = "fault-judge"
FAMILIES = {
    "ok": ["ok"],
    "slow": ["slow:stall", "slow:trickle"],
    "garbage": ["garbage:non-json", "garbage:wrong-shape", "garbage:empty-choices", "garbage:no-verdict"],
    "http-error": ["http:500", "http:503", "http:429", "http:400", "http:404"],
    "die": ["ok"],
}
KINDS = [k for fam in ("ok", "slow", "garbage", "http-error") for k in FAMILIES[fam]] + ["die"]
DEFAULT_MIX = {"ok": 0.55, "slow": 0.1, "garbage": 0.15, "http-error": 0.2}
DEFAULT_DIE_AFTER = 3  # mode `die`: a few good answers first, so the run is truly mid-way
# A judge request holds two reasoning steps (a few KB); a body announced larger is refused with
# 413 before a byte of it is read, so a client announcing gigabytes costs nothing.
MAX_BODY_BYTES = 1 << 20
_CONTENT_LENGTH = re.compile(r"\s*(\d{1,18})\s*")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_STEPS = re.compile(r"s1: (.*)\n\ns2: (.*)\Z", re.S)
_MARKED = re.compile(r"<s1>\s*(.*?)\s*</s1>.*?<s2>\s*(.*?)\s*</s2>", re.S)  # --judge-prompt paper


@dataclass
class FaultConfig:
    mode: str = "ok"
    seed: int = 0
    mix: dict = field(default_factory=lambda: dict(DEFAULT_MIX))  # mode mixed: family -> weight
    die_after: int | None = None  # answer this many chat requests, then die on the next
    slow_s: float = 60.0          # slow:stall waits this long (clients time out well before)
    trickle_s: float = 0.2        # slow:trickle: seconds between body bytes
    port: int = 0                 # 0: a free port
    api_key: str | None = field(default=None, repr=False)  # set: /v1/* need "Bearer KEY" (401)

    def __post_init__(self):
        if self.mode not in FAMILIES and self.mode != "mixed" and self.mode not in KINDS:
            raise ValueError(f"--mode {self.mode!r}: use one of {', '.join([*FAMILIES, 'mixed'])} "
                             f"or a kind ({', '.join(KINDS)})")
        bad = set(self.mix) - set(DEFAULT_MIX) - {"die"}
        if bad or any(w < 0 for w in self.mix.values()) or sum(self.mix.values()) <= 0:
            raise ValueError(f"--mix {self.mix}: weights >= 0 over {', '.join(DEFAULT_MIX)}, die")
        if self.mode == "die" and self.die_after is None:
            self.die_after = DEFAULT_DIE_AFTER


def ok_verdict(prompt: str) -> str:
    """The toy judge: the same numbers (as a multiset) -> aligned; no numbers: the same words."""
    m = _STEPS.search(prompt) or _MARKED.search(prompt)
    if not m:
        return "unaligned"
    s1, s2 = m.groups()
    n1, n2 = _NUMBER.findall(s1), _NUMBER.findall(s2)
    if n1 or n2:
        return "aligned" if sorted(n1) == sorted(n2) else "unaligned"
    return "aligned" if s1.lower().split() == s2.lower().split() else "unaligned"


def chat_reply(content: str, logprobs: bool, p_aligned: float | None = None) -> dict:
    choice = {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "length"}
    if logprobs:
        p = p_aligned if p_aligned is not None else (0.9 if content == "aligned" else 0.1)
        top = [{"token": "aligned", "logprob": math.log(p)}, {"token": "un", "logprob": math.log(1 - p)}]
        if content not in ("aligned", "un", "unaligned"):
            top = [{"token": content, "logprob": 0.0}]
        choice["logprobs"] = {"content": [{"token": content, "logprob": top[0]["logprob"],
                                           "top_logprobs": top}]}
    return {"id": "fault-judge", "object": "chat.completion", "model": MODEL_ID, "choices": [choice]}


class FaultJudge:
    """The server; `start()` / `stop()` or a context manager. `served` counts chat requests by kind."""

    def __init__(self, config: FaultConfig, on_die=None):
        self.config = config
        self.rng = random.Random(config.seed)
        self.served: Counter = Counter()
        self.chat_requests = 0
        self.last_request: dict | None = None  # the body of the latest chat request (tests)
        self.dead = False
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._on_die = on_die or self._die_in_process
        self._server: ThreadingHTTPServer | None = None

    # -- the schedule --------------------------------------------------------------------------

    def next_kind(self) -> str:
        """The kind of the next chat request (thread-safe; counted as served)."""
        c = self.config
        with self._lock:
            i = self.chat_requests
            self.chat_requests += 1
            if self.dead or (c.die_after is not None and i >= c.die_after):
                kind = "die"
            elif c.mode in FAMILIES:
                kinds = FAMILIES[c.mode]
                kind = kinds[i % len(kinds)]
            elif c.mode == "mixed":
                fams = list(c.mix)
                fam = self.rng.choices(fams, weights=[c.mix[f] for f in fams])[0]
                kind = "die" if fam == "die" else self.rng.choice(FAMILIES[fam])
            else:
                kind = c.mode  # one kind, e.g. http:503
            self.served[kind] += 1
            return kind

    def injected(self) -> int:
        """Chat requests that got a fault (everything but ok)."""
        return sum(n for k, n in self.served.items() if k != "ok")

    def stats(self) -> dict:
        with self._lock:
            return {"mode": self.config.mode, "seed": self.config.seed, "chat_requests": self.chat_requests,
                    "served": dict(self.served), "injected": self.injected(), "dead": self.dead}

    # -- lifecycle -----------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self._server.server_address[1]}"

    def start(self) -> "FaultJudge":
        self._server = ThreadingHTTPServer((HOST, self.config.port), _Handler)
        self._server.daemon_threads = True
        self._server.judge = self
        threading.Thread(target=self._server.serve_forever, name="fault-judge", daemon=True).start()
        return self

    def stop(self) -> None:
        self.stopping.set()  # wakes sleeping slow replies
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def _die_in_process(self) -> None:
        """Stop listening (new connections are refused); open connections are dropped by the
        handlers, which see `dead`. shutdown() must not run on a handler thread's own loop."""
        self.dead = True
        threading.Thread(target=self.stop, daemon=True).start()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, like vLLM's server
    timeout = 120                  # an idle keep-alive connection is closed after this

    def log_message(self, *args):
        pass

    @property
    def judge(self) -> FaultJudge:
        return self.server.judge

    def _send(self, status: int, body, content_type="application/json") -> None:
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (timed out): nothing to do

    def _drop(self) -> None:
        self.close_connection = True
        try:
            self.connection.shutdown(2)
        except OSError:
            pass

    def _authorized(self) -> bool:
        """vLLM's --api-key rule: /v1/* routes need `Authorization: Bearer KEY`; else 401."""
        key = self.judge.config.api_key
        if not key or not self.path.startswith("/v1") or \
                self.headers.get("Authorization", "") == f"Bearer {key}":
            return True
        self._send(401, {"error": {"message": "Unauthorized", "code": 401}})
        return False

    def _body(self) -> bytes | None:
        """The request body; None after answering 400 (a Content-Length that is not a number)
        or 413 (over MAX_BODY_BYTES), closing the connection (its body is never read)."""
        text = self.headers.get("Content-Length")
        if text is None:
            return b""
        m = _CONTENT_LENGTH.fullmatch(text)
        if m is None or len(self.headers.get_all("Content-Length") or []) > 1:
            self.close_connection = True
            self._send(400, {"error": {"message": f"bad Content-Length {text[:40]!r}", "code": 400}})
            return None
        n = int(m.group(1))
        if n > MAX_BODY_BYTES:
            self.close_connection = True
            self._send(413, {"error": {"message": f"request body of {n} bytes is over the "
                                                  f"{MAX_BODY_BYTES}-byte limit", "code": 413}})
            return None
        return self.rfile.read(n)

    def do_GET(self):
        if self.judge.dead:
            return self._drop()
        if not self._authorized():
            return None
        if self.path.rstrip("/") == "/v1/models":
            self._send(200, {"object": "list", "data": [{"id": MODEL_ID, "object": "model"}]})
        elif self.path == "/health":
            self._send(200, b"", "text/plain")
        elif self.path == "/faults":
            self._send(200, self.judge.stats())
        else:
            self._send(404, {"error": {"message": f"no route {self.path}", "code": 404}})

    def do_POST(self):
        fj = self.judge
        raw = self._body()
        if raw is None:
            return None
        if fj.dead:
            return self._drop()
        if not self._authorized():
            return None
        if self.path.rstrip("/") != "/v1/chat/completions":
            return self._send(404, {"error": {"message": f"no route {self.path}", "code": 404}})
        try:
            req = json.loads(raw)
            prompt = req["messages"][1]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            return self._send(400, {"error": {"message": "expected the judge's chat request", "code": 400}})
        with fj._lock:
            fj.last_request = req
        kind = fj.next_kind()
        logprobs = bool(req.get("logprobs"))
        ok = chat_reply(ok_verdict(prompt), logprobs)
        if kind == "ok":
            self._send(200, ok)
        elif kind == "die":
            self._drop()
            fj._on_die()
        elif kind == "slow:stall":
            if not fj.stopping.wait(fj.config.slow_s):
                self._send(200, ok)
        elif kind == "slow:trickle":
            self._trickle(json.dumps(ok).encode())
        elif kind.startswith("http:"):
            code = int(kind.split(":")[1])
            self._send(code, {"error": {"message": f"injected fault: HTTP {code}", "code": code}})
        else:
            self._send(200, *_garbage(kind, logprobs))

    def _trickle(self, body: bytes) -> None:
        c = self.judge.config
        body += b" " * max(0, math.ceil(c.slow_s / c.trickle_s) - len(body))  # JSON allows it
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.flush()
            for i in range(len(body)):
                self.wfile.write(body[i:i + 1])
                self.wfile.flush()
                if self.judge.stopping.wait(c.trickle_s):
                    break
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.close_connection = True


def _garbage(kind: str, logprobs: bool) -> tuple:
    if kind == "garbage:non-json":
        return b"<html><body>502 gateway says hello</body></html>", "text/html"
    if kind == "garbage:wrong-shape":
        return {"result": "aligned", "object": "chat.completion"},
    if kind == "garbage:empty-choices":
        return {"id": "fault-judge", "object": "chat.completion", "choices": []},
    return chat_reply("maybe", logprobs),  # garbage:no-verdict


def parse_mix(text: str) -> dict:
    """"ok=0.6,slow=0.1,garbage=0.1,http-error=0.2" -> dict."""
    mix = {}
    for part in filter(None, text.split(",")):
        name, _, w = part.partition("=")
        try:
            mix[name.strip()] = float(w)
        except ValueError:
            raise ValueError(f"--mix {text!r}: {part!r} is not NAME=WEIGHT") from None
    return mix


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m harness.fault_judge", description=__doc__.split("\n\n")[0])
    ap.add_argument("--mode", default="mixed", help="ok | slow | garbage | http-error | die | mixed | a kind")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--port", type=int, default=0, help="0: a free port (the URL is printed)")
    ap.add_argument("--mix", default=None, help="mode mixed: weights, e.g. ok=0.6,slow=0.1,garbage=0.1,http-error=0.2,die=0")
    ap.add_argument("--die-after", type=int, default=None, help="answer K chat requests, then exit")
    ap.add_argument("--slow-s", type=float, default=60.0)
    ap.add_argument("--trickle-s", type=float, default=0.2)
    ap.add_argument("--stats-file", default=None, help="rewritten after every request (readable after a death)")
    ap.add_argument("--api-key", default=os.environ.get("LR_JUDGE_API_KEY"),
                    help="require `Authorization: Bearer KEY` on /v1/* like `lr judge serve --api-key` "
                         "(default: $LR_JUDGE_API_KEY)")
    a = ap.parse_args(argv)
    try:
        cfg = FaultConfig(mode=a.mode, seed=a.seed, die_after=a.die_after, slow_s=a.slow_s,
                          trickle_s=a.trickle_s, port=a.port, api_key=a.api_key or None,
                          **({"mix": parse_mix(a.mix)} if a.mix else {}))
    except ValueError as e:
        print(f"fault_judge: error: {e}", file=sys.stderr)
        return 2

    # Handler threads write the stats concurrently and `die` ends the process with os._exit, which
    # drops any other thread's unflushed write: one writer at a time, each through its own temp
    # file, and `die` exits while it holds the lock, so the file is always whole JSON.
    stats_lock = threading.Lock()

    def _write_stats_locked():
        if a.stats_file:
            fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(a.stats_file)), suffix=".tmp")
            with os.fdopen(fd, "w") as f:
                json.dump(fj.stats(), f)
            os.replace(tmp, a.stats_file)

    def write_stats():
        with stats_lock:
            _write_stats_locked()

    def die():
        stats_lock.acquire()  # never released: the process ends here, whatever the writes do
        try:
            fj.dead = True
            _write_stats_locked()
            print(json.dumps({"died": fj.stats()}), flush=True)
        finally:
            os._exit(3)  # no clean-up: this is the fault

    fj = FaultJudge(cfg, on_die=die)
    orig = fj.next_kind

    def counted():
        kind = orig()
        if kind != "die":
            write_stats()
        return kind

    fj.next_kind = counted
    fj.start()
    write_stats()
    print(fj.url, flush=True)
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    done.wait()
    fj.stop()
    write_stats()
    print(json.dumps({"stopped": fj.stats()}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
