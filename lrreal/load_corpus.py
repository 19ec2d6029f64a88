"""The load corpus: ar, the equal-resources AR, sd, lr and lr+sd at 1, 2, 4 and 8 requests in flight
on the same engines, interleaved, resumable (benchmarks/collect_load.py runs it).
lr and lr+sd run with the embedding verifier too (exact matching: lr only).

    jobs = load_plan(levels=(1, 2, 4, 8), rounds=3)
    collect_load(jobs, "traces/load", base)        # kill it whenever; rerun to continue

One trace file per (concurrency, configuration): `<out>/<dataset>/c<N>/<label>.jsonl`, written as
`lr collect --concurrency N` with that configuration's flags writes it; beside it, one engine pass
log per block (`<label>.passes/round<r>.json`, write_pass_log). A job is one block of N
problems run together (a closed loop of N): round r of level N is problems r*N .. r*N+N-1, so
every configuration of a level sees the same problems and speedups pair per problem. Open loop
(`rate`): the block's N arrive by a seeded Poisson process instead, in
`<out>/<dataset>/rate<R>-n<N>/<label>.jsonl`.

Order, for the same reason as lrreal/corpus.py (drift must hit every configuration alike): round
by round, each round running every level and configuration once. Within a round the jobs are
grouped by the target engine they need (plain, n-gram SD, equal resources: a restart each, about
a minute), the groups' order rotating by round, and within a group levels and configurations
rotate too.

Cores: target on core 0, draft on core 1, loaded throughout (idle in ar/sd); the equal-resources
AR binds the target to both cores (`--equal-resources`), the draft still loaded and idle.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from lrcore.errors import UserError
from lrcore.modes import SD_MODES

from .collect import CollectSpec
from .corpus import CorpusConfig, CorpusEngines, run_jobs

LEVELS = (1, 2, 4, 8)


@dataclass(frozen=True)
class LoadConfig(CorpusConfig):
    equal_resources: bool = False

    @property
    def phase(self) -> str:
        return "er" if self.equal_resources else ("sd" if self.mode in SD_MODES else "plain")


CONFIGS = (
    LoadConfig("ar", "ar"),
    LoadConfig("ar-er", "ar", equal_resources=True),
    LoadConfig("sd", "sd"),
    LoadConfig("lr-d2", "lr", depth=2),
    # the embedding verifier accepts ~0.4 of GSM8K drafts here against exact matching's ~0.25:
    # the configurations that beat AR one request at a time (traces/corpus), so their break-even
    # under load is a real crossing
    LoadConfig("lr-d2-emb", "lr", depth=2, verifier="embedding:0.9"),
    LoadConfig("lr+sd-d2-emb", "lr+sd", depth=2, verifier="embedding:0.9"),
)
# adaptive lookahead beside AR and the static LR it replaces, in a corpus of its own
# (benchmarks/collect_load.py --set adaptive: traces/load-adaptive/, 1-4 in flight)
ADAPTIVE_CONFIGS = (
    LoadConfig("ar", "ar"),
    LoadConfig("lr-d2", "lr", depth=2),
    LoadConfig("lr-adaptive-d2", "lr-adaptive", depth=2),
)
# configurations a profile of the load corpus has never seen (it holds depth 2 only): depth 1 and 3
# and lr+sd at depth 3, beside ar on the same problems, in a corpus of their own
# (benchmarks/collect_load.py --set transfer: traces/load-transfer/), so the plan's transfer
# across configurations under load is measured, not assumed
TRANSFER_CONFIGS = (
    LoadConfig("ar", "ar"),
    LoadConfig("lr-d1-emb", "lr", depth=1, verifier="embedding:0.9"),
    LoadConfig("lr-d3-emb", "lr", depth=3, verifier="embedding:0.9"),
    LoadConfig("lr+sd-d3-emb", "lr+sd", depth=3, verifier="embedding:0.9"),
)
# open loop: requests arrive by a seeded Poisson process instead of all at once (a block of N at
# `--request-rate`, the same arrivals for every configuration of a round), ar beside the LR
# configuration the load corpus calibrates best (benchmarks/collect_load.py --set open:
# traces/load-open/), so `lr plan --rate` and the replay of recorded arrivals are measured
OPEN_CONFIGS = (
    LoadConfig("ar", "ar"),
    LoadConfig("lr-d2-emb", "lr", depth=2, verifier="embedding:0.9"),
)
BY_LABEL = {c.label: c for c in CONFIGS + ADAPTIVE_CONFIGS + TRANSFER_CONFIGS + OPEN_CONFIGS}


@dataclass(frozen=True)
class LoadJob:
    dataset: str
    concurrency: int
    round: int
    config: LoadConfig
    first: int = 0      # the data set row of round 0 (a held-out corpus starts past another's rows)
    rate: float | None = None   # requests/s, Poisson arrivals (None: the N start together)

    @property
    def offset(self) -> int:
        return self.first + self.round * self.concurrency

    def path(self, out_dir: Path) -> Path:
        level = f"c{self.concurrency}" if self.rate is None else f"rate{self.rate:g}-n{self.concurrency}"
        return Path(out_dir) / self.dataset / level / f"{self.config.label}.jsonl"

    def arrivals(self) -> list[float]:
        """Arrival offsets (s) of the block's N problems, in data set order: seeded by first +
        round, so every configuration of a round meets the same arrivals (paired). A resumed
        block's remaining problems keep their gaps, from the first remaining one's arrival (its
        run's clock starts there: bench_open_loop.py leaves such a block out)."""
        from .load import arrival_offsets

        return arrival_offsets(self.concurrency, self.rate, self.first + self.round)


def _rot(xs: list, k: int) -> list:
    k %= len(xs)
    return xs[k:] + xs[:k]


def load_plan(levels=LEVELS, rounds: int = 3, configs=CONFIGS, dataset: str = "gsm8k",
              first: int = 0, rate: float | None = None) -> list[LoadJob]:
    """Every job in collection order (see the module docstring); round r of level N is problems
    first + r*N .. first + r*N + N-1; with `rate`, a level's N arrive at that many requests/s."""
    jobs = []
    phases = [p for p in ("plain", "sd", "er") if any(c.phase == p for c in configs)]
    for r in range(rounds):
        for ph in _rot(phases, r):
            group = [c for c in configs if c.phase == ph]
            for level in _rot(list(levels), r):
                jobs += [LoadJob(dataset, level, r, c, first, rate) for c in _rot(group, r + level)]
    return jobs


def compared_together(job: LoadJob) -> tuple:
    """The jobs a stop (--stop-after) must not split: one round's configurations of one level and
    phase, which the benchmarks pair block by block."""
    return job.round, job.concurrency, job.config.phase


def spec_for(job: LoadJob, out_dir: Path, base: CollectSpec, cold_cache: bool = False) -> CollectSpec:
    c = job.config
    extra = {"load_config": c.label, "load_round": job.round} | ({"cold_cache": True} if cold_cache else {})
    return c.spec(base, job.dataset, offset=job.offset, limit=job.concurrency,
                  concurrency=job.concurrency, request_rate=job.rate,
                  equal_resources=c.equal_resources, out=str(job.path(out_dir)), extra=extra)


def pending(job: LoadJob, out_dir: Path, seen: dict | None = None) -> list:
    """The job's (problem, arrival offset) pairs whose record is not yet in its trace file. `seen` caches each file's
    recorded (problem, sample) keys across the jobs of one plan: validating a file's records
    is seconds, and a plan names each file once per round."""
    from lrcore.traces import read_traces

    from .datasets import load_problems

    path = job.path(out_dir)
    seen = {} if seen is None else seen
    if path not in seen:
        seen[path] = {(r["problem_id"], r["sample"]) for r in read_traces(path)} if path.exists() else set()
    done = seen[path]
    last = job.offset + job.concurrency - 1
    everything = load_problems(job.dataset)
    problems = everything[job.offset: last + 1]
    # a block of fewer problems than its level is not that level: refused before any engine starts
    if len(problems) < job.concurrency:
        raise UserError(f"round {job.round} at {job.concurrency} in flight runs {job.dataset} rows "
                        f"{job.offset}-{last}, past its last row ({len(everything) - 1}): use a "
                        "smaller first problem (--first-problem), fewer rounds or lower levels")
    return [(p, t) for p, t in zip(problems, job.arrivals()) if (p.id, 0) not in done]


def pass_log_path(job: LoadJob, out_dir: Path) -> Path:
    """Where a block's engine pass log goes: `<label>.passes/round<r>.json` beside its trace file,
    `round<r>-<k>.json` when one is there already (never overwritten). The log is written when
    the block's run ends: a block killed part-way has none, and its resumed run (its survivors,
    another run) writes the first."""
    folder = job.path(out_dir).with_suffix(".passes")
    path, k = folder / f"round{job.round}.json", 1
    while path.exists():
        path, k = folder / f"round{job.round}-{k}.json", k + 1
    return path


def write_pass_log(job: LoadJob, out_dir: Path, passes: dict, probe_t: float | None) -> Path:
    """Every forward pass each engine ran during the block, once (a record's engine_stats holds
    the passes of its own lifetime, each shared with every request then in flight, and clips the
    ones begun before it): `start` is seconds from the block's start, the clock of the records'
    load.arrival_s. What an open loop's schedule did between passes is read from here."""
    import json

    from lrcore.outputs import write_atomic

    doc = {"config": job.config.label, "round": job.round, "concurrency": job.concurrency,
           "request_rate": job.rate, "probe_at_start_t": probe_t, "engines": passes}
    # a fresh name (pass_log_path: never an existing log), written whole or not at all
    return write_atomic(pass_log_path(job, out_dir), json.dumps(doc) + "\n", flag="pass log")


def collect_load(jobs: list[LoadJob], out_dir, base: CollectSpec, log=print,
                 stop_after_s: float | None = None, cold_cache: bool = False) -> int:
    """Run the jobs' missing records on one engine pool; returns the number written. Safe to kill
    at any point: each record is fsynced as it finishes. `cold_cache`: empty every engine's
    prefix cache before each block (after its probe; run.flags.cold_cache), so that no block
    finds the contexts an earlier one left - the same problem run by another configuration
    before, with temperature 0 and seeded drafts the same contexts (benchmarks/
    bench_prefix_hits.py); each block's own requests still share their prefixes."""
    from lrcore.traces import TraceWriter

    from . import shutdown
    from .load import run_in_flight

    out_dir = Path(out_dir)
    seen: dict = {}
    todo = [(j, left) for j in jobs if (left := pending(j, out_dir, seen))]
    total = sum(j.concurrency for j in jobs)
    log(f"load corpus: {total - sum(len(x) for _, x in todo)} of {total} records already in "
        f"{out_dir}; {len(todo)} job(s) to run")
    if not todo:
        return 0

    async def run_block(engines: CorpusEngines, block: tuple) -> int:
        job, probs = block
        spec = spec_for(job, out_dir, base, cold_cache)
        col = await engines.collector(spec)
        # The writer is opened (the file's records validated) once, before the block's clock
        # starts. Opened per record, as it was, the validation ran in the event loop at every
        # request's end and stalled the block's other requests with it: 11-28 s of idle target
        # engine per request end in the open-loop corpus, growing with the file (its pass logs).
        with TraceWriter(spec.out, resume=True) as writer:
            engines.pool.probes.invalidate()  # level 1's probe: fresh, not the last block's
            await col.probe_run()
            engs = engines.pool.engines
            if cold_cache:
                for e in engs.values():
                    await e.reset_prefix_cache()
            marks = {n: e.stats_mark() for n, e in engs.items()}   # after the probe: its passes are not the block's
            t0 = time.monotonic()
            recs = []

            def on_done(item, rec, error):
                if error is not None:
                    raise error  # a block is a measurement: no silent gaps in it
                with shutdown.critical():
                    writer.write(rec)
                recs.append(rec)

            start = min(t for _, t in probs)   # a resumed block's first remaining arrival opens it
            await run_in_flight([(p, 0) for p, _ in probs], job.concurrency, job.rate,
                                [t - start for _, t in probs],
                                lambda item, adm: col.run_one(*item, admission=adm),
                                on_done)  # level 1 too gets a load object (its TTFT)
            wall = time.monotonic() - t0
        write_pass_log(job, out_dir, {n: e.stats_since(marks[n], t0)["forward_passes"] for n, e in engs.items()},
                       col.run_info.get("probe_at_start", {}).get("t"))
        toks = sum(r["output_tokens"] for r in recs)
        acc = [sum(r["step_acceptance"][k] for r in recs) for k in ("accepted", "proposed")]
        log(f"{time.strftime('%H:%M:%S')} {job.path(out_dir).parent.name} r{job.round} "
            f"{job.config.label:<9} {len(recs)} rec {toks:>5} tok {wall:7.1f} s "
            f"{toks / wall:5.2f} tok/s acc {acc[0]}/{acc[1]} "
            f"correct {sum(bool(r['correct']) for r in recs)}")
        return len(recs)

    return run_jobs(todo, base, out_dir, run_block, log, stop_after_s, "load corpus",
                    together=lambda block: compared_together(block[0]))
