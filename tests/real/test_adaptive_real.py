"""End to end on the real vLLM CPU engines: `lr collect --mode lr-adaptive` with a small budget
writes a valid record whose every decision is recorded, and a second run starts from what the
first recorded (two engine starts and a 32-token answer per run:
about 3 minutes measured while other jobs loaded the 2 cores, less on a quiet machine)."""
from __future__ import annotations

import pytest

pytestmark = [pytest.mark.real, pytest.mark.slow]

MAX_TOKENS = 32


def test_lr_adaptive_collects_a_valid_record_with_its_decisions(prepared_cache, tmp_path):
    from lrcore.adaptive import Decision
    from lrcore.traces import read_traces
    from lrreal.collect import CollectSpec, collect

    out = tmp_path / "adaptive.jsonl"
    spec = CollectSpec(mode="lr-adaptive", dataset="gsm8k", limit=1, depth=2, max_tokens=MAX_TOKENS,
                       max_step_tokens=16, verifier="exact", probe=False,
                       cache_dir=str(prepared_cache), out=str(out))
    summary = collect(spec)
    assert (summary.written, summary.failed) == (1, [])
    (r,) = read_traces(out)                               # schema + cross-field rules, adaptive's too
    assert r["mode"] == "lr-adaptive" and 0 < r["output_tokens"] <= MAX_TOKENS
    assert r["output_text"] == "".join(s["text"] for s in r["steps"])
    assert r["engine_stats"]["target"]["forward_passes"]
    ad = r["adaptive"]
    assert ad["config"]["max_depth"] == 2 and ad["config"]["k2s"] == [1]
    decisions = ad["decisions"]
    assert decisions and decisions[0]["position"] == 0
    for d in decisions:
        Decision.from_dict({k: v for k, v in d.items() if k != "position"})
    # the first step follows the chat prompt (no boundary): the target writes it
    assert r["steps"][0]["source"] == "target"
    # what the run measured reached the estimates: real step seconds, not the prior's 1 s
    if len(decisions) > 1:
        assert decisions[-1]["estimates"]["target_step_s"] != 1.0


def test_lr_adaptive_starts_from_the_estimates_an_earlier_run_recorded(prepared_cache, tmp_path):
    """--adaptive-prior DIR on the real engines: the second run's Estimator starts from the first
    run's `adaptive.final` (the trace directory carries it across processes) and says so."""
    from lrcore.traces import read_traces
    from lrreal.collect import CollectSpec, collect

    first, second = tmp_path / "corpus" / "a.jsonl", tmp_path / "b.jsonl"
    kw = dict(mode="lr-adaptive", dataset="gsm8k", limit=1, depth=2, max_tokens=MAX_TOKENS,
              max_step_tokens=16, verifier="exact", probe=False, cache_dir=str(prepared_cache))
    first.parent.mkdir()
    assert collect(CollectSpec(out=str(first), **kw)).written == 1
    (r1,) = read_traces(first)
    assert r1["adaptive"]["prior_from"] == "neutral" and r1["adaptive"]["final"]
    assert collect(CollectSpec(out=str(second), offset=1, adaptive_prior=str(first.parent),
                               **kw)).written == 1
    (r2,) = read_traces(second)
    ad = r2["adaptive"]
    assert ad["prior_from"] == f"{first}:1" and ad["prior"] == r1["adaptive"]["final"]
    assert ad["decisions"][0]["estimates"] == r1["adaptive"]["final"]
