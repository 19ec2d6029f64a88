"""Config.sd_plain_first_pass: a new target request's first pass prefills and samples one token
without verifying an SD proposal (vLLM proposes from a pass's output, so a request's first pass
has none), so an SD target job of n tokens runs that pass and then the rounds of n - 1 tokens.
Off (the default), the prefilling pass is one of the job's SD rounds."""
import random
import types

import pytest
import simpy

from lrsim.sim.devices import DevicePool
from lrsim.sim.engine import Engine
from lrsim.sim.latency import Roofline
from lrsim.sim.tokensd import SDStream
from lrsim.sim.world import World


def _world(plain: bool) -> World:
    return World(simpy.Environment(), types.SimpleNamespace(sd_plain_first_pass=plain), None, None, None, None, None)


def _req():
    return types.SimpleNamespace(rid=0, rng=random.Random(7))


@pytest.mark.parametrize("hit", [1.0, 0.6])
def test_a_prefilling_job_runs_its_first_pass_plain_then_the_rounds_of_the_rest(hit):
    tokens = 40
    expect = SDStream(4, 0.5, hit=hit).rounds_for(tokens - 1, random.Random(7))
    stream = SDStream(4, 0.5, hit=hit)
    job = _world(True).target_job(_req(), tokens, 0, prefill=12, stream=stream)
    assert job.total == 1 + expect and job.prefill == 12
    # the SD rounds verify what the stream drew; the engine prices the first pass by its prefill
    assert job.tokens_per_iter * expect == pytest.approx(stream.last_positions)
    assert job.emit_per_iter * job.total == pytest.approx(tokens)


def test_off_the_first_pass_is_one_of_the_rounds():
    tokens = 40
    expect = SDStream(4, 0.5).rounds_for(tokens, random.Random(7))
    job = _world(False).target_job(_req(), tokens, 0, prefill=12, stream=SDStream(4, 0.5))
    assert job.total == expect


def test_only_a_job_that_prefills_and_an_explicit_round_count_are_left_as_given():
    tokens = 40
    expect = SDStream(4, 0.5).rounds_for(tokens, random.Random(7))
    world = _world(True)
    assert world.target_job(_req(), tokens, 0, prefill=0, stream=SDStream(4, 0.5)).total == expect
    assert world.target_job(_req(), tokens, 0, prefill=12, stream=SDStream(4, 0.5), rounds=5).total == 5


def test_a_one_token_job_is_its_prefilling_pass_alone():
    job = _world(True).target_job(_req(), 1, 0, prefill=12, stream=SDStream(4, 0.5))
    assert (job.total, job.tokens_per_iter) == (1, 1.0)


def test_the_engine_counts_the_plain_pass_as_prefill_and_the_rounds_as_decode_positions():
    """On an Engine: the job's passes are 1 + its rounds, its decode positions the rounds' own."""
    env = simpy.Environment()
    pool = DevicePool(env, {"d0": "gpu"})
    eng = Engine(env, "target", Roofline(base_s=1.0, knee_tokens=2), pool.place("target", ["d0"]),
                 context_term=False)
    stream = SDStream(4, 0.5)
    world = World(env, types.SimpleNamespace(sd_plain_first_pass=True), None, eng, None, None, None)
    job = eng.submit(world.target_job(_req(), 30, 0, prefill=8, stream=stream))
    env.run()
    assert job.finished is not None and eng.iterations == job.total > 1
    assert eng.prefilled == 8 and eng.positions == pytest.approx(stream.last_positions)


@pytest.mark.parametrize("plain", [False, True])
def test_a_replayed_lr_sd_record_runs_a_plain_first_pass_on_every_target_job(plain):
    """A real lr+sd record replayed (its committed-path jobs prefill their recorded counts, which
    the policy submits as no new request to be rounded again): with the flag, every target job's
    passes are its SD rounds and one plain pass; without, its SD rounds alone."""
    from pathlib import Path

    from lrcore.traces import read_traces
    from lrsim.sim import scenario
    from lrsim.sim.runner import run
    from lrsim.sim.traces import TraceWorkload
    from tests.sim.engine_log import submitted

    rec = read_traces(Path(__file__).resolve().parents[2] / "traces" / "load-f6m207-36" / "gsm8k" / "c3"
                      / "lr+sd-d2-emb.jsonl")[0]
    cfg = scenario.load("h100-paper")
    cfg.policy, cfg.depth, cfg.width, cfg.k2 = "lr-async", 2, 1, 7
    cfg.workload = TraceWorkload([rec])
    cfg.sd_plain_first_pass = plain
    with submitted() as log:
        _, world = run(cfg)
    jobs = [(job, p) for _, job, p in log if job.sd]
    assert len(jobs) >= 4 and all(p > 0 for _, p in jobs)
    assert sum(j.total for j, _ in jobs) - world.sd.rounds == (len(jobs) if plain else 0)
