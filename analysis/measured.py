"""Numbers measured on real runs, from trace files (traces/README.md, schema v1).

    speedups            per mode: sum of AR wall time / sum of the mode's wall time over the
                        (problem_id, sample) pairs recorded in both (paired, like the simulator)
    acceptance_by_depth pooled step acceptance per speculation depth
    breakdown           share of each record's wall time that the draft, the target and the
                        verifier were busy (union of their spans, cancelled work included), and
                        the share the target was idle (waiting for drafts or verdicts)
"""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from lrsim.errors import UserError

COMPONENTS = ("draft", "target", "verify", "target idle")


def load(paths: list[Path]) -> list[dict]:
    """Validated records of every file (lrreal's reader: schema + cross-field rules)."""
    try:
        from lrreal.traces import read_traces
    except ImportError:
        raise UserError("--traces: reading traces needs the real backend package (lrreal)") from None
    out = []
    for p in paths:
        if not Path(p).is_file():
            raise UserError(f"--traces {p}: no such file")
        out += read_traces(p, strict=True)  # a torn last line: one-line error, not a warning
    if not out:
        raise UserError(f"--traces {', '.join(map(str, paths))}: no records")
    return out


def _flag(rec: dict, name: str, default=None):
    return (rec.get("run") or {}).get("flags", {}).get(name, default)


def speedups(records: list[dict]) -> dict[str, dict]:
    """{mode: {"speedup", "pairs", "depth", "width", "k2"}} for every non-AR mode with AR pairs."""
    by_mode: dict[str, dict] = defaultdict(dict)
    for r in records:
        by_mode[r["mode"]][(r["problem_id"], r["sample"])] = r
    ar = by_mode.get("ar", {})
    out = {}
    for mode, recs in by_mode.items():
        if mode == "ar":
            continue
        keys = [k for k in recs if k in ar]
        if not keys:
            continue
        first = recs[keys[0]]
        spec = _flag(first, "num_speculative_tokens")
        out[mode] = {
            "speedup": sum(ar[k]["wall_time_s"] for k in keys) / sum(recs[k]["wall_time_s"] for k in keys),
            "pairs": len(keys), "depth": _flag(first, "depth"), "width": _flag(first, "width", 1),
            "k2": (int(spec) + 1) if spec and "sd" in mode else 1,
            "tokens_per_s": sum(recs[k]["output_tokens"] for k in keys) / sum(recs[k]["wall_time_s"] for k in keys),
            "ar_tokens_per_s": sum(ar[k]["output_tokens"] for k in keys) / sum(ar[k]["wall_time_s"] for k in keys),
        }
    return out


def acceptance_by_depth(records: list[dict], modes=("lr", "lr+sd", "lr-sync")) -> dict[int, list[int]]:
    pooled: dict[int, list[int]] = {}
    for r in records:
        if r["mode"] not in modes:
            continue
        for d, (prop, acc) in (r.get("step_acceptance") or {}).get("by_depth", {}).items():
            pa = pooled.setdefault(int(d), [0, 0])
            pa[0] += prop
            pa[1] += acc
    return dict(sorted(pooled.items()))


def _union(spans: list[tuple[float, float]]) -> float:
    total, end = 0.0, float("-inf")
    for a, b in sorted(spans):
        if b <= end:
            continue
        total += b - max(a, end)
        end = b
    return total


def record_breakdown(rec: dict) -> dict[str, float]:
    """Seconds of one record that each component was busy (union of its spans)."""
    spans = {"draft": [], "target": [], "verify": []}
    for s in rec["steps"]:
        for kind in spans:
            sp = s.get(kind)
            if sp:
                spans[kind].append((sp["start"], sp["end"]))
        for c in s.get("cancelled") or []:
            spans[c["kind"]].append((c["start"], c["end"]))
    busy = {k: _union(v) for k, v in spans.items()}
    wall = rec["wall_time_s"]
    busy["target idle"] = max(0.0, wall - busy["target"])
    busy["wall"] = wall
    return busy


def breakdown(records: list[dict]) -> dict[str, dict[str, float]]:
    """{mode: {component: share of wall time}} pooled over the mode's records."""
    sums: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for r in records:
        if not r["steps"]:
            continue
        for k, v in record_breakdown(r).items():
            sums[r["mode"]][k] += v
    return {m: {c: s[c] / s["wall"] for c in COMPONENTS} for m, s in sums.items() if s["wall"] > 0}
