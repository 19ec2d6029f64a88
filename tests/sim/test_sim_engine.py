"""Continuous batching engine: fluid chunks equal per-iteration stepping, joins wait for the
iteration boundary, cancellation frees capacity, devices time-share, busy <= wall."""
import simpy
import pytest

from lrsim.sim.devices import DevicePool
from lrsim.sim.engine import Engine, Job
from lrsim.sim.free_engine import FreeEngine
from lrsim.sim.latency import Roofline


def _setup(max_chunk=64, shared=False, latency=None):
    env = simpy.Environment()
    pool = DevicePool(env, {"d0": "gpu"})
    lat = latency or Roofline(base_s=1.0, knee_tokens=2)   # batch of 4 tokens costs 2 s
    devs = pool.place("a", ["d0"])
    e = Engine(env, "a", lat, devs, max_chunk=max_chunk, context_term=False)
    if max_chunk == 1:
        e.max_chunk = 1
    e2 = None
    if shared:
        e2 = Engine(env, "b", lat, pool.place("b", ["d0"]), context_term=False)
    return env, e, e2, pool


def _scenario(env, e):
    """Jobs arriving at awkward times; returns their completion times."""
    out = {}

    def go(t, iters, name):
        yield env.timeout(t)
        j = e.submit(Job(env, iters))
        yield j.done
        out[name] = env.now

    for t, n, name in [(0, 10, "a"), (0.5, 3, "b"), (2.2, 7, "c"), (2.2, 1, "d"), (9.1, 4, "e")]:
        env.process(go(t, n, name))
    env.run(until=1000)
    return out


def test_fluid_chunks_equal_per_iteration_stepping():
    env1, e1, _, _ = _setup()
    env2, e2, _, _ = _setup(max_chunk=1)
    a, b = _scenario(env1, e1), _scenario(env2, e2)
    assert a.keys() == b.keys()
    for k in a:
        assert a[k] == pytest.approx(b[k], abs=1e-9)
    assert e1.iterations == e2.iterations


def test_join_waits_for_iteration_boundary_and_batch_cost():
    env, e, _, _ = _setup()
    t = _scenario(env, e)
    # a alone runs iterations of 1 s; b arrives at 0.5 and joins at 1.0 (batch of 2 = 1 s, knee 2);
    # c and d arrive at 2.2 and join at 3.0: the batch of 4 tokens costs 2 s, so b's third
    # iteration (and d's only one) runs 3..5
    assert t["b"] == pytest.approx(5.0)
    assert t["d"] == pytest.approx(5.0)


def test_cancel_frees_capacity():
    env = simpy.Environment()
    pool = DevicePool(env, {"d0": "gpu"})
    e = Engine(env, "a", Roofline(base_s=1.0, knee_tokens=1), pool.place("a", ["d0"]), context_term=False)
    done = {}

    def go():
        keep = e.submit(Job(env, 6))
        drop = e.submit(Job(env, 100))
        yield env.timeout(2.5)          # two iterations of batch 2 cost 2 s each -> boundary at 4
        e.cancel(drop)
        yield keep.done
        done["keep"] = env.now
        assert drop.finished is None and drop.iters_left == 98   # the iteration in progress completes

    env.process(go())
    env.run()
    # iterations: [0,2] [2,4] batch 2, then alone at 1 s each: 4 more -> 8
    assert done["keep"] == pytest.approx(8.0)
    assert e.busy_s == pytest.approx(8.0)


def test_shared_device_time_shares():
    env, a, b, pool = _setup(shared=True, latency=Roofline(base_s=1.0, knee_tokens=8))
    out = {}

    def go(e, name, n):
        j = e.submit(Job(env, n))
        yield j.done
        out[name] = env.now

    env.process(go(a, "a", 5))
    env.process(go(b, "b", 5))
    env.run(until=100)
    # the two engines alternate iteration by iteration on one device: 10 iterations of 1 s
    assert max(out.values()) == pytest.approx(10.0)
    assert pool.devices["d0"].busy_s == pytest.approx(10.0)
    assert pool.utilisation(10.0)["d0"] <= 1.0 + 1e-12


def test_free_engine_runs_jobs_independently():
    env = simpy.Environment()
    pool = DevicePool(env, {"d0": "ideal"})
    e = FreeEngine(env, "t", 1.0, pool.place("t", ["d0"]))
    ends = {}

    def go(t, n):
        yield env.timeout(t)
        j = e.submit(Job(env, n))
        yield j.done
        ends[t] = env.now

    for t in (0, 0.3, 5):
        env.process(go(t, 2))
    env.run()
    assert ends == {0: 2.0, 0.3: pytest.approx(2.3), 5: 7.0}
    assert e.busy_s == pytest.approx(2.3 + 2.0)


def test_mean_batch_and_first_token_over_a_jobs_life():
    """lr-adaptive's Estimator reads a target step's batch as the sequences the engine ran over
    the step's life (read as the job finishes), and a prefilling job's first token as the end of
    its first iteration: two jobs of 4 and 2 flat 1 s iterations, the second prefilling."""
    from lrsim.sim.engine import mean_batch
    env, e, _, _ = _setup(latency=Roofline(base_s=1.0, knee_tokens=100))
    seen = {}
    for name, job in [("long", Job(env, 4)), ("short", Job(env, 2, ctx=8, prefill=8))]:
        e.submit(job)
        job.done.callbacks.append(lambda _e, n=name, j=job: seen.__setitem__(
            n, (j.finished, mean_batch(e, j), j.first_end)))
    env.run(until=100)
    assert seen["long"][:2] == pytest.approx((4.0, 1.5)) and seen["long"][2] is None
    assert seen["short"] == pytest.approx((2.0, 2.0, 1.0))
    assert mean_batch(FreeEngine(env, "f", Roofline(base_s=1.0, knee_tokens=100), e.devices),
                      Job(env, 1)) == 1.0


def test_positions_and_prefill_count_what_the_iterations_ran():
    """Engine.positions: decode positions over the iterations run (a job's tokens per iteration,
    but for its first iteration when it prefills); Engine.prefilled: the prefill positions
    (benchmarks/bench_replay_passes.py sets them beside the real passes' q and P). Chunked or
    stepped alike."""
    for max_chunk in (64, 1):
        env, e, _, _ = _setup(max_chunk=max_chunk)

        def go(t, job):
            yield env.timeout(t)
            yield e.submit(job).done

        env.process(go(0, Job(env, 10, tokens_per_iter=1)))                 # 10 decode positions
        env.process(go(0.5, Job(env, 4, ctx=40, prefill=40, tokens_per_iter=3)))   # 40 prefilled, 3 x 3
        env.process(go(2.2, Job(env, 2, tokens_per_iter=5)))                 # 10
        # two jobs prefilling in one iteration, beside one decoding
        env.process(go(20.0, Job(env, 3, ctx=16, prefill=16, tokens_per_iter=2)))   # 16, then 2 x 2
        env.process(go(20.0, Job(env, 2, ctx=8, prefill=8, tokens_per_iter=1)))     # 8, then 1
        env.process(go(20.0, Job(env, 4, tokens_per_iter=1)))                       # 4
        env.run(until=1000)
        assert e.prefilled == 40 + 16 + 8
        assert e.positions == 10 + 3 * 3 + 10 + 2 * 2 + 1 + 4
