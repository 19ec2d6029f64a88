"""The real trace corpus: every configuration on every problem, interleaved, on one engine pool.

    plan = corpus_plan([("gsm8k", 8), ("aime2025", 4)])
    collect_corpus(plan, out_dir="traces/corpus", max_tokens=256)      # resumable, any time

One trace file per (data set, configuration): `<out_dir>/<dataset>/<label>.jsonl`, each written
exactly as `lr collect` with that configuration's flags would write it (same records, same
resume rules, a probe around every record). The order is what makes the corpus comparable:

- problem by problem, every configuration of a problem before the next problem, so a change in
  the machine's speed hits every configuration alike instead of whichever ran that hour;
- within a problem the configurations on the plain target (ar, lr, lr-sync) and on the n-gram SD
  target (sd, lr+sd) form two phases whose order alternates between problems, so the target
  restarts once per problem (vLLM's speculative config is fixed per engine) and the draft never;
- within a phase the order rotates by one configuration per problem (no configuration always
  runs first after a restart).

Every configuration binds the target to core 0 and the draft to core 1, AR included: speedups
are against the target on the same hardware it has under LR (the paper's baseline), and the
draft is loaded, idle, during ar/sd (recorded as `run.engines_loaded`).
"""
from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, replace
from pathlib import Path

from lrcore.modes import ADAPTIVE_MODES, LR_MODES, SD_MODES

from .collect import CollectSpec, Collector


@dataclass(frozen=True)
class CorpusConfig:
    label: str                 # the trace file's stem
    mode: str
    depth: int = 2
    width: int = 1
    verifier: str = "exact"
    temperature: float = 0.0   # width > 1 needs sampling: greedy siblings are identical
    top_p: float = 1.0

    @property
    def phase(self) -> str:
        return "sd" if self.mode in SD_MODES else "plain"

    def spec(self, base: CollectSpec, dataset: str, **fields) -> CollectSpec:
        """`base` with this configuration's flags on `dataset`, resumable and probed; `fields`
        set the rest (which problems, the trace file, ...)."""
        return replace(base, mode=self.mode, depth=self.depth, width=self.width,
                       verifier=self.verifier, temperature=self.temperature, top_p=self.top_p,
                       dataset=dataset, resume=True, probe=True,
                       adaptive_prior=base.adaptive_prior if self.mode in ADAPTIVE_MODES else None,
                       **fields)


CONFIGS = (
    CorpusConfig("ar", "ar"),
    CorpusConfig("lr-d1", "lr", depth=1),
    CorpusConfig("lr-d2", "lr", depth=2),
    CorpusConfig("lr-d3", "lr", depth=3),
    CorpusConfig("lr-d2-w2", "lr", depth=2, width=2, temperature=0.6, top_p=0.95),  # paper's sampling
    CorpusConfig("lr-sync-d2", "lr-sync", depth=2),
    CorpusConfig("lr-d2-emb", "lr", depth=2, verifier="embedding:0.9"),
    CorpusConfig("sd", "sd"),
    CorpusConfig("lr+sd-d2", "lr+sd", depth=2),
    CorpusConfig("lr+sd-d2-emb", "lr+sd", depth=2, verifier="embedding:0.9"),
)
BY_LABEL = {c.label: c for c in CONFIGS}


@dataclass(frozen=True)
class Job:
    dataset: str
    index: int                 # problem offset in the data set
    config: CorpusConfig
    max_tokens: int | None = None   # None: the base spec's budget


def corpus_plan(datasets: list[tuple], configs=CONFIGS) -> list[Job]:
    """Every (problem, configuration) job in collection order (see the module docstring).
    `datasets`: (name, problems) or (name, problems, max_tokens) tuples."""
    jobs, n = [], 0
    for dataset, count, *budget in datasets:
        max_tokens = budget[0] if budget else None
        for i in range(count):
            phases = ["plain", "sd"] if n % 2 == 0 else ["sd", "plain"]
            for ph in phases:
                group = [c for c in configs if c.phase == ph]
                if group:
                    k = n % len(group)
                    jobs += [Job(dataset, i, c, max_tokens) for c in group[k:] + group[:k]]
            n += 1
    return jobs


def spec_for(job: Job, out_dir: Path, base: CollectSpec) -> CollectSpec:
    c = job.config
    return c.spec(base, job.dataset, offset=job.index, limit=1,
                  max_tokens=job.max_tokens or base.max_tokens,
                  out=str(out_dir / job.dataset / f"{c.label}.jsonl"),
                  extra={"corpus_config": c.label})


def pending(jobs: list[Job], out_dir: Path) -> list[Job]:
    """Jobs whose record is not yet in its trace file (resume)."""
    from .datasets import load_problems
    from lrcore.traces import read_traces

    done: dict[str, set] = {}
    left = []
    for j in jobs:
        path = out_dir / j.dataset / f"{j.config.label}.jsonl"
        if str(path) not in done:
            done[str(path)] = ({(r["problem_id"], r["sample"]) for r in read_traces(path)}
                               if path.exists() else set())
        pid = load_problems(j.dataset, 1, j.index)[0].id
        if (pid, 0) not in done[str(path)]:
            left.append(j)
    return left


class CorpusEngines:
    """One engine pool and one verifier per --verifier across the jobs of a corpus (this module
    and lrreal/load_corpus.py): the draft is loaded once and stays loaded throughout (idle in
    ar/sd), so every record runs beside the same engine set. Use inside the event loop:

        async with CorpusEngines(base, out_dir) as engines:
            col = await engines.collector(spec)       # started, verifier bound, warmed up
    """

    def __init__(self, base: CollectSpec, out_dir: Path):
        from .engine_pool import EnginePool

        self.base, self.out_dir = base, Path(out_dir)
        self.pool = EnginePool()
        self.verifiers: dict[str, object] = {}

    async def __aenter__(self) -> "CorpusEngines":
        from . import shutdown

        lr_spec = replace(self.base, mode="lr", adaptive_prior=None,
                          out=str(self.out_dir / "unused.jsonl"))
        try:
            with shutdown.engine_start():
                self.pool.get("draft", Collector(lr_spec).engine_args()["draft"])
        except BaseException:
            self.pool.shutdown()
            raise
        return self

    async def collector(self, spec: CollectSpec) -> Collector:
        from . import shutdown

        col = Collector(spec)
        with shutdown.engine_start():
            col.start(self.pool)
        if spec.mode in LR_MODES:
            if spec.verifier not in self.verifiers:
                self.verifiers[spec.verifier] = col.make_verifier()
            col.verifier = self.verifiers[spec.verifier]
            col.run_info["verifier"] = col.verifier.describe()
        await col.warm_up()
        return col

    async def __aexit__(self, *exc) -> None:
        for v in self.verifiers.values():
            try:
                await v.aclose()
            except Exception:
                pass
        self.pool.shutdown()


def run_jobs(jobs: list, base: CollectSpec, out_dir: Path, run_job, log, stop_after_s: float | None,
             name: str, together=None) -> int:
    """The driver of both corpora (this module and lrreal/load_corpus.py): `await run_job(engines,
    job)` for each job in turn on one CorpusEngines, under the engine lock, the signal handlers
    and the reaper guard; no job starts once `stop_after_s` have passed, except one whose
    `together(job)` key equals the last job's (the rest of a group its comparison needs: the
    configurations of one round, which a stop would otherwise split). Returns the records
    written (the sum of what run_job returns)."""
    from . import shutdown
    from .lock import vllm_lock

    written = 0
    t_start = time.monotonic()

    async def run() -> None:
        nonlocal written
        shutdown.cancel_on_signal(asyncio.current_task())
        async with CorpusEngines(base, out_dir) as engines:
            last = None
            for job in jobs:
                if stop_after_s is not None and time.monotonic() - t_start > stop_after_s and not (
                        together is not None and last is not None and together(job) == together(last)):
                    log(f"{name}: stopping after {stop_after_s:.0f} s as asked; resume later")
                    return
                written += await run_job(engines, job)
                last = job

    with shutdown.signals_to_exceptions(), vllm_lock(), shutdown.EngineGuard():
        asyncio.run(run())
    return written


def collect_corpus(jobs: list[Job], out_dir: str | Path, base: CollectSpec,
                   log=print, stop_after_s: float | None = None) -> int:
    """Run the pending jobs on one engine pool; returns the number of records written. Safe to
    kill at any point: every record is on disk before the next job starts."""
    from lrcore.traces import TraceWriter

    from . import shutdown
    from .datasets import load_problems

    out_dir = Path(out_dir)
    todo = pending(jobs, out_dir)
    log(f"corpus: {len(jobs) - len(todo)} of {len(jobs)} records already in {out_dir}; "
        f"{len(todo)} to collect")
    if not todo:
        return 0

    async def run_job(engines: CorpusEngines, job: Job) -> int:
        spec = spec_for(job, out_dir, base)
        col = await engines.collector(spec)
        prob = load_problems(job.dataset, 1, job.index)[0]
        rec = await col.run_one(prob, 0)
        with TraceWriter(spec.out, resume=True) as w, shutdown.critical():
            w.write(rec)
        p = rec["probe"]["after"]["engines"].get("target", {})
        log(f"{time.strftime('%H:%M:%S')} {prob.id:<16} {job.config.label:<13} "
            f"{rec['output_tokens']:>4} tok {rec['wall_time_s']:7.1f} s "
            f"{rec['tokens_per_s']:5.2f} tok/s acc {rec['step_acceptance']['accepted']}/"
            f"{rec['step_acceptance']['proposed']} correct {rec['correct']} "
            f"probe {1e3 * (p.get('decode_s') or 0):.0f} ms "
            f"load {rec['probe']['after'].get('loadavg', ['?'])[0]}")
        return 1

    return run_jobs(todo, base, out_dir, run_job, log, stop_after_s, "corpus")


DISTURBED_OTHER_CPU = 0.10   # other processes' CPU-seconds per second of record: more = disturbed


def disturbed(rec: dict, threshold: float = DISTURBED_OTHER_CPU) -> bool:
    """A record during which other processes used more than `threshold` of a core on average
    (probe.during); records without that measurement are not judged here."""
    d = (rec.get("probe") or {}).get("during")
    return bool(d and d.get("wall_s")) and d["other_cpu_s"] / d["wall_s"] > threshold


def set_aside(out_dir: str | Path, select, reason: str) -> int:
    """Move the records `select(rec)` picks out of the corpus into
    `<dataset>/set-aside/<label>.jsonl` (with `set_aside_reason`), so that a resumed collection
    records them again. Nothing is lost: the set-aside copy is fsynced before the corpus file is
    atomically replaced by the records it keeps."""
    import json
    import os

    from lrcore.traces import TraceWriter, read_traces

    moved = 0
    for path in sorted(Path(out_dir).glob("*/*.jsonl")):
        recs = read_traces(path, strict=True)
        out = [r for r in recs if select(r)]
        if not out:
            continue
        aside = path.parent / "set-aside" / path.name
        with TraceWriter(aside, resume=True) as w:
            done = w.completed_keys()
            for r in out:
                key = (r["problem_id"], r["sample"], r["mode"])
                if key in done:   # an earlier set-aside of the same record: keep both copies
                    aside2 = aside.with_name(f"{aside.stem}.{int(time.time())}.jsonl")
                    with TraceWriter(aside2, resume=True) as w2:
                        w2.write(dict(r, set_aside_reason=reason))
                else:
                    w.write(dict(r, set_aside_reason=reason))
        keep = [r for r in recs if not select(r)]
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "w") as f:
            for r in keep:
                f.write(json.dumps(r, ensure_ascii=False, allow_nan=False, separators=(",", ":")) + "\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        moved += len(out)
    return moved
