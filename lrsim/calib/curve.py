"""A measured latency curve (`lr calibrate measure`, lrreal/measure.py) -> a profile latency entry.

The curve file is the simulator's latency-measurement format (lrsim/sim/latency.py
`load_measurements`, which validates it); `lr calibrate TRACES --target-curve/--draft-curve`
puts the entry in place of the fitted model of that engine.
"""
from __future__ import annotations

import json
from pathlib import Path

from lrcore.errors import UserError

from ..sim.latency import load_measurements


def curve_entry(path: str | Path, model: str | None = None) -> dict:
    """A measured curve file -> a profile latency entry (kind "table")."""
    p = Path(path)
    load_measurements(p)                       # validates (UserError names the file)
    doc = json.loads(p.read_text())
    models = doc["models"]
    name = model or next(iter(models))
    if name not in models:
        raise UserError(f"{p}: field models.{name}: not in this file ({', '.join(models)})")
    m = models[name]
    dec = [[float(r["batch"]) * float(r.get("query", 1)), float(r.get("context", 0)), float(r["ms"])]
           for r in m["decode"]]
    pre = [[float(r["tokens"]), float(r["ms"])] for r in m.get("prefill", [])]
    return {"kind": "table", "decode": dec, "prefill": pre,
            "fit": {"points": len(dec) + len(pre), "rmse_s": None, "mape": None,
                    "source": f"measured {p.name}:{name}"}}
