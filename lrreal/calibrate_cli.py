"""`lr calibrate measure`: latency curves timed on a real vLLM engine (lrreal/measure.py).

The `lr calibrate` group is the simulator's (lrsim/calib/cli.py); this command starts a real
engine, so it lives in the real backend and the top-level cli.py adds it to that group
(`register`): same name, options, help and output as when it was defined beside `fit`.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from lrcore import jsonout
from lrcore.cliopts import JSON
from lrcore.errors import UserError
from lrcore.tables import console


def _ints(flag: str, text: str) -> list[int]:
    try:
        vals = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise UserError(f"{flag} must be a comma-separated list of integers, got {text!r}") from None
    if not vals or any(v < 1 for v in vals):
        raise UserError(f"{flag} must list integers >= 1, got {text!r}")
    return vals


def measure_cmd(
    model: str = typer.Option(..., "--model", help="HF model folder or a packaged model name (lr models list)."),
    out: Path = typer.Option(..., "--out", "-o", help="Curve to write (lrsim latency-measurement JSON)."),
    batch_sizes: str = typer.Option("1,2,4", "--batch-sizes", help="Concurrent sequences per decode pass."),
    context: str = typer.Option("128", "--context", help="Prompt (context) lengths in tokens."),
    decode_tokens: int = typer.Option(8, "--decode-tokens", min=2, max=65536, help="Tokens decoded per request."),
    dtype: str = typer.Option("float32", "--dtype", help="vLLM dtype."),
    cores: str = typer.Option("0-1", "--cores", help="VLLM_CPU_OMP_THREADS_BIND."),
    kv_cache_space: int = typer.Option(2, "--kv-cache-space", min=1, max=1024, help="GiB of KV cache (CPU)."),
    cache_dir: Optional[str] = typer.Option(None, "--cache-dir", help="Model cache of packaged models."),
    as_json: bool = JSON,
):
    """Time decode passes at each (batch, context) and prefill chunks on a real vLLM engine."""
    from lrcore.outputs import check_output

    from .engine import check_dtype
    from .measure import MeasureSpec, measure

    check_dtype(dtype)
    check_output(out, "--out")
    spec = MeasureSpec(model=model, batch_sizes=_ints("--batch-sizes", batch_sizes),
                       contexts=_ints("--context", context), decode_tokens=decode_tokens, dtype=dtype,
                       cores=cores, kv_cache_space_gib=kv_cache_space, cache_dir=cache_dir)
    doc = measure(spec, out)
    if as_json:
        print(jsonout.dumps(doc))
        return
    from rich.table import Table

    (name, m), = doc["models"].items()
    t = Table(title=f"{name} on {doc['device']} -> {out}")
    for col in ("batch", "context", "decode ms/pass", "passes"):
        t.add_column(col, justify="right")
    for r in m["decode"]:
        t.add_row(str(r["batch"]), str(r["context"]), f"{r['ms']:.1f}", str(r["passes"]))
    console().print(t)
    if m["prefill"]:
        console().print("prefill: " + ", ".join(f"{r['tokens']} tok {r['ms']:.0f} ms" for r in m["prefill"]))


def register(calibrate: typer.Typer) -> None:
    """Add `measure` to the `lr calibrate` group (called by the top-level cli.py)."""
    calibrate.command("measure")(measure_cmd)
