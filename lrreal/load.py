"""Many requests in flight on one set of engines: `lr collect --concurrency N` / `--request-rate R`.

    offsets = arrival_offsets(len(todo), rate=2.0, seed=0)   # seconds after the run starts
    await run_in_flight(todo, concurrency=4, rate=2.0, offsets=offsets, run_one=..., on_done=...)

Closed loop (`--concurrency N`, no rate): every request arrives when the run starts and N are
admitted at a time, as `vllm bench serve --max-concurrency N` does with an infinite rate.
Open loop (`--request-rate R`): seeded Poisson arrivals (exponential gaps, mean 1/R s), admitted
as they arrive while fewer than N are in flight. Each request is an asyncio task running the
ordinary scheduler on the shared engines, so vLLM batches their forward passes.

Per record, `load` holds what a load test reports (docs/metrics.md): arrival and admission times
relative to the run's start, the queueing delay between them, TTFT (arrival to the first output
token a user can keep: the first token for ar/sd, the first committed step for lr modes, as the
simulator counts it), TPOT, and how many requests were in flight when it was admitted.
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace

from .engine import monotonic

MAX_CONCURRENCY = 256        # requests in flight; far beyond what a CPU engine serves usefully


def arrival_offsets(n: int, rate: float | None, seed: int) -> list[float]:
    """Arrival times (s after the run starts) of n requests: all 0 without a rate (closed loop);
    a seeded Poisson process of `rate` requests/s otherwise (the same seed, the same arrivals)."""
    if rate is None:
        return [0.0] * n
    import numpy as np

    gaps = np.random.default_rng([seed, 0x10AD]).exponential(1.0 / rate, size=n)
    return [float(t) for t in np.cumsum(gaps) - gaps[0]]  # the first request opens the run


@dataclass
class Admission:
    """When one request arrived and was admitted, and the load it met (times: monotonic s)."""
    run_start: float
    arrival: float
    admitted: float
    in_flight: int               # requests already running when this one was admitted
    concurrency: int
    rate: float | None

    def delayed(self, seconds: float) -> "Admission":
        """The same admission `seconds` later: a machine-speed probe taken before the request
        (level 1 of the load corpus) is not part of the request's life."""
        return replace(self, arrival=self.arrival + seconds, admitted=self.admitted + seconds)

    def record(self, first_output: float | None, end: float, tokens: int) -> dict:
        """The trace record's `load` object (times relative to the run's start)."""
        ttft = None if first_output is None else first_output - self.arrival
        tpot = None if first_output is None or tokens < 2 else (end - first_output) / (tokens - 1)
        return {"concurrency": self.concurrency, "request_rate": self.rate,
                "arrival_s": self.arrival - self.run_start,
                "admitted_s": self.admitted - self.run_start,
                "queue_s": self.admitted - self.arrival,
                "ttft_s": ttft, "tpot_s": tpot,
                "latency_s": end - self.arrival,
                "in_flight_at_admission": self.in_flight}


async def run_in_flight(todo: list, concurrency: int, rate: float | None, offsets: list[float],
                        run_one, on_done) -> None:
    """Run `run_one(item, admission)` for every item, at most `concurrency` at a time, item i
    arriving offsets[i] s after the start. `on_done(item, result, error)` is called as each
    finishes (in completion order); an exception it raises (e.g. a UserError, or too many
    failures) cancels the requests still in flight and propagates."""
    slots = asyncio.Semaphore(concurrency)
    start = monotonic()
    in_flight = 0

    async def one(item, offset: float):
        nonlocal in_flight
        await asyncio.sleep(max(0.0, start + offset - monotonic()))
        async with slots:
            adm = Admission(start, start + offset, monotonic(), in_flight, concurrency, rate)
            in_flight += 1
            try:
                return item, await run_one(item, adm), None
            except (asyncio.CancelledError, KeyboardInterrupt):
                raise
            except Exception as e:  # noqa: BLE001 - reported to on_done, which decides
                return item, None, e
            finally:
                in_flight -= 1

    tasks = [asyncio.ensure_future(one(item, off)) for item, off in zip(todo, offsets)]
    try:
        for fut in asyncio.as_completed(tasks):
            on_done(*await fut)
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

