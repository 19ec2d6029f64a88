"""What the README-figure tests share (tests/test_readme_figures.py, and by section
tests/calib/test_load_figures.py and test_open_loop_figures.py): the numbers a text states and the
numbers the committed results and claims tests hold, compared by value."""
import inspect
import re
from pathlib import Path

NUMBER = r"(?<![\w.])[-+]?\d+(?:[.,]\d+)*"
RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results"


def prose(text: str) -> str:
    """`text` without fenced code, the blocks benchmarks/quote.py keeps verbatim, and code spans."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    text = re.sub(r"<!-- quote: .*?<!-- /quote -->", "", text, flags=re.S)
    return re.sub(r"`[^`]*`", "", text)


def claims_code(*tests) -> str:
    """The source of claims tests past their docstrings (what they assert, not what they say)."""
    code = ""
    for test in tests:
        src = inspect.getsource(test)
        code += src[src.index('"""', src.index('"""') + 3) + 3:]
    return code


def numbers(*texts: str) -> set[str]:
    return {x.lstrip("+") for text in texts for x in re.findall(NUMBER, text)}


def untraced(text: str, have: set[str]) -> list[str]:
    """The numbers `text` states that `have` lacks (an unsigned one may be a signed one's size)."""
    stated = [x.lstrip("+") for x in re.findall(NUMBER, text)]
    return [x for x in stated if x not in have and "-" + x not in have]


def rendered_or_asserted(*tests) -> set[str]:
    """The numbers every rendered benchmarks/results/*.md holds and the claims `tests` assert."""
    texts = [f.read_text() for f in sorted(RESULTS.glob("*.md"))]
    return numbers(*texts, claims_code(*tests))
