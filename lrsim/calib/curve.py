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
