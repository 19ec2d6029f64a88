"""`lr plan --find-break-even`: the load at which each speculative configuration stops paying.

Break-even (docs/metrics.md) is the lowest load - requests in flight, or Poisson arrivals per
second - at which a configuration's speedup over a baseline falls to 1 or below. Two baselines,
as in every plan: the reference AR, and AR given the draft's and judge's devices (equal
resources). Speculation spends spare compute; batching spends the same spare compute on other
requests, so the speedup falls as load grows (docs/planning.md) and the search bisects:

    f(x) = speedup at load x, from one `planner.plan` (paired seed blocks, as any plan)
    f(lo) <= 1          -> "never": it does not beat the baseline even at the lowest load
    f(hi) >  1          -> "beyond": it still beats it at the highest load searched
    else bisect [a, b] with f(a) > 1 >= f(b) until b - a <= 1 (requests in flight) or
         b / a <= 1 + RATE_TOLERANCE (arrivals/s); the break-even is b, the last win a.

Every configuration's two searches run side by side: each round evaluates every pending midpoint,
one plan per distinct load with only the configurations that need it. Bisection assumes f falls
with load; a row is flagged `monotone: false` when the levels it evaluated say otherwise (a win
above a loss), and its break-even is then one crossing, not necessarily the first.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace

from lrcore.errors import UserError

from . import planner
from .planner import Candidate, Hardware, Load

AXES = ("concurrency", "rate")
DEFAULT_MAX_CONCURRENCY = 64   # searched when --concurrency is not given: past any CPU engine's batch
RATE_SPAN = 64                 # --rate R searches [R / RATE_SPAN, R]: the same span as 1-64 in flight
RATE_TOLERANCE = 0.05          # stop when the bracket's ends are within 5% (finer than the speedup's
#                                2% confidence interval can resolve near 1 anyway)
# the plan row's speedup over each baseline, by what is searched (--objective): the ratio of mean
# latencies (what a request waits) or of tokens/s (what the machine delivers; closed batches only)
KEYS = {"speedup": {"ar": "speedup", "equal-resources": "speedup_vs_equal"},
        "throughput": {"ar": "throughput_speedup", "equal-resources": "throughput_speedup_vs_equal"}}
CURVE = {"ar": "speedup", "equal-resources": "speedup_vs_equal"}   # the curve's fields, either way


@dataclass(frozen=True)
class Range:
    axis: str                  # concurrency | rate
    lo: float
    hi: float

    @classmethod
    def from_load(cls, load: Load) -> "Range":
        if load.rate is not None:
            return cls("rate", load.rate / RATE_SPAN, float(load.rate))
        return cls("concurrency", 1, int(load.concurrency or DEFAULT_MAX_CONCURRENCY))

    def mid(self, a: float, b: float) -> float:
        if self.axis == "concurrency":
            return (int(a) + int(b)) // 2
        return math.sqrt(a * b)          # geometric: rates span decades

    def closed(self, a: float, b: float) -> bool:
        return b - a <= 1 if self.axis == "concurrency" else b / a <= 1 + RATE_TOLERANCE

    def load_at(self, load: Load, x: float) -> Load:
        if self.axis == "concurrency":
            return replace(load, concurrency=int(x), rate=None)
        return replace(load, rate=float(x), concurrency=None)

    def steps(self) -> int:
        """Bisection rounds at most (the ends not counted)."""
        if self.axis == "concurrency":
            return max(0, math.ceil(math.log2(max(1, self.hi - self.lo))))
        return max(0, math.ceil(math.log2(math.log(self.hi / self.lo) / math.log1p(RATE_TOLERANCE))))

    def text(self, x: float) -> str:
        return f"{int(x)}" if self.axis == "concurrency" else f"{x:.3g}"

    @property
    def unit(self) -> str:
        return "requests in flight" if self.axis == "concurrency" else "requests/s"


@dataclass
class _Bracket:
    """One configuration against one baseline: f(a) > 1 >= f(b) while searching."""
    status: str                # searching | found | never | beyond | n/a
    a: float | None = None
    b: float | None = None


def find(source, cands: list[Candidate], hard: Hardware, load: Load, jobs: int = 0,
         ray_address: str | None = None, objective: str = "speedup") -> dict:
    """Search every speculative candidate of the grid; returns the JSON document of the search.
    `objective`: "speedup" (mean-latency ratio) or "throughput" (tokens/s ratio, KEYS)."""
    t0 = time.perf_counter()
    rng = Range.from_load(load)
    _check(rng, load, objective)
    keys = KEYS[objective]
    source, hard, cands = planner.prepare(source, cands, hard, rng.load_at(load, rng.hi))
    spec = [c for c in cands if not c.role]
    if not spec:
        raise UserError("--find-break-even: no speculative configuration in the grid (--modes)")
    base = [c for c in cands if c.role]
    _bound(source, cands, hard, rng, load)
    seen: dict[float, dict[str, dict]] = {}        # load -> label -> plan row
    meta: dict = {}
    plans = 0

    def evaluate(x: float, which: list[Candidate]) -> None:
        nonlocal plans, meta
        need = [c for c in which if c.label not in seen.get(x, {})]
        if not need:
            return
        res = planner.plan(source, base + need, hard, rng.load_at(load, x), "speedup", jobs, ray_address)
        plans += 1
        meta = meta or res.meta
        seen.setdefault(x, {}).update({r["label"]: r for r in res.rows})

    evaluate(rng.hi, spec)         # the largest simulations first: an over-cap search fails at once
    evaluate(rng.lo, spec)
    spec = [c for c in spec if c.label in seen[rng.lo]]          # feasible on these devices
    brackets = {(c.label, base_name): _start(seen, rng, c.label, key)
                for c in spec for base_name, key in keys.items()}
    by_label = {c.label: c for c in spec}
    while True:
        pending: dict[float, list[Candidate]] = {}
        for (label, _), br in brackets.items():
            if br.status == "searching":
                pending.setdefault(rng.mid(br.a, br.b), []).append(by_label[label])
        if not pending:
            break
        for x in sorted(pending):
            evaluate(x, list(dict.fromkeys(pending[x])))
        for (label, base_name), br in brackets.items():
            if br.status == "searching":
                x = rng.mid(br.a, br.b)
                if seen[x][label][keys[base_name]] > 1.0:
                    br.a = x
                else:
                    br.b = x
                if rng.closed(br.a, br.b):
                    br.status = "found"
    rows = [_row(c, seen, rng, brackets, keys) for c in spec]
    rows.sort(key=lambda r: (-_order(r["vs_ar"], rng), -(r["speedup_at_lo"] or 0)))
    out = {"axis": rng.axis, "unit": rng.unit, "range": [rng.lo, rng.hi], "source": meta.get("source"),
           "hardware": meta.get("hardware"), "rows": rows, "plans": plans,
           "levels_evaluated": sorted(seen), "elapsed_s": time.perf_counter() - t0,
           "objective": objective,
           **({"notes": meta["notes"]} if meta.get("notes") else {}),   # what the profile never measured
           "method": "bisection on the simulator; speedup = mean over paired seed blocks of " + (
               "baseline latency / latency (lr plan)" if objective == "speedup" else
               "tokens/s / baseline tokens/s (lr plan's throughput_speedup)")}
    out["sentence"] = sentence(out, rng)
    return out


def _check(rng: Range, load: Load, objective: str = "speedup") -> None:
    if objective not in KEYS:
        raise UserError(f"--find-break-even searches the speedup or the throughput over AR "
                        f"(--objective speedup|throughput), got {objective!r}")
    if objective == "throughput" and rng.axis == "rate":
        raise UserError("--find-break-even --objective throughput: under --rate the throughput is the "
                        "arrival rate; search the speedup, or give --concurrency")
    if load.concurrency is not None and load.rate is not None:
        raise UserError("--concurrency and --rate are exclusive (closed batch vs open-loop arrivals)")
    if load.slo_ms is not None:
        raise UserError("--find-break-even searches the speedup over AR: drop --slo-ms")
    if rng.axis == "concurrency" and rng.hi < 2:
        raise UserError("--find-break-even: --concurrency is the highest load searched; give 2 or more")


def _bound(source, cands, hard, rng: Range, load: Load) -> None:
    """Refuse, before any simulation, a search whose first-round blocks could exceed the command
    cap: every candidate at most at both ends and once per bisection round of each of its two
    searches, each at most the work of the highest load (with --ci-target, each plan then adds
    blocks within its own cap, as `lr plan` does)."""
    from ..work import check_command

    evals = 2 + 2 * rng.steps()
    per = planner.work(source, cands, hard, rng.load_at(load, rng.hi))
    check_command(per * load.samples * evals,
                  f"lr plan --find-break-even ({len(cands)} candidates x {load.samples} sample(s) x "
                  f"up to {evals} loads)")


def _start(seen: dict, rng: Range, label: str, key: str) -> _Bracket:
    lo, hi = seen[rng.lo][label].get(key), seen[rng.hi].get(label, {}).get(key)
    if lo is None or (hi is None and lo > 1.0):
        return _Bracket("n/a")
    if lo <= 1.0:
        return _Bracket("never", b=rng.lo)
    if hi > 1.0:
        return _Bracket("beyond", a=rng.hi)
    br = _Bracket("searching", rng.lo, rng.hi)
    if rng.closed(br.a, br.b):
        br.status = "found"
    return br


def _row(c: Candidate, seen: dict, rng: Range, brackets: dict, keys: dict = KEYS["speedup"]) -> dict:
    latency = keys is KEYS["speedup"]
    curve = [{"load": x, "speedup": seen[x][c.label][keys["ar"]],
              "speedup_vs_equal": seen[x][c.label].get(keys["equal-resources"]),
              "speedup_ci": seen[x][c.label].get("speedup_ci") if latency else None}
             for x in sorted(seen) if c.label in seen[x]]
    row = {"label": c.label, "mode": c.mode, "placement": c.placement,
           "speedup_at_lo": curve[0]["speedup"] if curve else None, "curve": curve}
    for base_name, key in CURVE.items():
        br = brackets[(c.label, base_name)]
        ys = [(p["load"], p[key]) for p in curve if p[key] is not None]
        monotone = not any(y1 <= 1.0 < y2 for i, (_, y1) in enumerate(ys) for _, y2 in ys[i + 1:])
        row["vs_" + ("ar" if base_name == "ar" else "equal")] = {
            "status": br.status, "break_even": br.b if br.status in ("found", "never") else None,
            "last_win": br.a if br.status in ("found", "beyond") else None, "monotone": monotone}
    return row


def _order(r: dict, rng: Range) -> float:
    """Sort key: later break-even first (beyond the range first, never last)."""
    return {"beyond": math.inf, "never": -1.0, "n/a": -2.0}.get(r["status"], r["break_even"] or 0)


def cell(r: dict, rng: Range) -> str:
    """A table cell: the break-even load, '>HI', 'never' or '-'."""
    if r["status"] == "found":
        return rng.text(r["break_even"]) + ("" if r["monotone"] else "?")
    if r["status"] == "beyond":
        return ">" + rng.text(rng.hi)
    return {"never": "never", "n/a": "-"}[r["status"]]


def sentence(out: dict, rng: Range) -> str:
    """One sentence: per mode, the configuration that keeps beating AR longest."""
    best: dict[str, dict] = {}
    for r in out["rows"]:                              # rows are sorted: the first of a mode wins
        best.setdefault(r["mode"], r)
    parts = []
    for r in best.values():
        a, e = r["vs_ar"], r["vs_equal"]
        s = f"{r['label']} {_phrase(a, rng, 'AR')}"
        if e["status"] != "n/a":
            s += f" and {_phrase(e, rng, 'AR on equal resources')}"
        parts.append(s)
    flag = [r["label"] for r in out["rows"] if not (r["vs_ar"]["monotone"] and r["vs_equal"]["monotone"])]
    tail = (f" (not monotone in load, so '?' marks one crossing, not necessarily the first: "
            f"{', '.join(flag)})" if flag else "")
    return (f"Searching {rng.text(rng.lo)}-{rng.text(rng.hi)} {rng.unit}: " + "; ".join(parts) + "." + tail)


def _phrase(r: dict, rng: Range, base: str) -> str:
    st = r["status"]
    if st == "never":
        return f"never beats {base}"
    if st == "beyond":
        return f"still beats {base} at {rng.text(rng.hi)}"
    if st == "n/a":
        return f"cannot be compared with {base}"
    return f"stops beating {base} at {rng.text(r['break_even'])} (wins at {rng.text(r['last_win'])})"
