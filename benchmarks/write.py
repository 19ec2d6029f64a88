"""Where a benchmark leaves its output: `results/<name>.json` and, beside it, the Markdown the
README and docs quote (`benchmarks/quote.py`), each written atomically (lrcore/outputs.py: a
temporary file renamed over the old one), so a run killed halfway never leaves a torn figure."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

from lrcore.outputs import write_atomic


def write_results(path: str | Path, doc: dict, render: Callable[[dict], str], **dump) -> Path:
    """`doc` as indented JSON at `path` and `render(doc)` at `path` with the suffix .md."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(doc, indent=1, **dump) + "\n")
    write_atomic(path.with_suffix(".md"), render(doc))
    return path


def run_and_write(path: str | Path, bench: Callable[[], dict], render: Callable[[dict], str]) -> None:
    """A benchmark's main with no arguments: run it, write its results, print the Markdown."""
    doc = bench()
    write_results(path, doc, render)
    print(render(doc), end="")
