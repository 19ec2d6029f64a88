"""A measured latency curve (`lr calibrate measure`, lrreal/measure.py) -> a profile latency entry.

The curve file is a latency-measurement file (lrcore/latency_file.py); the simulator's reader
(lrsim/sim/latency.py `load_measurements`) checks that it builds; `lr calibrate TRACES
--target-curve/--draft-curve` puts the entry in place of the fitted model of that engine.
"""
from __future__ import annotations

from pathlib import Path

from lrcore import latency_file
from lrcore.errors import UserError

from ..sim.latency import load_measurements


def curve_entry(path: str | Path, model: str | None = None) -> dict:
    """A measured curve file -> a profile latency entry (kind "table")."""
    p = Path(path)
    load_measurements(p)                       # every model builds (UserError names the file)
    models = latency_file.load(p)["models"]
    name = model or next(iter(models))
    if name not in models:
        raise UserError(f"{p}: field models.{name}: not in this file ({', '.join(models)})")
    dec, pre = latency_file.rows(p, name, models[name])
    dec = [[b * q, c, ms] for b, q, c, ms in dec]
    pre = [[t, ms] for t, ms in pre]
    return {"kind": "table", "decode": dec, "prefill": pre,
            "fit": {"points": len(dec) + len(pre), "rmse_s": None, "mape": None,
                    "source": f"measured {p.name}:{name}"}}


def plain_decode_points(path: str | Path, model: str | None = None) -> tuple[str, list]:
    """A measured curve file -> (its name, [(batch, context per sequence, seconds), ...]) of its
    plain decode rows (one position per sequence): the shape `lr calibrate
    --target-batch-curve` gives the fitted line (physical.curve_batch_knots)."""
    p = Path(path)
    models = latency_file.load(p)["models"]
    name = model or next(iter(models))
    if name not in models:
        raise UserError(f"{p}: field models.{name}: not in this file ({', '.join(models)})")
    dec, _ = latency_file.rows(p, name, models[name])
    pts = [(b, c, ms / 1000.0) for b, q, c, ms in dec if q == 1 and b >= 1 and ms > 0]
    if len({b for b, _, _ in pts}) < 2:
        raise UserError(f"{p}: models.{name}: a batch curve needs plain decode points at two batch "
                        "sizes or more (lr calibrate measure --batch-sizes 1,2,4,...)")
    return p.name, pts
