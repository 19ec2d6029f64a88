"""The CPU engines' KV cache in calibration: computed from the runs' VLLM_CPU_KVCACHE_SPACE and
the models' shapes (numbers by hand below), or read where the run recorded what vLLM reported;
the profile carries it, `lr replay` and `lr plan --profile` simulate with it."""
import copy
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from lrcore.errors import UserError
from lrsim.calib.calibrate import calibrate, read_records
from lrsim.calib.kv import engine_kv
from lrsim.calib.profile import Profile, load_profile, save_profile

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "traces" / "corpus" / "gsm8k"
OLD = ROOT / "tests" / "data" / "calib" / "cpu-gsm8k.jsonl"     # recorded before --block-size


def _records(*names):
    return [r for n in names for r in read_records(CORPUS / n)]


def test_capacity_computed_from_the_kv_space_by_hand():
    kv, warnings = engine_kv(_records("ar.jsonl", "lr-d2.jsonl"))
    assert warnings == []
    # Qwen2.5-Coder-1.5B in float32: 2 x 28 layers x 2 KV heads x 128 x 4 B = 57,344 B/token;
    # 2 GiB / (32-token blocks x 57,344 B) = 1,170.3 -> 1,170 blocks = 37,440 tokens
    t = kv["target"]
    assert t["bytes_per_token"] == 2 * 28 * 2 * 128 * 4
    assert (t["capacity_tokens"], t["block_tokens"], t["space_gib"]) == (37_440, 32, 2.0)
    # Qwen2.5-Coder-0.5B: 2 x 24 x 2 x 64 x 4 = 24,576 B; 2 GiB / (32 x 24,576) = 2,730 blocks
    # = 87,360 tokens
    d = kv["draft"]
    assert d["bytes_per_token"] == 24_576 and d["capacity_tokens"] == 2_730 * 32 == 87_360
    assert "VLLM_CPU_KVCACHE_SPACE" in t["source"] and "qwen2.5-coder-1.5b-instruct" in t["source"]


def test_runs_before_block_size_used_vllm_cpus_128():
    old = [r for r in read_records(OLD) if not r["run"]["flags"].get("block_size")]
    assert old
    kv, _ = engine_kv(old)
    # 2 GiB / (128 x 57,344 B) = 292.6 -> 292 blocks of 128 = 37,376 tokens
    assert kv["target"]["capacity_tokens"] == 292 * 128 and kv["target"]["block_tokens"] == 128


def test_runs_that_name_their_block_size_speak_for_the_profile():
    """OLD mixes AR runs from before --block-size (vLLM-CPU's 128, 37,376 tokens) with LR runs
    at 32 (37,440): the block is the prefix cache's granularity too, so the profile keeps the
    runs that set it (the smallest of those), and says what differed."""
    kv, warnings = engine_kv(read_records(OLD))
    assert (kv["target"]["capacity_tokens"], kv["target"]["block_tokens"]) == (37_440, 32)
    assert "_named" not in kv["target"]
    assert any("target KV block size differed between the runs (32, 128 tokens): the profile keeps 32" in w
               for w in warnings), warnings
    assert any(w.endswith("the smallest of the runs that set their block size") for w in warnings), warnings


def test_recorded_capacity_wins_gpu_runs_without_one_stay_unlimited():
    recs = copy.deepcopy(_records("lr-d2.jsonl"))
    for r in recs:
        r["run"]["kv_cache_tokens"] = {"target": 40_000}
    kv, _ = engine_kv(recs)
    assert kv["target"]["capacity_tokens"] == 40_000 and kv["target"]["source"].startswith("recorded")
    assert kv["draft"]["capacity_tokens"] == 87_360            # computed: none recorded
    for r in recs:
        r["run"]["hardware"]["gpu"] = "H100"
        r["run"]["flags"].pop("block_size")
    # a GPU run that names no block size: vLLM's default there, 16 (vLLM-CPU's 128 is the CPU's)
    kv, _ = engine_kv(recs)
    assert (kv["target"]["capacity_tokens"], kv["target"]["block_tokens"]) == (40_000, 16)
    for r in recs:
        r["run"].pop("kv_cache_tokens")
    assert engine_kv(recs) == ({}, [])


def test_different_runs_keep_the_smallest_and_say_so():
    recs = copy.deepcopy(_records("ar.jsonl"))
    recs[0]["run"]["flags"]["kv_cache_space_gib"] = 1
    kv, warnings = engine_kv(recs)
    assert kv["target"]["capacity_tokens"] == 585 * 32              # 1 GiB: 585 blocks
    assert len(warnings) == 1 and "target KV cache differed" in warnings[0]


def test_profile_carries_it_and_simulations_use_it(tmp_path):
    doc = calibrate([CORPUS / "ar.jsonl", CORPUS / "lr-d2.jsonl"], select_placement=False)
    assert doc["kv_cache"]["target"]["capacity_tokens"] == 37_440
    p = save_profile(Profile(doc), tmp_path / "p.json")
    prof = load_profile(p)
    cfg = prof.to_config("lr", depth=2)
    assert cfg.target.kv.capacity_tokens == 37_440 and cfg.draft.kv.capacity_tokens == 87_360
    # vLLM-CPU's space is per engine, not per core: AR on both cores keeps the same cache
    assert prof.to_config("ar", equal_resources=True).effective().target.kv.capacity_tokens == 37_440
    assert prof.summary()["kv_cache_tokens"] == {"target": 37_440, "draft": 87_360}


@pytest.mark.parametrize("edit,field", [
    (lambda k: k["target"].update(capacity_tokens=8), "kv_cache.target.capacity_tokens"),
    (lambda k: k["target"].update(capacity_tokns=8), "kv_cache.target.capacity_tokns"),
    (lambda k: k.update(judge={"capacity_tokens": 64, "block_tokens": 16}), "kv_cache"),
    (lambda k: k["target"].pop("block_tokens"), "kv_cache.target.block_tokens"),
])
def test_bad_kv_section_names_the_field(tmp_path, minimal_doc, edit, field):
    minimal_doc["kv_cache"] = {"target": {"capacity_tokens": 1024, "block_tokens": 32}}
    edit(minimal_doc["kv_cache"])
    p = tmp_path / "p.json"
    p.write_text(json.dumps(minimal_doc))
    with pytest.raises(UserError) as e:
        load_profile(p)
    assert f"field {field}" in str(e.value) and "\n" not in str(e.value)


def test_plan_and_replay_with_a_full_profile_cache(run_lr, tmp_path, minimal_doc):
    """A profile whose target cache holds 16 blocks: lr plan at 4 requests in flight reports it
    full, and the profile without a kv_cache section reports nothing (unlimited)."""
    minimal_doc["kv_cache"] = {"target": {"capacity_tokens": 512, "block_tokens": 32}}
    p = tmp_path / "small.json"
    save_profile(Profile(minimal_doc), p)
    argv = ("plan", "--profile", p, "--concurrency", "4", "--modes", "lr", "--depth", "1",
            "--samples", "1", "--jobs", "1", "--steps", "6", "--json")
    code, out, _ = run_lr(*argv)
    assert code == 0
    rows = {r["label"]: r for r in json.loads(out)["candidates"]}
    assert rows["lr depth=1"]["kv_full"] and rows["lr depth=1"]["kv_peak_fraction"] == 1.0
    del minimal_doc["kv_cache"]
    save_profile(Profile(minimal_doc), p)
    code, out, _ = run_lr(*argv)
    assert code == 0
    assert all(r["kv_preemptions"] is None and not r["kv_full"]
               for r in json.loads(out)["candidates"])


def test_replay_simulates_with_the_profiles_cache(monkeypatch, minimal_doc):
    from lrsim.calib import replay as replay_mod

    seen = []
    real = replay_mod.run
    monkeypatch.setattr(replay_mod, "run", lambda cfg: seen.append(cfg.target.kv) or real(cfg))
    minimal_doc["kv_cache"] = {"target": {"capacity_tokens": 37_440, "block_tokens": 32}}
    recs = [r for r in read_records(OLD) if r["mode"] == "ar"][:1]
    replay_mod.replay(Profile(minimal_doc), recs)
    assert seen and all(kv is not None and kv.capacity_tokens == 37_440 for kv in seen)


def test_the_real_engine_reports_blocks_x_block_size():
    from lrreal.collect import record_kv_capacity
    from lrreal.engine import _StatSink

    sink = _StatSink()
    assert sink.kv_capacity() is None                  # before the engine core reported it
    sink.cache_config = SimpleNamespace(num_gpu_blocks=1170, block_size=32)
    assert sink.kv_capacity() == 37_440
    run = {"kv_cache_tokens": {"target": 1}}
    engines = {"target": SimpleNamespace(kv_capacity_tokens=lambda: 37_440),
               "draft": SimpleNamespace(kv_capacity_tokens=lambda: None), "judge": object()}
    record_kv_capacity(run, engines)
    assert run == {"kv_cache_tokens": {"target": 37_440}}
    record_kv_capacity(run, {"target": object()})      # a fake engine: says nothing
    assert "kv_cache_tokens" not in run
