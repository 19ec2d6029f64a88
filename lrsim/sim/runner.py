"""Build a world from a Config, run the load, summarise; `simulate` adds the AR baseline."""
from __future__ import annotations

import math

from .config import Config
from .devices import DevicePool
from .engine import Engine
from .free_engine import FreeEngine
from .kernel import Environment
from .latency import Ideal
from .metrics import compare, summarise
from .policies import POLICIES
from .world import RequestRecord, World


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


def run(cfg: Config) -> tuple[dict, World]:
    """Run cfg.policy over cfg.workload; returns (summary, world)."""
    from ..work import check_simulation

    cfg = cfg.validate().effective()
    check_simulation(cfg)   # before the workload is built (memory, time)
    env = Environment()   # simpy's, with cancellable engine timers (kernel.py)
    pool = DevicePool(env, cfg.devices)
    uses_sd = cfg.k2 > 1 and cfg.policy != "ar"
    target = _engine(env, pool, cfg.target, cfg, uses_sd)
    draft = _engine(env, pool, cfg.draft, cfg, False) if cfg.policy.startswith("lr") else None
    judge = _engine(env, pool, cfg.judge, cfg, False) if cfg.policy.startswith("lr") else None
    _link_peers(target, draft, cfg)
    world = World(env, cfg, cfg.workload, target, draft, judge, pool)
    policy = POLICIES[cfg.policy]
    requests = cfg.workload.requests()

    def request(req):
        if req.arrival > env.now:
            yield env.timeout(req.arrival - env.now)
        rec = RequestRecord(req.rid, env.now, req.steps, req.output_tokens)
        world.records.append(rec)
        yield from policy(world, req, rec)
        rec.finish = env.now

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


def simulate(cfg: Config) -> dict:
    """The policy and the AR baseline on the same hardware and workload, compared."""
    summary, world = run(cfg)
    base, bworld = run(cfg.baseline())
    open_loop = getattr(cfg.workload, "rate", None) is not None
    summary.update(compare(summary, base, [r.latency for r in world.records],
                           [r.latency for r in bworld.records], open_loop))
    summary["policy"] = cfg.policy
    summary["scenario"] = cfg.name
    summary["params"] = {"k1": cfg.k1, "depth": cfg.depth, "width": cfg.width, "k2": cfg.k2,
                         "ideal": cfg.ideal, "c1": cfg.c1,
                         "equal_resources": cfg.equal_resources}
    return summary
