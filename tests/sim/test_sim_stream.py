"""Streaming runs: the same requests generated lazily."""
import pytest

from lrsim.sim.workload import Synthetic


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
