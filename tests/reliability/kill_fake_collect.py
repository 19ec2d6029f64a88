"""TEST ONLY: `lr collect` on the deterministic fake engine, as a real subprocess to SIGKILL.

    python tests/reliability/kill_fake_collect.py collect --mode lr --limit 20 --out T --resume --json

Everything is the real `lr collect` path (cli.main, collect(), TraceWriter, signal handling,
EngineGuard and its reaper) except three patches: model paths resolve to an empty folder, the
engines are `FakeEngine`s (no vLLM, no machine-wide lock), the tokenizer is a stub, and - for
start-up speed - the hardware probe and grader are stubs too. Each
fake engine also starts a sleeping child process standing in for vLLM's engine core, so the
orphan checks have something to find.

Environment knobs (read by this script only):
- LR_FAKE_TOKEN_S: seconds per fake target token (default 0.004; the draft is 5x faster)
- LR_FAKE_TEAR_AT: k >= 1: on this process's k-th record, write half the line, then SIGKILL
  itself (a deterministic torn tail, as a kill inside a multi-page write() leaves)
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

SCRIPT = ["Janet's ducks lay 16 eggs.", "She uses 3 + 4 = 7 of them for breakfast and muffins.",
          "She sells the remaining 9 eggs at $2 each: 9 * 2 = 18.", "The answer is \\boxed{18}."]
CORE_CMD = ["bash", "-c", "exec -a VLLM::FakeEngineCore sleep 100000"]  # named like vLLM's


class _NoLock:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def patch() -> None:
    from lrreal import collect as collect_mod
    from types import SimpleNamespace

    from harness.fake_engine import FakeEngine, StubTokenizer, fake_model_folder
    from lrcore import traces
    from lrreal import grading, models

    folder = fake_model_folder(tempfile.mkdtemp(prefix="lr-fake-model-"))
    models.resolve = lambda name, cache=None, prepared=True: folder
    collect_mod.vllm_lock = lambda: _NoLock()
    token_s = float(os.environ.get("LR_FAKE_TOKEN_S", "0.004"))
    cores: list[subprocess.Popen] = []

    def start(self):
        self.engines["target"] = FakeEngine("target", SCRIPT, per_token_s=token_s)
        cores.append(subprocess.Popen(CORE_CMD))
        if self.draft_path is not None:
            self.engines["draft"] = FakeEngine("draft", SCRIPT, per_token_s=token_s / 5,
                                               wrong=lambda step, seed: step == 2)
            cores.append(subprocess.Popen(CORE_CMD))

    def shutdown(self):
        for c in cores:
            c.terminate()
            c.wait()
        cores.clear()
        self.engines.clear()

    collect_mod.Collector.start = start
    collect_mod.Collector.shutdown = shutdown
    collect_mod.Collector.tokenizer = lambda self: StubTokenizer()
    # Start-up speed: the real hardware probe imports torch (~5 s) and the grader math-verify
    # (~2 s); neither is under test here, and many short runs are.
    collect_mod.hardware = lambda: {"platform": "fake", "cpus": os.cpu_count()}
    grading.grade = lambda prob, text, execute_code=False: SimpleNamespace(
        correct=f"\\boxed{{{prob.answer}}}" in text, prediction=None)

    tear_at = int(os.environ.get("LR_FAKE_TEAR_AT", "0"))
    if tear_at:
        real_write, count = traces.TraceWriter.write, [0]

        def write(self, rec):
            count[0] += 1
            if count[0] < tear_at:
                return real_write(self, rec)
            import json
            line = (json.dumps(rec, separators=(",", ":")) + "\n").encode()
            os.write(self._fd, line[: len(line) // 2])
            os.fsync(self._fd)
            os.kill(os.getpid(), signal.SIGKILL)

        traces.TraceWriter.write = write


if __name__ == "__main__":
    patch()
    import cli

    cli.main(sys.argv[1:])
