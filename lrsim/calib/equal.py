"""The equal-resources baseline, measured: how much faster AR runs when the target is given the
cores an LR run splits between target and draft (`lr collect --equal-resources`).

The simulator widens the target for this baseline (lrsim/sim/config.py `Config.widened`): a pass
on `ratio` times the devices takes 1/ratio of the time, divided by tp_efficiency^log2(ratio)
(all-reduce and memory-bandwidth losses; 0.9 by default, a GPU figure). On CPU the loss is
larger, and nothing in the hardware facts says how much: so it is measured. AR on the split
binding and AR on every core, run on the same problems at the same load, give the speedup S per
pair (output tokens per second, equal-resources over split); S pooled by geometric mean over the
pairs; then tp_efficiency = (S / ratio)^(1 / log2 ratio), the value at which the widened model
reproduces S. (The fitted latency models have no fixed per-iteration part, physical.py, so the
whole pass scales.)

Records of the equal-resources binding carry `run.flags.equal_resources` (lrreal/collect.py);
their passes ran on other cores than the LR runs', so calibrate.py keeps them out of the latency
fits and uses them here only.

A pair is two runs' raw tokens/s, so both must have run on the same machine: a block resumed
after a restart can land on another virtual machine of another speed (traces/load-cold-epyc-f23's
round 0 ran AR on both cores a session after AR on one, on a faster host, and read 1.97-2.12x).
A probe cannot correct it: the two bindings' target probes differ by the very speedup measured,
and a single block's probe of the idle draft (on its own core in ar, on one of the target's in
ar-er) spreads as widely between blocks of one collector run as that change of machine
(benchmarks/bench_equal_pairs.py). So a pair must name one machine boot (`run.hardware.boot_id`,
Linux's per-boot id): the split record of the same boot is the partner; a record without a boot
id (written before it was recorded, so in an earlier boot) pairs only with another without one,
as all older corpora do. The pairs left out are counted, and calibrate.py warns.
"""
from __future__ import annotations

import math

from lrcore.traces import in_flight

# below this many matched (problem, sample, load) pairs the estimate is not worth stating
MIN_PAIRS = 1


def is_equal_resources(rec: dict) -> bool:
    return ((rec.get("run") or {}).get("flags") or {}).get("equal_resources") is True


def core_count(spec) -> int | None:
    """Cores in a Linux CPU list ("0", "0-1", "0,2-3"); None when it is not one."""
    if not isinstance(spec, str) or not spec:
        return None
    n = 0
    for part in spec.split(","):
        lo, _, hi = part.partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()):
            return None
        n += (int(hi) - int(lo) + 1) if hi else 1
    return n if n > 0 else None


def _cores(rec: dict) -> int | None:
    return core_count((((rec.get("run") or {}).get("hardware") or {}).get("cores") or {}).get("target"))


def pair_key(rec: dict) -> tuple:
    load = rec.get("load") or {}
    flags = (rec.get("run") or {}).get("flags") or {}
    return (rec.get("problem_id"), rec.get("sample"), in_flight(rec),
            load.get("request_rate"), flags.get("max_tokens"))


def boot(rec: dict) -> str | None:
    """The machine boot a record ran in (lrreal/binding.hardware), None in older records."""
    b = (((rec.get("run") or {}).get("hardware") or {}).get("boot_id"))
    return b if isinstance(b, str) and b else None


def across_boots(a: dict, b: dict) -> bool:
    """The records ran in different boots (one without a boot id predates the other's): not one
    machine, not comparable."""
    return boot(a) != boot(b)


def tps(rec: dict) -> float | None:
    tok, wall = rec.get("output_tokens"), rec.get("wall_time_s")
    if isinstance(tok, (int, float)) and isinstance(wall, (int, float)) and tok > 0 and wall > 0:
        return tok / wall
    return None


def pairs(records: list[dict]):
    """(split, equal-resources) AR records that match by (problem, sample, load, budget): the
    split record of the equal-resources one's boot where there is one, else one of another boot
    (`across_boots`: counted, not measured)."""
    split: dict[tuple, dict] = {}
    for r in records:
        if r.get("mode") == "ar" and not is_equal_resources(r):
            split.setdefault(pair_key(r), {})[boot(r)] = r
    for r in records:
        if r.get("mode") == "ar" and is_equal_resources(r) and pair_key(r) in split:
            by_boot = split[pair_key(r)]
            yield by_boot.get(boot(r)) or next(iter(by_boot.values())), r


def pairs_across_boots(records: list[dict]) -> int:
    """Matched pairs that ran in different machine boots (left out of `measured`)."""
    return sum(across_boots(base, r) for base, r in pairs(records))


def measured(records: list[dict]) -> dict | None:
    """{speedup, core_ratio, tp_efficiency, pairs, by_concurrency} from the AR records of both
    bindings that match by (problem, sample, load, budget) and ran in one machine boot; None
    without such a pair."""
    logs, ratios, by_c = [], set(), {}
    for base, r in pairs(records):
        if across_boots(base, r):
            continue
        a, b, n_er, n_split = tps(base), tps(r), _cores(r), _cores(base)
        if a is None or b is None or n_er is None or n_split is None or n_er <= n_split:
            continue
        ratios.add(n_er / n_split)
        logs.append(math.log(b / a))
        by_c.setdefault(str(pair_key(r)[2]), []).append(math.log(b / a))
    if len(logs) < MIN_PAIRS or len(ratios) != 1:
        return None
    ratio = ratios.pop()
    s = math.exp(sum(logs) / len(logs))
    eff = (s / ratio) ** (1.0 / math.log2(ratio))
    return {"speedup": s, "core_ratio": ratio, "tp_efficiency": min(1.0, max(0.01, eff)),
            "pairs": len(logs),
            "by_concurrency": {c: math.exp(sum(v) / len(v)) for c, v in sorted(by_c.items(), key=lambda kv: int(kv[0]))}}
