"""Build a world from a Config, run the load, summarise; `simulate` adds the AR baseline."""
from __future__ import annotations

import math
from typing import NamedTuple

from .config import Config
from .devices import DevicePool
from .engine import Engine
from .free_engine import FreeEngine
from .kernel import Environment
from .latency import Ideal
from .metrics import compare, summarise
from .policies import POLICIES
from .world import RequestRecord, World

# `simulate` streams (stream.py) above this many requests unless told (Config.stream): a full run
# keeps a record, a step list and a RequestSpec with its own random.Random per request. Only an
# explicit --stream raises the work cap to MAX_STREAM_SIM_POSITIONS (lrcore/limits.py)
STREAM_AUTO_REQUESTS = 10_000


def _engine(env, pool, placement, cfg: Config, with_sd: bool):
    if placement is None:
        return None
    devices = pool.place(placement.name, placement.devices)
    lat = placement.latency
    k2 = cfg.k2 if with_sd else 1
    if isinstance(lat, Ideal) and math.isinf(lat.budget):
        sd_unit = cfg.sd_draft.unit if isinstance(cfg.sd_draft, Ideal) else 0.0
        return FreeEngine(env, placement.name, lat.unit, devices, sd_k2=k2, sd_unit=sd_unit)
    return Engine(env, placement.name, lat, devices, max_seqs=placement.max_seqs, sd_k2=k2,
                  sd_draft=cfg.sd_draft, context_term=not cfg.ideal, kv=placement.kv)


def _link_peers(target, draft, cfg: Config) -> None:
    """Target and draft on disjoint devices of one machine slow each other down while both run
    passes (Placement.contention, per engine); FreeEngine (--ideal) never contends."""
    if not (isinstance(target, Engine) and isinstance(draft, Engine)):
        return
    if set(cfg.target.devices) & set(cfg.draft.devices):
        return                    # time-shared devices: the engines never run at once
    if cfg.target.contention > 0 or cfg.draft.contention > 0:
        target.peer, draft.peer = draft, target
        target.contention, draft.contention = float(cfg.target.contention), float(cfg.draft.contention)


def _world(cfg: Config, stream: bool | None) -> tuple[Config, World]:
    """What runs (cfg.effective()), checked against the work caps, and its world: engines on
    their devices, no request yet."""
    from ..work import check_simulation

    cfg = cfg.validate().effective()
    check_simulation(cfg, stream=stream)   # before the workload is built (memory, time)
    env = Environment()   # simpy's, with cancellable engine timers (kernel.py)
    pool = DevicePool(env, cfg.devices)
    uses_sd = cfg.k2 > 1 and cfg.policy != "ar"
    target = _engine(env, pool, cfg.target, cfg, uses_sd)
    draft = _engine(env, pool, cfg.draft, cfg, False) if cfg.policy.startswith("lr") else None
    judge = _engine(env, pool, cfg.judge, cfg, False) if cfg.policy.startswith("lr") else None
    _link_peers(target, draft, cfg)
    return cfg, World(env, cfg, cfg.workload, target, draft, judge, pool)


def run(cfg: Config) -> tuple[dict, World]:
    """Run cfg.policy over cfg.workload; returns (summary, world). With cfg.stream true, a
    streaming run (run_stream): world.records stays empty."""
    if cfg.stream:
        summary, world, _, _ = run_stream(cfg)
        return summary, world
    cfg, world = _world(cfg, stream=None)
    env, target, draft, judge = world.env, world.target, world.draft, world.judge
    policy = POLICIES[cfg.policy]
    requests = cfg.workload.requests()
    world.arrivals = sorted(r.arrival for r in requests)

    def request(req):
        if req.arrival > env.now:
            yield env.timeout(req.arrival - env.now)
        rec = RequestRecord(req.rid, env.now, req.steps, req.output_tokens)
        world.records.append(rec)
        yield from policy(world, req, rec)
        rec.finish = env.now
        world.release(req)

    for req in requests:
        env.process(request(req))
    env.run()
    lost = [r.rid for r in world.records if r.finish is None]
    if lost or len(world.records) != len(requests):
        raise RuntimeError(f"simulation lost requests {lost[:5]} (policy {cfg.policy})")
    start = min(r.arrival for r in world.records)
    wall = max(r.finish for r in world.records) - start
    world.records.sort(key=lambda r: r.rid)
    # engines finish the iteration in progress after the last request ends (cancelled work)
    drained = max([e.last_end for e in (target, draft, judge) if e is not None] + [start + wall]) - start
    return summarise(world, wall, drained), world


def streams(cfg: Config) -> bool:
    """Does `simulate(cfg)` stream? cfg.stream if set, else above STREAM_AUTO_REQUESTS requests
    (lr-adaptive never automatically: run_stream refuses it)."""
    if cfg.stream is not None:
        return bool(cfg.stream)
    from ..work import workload_shape

    return cfg.policy != "lr-adaptive" and workload_shape(cfg.workload)[0] > STREAM_AUTO_REQUESTS


def run_stream(cfg: Config, pair_with=None, keep_latencies: bool = False):
    """A streaming run (stream.py): requests come from the workload one at a time
    (Synthetic.iter_requests: the same RequestSpecs as requests()), are admitted by one arrival
    process (a closed batch: all at t = 0, in request order, as run() starts them), and each
    finished request is folded into fixed-size accumulators and dropped. The simulated events are
    run()'s, so counters equal a full run's and percentiles are within the sketch's guarantee.

    pair_with: the AR baseline's latencies by request id, to pair with this run's (stream.Paired);
    keep_latencies: return this run's latencies by request id (one float64 each).
    Returns (summary, world, latencies or None, Paired or None)."""
    r = streamed(cfg, pair_with, keep_latencies)
    start = r.acc.first_arrival
    summary = summarise(r.world, r.acc.last_finish - start, r.drained_end - start, r.acc.fields())
    summary["stream"] = stream_fields(r.acc, r.peak)
    return summary, r.world, r.lat, r.paired


class Streamed(NamedTuple):
    """What a streaming run leaves: its world, the folded requests (stream.Requests), the
    latencies kept (or None), the pairs with AR's (or None), the most requests in flight at once
    and the end of its last engine iteration (simulated seconds)."""
    world: World
    acc: object
    lat: object
    paired: object
    peak: int
    drained_end: float


def stream_fields(acc, peak: int) -> dict:
    """The summary's "stream" block: how its percentiles were taken and what it held."""
    return {"percentiles": "ddsketch", "relative_accuracy": acc.relative_accuracy,
            "peak_in_flight": peak,
            "sketch_buckets": max(q.buckets() for q in (acc.latency, acc.ttft, acc.tpot))}


def streamed(cfg: Config, pair_with=None, keep_latencies: bool = False) -> Streamed:
    """run_stream's simulation, its accumulators unsummarised (fleet.py merges replicas')."""
    import numpy as np

    from ..work import workload_shape
    from .stream import RELATIVE_ACCURACY, Paired, Requests

    _streamable(cfg)
    cfg, world = _world(cfg, stream=True)
    env, target, draft, judge = world.env, world.target, world.draft, world.judge
    policy = POLICIES[cfg.policy]
    wl = cfg.workload
    n = workload_shape(wl)[0]
    it = wl.iter_requests() if hasattr(wl, "iter_requests") else iter(wl.requests())
    acc = Requests(RELATIVE_ACCURACY)
    lat = np.full(n, np.nan) if keep_latencies else None
    paired = Paired() if pair_with is not None else None
    live = [0, 0, 0]                      # spawned, in flight, peak in flight

    def request(req):
        if req.arrival > env.now:
            yield env.timeout(req.arrival - env.now)
        rec = RequestRecord(req.rid, env.now, req.steps, req.output_tokens)
        live[1] += 1
        if live[1] > live[2]:
            live[2] = live[1]
        yield from policy(world, req, rec)
        rec.finish = env.now
        world.release(req)
        live[1] -= 1
        acc.add(rec)
        if lat is not None:
            lat[req.rid] = rec.finish - rec.arrival
        if paired is not None:
            paired.add(float(pair_with[req.rid]), rec.finish - rec.arrival)

    def arrivals():
        for req in it:
            if req.arrival > env.now:
                yield env.timeout(req.arrival - env.now)
            env.process(request(req))
            live[0] += 1

    env.process(arrivals())
    env.run()
    if live[1] or live[0] != n or acc.requests != n:
        raise RuntimeError(f"simulation lost requests: {acc.requests} of {n} finished "
                           f"({live[0]} admitted; policy {cfg.policy})")
    start = acc.first_arrival       # (the sum kept as run() computes it: the same float)
    end = max([e.last_end for e in (target, draft, judge) if e is not None]
              + [start + (acc.last_finish - start)])
    return Streamed(world, acc, lat, paired, live[2], end)


def _streamable(cfg: Config) -> None:
    from lrcore.errors import UserError

    if cfg.policy == "lr-adaptive":
        raise UserError("--stream does not run lr-adaptive (its summary counts decisions per "
                        "request, which grows with the requests): run it without --stream")


def _simulate_stream(cfg: Config) -> dict:
    """simulate()'s comparison, streamed: the AR baseline first, keeping its latencies by
    request id (8 bytes each), then the policy, paired with them as each request finishes."""
    from ..work import check_simulation
    from .metrics import _pct, compare_paired

    _streamable(cfg)                       # the policy's refusals, before the baseline runs
    # the policy's work, before the baseline runs: only an explicit --stream has the streaming cap
    check_simulation(cfg.validate().effective(), stream=True if cfg.stream else False)
    base, _, base_lat, _ = run_stream(cfg.baseline(), keep_latencies=True)
    base["latency_s"] = _pct(base_lat)     # kept anyway: AR's percentiles exact
    summary, _, _, paired = run_stream(cfg, pair_with=base_lat)
    open_loop = getattr(cfg.workload, "rate", None) is not None
    summary.update(compare_paired(summary, base, paired, open_loop))
    return summary


def simulate(cfg: Config) -> dict:
    """The policy and the AR baseline on the same hardware and workload, compared (streamed
    when streams(cfg): stream.py says what is exact then)."""
    from ..work import check_simulation

    if streams(cfg):
        return _params(_simulate_stream(cfg), cfg)
    check_simulation(cfg.validate().effective(), stream=False)   # its refusal names --stream
    summary, world = run(cfg)
    base, bworld = run(cfg.baseline())
    open_loop = getattr(cfg.workload, "rate", None) is not None
    summary.update(compare(summary, base, [r.latency for r in world.records],
                           [r.latency for r in bworld.records], open_loop))
    return _params(summary, cfg)


def _params(summary: dict, cfg: Config) -> dict:
    summary["policy"] = cfg.policy
    summary["scenario"] = cfg.name
    summary["params"] = {"k1": cfg.k1, "depth": cfg.depth, "width": cfg.width, "k2": cfg.k2,
                         "ideal": cfg.ideal, "c1": cfg.c1,
                         "equal_resources": cfg.equal_resources}
    return summary
