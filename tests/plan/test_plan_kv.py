"""KV cache in planning: presets size every engine's cache from device memory as vLLM does
(numbers checked by hand below), a shared placement splits it, the equal-resources target gets
the extra devices' memory, and a plan whose configuration runs out of KV cache says so in the
table, the recommendation and --json."""
import json
from dataclasses import replace

import pytest

from lrsim.plan import hardware as hw
from lrsim.plan import presets
from lrsim.sim.runner import run

GIB = 2 ** 30


def test_preset_kv_sizing_by_hand():
    p = presets.get("r1-gsm8k")
    cfg = p.to_config("lr-async")
    # R1-Distill-Qwen-32B: 64 layers x 8 KV heads x 128 x 2 (K, V) x 2 B = 262,144 B per token;
    # 32.76e9 params x 2 B = 61.03 GiB; on 2 H100s: 0.9 x 160 GiB - 61.03 = 82.97 GiB
    # -> 82.97 x 4096 tokens per GiB = 339,845 -> 339,840 in blocks of 16
    assert p.target.kv_bytes_per_token == 2 * 64 * 8 * 128 * 2
    assert cfg.target.kv.capacity_tokens == 339_840
    # R1-Distill-Qwen-1.5B: 28 x 2 x 128 x 2 x 2 = 28,672 B; 3.31 GiB of weights on one H100:
    # (72 - 3.31) GiB / 28,672 B = 2,572,370 -> 2,572,368
    assert cfg.draft.kv.capacity_tokens == 2_572_368
    # equal resources: the target on 4 H100s, (288 - 61.03) GiB / 256 KiB = 929,681 -> 929,664
    eq = hw.equal_resources(cfg, p.target_latency)
    assert eq.target.tp == 4 and eq.target.kv.capacity_tokens == 929_664
    # shared: target, draft and 7B judge (14.19 GiB, 57,344 B/token) on the target's 2 H100s:
    # (144 - 61.03 - 3.31 - 14.19) GiB / (262,144 + 28,672 + 57,344) B = 201,935 tokens each
    sh = hw.share(cfg)
    assert [x.kv.capacity_tokens for x in (sh.target, sh.draft, sh.judge)] == [201_920] * 3
    d = p.describe()["kv_cache_tokens"]
    assert d == {"target": 339_840, "draft": 2_572_368}


def test_an_unfilled_cache_changes_a_prediction_only_by_its_prefix_blocks():
    """Single stream the cache never fills: with blocks of one token the preset's predictions
    are the unlimited ones; with vLLM's 16-token blocks each LR job also prefills the partial
    block its context ends in (kvcache.request_prefill), which moves LR's by under 0.1%, and AR's
    one request not at all."""
    p = presets.get("r1-gsm8k")

    def tokens(cfg):
        one = {r: replace(m, kv=replace(m.kv, block_tokens=1)) for r in ("target", "draft")
               if (m := getattr(cfg, r)) is not None and m.kv is not None}
        return replace(cfg, **one)

    def core(s):
        return {k: v for k, v in s.items() if not k.startswith("kv")}

    for policy, knobs in (("lr-async", {"k2": 3}), ("sd", {})):
        cfg = p.to_config(policy, steps=20, **knobs)
        sized, _ = run(cfg)
        token, _ = run(tokens(cfg))
        free, _ = run(replace(p, kv_cache=False).to_config(policy, steps=20, **knobs))
        assert sized["kv_preemptions"] == 0 and "kv" not in free
        assert core(token) == free
        if policy == "sd":
            assert core(sized) == free
        else:
            assert sized["tokens_per_s"] != free["tokens_per_s"]
            assert sized["tokens_per_s"] == pytest.approx(free["tokens_per_s"], rel=1e-3)
            assert sized["latency_s"]["mean"] == pytest.approx(free["latency_s"]["mean"], rel=1e-3)


@pytest.fixture
def small_gpu(tmp_path):
    """An H100 with 40 GiB: the 32B target at TP=2 keeps 0.9 x 80 - 61.03 = 10.97 GiB of KV
    cache (44,928 tokens), about 25 of GSM8K's ~1,800-token requests; at TP=4 it keeps 339,840."""
    f = tmp_path / "dev.json"
    f.write_text(json.dumps({"H100-40": {"memory_gib": 40, "hbm_tb_s": 3.35, "bf16_tflops": 989,
                                         "link_gb_s": 450}}))
    return ["--device-file", str(f), "--device-kind", "H100-40"]


PLAN = ["plan", "--preset", "r1-gsm8k", "--concurrency", "32", "--modes", "lr", "--depth", "2",
        "--placement", "dedicated", "--samples", "1", "--jobs", "1"]


def test_plan_that_runs_out_of_kv_says_so(run_lr, small_gpu):
    code, out, _ = run_lr(*PLAN, *small_gpu, "--json")
    assert code == 0
    d = json.loads(out)
    rows = {r["label"]: r for r in d["candidates"]}
    lr, ref = rows["lr depth=2"], rows["ar"]
    # one LR replica (4 GPUs) carries all 32 requests on its 44,928-token cache: full, requests
    # wait for blocks
    assert lr["kv_full"] and lr["kv_peak_fraction"] == 1.0 and lr["kv_blocked_s"] > 0
    # AR at TP=2 runs as 2 replicas of 16 requests; AR at TP=4 has 339,840 tokens: neither fills
    assert not ref["kv_full"] and ref["kv_preemptions"] == 0 and ref["kv_peak_fraction"] < 1
    assert not rows["ar equal-resources"]["kv_full"]
    assert "run out of KV cache at this load" in d["recommendation"]
    assert "lr depth=2" in d["recommendation"].split("out of KV cache")[1]
    code, out, _ = run_lr(*PLAN, *small_gpu)
    assert code == 0
    assert "lr depth=2 [kv]" in out and "[kv]: ran out of KV cache" in out
    assert lr["speedup"] < 1          # on a cache this small LR loses to AR
    assert "ar [reference] [kv]" not in out


def test_shared_placement_without_room_is_skipped(run_lr, small_gpu):
    """Three models' weights (78.5 GiB) on two 40 GiB GPUs leave no room for KV caches: the
    shared candidate is skipped and said so; the dedicated one still runs."""
    argv = [a if a != "dedicated" else "dedicated,shared" for a in PLAN]
    code, out, _ = run_lr(*argv, *small_gpu, "--json")
    assert code == 0
    d = json.loads(out)
    assert [r["label"] for r in d["skipped"]] == ["lr depth=2 shared"]
    assert "no room for the KV caches" in d["skipped"][0]["why"]
    assert "1 candidate(s) leave no memory for a KV cache" in d["recommendation"]
    assert "lr depth=2" in {r["label"] for r in d["candidates"]}


def test_plan_with_room_reports_no_kv_trouble(run_lr):
    code, out, _ = run_lr(*PLAN, "--json")
    assert code == 0
    d = json.loads(out)
    assert all(r["kv_preemptions"] == 0 and not r["kv_full"] for r in d["candidates"])
    assert "KV cache" not in d["recommendation"]


def test_weights_that_leave_no_room_are_a_one_line_error(run_lr):
    code, out, err = run_lr("plan", "--preset", "r1-gsm8k", "--device-kind", "L40S", "--target-tp",
                            "1", "--modes", "lr", "--depth", "1", "--samples", "1", "--jobs", "1")
    assert code == 2 and out == ""
    assert err.startswith("lr: error: preset r1-gsm8k: r1-distill-qwen-32b on 1x L40S: no room "
                          "for a KV cache") and err.count("\n") == 1
