"""Numbers measured on real runs, from trace files (traces/README.md, schema v1).

    load_speedups       the same per (configuration, requests in flight) for records made under
                        load (AR at the same concurrency on the same problems)
    speedups            per configuration (lrsim.calib.physical.config_label: the corpus label,
                        e.g. lr-d2, lr-d2-w2, lr-d2-emb, else mode + depth + width + verifier):
                        sum of AR wall time / sum of the configuration's wall time over the
                        (problem_id, sample) pairs recorded in both (paired, like the simulator)
    acceptance_by_depth pooled step acceptance per speculation depth
    breakdown           per configuration, share of each record's wall time that the draft, the
                        target and the verifier were busy (union of their spans, cancelled work included), and
                        the share the target was idle (waiting for drafts or verdicts)
"""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from lrcore import traces
from lrcore.errors import UserError

COMPONENTS = ("draft", "target", "verify", "target idle")


def expand(paths: list[Path]) -> list[Path]:
    """Trace files: a directory stands for its *.jsonl files (sorted), e.g. traces/corpus/gsm8k."""
    out = []
    for p in map(Path, paths):
        if p.is_dir():
            files = sorted(f for f in p.glob("*.jsonl") if f.is_file())
            if not files:
                raise UserError(f"--traces {p}: a directory without *.jsonl trace files")
            out += files
        else:
            out.append(p)
    return out


def load(paths: list[Path]) -> list[dict]:
    """Validated records of every file (the toolkit's one reader, lrcore/traces.py: schema +
    cross-field rules)."""
    from lrcore.traces import read_traces
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


def config_of(rec: dict) -> str:
    """The configuration a record was measured in (what `lr replay` groups by)."""
    from lrsim.calib.physical import config_label

    return config_label(rec)


in_flight = traces.in_flight      # requests the record ran beside, itself included


def speedups(records: list[dict]) -> dict[str, dict]:
    """{config: {"speedup", "pairs", "mode", "depth", "width", "k2", "verifier", "tokens_per_s",
    "ar_tokens_per_s"}} for every configuration other than AR with AR records of the same
    (problem, sample), one request at a time (records made under load: `load_speedups`).
    Configurations are kept apart: depth 1, 2 and 3, width 2 or the embedding verifier each give
    their own point."""
    by_cfg: dict[str, dict] = defaultdict(dict)
    for r in records:
        if r["mode"] == "accept":  # the acceptance protocol measures alpha1; it is no way to decode
            continue
        if in_flight(r) > 1:
            continue
        by_cfg[config_of(r)][(r["problem_id"], r["sample"])] = r
    ar = by_cfg.get("ar", {})
    out = {}
    for cfg, recs in sorted(by_cfg.items()):
        if cfg == "ar":
            continue
        keys = [k for k in recs if k in ar]
        if not keys:
            continue
        first = recs[keys[0]]
        mode = first["mode"]
        spec = _flag(first, "num_speculative_tokens")
        out[cfg] = {
            "speedup": sum(ar[k]["wall_time_s"] for k in keys) / sum(recs[k]["wall_time_s"] for k in keys),
            "pairs": len(keys), "mode": mode,
            "depth": _flag(first, "depth") if mode not in ("sd",) else None,
            "width": _flag(first, "width", 1), "verifier": _flag(first, "verifier", "exact"),
            "k2": (int(spec) + 1) if spec and "sd" in mode else 1,
            "tokens_per_s": sum(recs[k]["output_tokens"] for k in keys) / sum(recs[k]["wall_time_s"] for k in keys),
            "ar_tokens_per_s": sum(ar[k]["output_tokens"] for k in keys) / sum(ar[k]["wall_time_s"] for k in keys),
        }
    return out


def load_speedups(records: list[dict]) -> dict[str, dict[int, dict]]:
    """{config: {requests in flight: {"speedup", "pairs"}}} of records made with a load object
    (`lr collect --concurrency`, the load corpus): AR's mean request latency over the
    configuration's, on the (problem, sample) pairs both ran at the same concurrency (the
    planner's definition of speedup under load). Arrival to last token (`load.latency_s`)."""
    by: dict[tuple[str, int], dict] = defaultdict(dict)
    for r in records:
        if r.get("load") and r["mode"] != "accept":
            by[(config_of(r), in_flight(r))][(r["problem_id"], r["sample"])] = r
    out: dict[str, dict[int, dict]] = defaultdict(dict)
    for (cfg, n), recs in sorted(by.items()):
        ar = by.get(("ar", n), {})
        keys = [k for k in recs if k in ar]
        if cfg == "ar" or not keys:
            continue
        lat = lambda rs: sum(rs[k]["load"]["latency_s"] for k in keys)  # noqa: E731
        out[cfg][n] = {"speedup": lat(ar) / lat(recs), "pairs": len(keys)}
    return dict(out)


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
    """{config: {component: share of wall time}} pooled over the configuration's records."""
    sums: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for r in records:
        if not r["steps"]:
            continue
        for k, v in record_breakdown(r).items():
            sums[config_of(r)][k] += v
    return {m: {c: s[c] / s["wall"] for c in COMPONENTS} for m, s in sorted(sums.items()) if s["wall"] > 0}
