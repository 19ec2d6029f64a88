"""A fleet: R identical replicas of one configuration, the requests split between them, each
simulated in its own process and folded into one summary (`lr simulate --replicas R --jobs J`).

A fleet-hour (a million requests over many GPUs) is many copies of one deployment, each serving
its share of the requests. The copies share nothing, so each is a simulation of its own: replica
r of R carries n // R requests (the first n % R one more), Poisson arrivals at rate / R (a
random split of a Poisson stream is Poisson: thinning; here the counts are fixed, not
multinomial; a ramp's ends are divided the same way)
and a workload seed of its own (numpy's SeedSequence of (seed, r); one replica keeps the seed).
Each runs streamed (stream.py) after its AR baseline, as `simulate --stream` does, and the parent
folds the replicas, in replica order, into one summary:

- counters, histograms, busy seconds and iterations add up; acceptance, steps per cycle, mean
  batch and SD's accepted length are recomputed from the sums; utilisation is the busy seconds
  over the replicas' drained seconds (the mean replica's); KV: preemptions and blocked seconds
  add up, the peak is the fullest replica's;
- percentiles: the replicas' DDSketches merged (bucket counts add: the sketch of all the
  requests, with the same 0.5% guarantee); AR's exact, from its latencies (8 bytes a request);
- the paired latency speedup over AR and its standard error: the replicas' co-moments merged
  (stream.Paired.merge), so they are those of all the fleet's requests;
- wall: the fleet's first arrival to its last finish; tokens/s: every replica's tokens over it.

The summary does not depend on the workers (the same replicas, merged in the same order). It is
the fleet's, not one replica's run of all n requests: each replica sees rate / R. The planner
(lrsim/plan/planner.py) simulates one replica and multiplies; a fleet run simulates every one.
"""
from __future__ import annotations

from dataclasses import replace

from lrcore.errors import UserError

from .build import MAX_REPLICAS
from .metrics import _pct, add_counts, compare_paired, counts, summary_of
from .runner import stream_fields, streamed
from .workload import Synthetic

def replica_config(cfg, r: int, replicas: int):
    """Replica r's configuration: its share of the requests and of the rate, its own seed."""
    import numpy as np

    wl = cfg.workload
    if not isinstance(wl, Synthetic):
        raise UserError("--replicas splits a synthetic workload (flags, --preset or a scenario's "
                        "synthetic workload), not a trace replay")
    n = wl.n_requests
    # 63 bits (a seed's range): 32 would let two of thousands of replicas draw the same requests
    seed = (wl.seed if replicas == 1
            else int(np.random.SeedSequence([wl.seed, r]).generate_state(1, np.uint64)[0] >> 1))
    share = replace(wl, n_requests=n // replicas + (1 if r < n % replicas else 0), seed=seed,
                    rate=None if wl.rate is None else wl.rate / replicas,
                    rate_end=None if wl.rate_end is None else wl.rate_end / replicas)
    return replace(cfg, workload=share, stream=True)


def run_replica(arg: tuple) -> dict:
    """One replica, streamed: its AR baseline (latencies kept), then the policy paired with it.
    A module-level function of one picklable argument, for the worker processes."""
    cfg, r, replicas = arg
    rc = replica_config(cfg, r, replicas)
    base = streamed(rc.baseline(), keep_latencies=True)
    pol = streamed(rc, pair_with=base.lat)
    part = {name: {"counts": counts(s.world), "acc": s.acc, "peak": s.peak, "end": s.drained_end}
            for name, s in (("policy", pol), ("baseline", base))}
    return part | {"ar_latencies": base.lat, "paired": pol.paired}


def simulate_fleet(cfg, replicas: int, jobs: int = 0, ray_address: str | None = None) -> dict:
    """simulate()'s comparison for a fleet of `replicas` copies of cfg, on `jobs` worker
    processes (0: every core), or one Ray task per replica on a cluster (`ray_address`, as
    `lr plan --ray-address`: lrsim/plan/parallel.py)."""
    import os

    from ..plan.parallel import map_points
    from ..work import check_simulation

    if not 1 <= replicas <= MAX_REPLICAS:
        raise UserError(f"--replicas must be 1..{MAX_REPLICAS}, got {replicas}")
    if cfg.stream is False:
        raise UserError("--replicas streams every replica: drop --no-stream")
    wl = cfg.workload
    replica_config(cfg, 0, replicas)               # the workload's refusal, before any work
    if wl.n_requests < replicas:
        raise UserError(f"--replicas {replicas}: more replicas than requests ({wl.n_requests})")
    if cfg.policy == "lr-adaptive":
        raise UserError("--replicas streams every replica, which lr-adaptive does not (its summary "
                        "counts decisions per request): run it without --replicas")
    # the whole fleet's work, as one streamed run of cfg (--replicas always streams: its cap)
    check_simulation(cfg.validate().effective(), stream=True)
    workers = min(jobs or os.cpu_count() or 1, replicas)
    parts = map_points(run_replica, [(cfg, r, replicas) for r in range(replicas)], jobs=workers,
                       ray_address=ray_address)
    sizes = [p["policy"]["acc"].requests for p in parts]     # (fold merges into the first)
    summary = fold(parts, open_loop=wl.rate is not None)
    summary["fleet"] = {"replicas": replicas, "workers": None if ray_address else workers,
                        "backend": f"ray ({ray_address})" if ray_address else "processes",
                        "requests_per_replica": [min(sizes), max(sizes)],
                        "rate_per_replica": None if wl.rate is None else wl.rate / replicas}
    return summary


def fold(parts: list[dict], open_loop: bool) -> dict:
    """The replicas' parts (run_replica's), in replica order, as one streamed summary."""
    import numpy as np

    policy, base = (_summary([p[role] for p in parts]) for role in ("policy", "baseline"))
    base["latency_s"] = _pct(np.concatenate([p["ar_latencies"] for p in parts]))   # AR's exact
    paired = parts[0]["paired"]
    for p in parts[1:]:
        paired.merge(p["paired"])
    policy.update(compare_paired(policy, base, paired, open_loop))
    return policy


def _summary(roles: list[dict]) -> dict:
    # each replica's drained seconds: from its first arrival to its engines' last iteration
    utilised = sum(x["end"] - x["acc"].first_arrival for x in roles)
    acc, c = roles[0]["acc"], roles[0]["counts"]
    for x in roles[1:]:
        acc.merge(x["acc"])
        c = add_counts(c, x["counts"])
    start, end = acc.first_arrival, max(x["end"] for x in roles)
    out = summary_of(c, acc.last_finish - start, end - start, acc.fields(), utilised_s=utilised)
    out["stream"] = stream_fields(acc, max(x["peak"] for x in roles))   # the busiest replica's
    return out

