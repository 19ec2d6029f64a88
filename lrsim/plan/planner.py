"""Capacity planning: simulate candidate configurations on given hardware and load, rank them.

A candidate is (mode, k1 | depth, k2, width, placement). On `devices` devices a candidate runs as
`replicas = devices // devices_per_replica` independent copies (data parallel), the load split
evenly between them: `--concurrency C` puts ceil(C / replicas) requests on one replica at t = 0,
`--rate R` sends Poisson arrivals at R / replicas. One replica is simulated; throughput and
goodput are multiplied by the replica count. Every plan contains
    the reference      AR, the target alone at the source's TP (what "speedup" is relative to),
    equal resources    AR (and n-gram SD) with the target given the draft's and judge's devices
                       as extra TP: a speculative configuration must beat this to be worth its GPUs.
Ranking: by speedup (reference mean latency / mean latency) or, with an SLO, by goodput = output
tokens/s of the requests whose latency meets the SLO (`--slo-metric`: ms per output token end to
end, or whole-request latency in ms).

Error bars (stats.py): every candidate runs on workload seed blocks paired with the reference's
(seed k: the same steps for all); its speedup is the mean over blocks of the per-block speedup,
with a Student-t confidence interval (scipy.stats). With `Load.ci_target` (the default of `lr
plan`) the planner adds blocks to every candidate whose interval is wider than ci_target x its
speedup, up to `Load.max_samples`, so the interval it prints is the one it promised.

The candidates, load and hardware are space.py's; the rows and the recommendation rows.py's.
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, replace
from functools import partial

from lrcore.errors import UserError

from ..sim.kvcache import KVNoRoomError
from . import hardware as hw
from . import stats
from .parallel import map_points
from .rows import aggregate, block_means, block_tps, paired_ratio, recommend, speedup_ci
# Candidate, Hardware, Load and candidates are the planner's interface too (breakeven.py, cli.py)
from .space import DEFAULT_RATE_REQUESTS, OBJECTIVES, SLO_METRICS, Candidate, Hardware, Load, Plan  # noqa: F401
from .space import candidates  # noqa: F401

def configure(source, cand: Candidate, hard: Hardware, load: Load, requests: int = 1):
    """Config of one replica of `cand` carrying `requests` requests (and its rate share)."""
    knobs = dict(k1=cand.k1, depth=cand.depth, width=cand.width, k2=cand.k2, steps=load.steps,
                 seed=load.seed, requests=requests)
    if cand.placement == "equal-resources":
        cfg = source.to_config("lr-async", **knobs)
        rebuild = getattr(source, "target_latency", None)
        if hard.tp_efficiency is not None:
            cfg.tp_efficiency = hard.tp_efficiency
            if rebuild is not None:
                rebuild = partial(rebuild, tp_efficiency=hard.tp_efficiency)
        cfg = hw.equal_resources(cfg, rebuild)
        cfg.policy, cfg.k2 = cand.policy, cand.k2
    else:
        cfg = source.to_config(cand.policy, **knobs)
        if cand.placement == "shared":
            cfg = hw.share(cfg)
    return hw.rescale(cfg, hard.kind)


def _tp_efficiency(source, hard, load) -> dict:
    """The equal-resources baseline's TP efficiency and where it came from: the flag, the
    profile's measurement (lrsim/calib/equal.py) or the model's default."""
    if hard.tp_efficiency is not None:
        return {"value": hard.tp_efficiency, "source": "--tp-efficiency"}
    measured = getattr(source, "measured_tp_efficiency", None)
    # a preset rebuilds its wider target with its own efficiency (presets.py target_latency)
    value = source.preset().tp_efficiency if hasattr(source, "preset") else source.to_config("ar").tp_efficiency
    return {"value": value, "source": "measured" if measured is not None else "default"}


def _replicas(source, cand, hard, load) -> tuple[int, int, str | None]:
    """(devices per replica, replicas, why it cannot run). A speculative candidate whose models'
    weights leave no room for a KV cache (e.g. three models shared on small GPUs) is skipped;
    a baseline that does not fit is the plan's one-line error."""
    try:
        per = len(hw.replica_devices(configure(source, cand, hard, load)))
    except KVNoRoomError as e:
        if cand.role:
            raise
        return 0, 0, str(e)
    return per, hard.devices // per, None


def evaluate(args) -> dict:
    """Simulate one replica of a candidate under its share of the load on the seed blocks `ks`
    (runs in a worker). Returns the raw blocks; `aggregate` pools them."""
    from ..sim.runner import run

    source, cand, hard, load, ks = args
    t0, c0 = time.perf_counter(), time.process_time()
    per, replicas, why = _replicas(source, cand, hard, load)
    out = {"devices_per_replica": per, "replicas": replicas, "blocks": {}}
    if replicas < 1:
        return out | {"feasible": False, "why": why or f"needs {per} devices, {hard.devices} available"}
    active = replicas                # replicas that carry requests
    if load.rate:
        n = max(1, math.ceil((load.requests or DEFAULT_RATE_REQUESTS) / replicas))
        cfg = configure(source, cand, hard, load, n)
        # the plan's constant rate replaces a scenario's own arrivals (a synthetic ramp's too)
        ramp = {"rate_end": None} if hasattr(cfg.workload, "rate_end") else {}
        cfg.workload = replace(cfg.workload, rate=load.rate / replicas, **ramp)
    else:
        active = min(replicas, load.concurrency or 1)
        cfg = configure(source, cand, hard, load, max(1, math.ceil((load.concurrency or 1) / replicas)))
    for k in ks:
        cfg.workload = replace(cfg.workload, seed=load.seed_of(k))
        s, world = run(cfg.validate())
        st = world.stats
        out["blocks"][k] = {
            "lat": [r.latency for r in world.records], "tok": [r.tokens for r in world.records],
            "wall": s["wall_s"], "tps": s["tokens_per_s"], "acc": st.accepted, "prop": st.proposed,
            "pos": st.positions, "pos_acc": st.positions_accepted, "util": s["utilisation"],
            "kvp": s.get("kv_preemptions"), "kvf": s.get("kv_peak_fraction"),
            "kvb": s.get("kv_blocked_s"),
            # the most sequences one pass of each engine held (ProfileSource.beyond_measured)
            "mb": {role: max(e.batch_hist) for role, e in (("target", world.target), ("draft", world.draft))
                   if e is not None and e.batch_hist}}
    return out | {"feasible": True, "tp": cfg.target.tp, "active": active,
                  "c1": cfg.c1 if cfg.draft is not None else None,
                  "sim_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0}


def plan(source, cands: list[Candidate], hard: Hardware, load: Load, objective: str | None = None,
         jobs: int = 0, ray_address: str | None = None) -> Plan:
    _check(hard, load)
    objective = objective or ("goodput" if load.slo_ms else "speedup")
    if objective not in OBJECTIVES:
        raise UserError(f"--objective must be one of {', '.join(OBJECTIVES)}, got {objective!r}")
    if objective == "goodput" and not load.slo_ms:
        raise UserError("--objective goodput needs --slo-ms")
    t0 = time.perf_counter()
    source, hard, cands = prepare(source, cands, hard, load)
    cap = _check_work(source, cands, hard, load)
    parts = _run_blocks(source, cands, hard, load, cap, jobs, ray_address)
    rows = [aggregate(c, p, load) for c, p in zip(cands, parts)]
    ok = [r for r in rows if r["feasible"]]
    i_ref = next((i for i, r in enumerate(rows) if r["feasible"] and r["role"] == "reference"), None)
    i_eq = next((i for i, r in enumerate(rows) if r["feasible"] and r["role"] == "equal-resources"
                 and r["mode"] == "ar"), None)
    if i_ref is None:
        raise UserError(f"--devices {hard.devices}: not even the target alone fits "
                        f"(needs {rows[0]['devices_per_replica']} devices)")
    ref, eq = rows[i_ref], (rows[i_eq] if i_eq is not None else None)
    ref_b = block_means(parts[i_ref])
    eq_b = block_means(parts[i_eq]) if i_eq is not None else None
    ref_t = block_tps(parts[i_ref])
    eq_t = block_tps(parts[i_eq]) if i_eq is not None else None
    for r, p in zip(rows, parts):
        if not r["feasible"]:
            continue
        # the throughput speedup: what the machine delivers (a closed batch's tokens over its
        # makespan), where `speedup` is what a request waits (docs/planning.md, "Which speedup")
        mine_t = block_tps(p)
        r.update(throughput_speedup=paired_ratio(ref_t, mine_t),
                 throughput_speedup_vs_equal=paired_ratio(eq_t, mine_t) if eq_t is not None else None)
        mine = block_means(p)
        (m, lo, hi), n = speedup_ci(ref_b, mine, load.confidence)
        r.update(speedup=m, speedup_ci=[lo, hi] if lo is not None else None,
                 speedup_rel_halfwidth=stats.rel_halfwidth(m, lo, hi) if lo is not None else None)
        if eq_b is not None:
            (m2, lo2, hi2), _ = speedup_ci(eq_b, mine, load.confidence)
            r.update(speedup_vs_equal=m2, speedup_vs_equal_ci=[lo2, hi2] if lo2 is not None else None)
        else:
            r.update(speedup_vs_equal=None, speedup_vs_equal_ci=None)
    key = {"speedup": "speedup", "goodput": "goodput_tokens_per_s", "throughput": "tokens_per_s"}[objective]
    ok.sort(key=lambda r: (-r[key], -r["speedup"], r["parallel"]))
    for i, r in enumerate(ok, 1):
        r["rank"] = i
    wide = [r["label"] for r in ok if load.ci_target and (r["speedup_rel_halfwidth"] is None
                                                          or r["speedup_rel_halfwidth"] > load.ci_target)]
    meta = {"source": source.label, "objective": objective, "load": asdict(load),
            "load_text": load.describe(),
            "hardware": {"devices": hard.devices, "kind": hard.kind,
                         "tp_efficiency": _tp_efficiency(source, hard, load)},
            "reference": ref, "equal_resources_baseline": eq, "best": ok[0],
            "skipped": [r for r in rows if not r["feasible"]],
            "statistics": {"confidence": load.confidence, "ci_target": load.ci_target,
                           "samples_min": min(r["samples"] for r in ok),
                           "samples_max": max(r["samples"] for r in ok), "max_samples": cap,
                           "wider_than_target": wide,
                           "method": "mean over paired seed blocks of reference latency / latency; "
                                     "Student-t interval (scipy.stats.t)"},
            "elapsed_s": time.perf_counter() - t0,
            "backend": f"ray ({ray_address})" if ray_address else "local processes"}
    if hasattr(source, "latency_source"):     # presets: the measured table or roofline used
        meta["latency"] = source.latency_source()
    if hasattr(source, "whatif") and source.whatif.describe():
        meta["overrides"] = source.whatif.describe()
    if hasattr(source, "unmeasured"):        # profiles: acceptances priced without a measurement,
        # and passes of more sequences than their traces held
        notes = source.unmeasured({c.mode for c in cands}) + source.beyond_measured(ok)
        if notes:
            meta["notes"] = notes
    meta["recommendation"] = recommend(ok, meta)
    return Plan(ok, meta)


def _run_blocks(source, cands, hard, load: Load, cap: int, jobs: int, ray_address) -> list[dict]:
    """Round 1: `load.samples` blocks for every candidate. With ci_target, more rounds for the
    candidates whose speedup interval is still too wide (the reference and equal-resources AR get
    every block any candidate has, so every block stays paired)."""
    n0 = max(1, min(load.samples, cap))
    want = [n0] * len(cands)
    parts: list[dict | None] = [None] * len(cands)
    base = [i for i, c in enumerate(cands) if c.role and c.mode == "ar"]
    for _ in range(8):                       # rounds; each at least doubles what a wide one needs
        for i in base:
            want[i] = max(want)
        todo = []
        for i, c in enumerate(cands):
            have = set(parts[i]["blocks"]) if parts[i] is not None else set()
            ks = tuple(k for k in range(want[i]) if k not in have)
            if parts[i] is None or (ks and parts[i]["feasible"]):
                todo.append((i, ks))
        if not todo:
            break
        res = map_points(evaluate, [(source, cands[i], hard, load, ks) for i, ks in todo],
                         jobs=jobs, ray_address=ray_address)
        for (i, _), r in zip(todo, res):
            if parts[i] is None:
                parts[i] = r
            else:
                parts[i]["blocks"].update(r["blocks"])
                parts[i]["sim_s"] += r.get("sim_s", 0.0)
                parts[i]["cpu_s"] += r.get("cpu_s", 0.0)
        if not load.ci_target:
            break
        ref = next((parts[i] for i in base if cands[i].role == "reference" and parts[i]["feasible"]), None)
        if ref is None:
            break
        ref_b = block_means(ref)
        grow = False
        for i, p in enumerate(parts):
            if not p["feasible"] or i in base and cands[i].role == "reference":
                continue
            (m, lo, hi), n = speedup_ci(ref_b, block_means(p), load.confidence)
            need = stats.blocks_needed(n, stats.rel_halfwidth(m, lo, hi), load.ci_target, cap, load.confidence)
            if need > len(p["blocks"]):
                want[i], grow = need, True
        if not grow:
            break
    return parts


def prepare(source, cands: list[Candidate], hard: Hardware, load: Load):
    """The source on the planned device kind, the hardware with its defaults, and the candidates
    less the shared placements that would repeat dedicated ones (idempotent)."""
    hard = resolve_hardware(source, hard, load)
    if hasattr(source, "on_device"):      # presets rebuild on the kind; others rescale once
        source = source.on_device(hard.kind)
    return source, hard, _drop_redundant_sharing(source, cands, load)


def work(source, cands: list[Candidate], hard: Hardware, load: Load) -> int:
    """Simulated positions of one seed block of every candidate's replica at this load (each
    checked against the per-simulation cap first)."""
    from ..work import check_simulation

    total = 0
    for c in cands:
        per, replicas, _ = _replicas(source, c, hard, load)
        if replicas < 1:
            continue
        share = (load.requests or DEFAULT_RATE_REQUESTS) if load.rate else (load.concurrency or 1)
        cfg = configure(source, c, hard, load, max(1, math.ceil(share / replicas)))
        total += check_simulation(cfg, f"lr plan, candidate {c.label}")
    return total


def _check_work(source, cands: list[Candidate], hard: Hardware, load: Load) -> int:
    """Refuse, before any worker starts, a plan whose simulations are too big (lrsim/work.py):
    each candidate's replica (its share of --concurrency / --requests) and all of them together
    at the first round's samples. Returns the most blocks per candidate the caps allow (at most
    Load.max_samples with ci_target, else Load.samples)."""
    from lrcore.limits import MAX_COMMAND_POSITIONS

    from ..work import check_command

    total = work(source, cands, hard, load)
    check_command(total * load.samples, f"lr plan ({len(cands)} candidates x {load.samples} sample(s))")
    if not load.ci_target:
        return load.samples
    return max(load.samples, min(load.max_samples, MAX_COMMAND_POSITIONS // max(1, total)))


def _drop_redundant_sharing(source, cands: list[Candidate], load: Load) -> list[Candidate]:
    """A source whose draft and judge already sit on the target's devices (a calibrated CPU
    profile, cpu-2core) has no separate "shared" placement: those candidates would repeat."""
    if not any(c.placement == "shared" for c in cands):
        return cands
    try:
        cfg = source.to_config("lr-async", steps=load.steps)
    except UserError:
        return cands
    if set(hw.replica_devices(cfg)) == set(cfg.target.devices):
        return [c for c in cands if c.placement != "shared"]
    return cands


def resolve_hardware(source, hard: Hardware, load: Load) -> Hardware:
    """Defaults: as many devices as one dedicated LR replica occupies (the paper's 4 GPUs for the
    presets; the target's own when the source has no draft), of the source's kind."""
    kind = hard.kind or hw.device_kind(source.to_config("ar", steps=load.steps))
    if hard.devices is not None:
        return replace(hard, kind=kind)
    hard = replace(hard, kind=kind)
    try:
        cfg = source.to_config("lr-async", steps=load.steps)
    except UserError:
        cfg = source.to_config("ar", steps=load.steps)
    return replace(hard, devices=len(hw.replica_devices(cfg)))


def _check(hard: Hardware, load: Load) -> None:
    if hard.tp_efficiency is not None and not 0.1 <= hard.tp_efficiency <= 1.0:
        raise UserError(f"--tp-efficiency must be in [0.1, 1], got {hard.tp_efficiency}")
    if hard.devices is not None and hard.devices < 1:
        raise UserError(f"--devices must be >= 1, got {hard.devices}")
    if load.concurrency is not None and load.rate is not None:
        raise UserError("--concurrency and --rate are exclusive (closed batch vs open-loop arrivals)")
    if load.concurrency is not None and load.concurrency < 1:
        raise UserError(f"--concurrency must be >= 1, got {load.concurrency}")
    if load.rate is not None and not (load.rate > 0 and math.isfinite(load.rate)):
        raise UserError(f"--rate must be > 0 requests/s, got {load.rate}")
    if load.samples < 1:
        raise UserError(f"--samples must be >= 1, got {load.samples}")
    if load.ci_target is not None and not (math.isfinite(load.ci_target) and 0 < load.ci_target < 1):
        raise UserError(f"--ci-target must be a relative half-width in (0, 1), got {load.ci_target}")
    if load.max_samples < max(2, load.samples if load.ci_target else 1):
        raise UserError(f"--max-samples must be >= 2 and >= --samples, got {load.max_samples}")
    if not 0.5 <= load.confidence < 1:
        raise UserError(f"--confidence must be in [0.5, 1), got {load.confidence}")
    if load.steps is not None and load.steps < 1:
        raise UserError(f"--steps must be >= 1, got {load.steps}")
    if load.requests is not None and load.requests < 1:
        raise UserError(f"--requests must be >= 1, got {load.requests}")
    if load.slo_ms is not None and not (load.slo_ms > 0 and math.isfinite(load.slo_ms)):
        raise UserError(f"--slo-ms must be > 0, got {load.slo_ms}")
    if load.slo_metric not in SLO_METRICS:
        raise UserError(f"--slo-metric must be one of {', '.join(SLO_METRICS)}, got {load.slo_metric!r}")
