"""Quote benchmark results in the docs verbatim, and check that they are quoted as written.

A figure in README.md or docs/*.md that a benchmark produced sits between two markers naming the
file it comes from:

    <!-- quote: benchmarks/results/paper_table.md -->
    ...the file's text, unchanged...
    <!-- /quote -->

    .venv/bin/python benchmarks/quote.py           # rewrite every quoted block from its file
    .venv/bin/python benchmarks/quote.py --check   # exit 1 naming each block that differs

tests/test_quoted_results.py runs the check, so a number typed by hand into a quoted block, or a
benchmark rerun without updating the docs, fails the suite.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"(<!-- quote: (?P<src>[^ ]+) -->\n)(?P<body>.*?)(<!-- /quote -->)", re.S)


def documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def blocks(doc: Path):
    """(source path, quoted text, expected text) for every quoted block of `doc`."""
    for m in BLOCK.finditer(doc.read_text()):
        src = ROOT / m["src"]
        want = src.read_text() if src.is_file() else None
        yield m["src"], m["body"], want


def stale() -> list[str]:
    out = []
    for doc in documents():
        for src, body, want in blocks(doc):
            if want is None:
                out.append(f"{doc.relative_to(ROOT)}: quotes {src}, which does not exist")
            elif body != want:
                out.append(f"{doc.relative_to(ROOT)}: the block quoting {src} differs from it "
                           "(run benchmarks/quote.py)")
    return out


def rewrite() -> int:
    missing = [m for m in stale() if m.endswith("which does not exist")]
    if missing:
        sys.exit("quote: " + "; ".join(missing) + " (run its benchmark first); nothing written")
    n = 0
    for doc in documents():
        text = doc.read_text()

        def sub(m):
            nonlocal n
            n += 1
            return m[1] + (ROOT / m["src"]).read_text() + m[4]

        new = BLOCK.sub(sub, text)
        if new != text:
            doc.write_text(new)
    return n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    if a.check:
        bad = stale()
        print("\n".join(bad) or "every quoted block matches its file")
        sys.exit(1 if bad else 0)
    print(f"{rewrite()} quoted block(s) written")


if __name__ == "__main__":
    main()
