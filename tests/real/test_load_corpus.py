"""The load corpus (lrreal/load_corpus.py) on fake engines: the plan's order and blocks, the
files it writes, resume, and the equal-resources configuration."""
import json

import pytest

from lrcore.traces import read_traces
from lrreal import collect as collect_mod
from lrreal import load_corpus as lc


def test_plan_rounds_levels_and_engine_groups():
    jobs = lc.load_plan(levels=(1, 2, 4, 8), rounds=3)
    assert len(jobs) == 3 * 4 * len(lc.CONFIGS)
    assert len({(j.concurrency, j.round, j.config.label) for j in jobs}) == len(jobs)
    # round r of level N is problems r*N .. r*N+N-1: a level's rounds never overlap
    assert [j.offset for j in jobs if j.concurrency == 4 and j.config.label == "ar"] == [0, 4, 8]
    # a held-out corpus starts past the rows another used; order and blocks are the same
    held = lc.load_plan(levels=(1, 2, 4, 8), rounds=3, first=400)
    assert [j.offset for j in held if j.concurrency == 4 and j.config.label == "ar"] == [400, 404, 408]
    assert [(j.concurrency, j.round, j.config) for j in held] == [(j.concurrency, j.round, j.config) for j in jobs]
    # grouped by target engine: 3 target engines a round, so at most 3 phase changes a round
    for r in range(3):
        phases = [j.config.phase for j in jobs if j.round == r]
        assert sum(a != b for a, b in zip(phases, phases[1:])) == 2
    firsts = [next(j.config.phase for j in jobs if j.round == r) for r in range(3)]
    assert len(set(firsts)) == 3          # the group that runs first rotates


def fake_engines(monkeypatch, tmp_path, per_token_s: float) -> None:
    """Fake engines (harness/fake_engine.py) in place of vLLM, a stub tokenizer and no
    machine-wide engine lock: collect_load runs its real scheduling on them."""
    import contextlib
    from time import monotonic

    from harness.fake_engine import GSM8K_SCRIPT, FakeEngine, StubTokenizer, fake_model_folder
    from lrreal import engine_pool, lock, models

    folder = fake_model_folder(tmp_path / "model")
    monkeypatch.setattr(models, "resolve", lambda name, cache=None, prepared=True: folder)
    monkeypatch.setattr(collect_mod.Collector, "tokenizer", lambda self: StubTokenizer())
    monkeypatch.setenv("LR_NO_IOMP", "1")

    class Started(FakeEngine):
        """A fake engine that also logs one "forward pass" per request and per probe, as
        VllmEngine's stat sink does (t_end on the monotonic clock), so a block's pass log can be
        checked: its passes once each, the probe's left out."""

        def __init__(self, role, args):
            super().__init__(role, GSM8K_SCRIPT, per_token_s=per_token_s)
            self.passes = []

        def start(self):
            return self

        def _pass(self, t0, kind):
            self.passes.append({"duration_s": monotonic() - t0, "t_end": monotonic(), "kind": kind,
                                "batch_size": 1, "tokens_scheduled": 1})

        async def generate(self, req, progress=None):
            t0 = monotonic()
            try:
                return await super().generate(req, progress)
            finally:
                self._pass(t0, "request")

        async def probe(self, salt, *a, **k):
            t0 = monotonic()
            try:
                return await super().probe(salt, *a, **k)
            finally:
                self._pass(t0, "probe")

        def stats_mark(self):
            return len(self.passes)

        def stats_since(self, mark, t0):
            return {"forward_passes": [{k: v for k, v in p.items() if k != "t_end"}
                                       | {"start": max(0.0, p["t_end"] - p["duration_s"] - t0)}
                                       for p in self.passes[mark:]], "aggregate": {}}

    monkeypatch.setattr(engine_pool, "VllmEngine", Started)
    monkeypatch.setattr(lock, "vllm_lock", lambda: contextlib.nullcontext())


def test_a_round_past_the_data_sets_end_is_refused_before_any_engine_starts(monkeypatch, tmp_path):
    """GSM8K's test split has 1319 rows: a plan whose last block would hold fewer problems than its
    level (a level of 4 with 3 rows left) is refused by name before anything runs, not collected
    short; the plan that ends on the last row is planned whole."""
    started = []
    monkeypatch.setattr(lc, "run_jobs", lambda *a, **k: started.append(a))
    base = collect_mod.CollectSpec(max_tokens=60, target_cores="0", draft_cores="1")
    short = lc.load_plan(levels=(1, 4), rounds=2, configs=lc.CONFIGS[:1], first=1312)
    with pytest.raises(lc.UserError, match=r"round 1 at 4 in flight runs gsm8k rows 1316-1319, "
                                           r"past its last row \(1318\)"):
        lc.collect_load(short, tmp_path / "load", base, log=lambda m: None)
    assert started == [] and not (tmp_path / "load").exists()
    fits = lc.load_plan(levels=(1, 4), rounds=2, configs=lc.CONFIGS[:1], first=1311)
    blocks = {(j.round, j.concurrency): [p.id for p, _ in lc.pending(j, tmp_path / "load")] for j in fits}
    assert blocks[(1, 4)] == [f"gsm8k/{i}" for i in range(1315, 1319)]   # the last row, 1318
    assert all(len(ids) == n for (_, n), ids in blocks.items())


def test_collect_load_writes_a_file_per_level_and_config_and_resumes(monkeypatch, tmp_path):
    fake_engines(monkeypatch, tmp_path, per_token_s=0.001)
    out = tmp_path / "load"
    jobs = lc.load_plan(levels=(1, 2), rounds=2)
    base = collect_mod.CollectSpec(max_tokens=60, target_cores="0", draft_cores="1")
    logs = []
    assert lc.collect_load(jobs, out, base, log=logs.append) == 2 * (1 + 2) * len(lc.CONFIGS)
    for level in (1, 2):
        for c in lc.CONFIGS:
            recs = read_traces(out / "gsm8k" / f"c{level}" / f"{c.label}.jsonl")
            assert len(recs) == 2 * level
            assert len({r["problem_id"] for r in recs}) == 2 * level
            assert all(r["load"]["concurrency"] == level for r in recs)
            assert all(r["run"]["flags"]["equal_resources"] == c.equal_resources for r in recs)
            assert all(r["run"]["flags"]["load_config"] == c.label for r in recs)
            cores = {r["run"]["hardware"]["cores"]["target"] for r in recs}
            assert cores == ({"0-1"} if c.equal_resources else {"0"})
            # level 1: a probe around each record; above: one before the block, none per record
            assert all(("probe" in r) == (level == 1) for r in recs)
            assert all(("probe_at_start" in r["run"]) == (level > 1) for r in recs)
    # c2's problems are 0-3 in every configuration: speedups pair per problem
    ids = {c.label: sorted(r["problem_id"] for r in read_traces(out / "gsm8k" / "c2" / f"{c.label}.jsonl"))
           for c in lc.CONFIGS}
    assert len({tuple(v) for v in ids.values()}) == 1
    before = {p: p.read_bytes() for p in out.rglob("*.jsonl")}
    assert lc.collect_load(jobs, out, base, log=logs.append) == 0
    assert {p: p.read_bytes() for p in out.rglob("*.jsonl")} == before
    assert any("already in" in m for m in logs)


def test_cold_cache_empties_every_engine_before_each_block(monkeypatch, tmp_path):
    """collect_load(cold_cache=True) (collect_load.py --cold-cache): each block starts with every
    loaded engine's prefix cache emptied, after its probe and before its first request, and its
    records say so (run.flags.cold_cache); without it nothing is reset and the flag is absent."""
    from harness.fake_engine import FakeEngine

    fake_engines(monkeypatch, tmp_path, per_token_s=0.0005)
    events = []
    generate, reset = FakeEngine.generate, FakeEngine.reset_prefix_cache

    async def logged_generate(self, req, progress=None):
        events.append(("request", self.name))
        return await generate(self, req, progress)

    async def logged_reset(self):
        events.append(("reset", self.name))
        await reset(self)
    monkeypatch.setattr(FakeEngine, "generate", logged_generate)
    monkeypatch.setattr(FakeEngine, "reset_prefix_cache", logged_reset)
    configs = [lc.BY_LABEL["ar"], lc.BY_LABEL["lr-d2-emb"]]
    jobs = lc.load_plan(levels=(2,), rounds=1, configs=configs)
    base = collect_mod.CollectSpec(max_tokens=60, target_cores="0", draft_cores="1")
    assert lc.collect_load(jobs, tmp_path / "cold", base, log=lambda m: None, cold_cache=True) == 4
    blocks = [i for i, e in enumerate(events) if e[0] == "reset" and (i == 0 or events[i - 1][0] != "reset")]
    assert len(blocks) == 2                       # one run of resets before each block
    for i in blocks:
        names = []
        for kind, name in events[i:]:
            if kind != "reset":
                break
            names.append(name)
        assert "target" in names and len(names) == len(set(names))   # every engine once
    assert events[-1][0] == "request" and events[blocks[1] - 1][0] == "request"
    for c in configs:
        recs = read_traces(tmp_path / "cold" / "gsm8k" / "c2" / f"{c.label}.jsonl")
        assert [r["run"]["flags"]["cold_cache"] for r in recs] == [True, True]
    events.clear()
    assert lc.collect_load(jobs, tmp_path / "warm", base, log=lambda m: None) == 4
    assert not any(kind == "reset" for kind, _ in events)
    recs = read_traces(tmp_path / "warm" / "gsm8k" / "c2" / "ar.jsonl")
    assert all("cold_cache" not in r["run"]["flags"] for r in recs)


def test_equal_resources_is_only_for_the_target_alone():
    assert lc.BY_LABEL["ar-er"].phase == "er" and lc.BY_LABEL["ar"].phase == "plain"
    assert lc.BY_LABEL["lr+sd-d2-emb"].phase == "sd" and lc.BY_LABEL["lr-d2-emb"].phase == "plain"
    with pytest.raises(Exception):
        collect_mod.CollectSpec(mode="lr", equal_resources=True, out=None).validate()


def test_open_blocks_arrive_by_the_rounds_poisson_process_and_resume_keeps_them(monkeypatch, tmp_path):
    """--set open: a block's N problems arrive at the round's seeded Poisson offsets, the same for
    every configuration of the round (paired), recorded in load.arrival_s with the rate; a block
    resumed after a kill runs its remaining problems at their own offsets, not new ones."""
    from lrreal.datasets import load_problems

    fake_engines(monkeypatch, tmp_path, per_token_s=0.0005)
    rate = 20.0                                   # requests/s: the offsets are tens of ms
    jobs = lc.load_plan(levels=(3,), rounds=2, configs=lc.OPEN_CONFIGS, first=5, rate=rate)
    assert {j.path(tmp_path).parent.name for j in jobs} == {"rate20-n3"}
    assert jobs[0].arrivals() != jobs[-1].arrivals()          # another round, other arrivals
    out = tmp_path / "open"
    base = collect_mod.CollectSpec(max_tokens=40, target_cores="0", draft_cores="1")
    # a kill after the first problem of round 0's first configuration: its other two pend
    first = jobs[0]
    p0, _ = lc.pending(first, out)[0]
    done = lc.collect_load([first], out, base, log=lambda m: None)
    assert done == 3
    path = first.path(out)
    recs = read_traces(path)
    keep = [json.dumps(r) for r in recs if r["problem_id"] == p0.id]
    path.write_text(keep[0] + "\n")
    left = lc.pending(first, out)
    assert [t for _, t in left] == first.arrivals()[1:]
    assert lc.collect_load(jobs, out, base, log=lambda m: None) == 2 + 3 * (len(jobs) - 1)
    for c in lc.OPEN_CONFIGS:
        recs = read_traces(out / "gsm8k" / "rate20-n3" / f"{c.label}.jsonl")
        assert len(recs) == 6 and len({r["problem_id"] for r in recs}) == 6
        assert all(r["load"]["request_rate"] == rate for r in recs)
        for j in (j for j in jobs if j.config == c):
            ids = [p.id for p in load_problems(j.dataset, 3, j.offset)]
            got = {r["problem_id"]: r["load"]["arrival_s"] for r in recs
                   if r["run"]["flags"]["load_round"] == j.round}
            want = j.arrivals()
            # load.arrival_s is the offset the request was scheduled at (Admission.arrival)
            if j is first:            # the resumed run's clock starts at the second's arrival
                assert [got[ids[1]], got[ids[2]]] == pytest.approx([0.0, want[2] - want[1]])
                assert got[ids[0]] == 0.0
            else:
                assert [got[i] for i in ids] == pytest.approx(want)
    # one engine pass log per block run, beside its trace file; the resumed block's second run
    # got a log of its own, the first run's kept as written
    logs = sorted(p.relative_to(out / "gsm8k" / "rate20-n3").as_posix()
                  for p in (out / "gsm8k" / "rate20-n3").rglob("*.passes/*.json"))
    want_logs = {f"{j.config.label}.passes/round{j.round}.json" for j in jobs}
    assert set(logs) == want_logs | {f"{first.config.label}.passes/round{first.round}-1.json"}
    for name in logs:
        doc = json.loads((out / "gsm8k" / "rate20-n3" / name).read_text())
        assert doc["concurrency"] == 3 and doc["request_rate"] == rate
        assert set(doc["engines"]) == {"target", "draft"} and doc["probe_at_start_t"] is not None
        passes = [p for ps in doc["engines"].values() for p in ps]
        assert passes and all(p["kind"] == "request" for p in passes)      # the probe's are not the block's
        assert all(p["start"] >= 0 for p in passes)
    # each pass of a block once: the block's target requests, not the records' shared copies
    r0 = json.loads((out / "gsm8k" / "rate20-n3" / "ar.passes" / "round1.json").read_text())
    assert len(r0["engines"]["target"]) == 3 and r0["engines"]["draft"] == []   # ar: 3 requests, draft idle
    # the block's clock: a pass starts no earlier than its request's arrival (load.arrival_s)
    ar1 = sorted(r["load"]["arrival_s"] for r in read_traces(out / "gsm8k" / "rate20-n3" / "ar.jsonl")
                 if r["run"]["flags"]["load_round"] == 1)
    starts = sorted(p["start"] for p in r0["engines"]["target"])
    assert all(s >= a - 0.01 for s, a in zip(starts, ar1))
    # paired: both configurations of round 1 met the same arrivals
    r1 = {c.label: sorted(r["load"]["arrival_s"] for r in read_traces(out / "gsm8k" / "rate20-n3" / f"{c.label}.jsonl")
                          if r["run"]["flags"]["load_round"] == 1) for c in lc.OPEN_CONFIGS}
    assert r1["ar"] == pytest.approx(r1["lr-d2-emb"]) and r1["ar"] != [0.0] * 3


def test_a_block_validates_its_trace_file_once_before_its_clock_starts(monkeypatch, tmp_path):
    """Reopening the writer per record re-validated the whole file in the event loop at every
    request's end, stalling the block's other requests (11-28 s of idle target engine per LR
    request end in traces/load-open's rounds 9-18, its pass logs): one scan per block, before the block's t0."""
    import lrcore.traces as tr
    import lrreal.load as load_mod

    fake_engines(monkeypatch, tmp_path, per_token_s=0.0005)
    out = tmp_path / "load"
    base = collect_mod.CollectSpec(max_tokens=40, target_cores="0", draft_cores="1")
    jobs = [j for j in lc.load_plan(levels=(4,), rounds=2) if j.config.label == "ar"]
    assert lc.collect_load(jobs[:1], out, base, log=lambda m: None) == 4   # the file exists now
    scans, scan = [], tr._scan
    monkeypatch.setattr(tr, "_scan", lambda path: scans.append(path) or scan(path))
    in_flight = load_mod.run_in_flight

    async def block_clock(*a, **kw):   # the block's requests start here, after its t0
        scans.append("block starts")
        return await in_flight(*a, **kw)

    monkeypatch.setattr(load_mod, "run_in_flight", block_clock)   # imported by collect_load
    assert lc.collect_load(jobs, out, base, log=lambda m: None) == 4
    # pending()'s read of what is done and the block's writer (a writer per record: 1 + 4),
    # both before the block's first request
    assert len(scans) == 3 and scans[-1] == "block starts"
    assert len(read_traces(out / "gsm8k" / "c4" / "ar.jsonl")) == 8


def test_stop_after_finishes_the_round_in_progress(monkeypatch, tmp_path):
    """--stop-after never splits a round: past the time, the round's other configurations at the
    same level still run (they are compared), and no new block of another level or round starts."""
    import types

    from lrreal import corpus

    fake_engines(monkeypatch, tmp_path, per_token_s=0.0005)
    now = [0.0]                        # a clock each block advances by 10 s
    monkeypatch.setattr(corpus, "time", types.SimpleNamespace(monotonic=lambda: now[0]))
    ran = []

    async def go(engines, job):        # the block runner's stand-in
        ran.append((job.round, job.concurrency, job.config.label))
        now[0] += 10.0
        return 1

    jobs = lc.load_plan(levels=(1, 2), rounds=2, configs=lc.OPEN_CONFIGS)
    base = collect_mod.CollectSpec(max_tokens=40, target_cores="0", draft_cores="1")
    logs = []
    # past 5 s after the first block: its round's other configuration at that level runs, then stop
    assert corpus.run_jobs(jobs, base, tmp_path, go, logs.append, 5.0, "t", together=lc.compared_together) == 2
    assert ran == [(jobs[0].round, jobs[0].concurrency, c.label) for c in (jobs[0].config, jobs[1].config)]
    assert {c for *_, c in ran} == {c.label for c in lc.OPEN_CONFIGS}
    assert any("stopping after" in m for m in logs)
    # without the grouping, the stop comes after the first block (the old rule)
    ran.clear()
    assert corpus.run_jobs(jobs, base, tmp_path, go, logs.append, 5.0, "t") == 1
