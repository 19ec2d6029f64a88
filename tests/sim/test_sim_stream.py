"""Streaming runs (lrsim/sim/stream.py, `lr simulate --stream`): the same requests generated
lazily, the same counters as a full run, percentiles within the sketch's guarantee, the paired
speedup and its standard error as the full run's, memory that does not grow with the requests,
and the flag end to end."""
import json
import math
import tracemalloc
from dataclasses import replace

import numpy as np
import pytest

import cli
from lrsim.sim.build import Options, build
from lrsim.sim.runner import STREAM_AUTO_REQUESTS, run, run_stream, simulate, streams
from lrsim.sim.stream import RELATIVE_ACCURACY, Paired, Sum
from lrsim.sim.workload import Synthetic
from lrsim.theory.montecarlo import ratio_estimate

PCT = ("latency_s", "ttft_s", "tpot_s")


# --- lazy requests == list requests ------------------------------------------------------------
@pytest.mark.parametrize("wl", [
    Synthetic(n_requests=2500, steps=7, rate=3.0, seed=5),                       # Poisson, 3 chunks
    Synthetic(n_requests=1500, steps=4, seed=2),                                  # closed batch
    Synthetic(n_requests=1100, steps=3, step_sigma=0.0, rate=0.5, prompt_cached=40),
    Synthetic(n_requests=1030, max_tokens=300, step_mean=35, rate=1.0, seed=9),   # output budget
])
@pytest.mark.parametrize("chunk", [1024, 7])
def test_lazy_requests_equal_the_list(wl, chunk):
    listed = wl.requests()
    lazy = list(wl.iter_requests(chunk=chunk))
    assert len(lazy) == len(listed) == wl.n_requests
    for a, b in zip(listed, lazy):
        assert (a.rid, a.prompt_tokens, a.prompt_cached) == (b.rid, b.prompt_tokens, b.prompt_cached)
        assert a.step_tokens == b.step_tokens and all(type(t) is int for t in b.step_tokens)
        assert a.arrival == b.arrival and type(b.arrival) is float    # bit for bit
        assert a.rng.getstate() == b.rng.getstate()


def test_lazy_requests_hold_one_chunk():
    it = Synthetic(n_requests=10**6, steps=60, seed=1).iter_requests(chunk=64)
    first = next(it)                # a million requests' lengths are never drawn at once
    assert first.rid == 0 and len(first.step_tokens) == 60


# --- streaming summary == full summary ---------------------------------------------------------
def _cfg(policy, requests=300, rate=2.0, **kw):
    return build(Options(policy=policy, requests=requests, rate=rate, steps=12, **kw))


def _within_guarantee(exact_values, got: dict):
    xs = np.sort(np.asarray(exact_values, float))
    a = RELATIVE_ACCURACY
    for p in (50, 90, 99):
        rank = p / 100 * (len(xs) - 1)
        lo, hi = xs[math.floor(rank)], xs[math.ceil(rank)]
        assert (1 - a) * lo - 1e-15 <= got[f"p{p}"] <= (1 + a) * hi + 1e-15, (p, lo, hi, got)
    assert got["mean"] == pytest.approx(float(xs.mean()), rel=1e-12)


CASES = [("lr-async", {"depth": 4}, 2.0), ("ar", {}, 2.0), ("sd", {"k2": 4}, 2.0),
         ("lr-async", {"depth": 2, "k2": 3}, None)]    # + SD inside, a closed batch


@pytest.mark.parametrize("policy,kw,rate", CASES)
def test_stream_summary_equals_the_full_one(policy, kw, rate):
    cfg = _cfg(policy, rate=rate, **kw)
    full, world = run(cfg)
    s, sworld, _, _ = run_stream(cfg)
    assert sworld.records == []                        # nothing kept per request
    assert s.pop("stream")["percentiles"] == "ddsketch"
    assert set(s) == set(full)
    for k in full:
        if k not in PCT:
            assert s[k] == full[k], k                  # counters and world summaries: exact
    recs = world.records
    _within_guarantee([r.latency for r in recs], s["latency_s"])
    _within_guarantee([r.first_output - r.arrival for r in recs], s["ttft_s"])
    _within_guarantee([(r.finish - r.first_output) / max(1, r.tokens - 1) for r in recs], s["tpot_s"])


@pytest.mark.parametrize("policy,kw,rate", CASES[:3])
def test_streamed_simulate_pairs_the_speedup_exactly(policy, kw, rate):
    cfg = _cfg(policy, rate=rate, **kw)
    full = simulate(cfg)
    s = simulate(replace(cfg, stream=True))
    assert s["stream"]["relative_accuracy"] == RELATIVE_ACCURACY
    assert s["ar_latency_s"] == full["ar_latency_s"]   # AR's latencies are kept: exact
    assert s["latency_speedup"] == pytest.approx(full["latency_speedup"], rel=1e-13)
    assert s["latency_speedup_se"] == pytest.approx(full["latency_speedup_se"], rel=1e-9)
    for k in ("speedup", "throughput_speedup", "tokens_per_s", "ar_tokens_per_s", "requests",
              "output_tokens", "steps", "accepted_steps", "proposed_steps", "params"):
        assert s[k] == pytest.approx(full[k], rel=1e-13) if isinstance(full[k], float) else s[k] == full[k]


def test_paired_moments_equal_ratio_estimate():
    g = np.random.default_rng(0)
    y = g.lognormal(2.0, 0.4, 5000)
    x = 1.3 * y + g.normal(0, 0.2, 5000) + 50.0            # correlated, far from zero
    p, sx = Paired(), Sum()
    for a, b in zip(x, y):
        p.add(float(a), float(b))
        sx.add(float(a))
    est = ratio_estimate(x, y)
    assert p.ratio() == pytest.approx(est.mean, rel=1e-14)
    assert p.stderr() == pytest.approx(est.stderr, rel=1e-9)
    assert sx.value == pytest.approx(math.fsum(x), rel=1e-15)
    one = Paired()
    one.add(1.0, 2.0)
    assert one.stderr() is None                              # as compare(): no se from one request


# --- memory --------------------------------------------------------------------------------------
def _peak(cfg) -> int:
    tracemalloc.start()
    try:
        run(cfg)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_streaming_memory_does_not_grow_with_requests():
    """Poisson arrivals at a sustainable rate: a streaming run's peak is the requests in flight
    plus fixed accumulators, whatever the count; a full run's grows with the requests."""
    def cfg(n, stream):
        return replace(build(Options(policy="ar", requests=n, rate=4.0, steps=3)), stream=stream)
    # 1,000 and 4,000: iter_requests' chunk (1,024 requests' lengths) is about the same in both
    s1, s4 = _peak(cfg(1000, True)), _peak(cfg(4000, True))
    f1, f4 = _peak(cfg(1000, False)), _peak(cfg(4000, False))
    assert s4 < 1.25 * s1, (s1, s4)
    assert f4 > 2.5 * f1, (f1, f4)
    assert s4 < f4 / 4


def test_streaming_sd_memory_does_not_grow_with_requests():
    """Token-level SD too: each request's SD stream (a chunk of drawn rounds) is counted and let go
    when the request finishes (World.release), not kept until its rounds are counted."""
    def cfg(n):
        return replace(build(Options(policy="sd", k2=4, requests=n, rate=4.0, steps=3)), stream=True)
    s1, s4 = _peak(cfg(1000)), _peak(cfg(4000))
    assert s4 < 1.25 * s1, (s1, s4)


# --- automatic streaming, the flag, bad input ---------------------------------------------------
def test_streams_automatically_above_the_threshold_only():
    small = _cfg("lr-async", requests=STREAM_AUTO_REQUESTS)
    big = _cfg("lr-async", requests=STREAM_AUTO_REQUESTS + 1)
    assert not streams(small) and streams(big)
    assert not streams(_cfg("lr-adaptive", requests=STREAM_AUTO_REQUESTS + 1))
    assert not streams(replace(big, stream=False)) and streams(replace(small, stream=True))


def _cli(argv, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    out = capsys.readouterr()
    return e.value.code, out.out, out.err


BASE = ["simulate", "--policy", "lr-async", "--depth", "3", "--requests", "60", "--rate", "2",
        "--steps", "10"]


def test_stream_flag_end_to_end(capsys):
    code, out, err = _cli(BASE + ["--stream", "--json"], capsys)
    assert code == 0, err
    s = json.loads(out)
    code, out, err = _cli(BASE + ["--no-stream", "--json"], capsys)
    assert code == 0, err
    f = json.loads(out)
    assert "stream" not in f and s["stream"]["percentiles"] == "ddsketch"
    assert s["stream"]["peak_in_flight"] >= 1
    for k in ("requests", "steps", "output_tokens", "accepted_steps", "proposed_steps"):
        assert s[k] == f[k], k
    for k in ("speedup", "tokens_per_s", "ar_latency_s"):    # compensated sums: to ~1e-15 (stream.py)
        assert s[k] == pytest.approx(f[k], rel=1e-13, abs=0), k
    code, out, _ = _cli(BASE + ["--stream"], capsys)
    assert code == 0 and "speedup vs AR" in out and "streamed" in out and "DDSketch" in out


@pytest.mark.parametrize("argv,expect", [
    (["simulate", "--policy", "lr-adaptive", "--stream"], ["--stream", "lr-adaptive"]),
    (["simulate", "--requests", "1000000", "--steps", "1000", "--stream"],
     ["MAX_STREAM_SIM_POSITIONS", "over the cap"]),
    (["simulate", "--requests", "1000000", "--stream", "--ideal", "--alpha1", "0.5", "--c1", "0.1"],
     ["MAX_STREAM_SIM_POSITIONS"]),
    # without --stream (automatic streaming keeps the full run's cap): the error names --stream
    (["simulate", "--requests", "100000", "--rate", "2"], ["MAX_SIM_POSITIONS", "--stream"]),
])
def test_stream_bad_input_is_one_line(capsys, argv, expect):
    code, _, err = _cli(argv, capsys)
    assert code == 2 and err.startswith("lr: error:") and err.count("\n") == 1, err
    for e in expect:
        assert e in err
