"""`lr collect` plumbing on the fake engine: records, grading, resume without duplicates, summary."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from harness.fake_engine import FakeEngine, StubTokenizer, fake_model_folder
from harness.fake_engine import GSM8K_SCRIPT as SCRIPT
from lrreal import binding as binding_mod
from lrreal import collect as collect_mod
from lrreal import models
from lrreal import summary as summary_mod



@pytest.fixture
def fake_collect(tmp_path, monkeypatch):
    folder = fake_model_folder(tmp_path / "model")
    monkeypatch.setattr(models, "resolve", lambda name, cache=None, prepared=True: folder)
    monkeypatch.setattr(collect_mod, "vllm_lock", lambda: _null())
    started = []

    def start(self):
        started.append(self.spec.mode)
        self.engines["target"] = FakeEngine("target", SCRIPT, per_token_s=0.001)
        if self.draft_path is not None:
            self.engines["draft"] = FakeEngine("draft", SCRIPT, per_token_s=0.0002,
                                               wrong=lambda step, seed: step == 2)

    monkeypatch.setattr(collect_mod.Collector, "start", start)
    monkeypatch.setattr(collect_mod.Collector, "tokenizer", lambda self: StubTokenizer())
    return tmp_path / "t.jsonl", started


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def test_collect_writes_resumes_and_summarizes(fake_collect):
    from lrcore.traces import read_traces

    out, started = fake_collect
    spec = lambda mode, resume: collect_mod.CollectSpec(mode=mode, dataset="gsm8k", limit=2,
                                                        depth=2, max_tokens=200, out=str(out),
                                                        resume=resume)
    s = collect_mod.collect(spec("ar", False))
    assert (s.written, s.skipped, s.failed) == (2, 0, [])
    s = collect_mod.collect(spec("lr", True))
    assert (s.written, s.skipped) == (2, 0)
    s = collect_mod.collect(spec("lr", True))  # all done: no engines started, nothing written
    assert (s.written, s.skipped) == (0, 2)
    assert started == ["ar", "lr"]
    recs = read_traces(out)
    assert len(recs) == 4 and len({(r["problem_id"], r["sample"], r["mode"]) for r in recs}) == 4
    first = recs[0]
    assert first["problem_id"] == "gsm8k/0" and first["correct"] is True  # gold 18
    assert first["run"]["flags"]["max_tokens"] == 200 and first["run"]["seeds"]["run_seed"] == 0
    # the host's identity beside its name (lrreal/binding.cpu_identity), where /proc/cpuinfo has it
    info = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    if "cpu family" in info:
        hw = first["run"]["hardware"]
        assert hw["cpu_id"].startswith("family ") and set(hw["cpu_isa"]) <= binding_mod.ISA_FLAGS
    # and the machine boot it ran in (lrsim/calib/equal.py pairs runs of one boot only)
    boot = Path("/proc/sys/kernel/random/boot_id")
    if boot.exists():
        assert first["run"]["hardware"]["boot_id"] == boot.read_text().strip()
    lr = [r for r in recs if r["mode"] == "lr"]
    assert all(r["step_acceptance"]["proposed"] > r["step_acceptance"]["accepted"] for r in lr)
    rows = {r["mode"]: r for r in summary_mod.summarize(recs)}
    assert rows["ar"]["speedup_vs_ar"] == 1.0 and rows["lr"]["speedup_vs_ar"] > 0
    assert rows["lr"]["step_acceptance"] is not None and rows["ar"]["accuracy"] == 0.5


def test_existing_file_without_resume_is_refused(fake_collect):
    from lrcore.errors import UserError

    out, _ = fake_collect
    out.write_text(json.dumps({"x": 1}) + "\n")
    with pytest.raises(UserError, match="--resume"):
        collect_mod.collect(collect_mod.CollectSpec(mode="ar", limit=1, out=str(out)))


def test_failing_problem_is_reported_not_recorded(fake_collect, monkeypatch):
    out, _ = fake_collect
    calls = {"n": 0}
    orig = collect_mod.Collector.run_one

    async def flaky(self, prob, sample):
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("engine hiccup")
        return await orig(self, prob, sample)

    monkeypatch.setattr(collect_mod.Collector, "run_one", flaky)
    s = collect_mod.collect(collect_mod.CollectSpec(mode="ar", limit=2, out=str(out)))
    assert s.written == 1 and s.failed[0]["problem_id"] == "gsm8k/0"
    s = collect_mod.collect(collect_mod.CollectSpec(mode="ar", limit=2, out=str(out), resume=True))
    assert s.written == 1 and s.skipped == 1  # the resume retries only the failed one


def test_default_binding_splits_cores_only_with_a_draft():
    assert binding_mod.default_binding("ar", 2) == ("0-1", "0-1")
    assert binding_mod.default_binding("lr", 2) == ("0", "1")
    assert binding_mod.default_binding("lr+sd", 8) == ("0-5", "6-7")


def test_bad_flags_are_user_errors():
    from lrcore.errors import UserError

    with pytest.raises(UserError, match="--mode"):
        collect_mod.CollectSpec(mode="turbo").scheduler_config()
    with pytest.raises(UserError, match="--depth"):
        collect_mod.CollectSpec(depth=0).scheduler_config()


def test_preload_iomp_replaces_the_libgomp_vllm_added(monkeypatch, tmp_path):
    """An engine started earlier in the process without Intel OpenMP made vLLM put torch's
    libgomp in LD_PRELOAD; both at once is an assertion in vLLM's engine core (seen when a
    collect followed such an engine in one test session)."""
    import sys

    lib = tmp_path / "lib" / binding_mod.IOMP_LIB
    lib.parent.mkdir()
    lib.write_bytes(b"")
    monkeypatch.setattr(sys, "prefix", str(tmp_path))
    monkeypatch.delenv("LR_NO_IOMP", raising=False)
    monkeypatch.setenv("LD_PRELOAD", "/v/libtcmalloc_minimal.so.4:/t/torch.libs/libgomp-a34b3233.so.1")
    assert binding_mod.preload_iomp() == str(lib)
    assert binding_mod.preload_iomp() == str(lib)  # idempotent
    assert os.environ["LD_PRELOAD"] == f"{lib}:/v/libtcmalloc_minimal.so.4"


# --- --resume never mixes runs; a full disk is one line and keeps the records -------
@pytest.mark.parametrize("change,flag", [
    (dict(seed=1), "--seed"), (dict(temperature=0.6, top_p=0.9), "--temperature"),
    (dict(max_tokens=100), "--max-tokens"), (dict(depth=3), "--depth"),
    (dict(verifier="random:0.5"), "--verifier"), (dict(dataset="aime2025"), "--dataset"),
])
def test_resume_refuses_records_made_with_other_settings(fake_collect, change, flag):
    from dataclasses import replace

    from lrcore.errors import UserError

    out, started = fake_collect
    base = collect_mod.CollectSpec(mode="lr", dataset="gsm8k", limit=1, depth=2, max_tokens=200,
                                   out=str(out))
    collect_mod.collect(base)
    before = out.read_bytes()
    with pytest.raises(UserError, match=f"made with {flag} .*this run has {flag}"):
        collect_mod.collect(replace(base, resume=True, limit=2, **change))
    assert out.read_bytes() == before and started == ["lr"]   # refused before any engine


def test_resume_accepts_other_modes_and_more_problems(fake_collect):
    out, started = fake_collect
    spec = lambda mode, **kw: collect_mod.CollectSpec(mode=mode, dataset="gsm8k", depth=2,  # noqa: E731
                                                      max_tokens=200, out=str(out), **kw)
    collect_mod.collect(spec("ar", limit=1))
    # another mode (its own depth flag is not compared with ar's), more problems, other samples
    s = collect_mod.collect(spec("lr", limit=2, resume=True))
    assert s.written == 2
    s = collect_mod.collect(spec("ar", limit=2, samples=2, resume=True, probe=False))
    assert s.written == 3 and started == ["ar", "lr", "ar"]


def test_full_disk_while_writing_is_one_line_and_keeps_complete_records(fake_collect, monkeypatch):
    import errno

    from lrcore.errors import UserError
    import lrcore.traces as traces_mod

    out, _ = fake_collect
    real_write = os.write
    calls = {"n": 0}

    def write(fd, data):
        if fd > 2 and len(data) > 200:         # a record line, not a pipe or the reaper
            calls["n"] += 1
            if calls["n"] == 2:                 # the second record: half of it, then ENOSPC
                real_write(fd, bytes(data[: len(data) // 2]))
                raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(traces_mod.os, "write", write)
    spec = collect_mod.CollectSpec(mode="ar", dataset="gsm8k", limit=3, out=str(out))
    with pytest.raises(UserError, match="No space left on device.*1 record.*kept.*--resume"):
        collect_mod.collect(spec)
    recs = traces_mod.read_traces(out, strict=True)       # no torn line left behind
    assert [r["problem_id"] for r in recs] == ["gsm8k/0"]
    monkeypatch.setattr(traces_mod.os, "write", real_write)
    s = collect_mod.collect(collect_mod.CollectSpec(mode="ar", dataset="gsm8k", limit=3,
                                                    out=str(out), resume=True))
    assert (s.written, s.skipped) == (2, 1)


def test_summary_with_zero_token_or_instant_ar_records_has_no_division_by_zero():
    def rec(mode, pid, tokens, wall):
        return {"mode": mode, "problem_id": pid, "sample": 0, "output_tokens": tokens,
                "wall_time_s": wall, "correct": None, "steps": [], "sd": None,
                "step_acceptance": {"proposed": 0, "accepted": 0}}
    rows = {r["mode"]: r for r in summary_mod.summarize(
        [rec("ar", "a", 0, 1.0), rec("ar", "b", 0, 2.0), rec("lr", "a", 5, 1.0), rec("lr", "b", 3, 0.0)])}
    assert rows["lr"]["speedup_vs_ar"] is None and rows["ar"]["tokens_per_s"] == 0.0
    rows = {r["mode"]: r for r in summary_mod.summarize([rec("ar", "a", 4, 0.0), rec("lr", "a", 4, 0.0)])}
    assert rows["lr"]["speedup_vs_ar"] is None and rows["lr"]["tokens_per_s"] == 0.0
