"""The house style of every table `lr` prints (one place; the command modules import it).

Part of lrcore: the command modules of the simulator (lrsim), the real backend (lrreal) and
`analysis` all import it; it imports neither lrsim nor lrreal.

Tables must stay readable at 80 columns: terminals and CI logs are often that wide, and rich, when a
table does not fit, squeezes every column and cuts numbers short with an ellipsis ("spe…",
"12.…"). So:

* numeric columns never wrap (``no_wrap``): a number is shown in full or the table is redesigned;
* text columns (names, paths, configurations) wrap at spaces and fold only tokens longer than the
  column, so they alone give way when space is short;
* headers are short (the vocabulary of docs/metrics.md; units in the header, e.g. "p90 s"), a
  header may take two lines ("verify\\nfailed"), and a legend line under the table says what a
  terse header means;
* a table that would still not fit at 80 columns is split (plan: ranking, then latency) or loses
  a column whose value is the same in every row to a line under the table.

tests/test_tables_80_columns.py renders every command's tables at 80 columns and checks that no
line is wider and nothing is cut.
"""
from __future__ import annotations

import re
from typing import Iterable, Sequence

WIDTH = 80   # the width every table is designed for (and tested at)

# C0 and C1 control characters except tab and newline: ESC starts terminal escape sequences
# (colours, cursor moves, window titles), CR and BS overwrite what was printed.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def plain(text) -> str:
    """Text from a file or a server made safe for the terminal: control characters are shown as
    escapes (ESC -> "\\x1b"), so a problem id or path cannot move the cursor, recolour the
    terminal or hide what follows."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", str(text))


def console():
    """The console every command prints with: rich's, which follows the terminal's width (or
    $COLUMNS), and is 80 wide when stdout is not a terminal (pipes, CI logs).

    Markup and emoji codes are off, so text from files (a problem id or path holding "[/]" or
    ":x:") prints as it is instead of raising rich's MarkupError or turning into styles; every
    string it renders (cells, titles, lines) has its control characters escaped (`plain`).
    Styles are given explicitly: `style=` or `styled()` below."""
    from rich.console import Console

    class SafeConsole(Console):
        def render_str(self, text, **kw):
            return super().render_str(plain(text), **kw)

    return SafeConsole(markup=False, emoji=False)


def styled(*parts):
    """A line mixing styled and plain text without markup: styled(("warning:", "yellow"), " ",
    message). The text parts are made safe with `plain`."""
    from rich.text import Text

    return Text.assemble(*((plain(p[0]), p[1]) if isinstance(p, tuple) else plain(p) for p in parts))


def table(title: str | None, columns: Sequence[str], text: Iterable[str] = (), **kw):
    """A table with one column per name in `columns`.

    Columns are numeric (right-aligned, never wrapped) unless their name is in `text`: those are
    left-aligned, wrap at spaces and fold tokens that are longer than the column. A name may hold
    a newline for a two-line header. Other keyword arguments go to rich's Table."""
    from rich.table import Table

    text = set(text)
    t = Table(title=title, **kw)
    for name in columns:
        if name in text:
            t.add_column(name, justify="left", overflow="fold")
        else:
            t.add_column(name, justify="right", no_wrap=True)
    return t


def kv_table(title: str | None, rows: Iterable[tuple[str, str]]):
    """Two columns, no header: a bold name and its value (right-aligned, wraps at spaces)."""
    from rich.table import Table

    t = Table(title=title, show_header=False)
    t.add_column(style="bold", no_wrap=True)
    t.add_column(justify="right", overflow="fold")
    for k, v in rows:
        t.add_row(k, v)
    return t
