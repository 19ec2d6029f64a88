"""KV-cache capacity in the continuous-batching engine (lrsim/sim/kvcache.py): admission waits
for blocks, preemption by recompute, eviction of idle requests' cached context, prefix sharing
within a request, the one-line error for a sequence that can never fit, the scenario and CLI
settings, and the paper's caveat: on a saturated cache LR can lose to AR.

Timings are hand-computed on constant-cost latency models (Roofline with a knee far away: every
iteration costs base_s; with per_token_s: 1 + 0.1 (tokens - 1) s)."""
import json
from dataclasses import replace

import pytest
import simpy

import cli
from lrcore.errors import UserError
from lrsim.sim import scenario
from lrsim.sim.build import Options, build
from lrsim.sim.devices import DevicePool
from lrsim.sim.engine import Engine, Job
from lrsim.sim.kvcache import KVCapacityError, KVSpec, Usage, kv_from_memory
from lrsim.sim.latency import Roofline
from lrsim.sim.runner import simulate

FLAT = Roofline(base_s=1.0, knee_tokens=1e9)                       # 1 s per iteration, any batch
SLOPED = Roofline(base_s=1.0, knee_tokens=1, per_token_s=0.1)      # 1 + 0.1 (tokens - 1) s


def _run(kv, jobs, latency=FLAT):
    """jobs: (submit time, name, Job kwargs); returns ({name: finish time}, engine)."""
    env = simpy.Environment()
    pool = DevicePool(env, {"d0": "gpu"})
    e = Engine(env, "t", latency, pool.place("t", ["d0"]), context_term=False, kv=kv)
    done = {}

    def go(t, name, kw):
        yield env.timeout(t)
        j = e.submit(Job(env, **kw))
        yield j.done
        done[name] = env.now

    for t, name, kw in jobs:
        env.process(go(t, name, kw))
    env.run()
    return done, e


def test_admission_waits_for_blocks():
    # A holds 16 tokens of context (one block) and needs a second block from its second
    # iteration on; B arrives at 0.5 and would need a third block: with 2 blocks it waits for A.
    jobs = [(0, "A", dict(iters=10, ctx=16)), (0.5, "B", dict(iters=3, ctx=16))]
    free, _ = _run(None, jobs)
    assert free == {"B": 4.0, "A": 10.0}           # B joins at the boundary at 1 s
    full, e = _run(KVSpec(32), jobs)
    assert full == {"A": 10.0, "B": 13.0}          # B waits 1 -> 10 for A's blocks
    k = e.kv.summary()
    assert k["preemptions"] == 0 and k["blocked_jobs"] == 1
    assert k["blocked_s"] == pytest.approx(9.0) and k["peak_fraction"] == 1.0


def test_preemption_by_recompute_pays_the_prefill_again():
    # Both fit at first (16 + 16 tokens); after one iteration each needs a second block
    # (17 tokens): B, admitted last, is preempted at 1.1 s with 17 tokens, waits for A, and is
    # readmitted at 10.1 s with a 17-token prefill (1 + 0.1 x 16 = 2.6 s), then 3 iterations.
    jobs = [(0, "A", dict(iters=10, ctx=16)), (0, "B", dict(iters=5, ctx=16))]
    free, _ = _run(None, jobs, SLOPED)
    assert free == pytest.approx({"B": 5.5, "A": 10.5})   # 5 x 1.1 s together, then A alone
    full, e = _run(KVSpec(32), jobs, SLOPED)
    assert full == pytest.approx({"A": 10.1, "B": 15.7})
    k = e.kv.summary()
    assert k["preemptions"] == 1 and k["recomputed_tokens"] == 17
    assert k["blocked_s"] == pytest.approx(9.0)


def test_a_chunk_stops_where_the_cache_fills():
    # One job alone grows past a block every 16 tokens: with room for exactly its last iteration
    # nothing is preempted, and a fluid chunk runs it in one go.
    done, e = _run(KVSpec(48), [(0, "A", dict(iters=33, ctx=16))])
    assert done == {"A": 33.0}
    assert e.kv.preemptions == 0 and e.kv.peak == 48


def test_unlimited_cache_changes_nothing():
    jobs = [(0, "a", dict(iters=10, ctx=100)), (0.5, "b", dict(iters=3, ctx=50, prefill=50)),
            (2.2, "c", dict(iters=7)), (2.2, "d", dict(iters=1, prefill=300)),
            (9.1, "e", dict(iters=4, ctx=10, tokens_per_iter=4, sd=True, emit_per_iter=2.0))]
    free, e0 = _run(None, jobs, SLOPED)
    big, e1 = _run(KVSpec(1 << 30), jobs, SLOPED)
    assert free == big and e0.iterations == e1.iterations and e1.kv.preemptions == 0


@pytest.mark.parametrize("policy,knobs", [("ar", {}), ("sd", {"k2": 4}),
                                          ("lr-async", {"depth": 3, "width": 2}),
                                          ("lr-sync", {"k1": 3})])
def test_no_capacity_summary_is_the_old_one_and_a_huge_one_matches_it(policy, knobs):
    """A capacity that never binds changes nothing; its blocks of one token keep the prefix
    cache token-granular (the prefill in whole blocks: tests/sim/test_prefix_blocks.py)."""
    o = dict(policy=policy, requests=6, steps=12, **knobs)
    plain = simulate(build(Options(**o)))
    assert not any(k.startswith(("kv", "ar_kv")) for k in plain)
    cfg = build(Options(**o, kv_cache_tokens=1 << 40))
    huge = simulate(replace(cfg, target=replace(cfg.target, kv=KVSpec(1 << 40, 1))))
    assert huge["kv_preemptions"] == 0 and huge["ar_kv_preemptions"] == 0
    assert {k: v for k, v in huge.items() if not k.startswith(("kv", "ar_kv"))} == plain


def test_prefix_shared_within_a_request_counted_once():
    env = simpy.Environment()
    a, b = Job(env, 5, ctx=100, group=1), Job(env, 5, ctx=100, group=1)
    c = Job(env, 5, ctx=100, group=2)
    u = Usage(16)
    u.add(a, 100)
    assert u.peek(b, 100) == 112 + 112 - 96          # the 6 full blocks of the context once
    u.add(b, 100)
    assert u.add(c, 100) == 128 + 112                # another request shares nothing


def test_evicted_context_is_prefilled_again():
    # A1 (request 1) and C (request 3) prefill 32 + 16 tokens together (1 + 0.1 x 47 = 5.7 s);
    # A1 ends there, leaving its 33-token sequence cached (48 tokens), and C, now holding 32 of
    # the 64, leaves no room for it: evicted. Request 1's next job (A2, its 33-token context
    # assumed cached) prefills it again: 1 + 0.1 x 32 = 4.2 s, then one iteration: 55.2, not 52.
    jobs = [(0, "A1", dict(iters=1, ctx=32, prefill=32, group=1)),
            (0, "C", dict(iters=40, ctx=16, prefill=16, group=3)),
            (50, "A2", dict(iters=2, ctx=33, group=1))]
    roomy, _ = _run(KVSpec(1 << 20), jobs, SLOPED)
    assert roomy == pytest.approx({"A1": 5.7, "C": 44.7, "A2": 52.0})
    tight, e = _run(KVSpec(64), jobs, SLOPED)
    assert tight == pytest.approx({"A1": 5.7, "C": 44.7, "A2": 55.2})
    k = e.kv.summary()
    # evicted: request 1's sequence at 5.7 s, then C's (cached when it ended) to admit A2
    assert (k["evictions"], k["prefix_misses"], k["reprefilled_tokens"]) == (2, 1, 33)


def test_evicted_context_is_prefilled_again_beside_the_jobs_own_prefill():
    # A2 as above, 5 of its 33 tokens new to the engine (its prefill): the 28 it assumed cached
    # are prefilled again beside them, 33 in all, the same 4.2 s pass
    jobs = [(0, "A1", dict(iters=1, ctx=32, prefill=32, group=1)),
            (0, "C", dict(iters=40, ctx=16, prefill=16, group=3)),
            (50, "A2", dict(iters=2, ctx=33, prefill=5, group=1))]
    tight, e = _run(KVSpec(64), jobs, SLOPED)
    assert tight == pytest.approx({"A1": 5.7, "C": 44.7, "A2": 55.2})
    assert (e.kv.prefix_misses, e.kv.reprefilled_tokens) == (1, 28)


def test_a_sequence_that_can_never_fit_is_a_one_line_error(run_lr):
    with pytest.raises(KVCapacityError) as e:
        _run(KVSpec(32), [(0, "A", dict(iters=40, ctx=16))])
    assert "55 KV tokens" in str(e.value) and "32 tokens" in str(e.value)
    code, out, err = run_lr("simulate", "--policy", "ar", "--requests", "1", "--steps", "60",
                            "--kv-cache-tokens", "1000")
    assert code == 2 and out == ""
    assert err.startswith("lr: error: engine DeepSeek-R1-Distill-Qwen-32B: one sequence grows to ")
    assert err.count("\n") == 1


def test_lr_on_a_saturated_cache_loses_to_ar():
    """The paper's caveat: LR's speculative target requests hold KV cache, and an LR request
    idle between steps loses its cached context first. With room for every request LR gains on
    h100-paper at 32 requests in flight; on a 60k-token cache (AR itself preempts) it loses."""
    o = dict(policy="lr-async", depth=4, requests=32, steps=60)
    free = simulate(build(Options(**o)))
    full = simulate(build(Options(**o, kv_cache_tokens=60_000)))
    assert free["speedup"] > 1.1
    assert full["speedup"] < 0.95 and full["tokens_per_s"] < full["ar_tokens_per_s"]
    assert full["kv_preemptions"] > 0 and full["kv_peak_fraction"] == 1.0
    assert full["kv"]["DeepSeek-R1-Distill-Qwen-32B"]["prefix_misses"] > 0


def test_simulate_json_and_table_report_the_cache(run_lr):
    argv = ("simulate", "--policy", "lr-async", "--depth", "2", "--requests", "16", "--steps",
            "30", "--kv-cache-tokens", "20000")
    code, out, _ = run_lr(*argv, "--json")
    assert code == 0
    d = json.loads(out)
    for k in ("kv_preemptions", "kv_peak_fraction", "kv_blocked_s", "ar_kv_preemptions"):
        assert k in d
    assert d["kv"]["DeepSeek-R1-Distill-Qwen-32B"]["capacity_tokens"] == 20000
    code, out, _ = run_lr(*argv)
    assert code == 0 and "KV cache DeepSeek-R1-Distill-Qwen-32B" in out and "preempted" in out


def test_kv_from_memory_follows_vllm_sizing():
    # 0.9 x 80 GiB x 2 devices - 61 GiB of weights = 83 GiB, at 256 KiB per token
    s = kv_from_memory(80, 2, 61.0, 262144)
    assert s.capacity_tokens == (int((0.9 * 160 - 61) * 1024 ** 3 // 262144)) // 16 * 16 == 339968
    assert s.widened(2, 4).capacity_tokens == int((0.9 * 320 - 61) * 1024 ** 3 // 262144) // 16 * 16
    assert KVSpec(1000).widened(2, 4).capacity_tokens == 2000
    with pytest.raises(UserError, match="no room for a KV cache"):
        kv_from_memory(80, 1, 75.0, 262144)


SCEN = scenario.resolve_path("h100-paper").read_text()


def _scen(tmp_path, extra):
    p = tmp_path / "kv.toml"
    p.write_text(SCEN.replace('devices = ["gpu0", "gpu1"]\ntp = 2\n',
                              'devices = ["gpu0", "gpu1"]\ntp = 2\n' + extra + "\n"))
    return str(p)


def test_scenario_kv_settings(tmp_path):
    cfg = scenario.load(_scen(tmp_path, "kv_cache_tokens = 50010"))   # whole blocks
    assert cfg.target.kv == KVSpec(50000) and cfg.draft.kv is None
    cfg = scenario.load(_scen(tmp_path, "kv_cache_gib = 10"))   # the roofline's 262144 B/token
    assert cfg.target.kv.capacity_tokens == 40960
    cfg = scenario.load(_scen(tmp_path, "kv_cache_gib = 1\nkv_bytes_per_token = 1024\n"
                                        "kv_block_tokens = 32"))
    assert cfg.target.kv == KVSpec(1 << 20, 32)
    assert "kv" not in simulate(scenario.load("h100-paper"))    # shipped scenarios: unlimited


@pytest.mark.parametrize("extra,field", [
    ("kv_cache_tokens = 0", "kv_cache_tokens"),
    ("kv_cache_tokens = 8", "kv_cache_tokens"),
    ("kv_cache_tokens = 100\nkv_cache_gib = 1", "kv_cache_gib"),
    ("kv_block_tokens = 16", "kv_block_tokens"),
    ("kv_cache_tokens = 1000\nkv_bytes_per_token = 10", "kv_bytes_per_token"),
    ("kv_cache_gib = -1", "kv_cache_gib"),
    ('kv_cache_tokens = "lots"', "kv_cache_tokens"),
])
def test_scenario_kv_errors_name_file_and_field(tmp_path, extra, field):
    with pytest.raises(UserError) as e:
        scenario.load(_scen(tmp_path, extra))
    msg = str(e.value)
    assert "kv.toml" in msg and f"models.target.{field}" in msg and "\n" not in msg


def test_kv_cache_gib_needs_bytes_per_token(tmp_path):
    p = tmp_path / "kv.toml"
    p.write_text(SCEN.replace('devices = ["gpu2"]\n', 'devices = ["gpu2"]\nkv_cache_gib = 4\n')
                 .replace('params_b = 1.78, bytes_per_param = 2, kv_bytes_per_token = 28672, ',
                          'params_b = 1.78, bytes_per_param = 2, '))
    with pytest.raises(UserError, match="models.draft.kv_cache_gib: needs kv_bytes_per_token"):
        scenario.load(str(p))


def test_equal_resources_baseline_gets_the_extra_devices_cache():
    cfg = build(Options(policy="lr-async", requests=2, steps=5, kv_cache_tokens=40_000))
    wide = replace(cfg, equal_resources=True).baseline()
    assert wide.target.tp == 4 and wide.target.kv.capacity_tokens == 80_000


def test_the_bound_only_skips_work(monkeypatch):
    """The engine consults exact block counts only where its O(1) upper bound cannot settle a
    question; forcing the exact count everywhere gives the same run, event for event."""
    from lrsim.sim.kvcache import KVCache

    o = dict(policy="lr-async", depth=3, k2=3, requests=24, steps=30, kv_cache_tokens=30_000)
    fast = simulate(build(Options(**o)))
    monkeypatch.setattr(KVCache, "upper", lambda self, i: float("inf"))
    assert simulate(build(Options(**o))) == fast
    assert fast["kv_preemptions"] > 0 and fast["kv_peak_fraction"] == 1.0
