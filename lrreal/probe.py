"""The machine-speed probe: a fixed reference pass timed on every engine, before and after each
trace record, so that drift in the machine's speed (other jobs, thermal state, another day or
machine) can be seen in the traces and corrected for (`lr calibrate probe`: analysis/probe_cli.py,
lrsim/calib/rescale.py).

    p = await probe_engines(engines, salt=7)
    # {"t": 1732350000.0, "loadavg": [1.02, 0.98, 0.91], "procs_running": 2,
    #  "engines": {"target": {"prefill_tokens": 32, "prefill_s": 1.31, "decode_s": 0.552,
    #                         "decode_passes": 4, "wall_s": 3.6, "contended_decode_s": 0.61,
    #                         "contended_passes": 12}, "draft": {...}}}

Each engine runs one request with a 32-token pseudo-random prompt (unique per salt, so no prefix
cache hit) and 4 forward decode passes (`VllmEngine.probe`); engines are probed one after the
other so that neither slows the other. Then the two run side by side (`side_by_side`): the
target's probe again, with 12 decode passes, while the draft decodes all along, so each engine's
decode pass is timed beside the other's too (`contended_decode_s`): how much this machine slows
a pass while the other core works, which the alone probe cannot see and which differs between
machines (docs/load.md, "A host four times slower"). Cost: about 4 s on the 1.5B target on one CPU
core, 1 s on the 0.5B draft, and the side-by-side run about three times the target's. What the
rest of the machine was doing is recorded beside it: the 1/5/15-min load averages and the number
of runnable processes (/proc), and, over the record itself (`probe.during`), the CPU time that
processes outside the collector used: probes before and after cannot see load that came and went
in between; this can (a test suite run beside a collection shows as tens of CPU-seconds).
"""
from __future__ import annotations

import os
import time
from pathlib import Path


def machine_load() -> dict:
    """Load averages and runnable processes right now (empty where /proc is missing)."""
    out: dict = {}
    try:
        f = Path("/proc/loadavg").read_text().split()
        out["loadavg"] = [float(x) for x in f[:3]]
        for line in Path("/proc/stat").read_text().splitlines():
            if line.startswith("procs_running"):
                out["procs_running"] = int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return out


async def probe_engines(engines: dict, salt: int) -> dict:
    """Probe every engine that supports it (VllmEngine; fake engines report synthetic times),
    alone, then the target and the draft side by side (`side_by_side`) where both can."""
    rec = {"t": time.time(), **machine_load(), "engines": {}}
    for name in sorted(engines, key=lambda n: n != "target"):  # target first: it is the slow one
        eng = engines[name]
        if hasattr(eng, "probe"):
            rec["engines"][name] = await eng.probe(salt)
    if all(hasattr(engines.get(n), "probe_passes") for n in ("target", "draft")):
        beside = await side_by_side(engines["target"], engines["draft"], rec["engines"], salt)
        for name, summary in beside.items():
            rec["engines"][name].update(summary)
    return rec


# The draft keeps decoding while the target's probe runs: for SIDE_SPAN times the target probe's
# wall (its alone probe's, with the extra decode passes at its alone decode time), so that every
# target pass runs beside a draft pass even when the machine slows the target up to this much
# while the draft runs (the fits of this repository's traces find well under 2x:
# docs/calibration.md); capped in passes so a stalled probe stays bounded.
SIDE_SPAN = 1.5
SIDE_MAX_PASSES = 256
# The target decodes this many passes beside the draft (the alone probe: 4). With 4, one probe's
# c scattered 0.000-0.269 within one sitting (benchmarks/results/contention_traces.md); a median
# of 12 passes costs 8 target passes more per probe (3-4.5 s on the slow host's 1.5B target,
# the draft's span 1.5x that).
SIDE_TARGET_PASSES = 12
SIDE_COVERED = 0.9        # a pass counts as run beside the other engine when this much is covered


async def side_by_side(target, draft, alone: dict, salt: int) -> dict:
    """Each engine's decode pass while the other engine runs (`contended_decode_s`, the median
    over `contended_passes` passes at least SIDE_COVERED covered by the other's passes): the
    target's probe with the draft decoding beside it all along. Over the alone probe's
    `decode_s` it measures the machine's contention (how much one core's pass slows while the
    other core runs a pass: memory bandwidth, shared caches, SMT siblings), which the fit's
    `contention` holds for the traces' machine and a probe of another machine carries
    (lrsim/calib/rescale.contention_scales). {} when an alone probe timed nothing."""
    import asyncio
    import math

    from lrcore.intervals import covered_fraction

    t_alone, d_alone = alone.get("target") or {}, alone.get("draft") or {}
    if not t_alone.get("wall_s") or not d_alone.get("decode_s"):
        return {}
    # the target's side-by-side wall, from its alone probe: the same prefill, more decode passes
    # (an alone probe that timed no decode pass has decode_s None: its wall alone then)
    passes = t_alone.get("decode_passes")
    t_wall = t_alone["wall_s"] + (SIDE_TARGET_PASSES - (4 if passes is None else passes)) \
        * (t_alone.get("decode_s") or 0.0)
    n = min(SIDE_MAX_PASSES, math.ceil(SIDE_SPAN * t_wall / d_alone["decode_s"]))
    (t_passes, _), (d_passes, _) = await asyncio.gather(
        target.probe_passes(salt + 1, decode_tokens=SIDE_TARGET_PASSES),
        draft.probe_passes(salt + 1, decode_tokens=n))
    out = {}
    for name, mine, other in (("target", t_passes, d_passes), ("draft", d_passes, t_passes)):
        spans = [(p["start"], p["t_end"]) for p in mine]
        cov = covered_fraction(spans, [(p["start"], p["t_end"]) for p in other])
        dec = sorted(p["duration_s"] for p, c in zip(mine, cov) if c >= SIDE_COVERED
                     and p.get("prefill_tokens", 0) == 0 and p.get("tokens_scheduled") == 1)
        out[name] = {"contended_decode_s": dec[len(dec) // 2] if dec else None,
                     "contended_passes": len(dec)}
    return out


def _tree_pids(root: int) -> set[int]:
    """`root` and every descendant process (the engine cores are children of the collector)."""
    kids: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                ppid = int(Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            kids.setdefault(ppid, []).append(int(d))
    out, todo = set(), [root]
    while todo:
        p = todo.pop()
        out.add(p)
        todo.extend(kids.get(p, []))
    return out


def cpu_snapshot() -> dict | None:
    """CPU seconds used so far by the whole machine (all cores) and by this process tree."""
    try:
        tick = os.sysconf("SC_CLK_TCK")
        f = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        busy = sum(f[:8]) - f[3] - f[4]        # everything but idle and iowait
        own = 0
        for pid in _tree_pids(os.getpid()):
            try:
                st = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                own += sum(int(x) for x in st[11:15])  # utime stime cutime cstime
            except (OSError, ValueError, IndexError):
                continue
        return {"t": time.monotonic(), "busy_s": busy / tick, "own_s": own / tick}
    except (OSError, ValueError, IndexError):
        return None


def machine_during(before: dict | None, after: dict | None) -> dict | None:
    """What the rest of the machine did between two snapshots: `other_cpu_s` is CPU time used
    by processes outside this collector (a test suite, another job); 0 on a quiet machine."""
    if not before or not after:
        return None
    wall = after["t"] - before["t"]
    busy = after["busy_s"] - before["busy_s"]
    own = after["own_s"] - before["own_s"]
    return {"wall_s": wall, "busy_cpu_s": busy, "own_cpu_s": own,
            "other_cpu_s": max(0.0, busy - own)}


class ProbeClock:
    """One probe between consecutive records: the probe after record i is the probe before
    record i+1 (halves the cost). `invalidate()` when the engines change (a restart)."""

    def __init__(self):
        self._last: dict | None = None
        self._salt = 0

    def invalidate(self) -> None:
        self._last = None

    async def take(self, engines: dict) -> dict:
        self._salt += 1
        self._last = await probe_engines(engines, salt=int(time.time() * 1000) + self._salt)
        return self._last

    async def before(self, engines: dict) -> dict:
        return self._last if self._last is not None else await self.take(engines)


def probe_machine(target: str = "target", draft: str | None = "draft", target_cores: str = "0",
                  draft_cores: str = "1", repeats: int = 3, cache_dir: str | None = None,
                  dtype: str = "float32", max_model_len: int = 4096, keep: bool = False) -> dict:
    """Start the engines as `lr collect` would, probe them `repeats` times, stop them; the median
    of each engine's probes (what `lr calibrate probe` compares with a profile's reference), and
    with `keep` every probe too (`each`: benchmarks/bench_contention_probe.py reads their spread).
    Engine start-up (about a minute per engine on CPU) dominates; the probes take seconds."""
    import asyncio

    from . import shutdown
    from .collect import CollectSpec, Collector
    from .engine_pool import EnginePool
    from .lock import vllm_lock

    spec = CollectSpec(mode="lr" if draft else "ar", target=target, draft=draft or "draft",
                       target_cores=target_cores, draft_cores=draft_cores, cache_dir=cache_dir,
                       dtype=dtype, max_model_len=max_model_len, out=None)
    col = Collector(spec)  # resolves and checks the model folders before the lock

    async def run() -> list[dict]:
        shutdown.cancel_on_signal(asyncio.current_task())
        pool = EnginePool()
        try:
            with shutdown.engine_start():
                col.start(pool)
            await col.warm_up()
            return [await probe_engines(pool.engines, salt=int(time.time() * 1000) + i)
                    for i in range(repeats)]
        finally:
            pool.shutdown()

    with shutdown.signals_to_exceptions(), vllm_lock(), shutdown.EngineGuard():
        probes = asyncio.run(run())
    return summarize(probes, col.run_info["hardware"], keep)


def summarize(probes: list[dict], hardware: dict, keep: bool = False) -> dict:
    """probe_machine's result from its probes (probe_engines records) on engines started with
    `hardware` (a Collector's run_info["hardware"]: their cores and the machine model)."""
    import statistics

    out = {"t": time.time(), **machine_load(), "repeats": len(probes),
           "cores": hardware.get("cores"),
           # the machine model: a probe carries a profile's speed only within one (rescale.py)
           "hardware": {k: v for k, v in hardware.items() if k in ("cpu_model", "gpu")},
           "engines": {}}
    for name in probes[0]["engines"]:
        es = [p["engines"][name] for p in probes]
        out["engines"][name] = {k: statistics.median(e[k] for e in es if e.get(k) is not None)
                                for k in ("decode_s", "prefill_s", "contended_decode_s")
                                if any(e.get(k) for e in es)}
        out["engines"][name]["runs"] = [e.get("decode_s") for e in es]
    if keep:
        out["each"] = probes
    return out
