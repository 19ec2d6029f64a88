"""The trace corpus machinery on fake engines: collection order, engine reuse, the speed probe
around every record, resume. (The real corpus itself is checked in tests/calib/.)"""
from __future__ import annotations

import pytest

from harness.fake_engine import FakeEngine, StubTokenizer, fake_model_folder
from harness.fake_engine import GSM8K_SCRIPT as SCRIPT
from lrreal import collect as collect_mod
from lrreal import corpus, engine_pool, models
from lrreal.engine import EngineArgs, probe_summary


def test_plan_covers_every_pair_once_and_interleaves():
    jobs = corpus.corpus_plan([("gsm8k", 3), ("aime2025", 2)])
    pairs = [(j.dataset, j.index, j.config.label) for j in jobs]
    assert len(pairs) == len(set(pairs)) == 5 * len(corpus.CONFIGS)
    # problem by problem: all configurations of one problem before the next problem
    order = [(j.dataset, j.index) for j in jobs]
    assert order == sorted(order, key=lambda p: (p[0] != "gsm8k", p[1]))
    phases = []
    for n in range(5):
        block = jobs[n * len(corpus.CONFIGS):(n + 1) * len(corpus.CONFIGS)]
        ph = [j.config.phase for j in block]
        # two contiguous phases per problem: one target restart each
        assert sum(a != b for a, b in zip(ph, ph[1:])) == 1
        phases.append((ph[0], ph[-1]))
    # consecutive problems meet in the same phase (no restart across the boundary)
    assert all(a[1] == b[0] for a, b in zip(phases, phases[1:]))
    firsts = {jobs[n * len(corpus.CONFIGS)].config.label for n in range(5)}
    assert len(firsts) > 1  # the first configuration after a restart rotates


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def test_probe_summary_takes_the_median_single_token_pass():
    passes = [{"prefill_tokens": 32, "tokens_scheduled": 32, "duration_s": 1.5},
              {"prefill_tokens": 0, "tokens_scheduled": 1, "duration_s": 0.5},
              {"prefill_tokens": 0, "tokens_scheduled": 1, "duration_s": 0.7},
              {"prefill_tokens": 0, "tokens_scheduled": 3, "duration_s": 9.0},  # SD verify: not a probe pass
              {"prefill_tokens": 0, "tokens_scheduled": 1, "duration_s": 0.6}]
    s = probe_summary(passes, 32, 3.4)
    assert s["prefill_s"] == 1.5 and s["decode_s"] == 0.6 and s["decode_passes"] == 3


def test_pool_reuses_equal_engines_and_restarts_changed_ones():
    made = []
    pool = engine_pool.EnginePool(factory=lambda role, args: made.append((role, args)) or
                                  FakeEngine(role, SCRIPT))
    plain = EngineArgs(model="t", omp_threads_bind="0")
    sd = EngineArgs(model="t", omp_threads_bind="0", speculative_config={"method": "ngram"})
    draft = EngineArgs(model="d", omp_threads_bind="1")
    t1, d1 = pool.get("target", plain), pool.get("draft", draft)
    assert pool.get("target", plain) is t1 and pool.get("draft", draft) is d1
    t2 = pool.get("target", sd)
    assert t2 is not t1 and pool.get("draft", draft) is d1
    assert pool.starts == 3 and [r for r, _ in made] == ["target", "draft", "target"]
    assert pool.describe()["target"]["speculative"] == "ngram"


@pytest.fixture
def fake_pool(tmp_path, monkeypatch):
    folder = fake_model_folder(tmp_path / "model")
    monkeypatch.setattr(models, "resolve", lambda name, cache=None, prepared=True: folder)
    monkeypatch.setattr(collect_mod.Collector, "tokenizer", lambda self: StubTokenizer())
    monkeypatch.setattr(corpus, "vllm_lock", lambda: _Null(), raising=False)
    made = []

    def factory(role, args):
        made.append((role, (args.speculative_config or {}).get("method")))
        return (FakeEngine("target", SCRIPT, per_token_s=0.001) if role == "target" else
                FakeEngine("draft", SCRIPT, per_token_s=0.0002, wrong=lambda s, seed: s == 2))

    monkeypatch.setattr(engine_pool, "VllmEngine", None)
    orig = engine_pool.EnginePool.__init__
    monkeypatch.setattr(engine_pool.EnginePool, "__init__",
                        lambda self, factory_=None: orig(self, factory))
    return tmp_path / "corpus", made


def test_collector_records_a_probe_before_and_after(fake_pool):
    import asyncio

    spec = collect_mod.CollectSpec(mode="lr", depth=2, max_tokens=200, out="x.jsonl")
    col = collect_mod.Collector(spec)

    async def go():
        pool = engine_pool.EnginePool()
        col.start(pool)
        col.verifier = col.make_verifier()
        from lrreal.datasets import load_problems
        probs = load_problems("gsm8k", 2)
        r1 = await col.run_one(probs[0], 0)
        r2 = await col.run_one(probs[1], 0)
        pool.shutdown()
        return r1, r2

    r1, r2 = asyncio.run(go())
    for r in (r1, r2):
        assert set(r["probe"]["before"]["engines"]) == {"target", "draft"}
        assert r["probe"]["before"]["t"] <= r["probe"]["after"]["t"]
    assert r2["probe"]["before"] is r1["probe"]["after"]  # one probe between two records
    from lrcore.traces import validate_record
    validate_record(r1)


def test_corpus_runs_interleaved_restarts_once_per_phase_and_resumes(fake_pool, monkeypatch):
    from lrcore.traces import read_traces

    out, made = fake_pool
    # the engine lock, signals and the reaper guard are exercised by the real-engine tests
    import lrreal.shutdown as sh
    monkeypatch.setattr("lrreal.lock.vllm_lock", lambda *a, **k: _Null())
    monkeypatch.setattr(sh, "EngineGuard", lambda: _Null())
    configs = (corpus.BY_LABEL["ar"], corpus.BY_LABEL["lr-d2"], corpus.BY_LABEL["sd"],
               corpus.BY_LABEL["lr+sd-d2"])
    jobs = corpus.corpus_plan([("gsm8k", 2)], configs)
    base = collect_mod.CollectSpec(max_tokens=200, target_cores="0", draft_cores="1")
    assert corpus.collect_corpus(jobs, out, base, log=lambda m: None) == 8
    # the draft first (loaded throughout), the plain target, then the SD target for problem 0; problem 1 starts in the SD phase
    # (same target, no restart) and switches back once
    assert made == [("draft", None), ("target", None), ("target", "ngram"), ("target", None)]
    files = sorted(p.name for p in (out / "gsm8k").glob("*.jsonl"))
    assert files == ["ar.jsonl", "lr+sd-d2.jsonl", "lr-d2.jsonl", "sd.jsonl"]
    ar = read_traces(out / "gsm8k" / "ar.jsonl")
    assert [r["problem_id"] for r in ar] == ["gsm8k/0", "gsm8k/1"]
    assert ar[0]["run"]["flags"]["corpus_config"] == "ar"
    assert ar[0]["run"]["hardware"]["cores"] == {"target": "0", "draft": None}
    assert "draft" in ar[0]["run"]["engines_loaded"]  # the idle draft was loaded: recorded
    assert all("probe" in r for r in ar)
    assert corpus.collect_corpus(jobs, out, base, log=lambda m: None) == 0  # resume: nothing left
    (out / "gsm8k" / "sd.jsonl").write_text(
        (out / "gsm8k" / "sd.jsonl").read_text().splitlines(keepends=True)[0])
    assert corpus.collect_corpus(jobs, out, base, log=lambda m: None) == 1  # only the missing one
    assert len(read_traces(out / "gsm8k" / "sd.jsonl")) == 2


def test_set_aside_moves_records_without_losing_them(fake_pool, monkeypatch):
    """Disturbed records leave the corpus for <dataset>/set-aside/ (fsynced first, with the
    reason) and a resumed collection records them again."""
    import json

    from lrcore.traces import read_traces

    out, _ = fake_pool
    import lrreal.shutdown as sh
    monkeypatch.setattr("lrreal.lock.vllm_lock", lambda *a, **k: _Null())
    monkeypatch.setattr(sh, "EngineGuard", lambda: _Null())
    jobs = corpus.corpus_plan([("gsm8k", 2)], (corpus.BY_LABEL["ar"],))
    base = collect_mod.CollectSpec(max_tokens=200, target_cores="0", draft_cores="1")
    assert corpus.collect_corpus(jobs, out, base, log=lambda m: None) == 2
    recs = read_traces(out / "gsm8k" / "ar.jsonl")
    assert all("during" in r["probe"] for r in recs)
    assert corpus.set_aside(out, lambda r: r["problem_id"] == "gsm8k/1", "test load") == 1
    assert [r["problem_id"] for r in read_traces(out / "gsm8k" / "ar.jsonl")] == ["gsm8k/0"]
    aside = read_traces(out / "gsm8k" / "set-aside" / "ar.jsonl")
    assert [(r["problem_id"], r["set_aside_reason"]) for r in aside] == [("gsm8k/1", "test load")]
    assert json.dumps(aside[0]["steps"]) == json.dumps(recs[1]["steps"])
    assert corpus.collect_corpus(jobs, out, base, log=lambda m: None) == 1   # recollected
    assert corpus.disturbed({"probe": {"during": {"wall_s": 10.0, "other_cpu_s": 2.0}}})
    assert not corpus.disturbed({"probe": {"during": {"wall_s": 10.0, "other_cpu_s": 0.5}}})
    assert not corpus.disturbed({"probe": {}})
