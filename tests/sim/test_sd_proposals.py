"""N-gram SD proposes only where it finds a match: rounds without a proposal (tokensd.py)."""
import json
import random
from pathlib import Path

import pytest

from lrsim.sim.tokensd import SDStats, SDStream
from types import SimpleNamespace

from lrsim.sim.traces import TraceWorkload, proposal_counts, proposal_rate
from lrsim.sim.workload import Synthetic
from lrcore.errors import UserError

LOAD = Path(__file__).resolve().parents[2] / "traces" / "load" / "gsm8k"


def _consume(stream, steps, seed=1):
    rng, stats = random.Random(seed), SDStats()
    rounds, positions = [], []
    for n in steps:
        rounds.append(stream.rounds_for(n, rng, stats))
        positions.append(stream.last_positions)
    return rounds, positions, stats


def test_always_proposing_stream_is_unchanged():
    steps = [random.Random(7).randint(5, 80) for _ in range(300)]
    a = _consume(SDStream(7, 0.6), steps)
    b = _consume(SDStream(7, 0.6, hit=1.0), steps)
    assert a[0] == b[0]
    assert a[1] == [r * 7 for r in a[0]]
    assert a[2].drafted == 6 * sum(a[0]) and sum(a[2].hist) == sum(a[0])


def test_rounds_without_a_proposal_emit_one_token_at_one_position():
    hit, alpha, k2 = 0.6, 0.5, 7
    rounds, positions, st = _consume(SDStream(k2, alpha, hit=hit), [40] * 5000)
    total = sum(rounds)
    proposing = st.drafted // (k2 - 1)
    # share of proposing rounds: binomial, 4 sigma
    sigma = (hit * (1 - hit) / total) ** 0.5
    assert abs(proposing / total - hit) < 4 * sigma
    assert sum(positions) == total + proposing * (k2 - 1)
    assert sum(st.hist) == proposing            # the histogram counts verifications only
    assert st.hist[0] == 0 and sum(e * c for e, c in enumerate(st.hist)) == st.accepted + proposing
    # tokens per round: 1 without a proposal, E[min(G, k2 - 1)] + 1 with one (Leviathan et al.)
    per_prop = sum(alpha ** j for j in range(k2))
    assert 5000 * 40 / total == pytest.approx((1 - hit) + hit * per_prop, rel=0.02)


def test_synthetic_checks_the_rate():
    with pytest.raises(UserError, match="sd_hit"):
        Synthetic(sd_hit=0.0)
    assert Synthetic(sd_hit=0.5).token_hit(None) == 0.5


def test_proposal_counts_of_a_record():
    passes = [{"decode_requests": 1}] * 129 + [{"prefill_tokens": 30, "decode_requests": 0}]
    rec = {"sd": {"num_drafts": 84}, "engine_stats": {"target": {"forward_passes": passes}}}
    assert proposal_counts(rec) == (84, 129)
    del rec["sd"]["num_drafts"]
    rec["sd"]["accepted_length_hist"] = [50, 20, 14]
    assert proposal_counts(rec) == (84, 129)
    assert proposal_counts({"sd": {"num_drafts": 3}}) is None
    two = [{"sd": {"num_drafts": d}, "engine_stats": {"target": {"forward_passes": [{"decode_requests": n}]}}}
           for d, n in ((84, 129), (16, 71))]
    assert proposal_rate(two) == 0.5
    assert proposal_rate([]) is None
    assert TraceWorkload([{"steps": [{"tokens": 3}]}]).token_hit(SimpleNamespace(trace={})) == 1.0


def _records(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.skipif(not (LOAD / "c1" / "sd.jsonl").exists(), reason="no load corpus")
def test_replayed_sd_needs_as_many_target_passes_as_the_real_engine():
    """Requests alone: the SD rounds the replay draws for each record's tokens (its own
    acceptance and proposal rate, 40 seeds each) add up to the decode passes the real target
    ran, within 6%; a third of them verified nothing (prompt lookup found no match). Pricing
    every round as a proposal undercounts them by more than 10%."""
    from lrsim.calib.replay import ReplayWorkload

    real = hit = always = 0.0
    for rec in _records(LOAD / "c1" / "sd.jsonl"):
        real += sum(1 for p in rec["engine_stats"]["target"]["forward_passes"] if p.get("decode_requests"))
        req = ReplayWorkload([rec]).requests()[0]
        wl = ReplayWorkload([rec])
        alpha, rate = wl.token_alpha(req), wl.token_hit(req)
        assert 0.4 < rate < 0.9
        n = rec["output_tokens"] - 1             # the prompt's prefill writes the first token
        for seed in range(40):
            hit += SDStream(7, alpha, hit=rate).rounds_for(n, random.Random(seed)) / 40
            always += SDStream(7, alpha).rounds_for(n, random.Random(seed)) / 40
    assert hit == pytest.approx(real, rel=0.06)
    assert abs(always / real - 1) > 0.10


@pytest.mark.parametrize("hit", [1.0, 0.6])
def test_refills_keep_the_prefix_sums_of_the_unused_rounds(hit):
    """SDStream._refill: after every refill the rounds' prefix sums are accumulate() of the
    unused and new rounds' tokens (NumPy's cumsum, exact in int64), and with hit < 1 the
    proposing rounds' count rises by 0 or 1 per round."""
    from itertools import accumulate

    s = SDStream(5, 0.6, hit=hit)
    rng, pick = random.Random(3), random.Random(4)
    for _ in range(400):
        s.rounds_for(pick.randint(1, 120), rng)
        assert s._cs == list(accumulate(s._emits_np.tolist()))
        if hit < 1.0:
            assert len(s._ps) == len(s._emits_np)
            assert all(b - a in (0, 1) for a, b in zip([0] + s._ps, s._ps))
