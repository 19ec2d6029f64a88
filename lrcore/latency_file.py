"""The latency-measurement file: the contract between the profilers that write it (`lr calibrate
measure`, lrreal/measure.py, on a CPU; benchmarks/gpu_latency_profile.py on a GPU) and the
simulator that reads it (a scenario's `latency = {kind = "table", file = ...}`,
lrsim/sim/latency.py; `lr plan`'s measured tables, lrsim/plan/modelspec.py; a profile's measured
curve, lrsim/calib/curve.py), as lrcore/traces.py is for traces: neither side imports the other.

    {"device": str,
     "models": {name: {"tp": int, "dtype": str,
                       "decode":  [{"batch": n, "query": q (default 1), "context": c (default 0),
                                    "ms": one pass's milliseconds, ...}, ...],   at least one
                       "prefill": [{"tokens": n, "ms": ...}, ...],                 optional
                       ...}, ...},
     ...}

A decode row is one forward pass of `batch` sequences, each with `query` new positions (1 =
plain decoding, k2 = an SD verification pass) after `context` cached tokens; a prefill row a pass
over `tokens` prompt positions. Other fields (hardware, the profiler's extra columns) are carried
as they are."""
from __future__ import annotations

import json
from pathlib import Path

from .errors import UserError
from .limits import MAX_TEXT_FILE_BYTES, read_capped


def load(path: str | Path, what: str = "latency measurements") -> dict:
    """The file's document, with a non-empty `models` object (one-line UserError otherwise)."""
    p = Path(path)
    try:
        doc = json.loads(read_capped(p, MAX_TEXT_FILE_BYTES, "latency file"))
    except RecursionError:
        raise UserError(f"{p}: JSON nested too deeply to be {what}") from None
    except (OSError, ValueError) as e:
        raise UserError(f"{p}: cannot read {what} ({e})") from None
    _models(doc, p)
    return doc


def _models(doc, where) -> dict:
    """The document's `models` object, which must be non-empty (one-line UserError naming
    `where`)."""
    models = doc.get("models") if isinstance(doc, dict) else None
    if not isinstance(models, dict) or not models:
        raise UserError(f"{where}: field 'models' must be a non-empty object")
    return models


def rows(path: str | Path, name: str, model, extra_ms: str | None = None
         ) -> tuple[list[tuple[float, float, float, float]], list[tuple[float, float]]]:
    """One model's points: decode rows as (batch, query, context, ms) and prefill rows as
    (tokens, ms), each row's `extra_ms` column (a profiler's modelled addition, e.g.
    'allreduce_ms_model') added to its ms where named; a one-line UserError naming the file and
    the model for a malformed row or no decode row."""
    def ms(r) -> float:
        return float(r["ms"]) + float(r.get(extra_ms, 0.0)) if extra_ms else float(r["ms"])
    try:
        dec = [(float(r["batch"]), float(r.get("query", 1)), float(r.get("context", 0)), ms(r))
               for r in model["decode"]]
        pre = [(float(r["tokens"]), ms(r)) for r in model.get("prefill", [])]
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise UserError(f"{Path(path)}: models.{name}: bad decode/prefill entry ({e!r})") from None
    if not dec:
        raise UserError(f"{Path(path)}: models.{name}: tabulated latency needs at least one decode "
                        "point")
    return dec, pre


def check(doc: dict, where: str) -> None:
    """What a writer checks before it writes: the document a reader of `load` and `rows` takes."""
    for name, m in _models(doc, where).items():
        rows(where, name, m)
