"""Options that every `lr` command group shares, defined once so that they read the same in every
`--help` (and a change to one is a change to all).

Part of lrcore: the simulator (lrsim), the real backend (lrreal) and analysis import it; it
imports none of them.
"""
from __future__ import annotations

import typer

# Every command prints a rich table (or text) by default; --json prints one object instead.
JSON = typer.Option(False, "--json", help="Print one JSON object on stdout instead of tables.")
