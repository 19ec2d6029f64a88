"""The one way `lr` prints or writes JSON: strictly valid JSON, never `Infinity` or `NaN`.

Python's json module writes float("inf") as `Infinity` and NaN as `NaN`, which no strict JSON
parser (jq, JavaScript's JSON.parse, Go, Rust serde) accepts. Every `--json` output and every
JSON file a command writes goes through `dumps`: a non-finite number becomes null ("not
defined": a speedup over zero time, an acceptance rate of nothing proposed), then the text is
produced with `allow_nan=False`, so nothing non-finite can slip through.

Part of lrcore: the simulator (lrsim), the real backend (lrreal) and `analysis` all import it; it
imports neither lrsim nor lrreal.
"""
from __future__ import annotations

import json
import math
from typing import Any


def finite(obj: Any) -> Any:
    """A copy of obj with every non-finite float replaced by None (dicts, lists, tuples)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite(v) for v in obj]
    if hasattr(obj, "item") and not isinstance(obj, (str, bytes)):   # numpy scalars
        try:
            return finite(obj.item())
        except (TypeError, ValueError):
            return obj
    return obj


def dumps(obj: Any, **kw) -> str:
    """json.dumps of `finite(obj)` with allow_nan=False (other keyword arguments pass through)."""
    return json.dumps(finite(obj), allow_nan=False, **kw)
