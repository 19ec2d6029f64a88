"""SDStats counts its histogram lazily (tokensd.py): every read sees every round drawn so far,
exactly as counting each round as it was drawn did."""
import random

import pytest

from lrsim.sim import tokensd
from lrsim.sim.tokensd import SDStats, SDStream


def eager_hist(stream: SDStream, steps, seed, with_stats) -> list[int]:
    """The histogram counted round by round, as rounds_for did before it was lazy: each counted
    call's rounds (the last `rounds` before _p: a refill rebases the lists before the call takes
    its rounds) read from the stream's drawn emits, with hit < 1 only the proposing ones."""
    rng, h = random.Random(seed), [0] * (stream.k2 + 1)
    for n, counted in zip(steps, with_stats):
        rounds = stream.rounds_for(n, rng, None)
        p, ps = stream._p, stream._ps
        if counted:
            for i in range(p - rounds, p):
                if not ps or ps[i] != (ps[i - 1] if i else 0):
                    h[int(stream._emits_np[i])] += 1
    return h


@pytest.mark.parametrize("hit", [1.0, 0.4])
def test_the_lazy_histogram_is_the_eager_count(hit):
    draw = random.Random(3)
    steps = [draw.randint(5, 90) for _ in range(400)]
    with_stats = [draw.random() < 0.8 for _ in steps]
    assert len(set(steps)) > 50 and 0 < sum(with_stats) < len(steps)
    rng, stats = random.Random(11), SDStats()
    stream = SDStream(5, 0.55, hit=hit)
    reads = []
    for n, counted in zip(steps, with_stats):
        stream.rounds_for(n, rng, stats if counted else None)
        if len(reads) < 50:
            reads.append(list(stats.hist))          # a read mid-run flushes
    lazy = list(stats.hist)
    assert lazy == eager_hist(SDStream(5, 0.55, hit=hit), steps, 11, with_stats)
    # rounds taken without stats are not counted; with hit = 1 every counted round is in hist
    if hit == 1.0:
        assert sum(lazy) == stats.rounds
    assert sum(e * c for e, c in enumerate(lazy)) == stats.accepted + sum(lazy)
    assert all(a <= b for r, s in zip(reads, reads[1:]) for a, b in zip(r, s))   # counts only grow


def test_a_read_between_calls_does_not_change_the_count():
    draw = random.Random(5)
    steps = [draw.randint(5, 90) for _ in range(300)]

    def hist(read_each):
        rng, stats, stream = random.Random(2), SDStats(), SDStream(4, 0.3)
        for n in steps:
            stream.rounds_for(n, rng, stats)
            if read_each:
                stats.hist
        return stats.hist, repr(stats)
    assert hist(True) == hist(False)


def test_each_stats_counts_the_rounds_taken_with_it():
    """One stream taking rounds for two SDStats in turn: each counts exactly its own rounds."""
    draw, rng = random.Random(8), random.Random(4)
    a, b, stream = SDStats(), SDStats(), SDStream(4, 0.6)
    for i in range(500):
        stream.rounds_for(draw.randint(5, 90), rng, a if i % 3 else b)
        if i == 250:
            a.hist                    # a read mid-run changes nothing either
    for st in (a, b):
        assert sum(st.hist) == st.rounds > 0
        assert sum(e * c for e, c in enumerate(st.hist)) == st.accepted + st.rounds
    assert not a.pending and not b.pending


def test_pending_streams_are_bounded():
    rng, stats = random.Random(1), SDStats()
    stats.max_pending = 16
    streams = [SDStream(3, 0.5) for _ in range(40)]
    for s in streams:
        s.rounds_for(20, rng, stats)
        assert len(stats.pending) < 16
    assert sum(stats.hist) == stats.rounds and not stats.pending


def test_a_finished_request_releases_its_streams():
    """runner: World.release counts a finished request's rounds and lets its streams go, so a
    run holds only the streams of the requests in flight."""
    from lrsim.sim import scenario
    from lrsim.sim.runner import run

    cfg = scenario.load("h100-paper")
    cfg.policy, cfg.k2 = "lr-async", 4
    cfg.workload.n_requests, cfg.workload.steps, cfg.workload.rate = 6, 10, 1.0
    s, world = run(cfg)
    assert not world.sd.pending and not world._streams
    assert sum(world.sd.hist) == world.sd.rounds > 0
