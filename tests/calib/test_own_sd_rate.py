"""ReplayWorkload(own_sd_rate=True): a record run beside others replays token-level SD at its own
tokens per target pass (lrsim.sim.traces.own_tokens_per_pass), not at its window's: the engine's
SD counters and passes over the record's lifetime, every request's in flight, the same for all."""
import random
from pathlib import Path

import pytest

from lrsim.calib.replay import ReplayWorkload, own_sd_knobs, sd_tokens_per_pass
from lrsim.sim.tokensd import AcceptedLengths, SDStream
from lrsim.sim.traces import own_tokens_per_pass

ROOT = Path(__file__).resolve().parents[2]
GAMMA = 6                                   # num_speculative_tokens: k2 = 7
HIST = [30, 5, 5, 5, 0, 0, 5]               # 50 proposals accepting 60 draft tokens


def _pass(start, dur, prefill=0, decode=1):
    return {"start": start, "duration_s": dur, "prefill_requests": prefill, "prefill_tokens": 100 * prefill,
            "decode_requests": decode}


def test_own_rate_counts_a_requests_decode_passes_from_its_prefill_to_its_end():
    """A span's passes: from the first prefilling pass at or after its start (not the pass
    running when it came, nor one scheduled before the engine had it) to the last one ended by its
    end (1 ms slack for the logged end); its prefilling pass and first token left out."""
    passes = [_pass(0.0, 0.5, prefill=1, decode=0),         # begun before the span: not its own
              _pass(0.5, 0.4),                              # scheduled before it had the request
              _pass(0.9, 0.4, prefill=1),                   # its prefill: 1 token
              *(_pass(1.3 + 0.2 * i, 0.2) for i in range(4)),   # 4 decode passes, 7 tokens
              _pass(2.1, 0.3),                              # ends after the span: not its own
              _pass(3.0, 0.2, prefill=1), _pass(3.2, 0.2), _pass(3.4, 0.2)]    # the cancelled one's
    rec = {"sd": {"accepted_length_hist": HIST},
           "engine_stats": {"target": {"forward_passes": passes[::-1]}},      # any order
           "steps": [{"tokens": 8, "target": {"start": 0.2, "end": 2.1005, "tokens": 8},
                      "cancelled": [{"kind": "target", "start": 3.0, "end": 3.6, "tokens": 4},
                                    {"kind": "draft", "start": 3.0, "end": 3.6, "tokens": 9}],
                      "discarded": [{"kind": "target", "start": 3.7, "end": 3.9, "tokens": 0}]}]}
    assert own_tokens_per_pass(rec) == pytest.approx((7 + 3) / (4 + 2))
    rec["steps"][0]["cancelled"] = []
    assert own_tokens_per_pass(rec) == pytest.approx(7 / 4)
    assert own_tokens_per_pass({**rec, "sd": None}) is None                      # no SD
    assert own_tokens_per_pass({**rec, "engine_stats": {}}) is None              # no passes
    untimed = [{k: v for k, v in p.items() if k != "start"} for p in passes]
    assert own_tokens_per_pass({**rec, "engine_stats": {"target": {"forward_passes": untimed}}}) is None


def _record(name: str, tokens: int, in_flight: int = 2, decode: int = 50) -> dict:
    """One request of a block of two: the engine's passes and SD counters over its window are
    both requests' (both prompts prefilled in the first pass, then `decode` passes of both); its
    one target step of `tokens` tokens ran in all of them."""
    passes = [_pass(0.01, 1.0, prefill=2, decode=0)] + [_pass(1.02 + 0.5 * i, 0.49, decode=2)
                                                         for i in range(decode)]
    end = passes[-1]["start"] + passes[-1]["duration_s"] + 0.005
    return {"mode": "lr+sd", "problem_id": name, "sample": 0, "prompt_tokens": 100,
            "run": {"flags": {"num_speculative_tokens": GAMMA, "depth": 2, "load_round": 0,
                              "concurrency": in_flight}},
            "load": {"concurrency": in_flight, "arrival_s": 0.0, "latency_s": end},
            "wall_time_s": end, "output_tokens": tokens,
            "sd": {"num_drafts": 50, "drafted": 50 * GAMMA, "accepted": 60, "accepted_length_hist": HIST},
            "engine_stats": {"target": {"forward_passes": passes}},
            "steps": [{"index": 0, "source": "target", "tokens": tokens, "draft": None, "verify": None,
                       "target": {"start": 0.0, "end": end, "tokens": tokens}}]}


def _rates(wl: ReplayWorkload) -> list[float]:
    return [sd_tokens_per_pass(wl.token_hit(q), wl.token_alpha(q), GAMMA) for q in wl.requests()]


def test_two_requests_with_one_window_replay_at_their_own_rates():
    """Window: 50 proposals over 100 decode passes of the two, 60 draft tokens accepted: 1.6
    tokens per pass for both. Their spans: 70 and 90 tokens after the first over 50 decode passes
    each, 1.4 and 1.8. With the option each request's alpha2 gives its own (the window's proposal
    rate kept), and the simulator's SD rounds draw it; without, both draw the window's."""
    block = [_record("a", 71), _record("b", 91)]
    assert [own_tokens_per_pass(r) for r in block] == pytest.approx([1.4, 1.8])
    off, on = ReplayWorkload(block), ReplayWorkload(block, own_sd_rate=True)
    reqs_off, reqs_on = off.requests(), on.requests()
    assert off.token_alpha(reqs_off[0]) == off.token_alpha(reqs_off[1])
    assert _rates(off) == pytest.approx([1.6, 1.6])
    assert on.token_alpha(reqs_on[0]) < off.token_alpha(reqs_off[0]) < on.token_alpha(reqs_on[1])
    assert [on.token_hit(q) for q in reqs_on] == [off.token_hit(q) for q in reqs_off] == [0.5, 0.5]
    assert _rates(on) == pytest.approx([1.4, 1.8])
    for q, want in zip(reqs_on, (1.4, 1.8)):          # what the simulator's rounds emit (k2 = 7)
        stream = SDStream(GAMMA + 1, on.token_alpha(q), hit=on.token_hit(q))
        n = 200_000
        assert n / stream.rounds_for(n, random.Random(1)) == pytest.approx(want, abs=0.02)


def test_alone_or_off_the_window_rate_stays():
    """A record alone (its window is its own), or the option off: the knobs and requests as
    before (no own_sd on the requests)."""
    alone = [_record("a", 71, in_flight=1)]
    on, off = ReplayWorkload(alone, own_sd_rate=True), ReplayWorkload(alone)
    (q_on,), (q_off,) = on.requests(), off.requests()
    assert q_on.own_sd is None and not hasattr(q_off, "own_sd")
    assert (on.token_hit(q_on), on.token_alpha(q_on)) == (off.token_hit(q_off), off.token_alpha(q_off))


def test_plain_sd_keeps_its_windows_rate():
    """Plain SD's spans are steps cut from one engine request, not requests of their own: the
    option leaves a record of mode sd at its window's knobs (its passes cannot be read per span)."""
    block = [dict(_record("a", 71), mode="sd"), dict(_record("b", 91), mode="sd")]
    on, off = ReplayWorkload(block, own_sd_rate=True), ReplayWorkload(block)
    assert all(q.own_sd is None for q in on.requests())
    assert _rates(on) == _rates(off)


def test_the_recorded_histogram_is_the_windows_and_makes_way():
    """With sd_lengths (accepted lengths drawn from the record's histogram, which is the
    window's), an own-rate request draws Geometric(its alpha2) instead; off, the histogram."""
    block = [_record("a", 71), _record("b", 91)]
    on = ReplayWorkload(block, own_sd_rate=True, sd_lengths=True)
    off = ReplayWorkload(block, sd_lengths=True)
    assert all(on.token_lengths(q) is None for q in on.requests())
    assert all(isinstance(off.token_lengths(q), AcceptedLengths) for q in off.requests())


@pytest.mark.parametrize("rate, hit, knobs", [(1.4, 0.5, (0.5, None)), (4.5, 0.5, (3.5 / 6, 1.0)),
                                              (8.0, 0.5, (1.0, 1.0)), (0.9, 0.5, (0.5, 0.0)),
                                              (1.3, 0.0, (0.05, 1.0))])
def test_the_proposal_rate_rises_only_where_alpha2_cannot_reach(rate, hit, knobs):
    got = own_sd_knobs(rate, hit, GAMMA)
    assert got[0] == pytest.approx(knobs[0])
    if knobs[1] is not None:
        assert got[1] == knobs[1]
    assert sd_tokens_per_pass(*got, GAMMA) == pytest.approx(min(max(rate, 1.0), 1 + GAMMA))


@pytest.mark.parametrize("flag, field, values", [("OWN_SD_RATE", "own_sd_rate", (False, True)),
                                                  ("RECORDED_SD_ROUNDS", "recorded_sd_rounds", ("", "committed", "first"))])
def test_the_load_replay_builds_its_workloads_with_the_option(monkeypatch, flag, field, values):
    """benchmarks/load_replay.replay_worlds builds each block's workload with OWN_SD_RATE and
    RECORDED_SD_ROUNDS (tests/calib/test_recorded_sd_rounds.py) as set."""
    import benchmarks.load_replay as lr

    class Stop(Exception):
        pass

    seen = []

    class Prof:
        doc = {"placement": {"defaults": {}}, "sd": {"k2": GAMMA + 1}}

        def to_config(self, mode, workload, **knobs):
            seen.append(getattr(workload, field))
            raise Stop

    monkeypatch.setattr(lr, "probe_scaled", lambda prof, rec, which, contention: prof)
    block = [_record("a", 71), _record("b", 91)]
    for value in values:
        monkeypatch.setattr(lr, flag, value)
        with pytest.raises(Stop):
            lr.replay_worlds(Prof(), block, speed={"target": {"decode_s": 0.3}})
    assert seen == list(values)


def test_the_load_corpus_requests_differ_where_their_windows_do_not():
    """traces/load-cold-epyc-f25m17-b36, 6 in flight, lr+sd-d3-emb (3 blocks of 6): every record
    has an own rate, 1.41-1.96 over the level; within a block they spread by 0.26, 0.43 and 0.30
    while the window rates the replay gives them spread by 0.12, 0.015 and 0.018 (block 0's
    gsm8k/1020 ended at 180 s of the block's 280: its window missed the rest). With the option
    each record's knobs give its own rate, at its window's proposal rate (0.61-0.68: alpha2
    reaches every rate); without, its window's."""
    from benchmarks.load_replay import blocks
    from lrsim.calib.calibrate import read_records

    path = ROOT / "traces/load-cold-epyc-f25m17-b36/gsm8k/c6/lr+sd-d3-emb.jsonl"
    recs = read_records(path)
    own_all = []
    for k, block in sorted(blocks(recs).items()):
        assert len(block) == 6
        off, on = ReplayWorkload(block), ReplayWorkload(block, own_sd_rate=True)
        own = [own_tokens_per_pass(r) for r in block]
        assert None not in own
        window, got = _rates(off), _rates(on)
        assert got == pytest.approx(own, abs=1e-9)
        assert [on.token_hit(q) for q in on.requests()] == [off.token_hit(q) for q in off.requests()]
        spread, wspread = max(own) - min(own), max(window) - min(window)
        assert spread > 0.25 and spread > wspread
        if k:
            assert wspread < 0.02
        own_all += own
    assert len(own_all) == 18
    assert (f"{min(own_all):.2f}", f"{max(own_all):.2f}") == ("1.41", "1.96")
