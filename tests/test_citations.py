"""Code, docs and tests cite only what is in the repository or public (a paper section, vLLM's
docs): no internal work-item numbers (of a tracker this repository does not ship) and no notes
kept beside the repository (its reference folder), which a reader of a clone does not have."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# built from parts so that this file does not match itself
WORK_ITEM = re.compile(r"\b" + "iss" + r"ues? #?\d+\b", re.IGNORECASE)
OUTSIDE = re.compile(re.escape("shared/" + "reference"))
TEXT = (".py", ".md", ".toml", ".cfg", ".txt")
SKIP = ("traces/", "benchmarks/results/")   # measured data, not prose


def tracked_text_files() -> list[Path]:
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: the tracked files are unknown")
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True,
                         check=True)
    return [ROOT / f for f in out.stdout.split("\0")
            if f.endswith(TEXT) and not f.startswith(SKIP)]


def test_no_work_item_numbers_or_outside_notes_are_cited():
    bad = []
    files = tracked_text_files()
    assert len(files) > 100        # the listing worked
    for path in files:
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            public = "github.com/" in line   # a public tracker's issue, named with its repository
            if (WORK_ITEM.search(line) and not public) or OUTSIDE.search(line):
                bad.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()[:100]}")
    assert not bad, "\n".join(bad)
