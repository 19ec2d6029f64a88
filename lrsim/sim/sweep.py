"""Grid sweeps over (k1 | depth, k2, width) under a budget, in parallel worker processes.

The AR baseline is simulated once per sweep (it does not depend on the grid) and every point is
compared against it. Budget (the theory's M, App. B eqs. 4-5) counts target positions in flight:
    lr-sync, lr-stage:  k1 x k2
    lr-async:           (1 + W + W^2 + ... + W^depth) x k2  (target requests the tree can hold)
    ar, sd:             k2
"""
from __future__ import annotations

import itertools
import os
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace

from lrcore.errors import UserError

from ..work import check_command, workload_shape
from .build import MAX_KNOB, MAX_TREE, Options, build
from .metrics import compare
from .runner import run

MAX_POINTS = 10_000


def parse_values(flag: str, text: str | None) -> list[int] | None:
    """'1-8' -> [1..8]; '2,4,6' -> [2, 4, 6]; '1-3,8' -> [1, 2, 3, 8]."""
    if text is None:
        return None
    out: list[int] = []
    try:
        for part in text.split(","):
            part = part.strip()
            if "-" in part:
                a, b = (int(x) for x in part.split("-", 1))
                if b < a:
                    raise ValueError
                if b - a >= MAX_POINTS:
                    raise UserError(f"{flag}: range {part!r} has more than {MAX_POINTS} values")
                out.extend(range(a, b + 1))
            else:
                out.append(int(part))
    except ValueError:
        raise UserError(f"{flag}: expected integers like '1-8' or '2,4,6', got {text!r}") from None
    if not out or min(out) < 1:
        raise UserError(f"{flag}: values must be integers >= 1, got {text!r}")
    return sorted(set(out))


def check_knobs(grid: dict) -> None:
    """Every grid value <= MAX_KNOB and the widest, deepest lr-async tree <= MAX_TREE positions."""
    for name, vals in grid.items():
        if vals and vals[-1] > MAX_KNOB:
            raise UserError(f"--{name}: values must be <= {MAX_KNOB}, got {vals[-1]}")
    w, d = max(grid.get("width") or [1]), max(grid.get("depth") or [0])
    if w > 1 and parallel_dim("lr-async", 0, d, w, 1) > MAX_TREE:
        raise UserError(f"--width {w} with --depth {d}: the draft tree would hold more than "
                        f"{MAX_TREE} target positions")


def parallel_dim(policy: str, k1: int, depth: int, width: int, k2: int) -> int:
    if policy in ("lr-sync", "lr-stage"):
        return k1 * k2
    if policy in ("lr-async", "lr-adaptive"):   # lr-adaptive: its largest tree
        return sum(width ** i for i in range(depth + 1)) * k2
    return k2


def _point(args):
    base, point, baseline = args
    opts = replace(base, **point)
    cfg = build(opts)
    s, world = run(cfg)
    cmp = compare(s, baseline["summary"], [r.latency for r in world.records], baseline["latencies"],
                  baseline["open_loop"])
    return {**point, "k1": point.get("k1", cfg.k1), "depth": point.get("depth", cfg.depth),
            "parallel": parallel_dim(cfg.policy, cfg.k1, cfg.depth, cfg.width, cfg.k2),
            "speedup": cmp["speedup"], "latency_speedup": cmp["latency_speedup"],
            "latency_speedup_se": cmp["latency_speedup_se"], "tokens_per_s": s["tokens_per_s"],
            "step_acceptance_rate": s["step_acceptance_rate"], "accepted_steps": s["accepted_steps"],
            "proposed_steps": s["proposed_steps"], "latency_p50": s["latency_s"]["p50"],
            "latency_p99": s["latency_s"]["p99"], "utilisation": s["utilisation"]}


def run_sweep(base: Options, grid: dict, budget: int | None, jobs: int = 0) -> dict:
    t0 = time.perf_counter()
    if budget is not None and budget < 1:
        raise UserError(f"--budget must be >= 1, got {budget}")
    if jobs < 0:
        raise UserError(f"--jobs must be >= 0, got {jobs}")
    pol = base.policy or "lr-async"
    for name, vals in grid.items():
        if vals and vals[-1] > MAX_KNOB:
            raise UserError(f"--{name}: values must be <= {MAX_KNOB}, got {vals[-1]}")
    knob = "depth" if pol == "lr-async" else "k1"
    other = "k1" if knob == "depth" else "depth"
    if grid.get(other) and not grid.get(knob):
        knob = other        # --k1 given for lr-async (k1 = depth + 1) or --depth for lr-sync
    values = grid.get(knob) or [None]
    widths = grid.get("width") or [1]
    k2s = grid.get("k2") or [1]
    if len(values) * len(widths) * len(k2s) > 10 * MAX_POINTS:
        raise UserError(f"sweep grid has {len(values) * len(widths) * len(k2s)} points before the "
                        f"budget (max {10 * MAX_POINTS}): narrow --k1/--depth/--k2/--width")
    points, positions = [], 1          # positions per simulated step, summed (1: the AR baseline)
    for v, w, k2 in itertools.product(values, widths, k2s):
        p = {"width": w, "k2": k2}
        if v is not None:
            p[knob] = v
        k1 = p.get("k1", (p["depth"] + 1) if "depth" in p else 2)
        d = p.get("depth", max(1, k1 - 1))
        if pol == "sd" and k2 < 2:
            continue
        if budget is not None and parallel_dim(pol, k1, d, w, k2) > budget:
            continue
        if pol == "lr-async" and parallel_dim(pol, k1, d, w, 1) > MAX_TREE:
            raise UserError(f"--width {w} with --depth {d}: the draft tree would hold more than "
                            f"{MAX_TREE} target positions")
        points.append(p)
        positions += parallel_dim(pol, k1, d, w, 1)
    if not points:
        raise UserError("--budget: no grid point fits the budget")
    if len(points) > MAX_POINTS:
        raise UserError(f"sweep grid has {len(points)} points (max {MAX_POINTS}): narrow --k1/--depth/--k2/--width")
    cfg = build(base)
    check_command(workload_shape(cfg.workload)[1] * positions,
                  f"lr sweep ({len(points)} points + the AR baseline)")
    bsum, bworld = run(cfg.baseline())
    baseline = {"summary": bsum, "latencies": [r.latency for r in bworld.records],
                "open_loop": getattr(cfg.workload, "rate", None) is not None}
    jobs = jobs or os.cpu_count() or 1
    args = [(base, p, baseline) for p in points]
    if jobs > 1 and len(points) > 1:
        with ProcessPoolExecutor(max_workers=min(jobs, len(points))) as ex:
            results = list(ex.map(_point, args, chunksize=max(1, len(points) // (4 * jobs))))
    else:
        results = [_point(a) for a in args]
    best = max(results, key=lambda r: r["speedup"]) if results else None
    return {"policy": pol, "scenario": cfg.name, "budget": budget, "points": results, "best": best,
            "ar_tokens_per_s": bsum["tokens_per_s"], "elapsed_s": time.perf_counter() - t0,
            "workers": jobs}
