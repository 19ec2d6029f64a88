"""End to end: n-gram SD inside the real target engine (`sd` mode), its counters in the trace."""
from __future__ import annotations

import asyncio

import pytest

pytestmark = [pytest.mark.real, pytest.mark.slow]

MAX_TOKENS = 48



def test_sd_records_token_level_acceptance(prepared_cache, tmp_path):
    from lrcore.traces import TraceWriter, read_traces
    from lrreal.collect import CollectSpec, Collector
    from lrreal.datasets import load_problems
    from lrreal.lock import vllm_lock

    spec = CollectSpec(mode="sd", dataset="gsm8k", limit=1, max_tokens=MAX_TOKENS, probe=False,
                       cache_dir=str(prepared_cache))   # the probe is checked in test_engine_real
    col = Collector(spec)
    prob = load_problems("gsm8k", limit=1)[0]

    clients = []

    async def go():
        try:
            col.start()
            # vLLM's engine client (its zmq sockets and context: VllmEngine.shutdown)
            clients.append(col.engines["target"]._llm.engine_core.resources)
            await col.warm_up()
            return await col.run_one(prob, 0)
        finally:
            col.shutdown()  # inside the loop (see VllmEngine.shutdown)
            await asyncio.sleep(0.1)

    with vllm_lock():
        rec = asyncio.run(go())
    # the client's zmq context is terminated at shutdown, not left to a garbage-collection pass
    # (which blocks for ever if a socket on it is still open: lrreal/engine.py terminate_zmq)
    assert clients and clients[0].ctx.closed
    with TraceWriter(tmp_path / "t.jsonl", resume=False) as w:
        w.write(rec)
    r = read_traces(tmp_path / "t.jsonl")[0]
    assert 0 < r["output_tokens"] <= MAX_TOKENS
    sd = r["sd"]
    assert sd is not None and sd["num_drafts"] > 0 and sd["drafted"] >= sd["accepted"]
    assert len(sd["accepted_length_hist"]) == spec.num_speculative_tokens + 1
    assert sum(sd["accepted_length_hist"]) == sd["num_drafts"]
    # Verification passes schedule 1 + drafted tokens for the request.
    assert any(p["tokens_scheduled"] > 1 and p.get("prefill_tokens", 0) == 0
               for p in r["engine_stats"]["target"]["forward_passes"])
    assert r["run"]["flags"]["num_speculative_tokens"] == spec.num_speculative_tokens
