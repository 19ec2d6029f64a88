"""Direct latency profiling on a real vLLM engine: synthetic batches of chosen sizes.

Traces only cover the batch sizes and contexts the collected runs happened to reach (single
requests at a time: batch 1-5). To cover another regime, start one engine and, for every
(context, batch), submit `batch` requests at once with a unique ~`context`-token prompt each and
`decode_tokens` to generate; the engine's per-iteration statistics (the same stat logger `lr
collect` uses) then give each pass's batch, prefill/decode split and duration. Decode passes that
ran exactly `batch` sequences give the (batch, context) point (median); prefill passes give
(prefill tokens, duration). Prefix caching is off so every prompt is really prefilled.

Output: a latency-measurement file (lrcore/latency_file.py, checked before it is written), so
the curve plugs into a scenario (`latency = {kind = "table", file = ...}`) or into a profile
(`lr calibrate TRACES --target-curve curve.json`; lrsim/calib/curve.py reads it). The command is
`lr calibrate measure` (lrreal/calibrate_cli.py).
"""
from __future__ import annotations

import asyncio
import contextlib
import os
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from lrcore.errors import UserError

FILLER = " one two three four five six seven eight nine ten"   # ~10 tokens per repetition
INSTRUCTION = "\nContinue counting in words without stopping:"


@dataclass
class MeasureSpec:
    model: str
    batch_sizes: list[int] = field(default_factory=lambda: [1, 2, 4])
    contexts: list[int] = field(default_factory=lambda: [128])
    decode_tokens: int = 8
    dtype: str = "float32"
    cores: str = "0-1"
    kv_cache_space_gib: int = 2
    cache_dir: str | None = None


def _prompt(tokenizer, i: int, context: int) -> str:
    """A unique prompt of about `context` tokens (unique head: no shared prefix between requests)."""
    head = f"Request {i}:"
    text = head + FILLER
    while len(tokenizer(text + FILLER + INSTRUCTION)["input_ids"]) <= context:
        text += FILLER
    return text + INSTRUCTION


def _decode_points(passes: list[dict], batch: int) -> list[float]:
    return [p["duration_s"] for p in passes
            if p.get("prefill_tokens", 0) == 0 and p["batch_size"] == batch]


async def _run(spec: MeasureSpec, path: Path) -> dict:
    from .engine import EngineArgs, GenRequest, VllmEngine

    b_max, c_max = max(spec.batch_sizes), max(spec.contexts)
    eng = VllmEngine("measure", EngineArgs(
        model=str(path), dtype=spec.dtype, max_model_len=max(256, c_max + spec.decode_tokens + 64),
        kv_cache_space_gib=spec.kv_cache_space_gib, enable_prefix_caching=False,
        max_num_seqs=max(b_max, 1), omp_threads_bind=spec.cores)).start()
    try:
        tok = eng.tokenizer()
        if asyncio.iscoroutine(tok):
            tok = await tok
        await eng.generate(GenRequest("warmup", "Hello", max_tokens=2))
        decode, prefill = [], []
        n = 0
        for ctx in spec.contexts:
            for b in spec.batch_sizes:
                prompts = [_prompt(tok, n + i, ctx) for i in range(b)]
                n += b
                mark = eng.stats_mark()
                await asyncio.gather(*[eng.generate(GenRequest(f"m{n}-{i}", p, max_tokens=spec.decode_tokens))
                                       for i, p in enumerate(prompts)])
                passes = eng.stats_since(mark, 0.0)["forward_passes"]
                pts = _decode_points(passes, b)
                if pts:
                    decode.append({"batch": b, "context": ctx, "ms": 1e3 * statistics.median(pts),
                                   "passes": len(pts)})
                prefill += [{"tokens": p["prefill_tokens"], "ms": 1e3 * p["duration_s"]}
                            for p in passes if p.get("prefill_tokens", 0) > 0 and p.get("decode_requests", 0) == 0]
        return {"decode": decode, "prefill": sorted(prefill, key=lambda r: r["tokens"])}
    finally:
        eng.shutdown()


@contextlib.contextmanager
def stdout_to_stderr():
    """vLLM logs to stdout, and its engine-core process inherits file descriptor 1 when it is
    spawned: point fd 1 at stderr while the engine lives, so `--json` stdout stays one object."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def measure(spec: MeasureSpec, out: str | Path) -> dict:
    """Measure and write the curve (holds the machine-wide vLLM lock while the engine lives)."""
    from . import models
    from .binding import hardware, preload_iomp
    from .engine import vllm_version
    from .lock import vllm_lock

    if spec.decode_tokens < 2:
        raise UserError(f"--decode-tokens must be >= 2, got {spec.decode_tokens}")
    path = models.resolve(spec.model, spec.cache_dir)
    preload_iomp()
    t0 = time.time()
    with vllm_lock(), stdout_to_stderr():
        res = asyncio.run(_run(spec, Path(path)))
    if not res["decode"]:
        raise UserError(f"--model {spec.model}: no decode pass ran at the requested batch sizes "
                        "(the prompts ended at once?)")
    hw = hardware()
    doc = {"device": str(hw.get("gpu") or hw.get("cpu_model") or "device"), "hardware": hw,
           "vllm_version": vllm_version(), "measured_s": round(time.time() - t0, 1),
           "models": {Path(str(path)).name: {"tp": 1, "dtype": spec.dtype, "path": str(path),
                                             "cores": spec.cores, **res}}}
    from lrcore import latency_file
    from lrcore.jsonout import dumps
    from lrcore.outputs import write_atomic

    latency_file.check(doc, str(out))       # what the simulator reads, or a one-line error
    write_atomic(out, dumps(doc, indent=2) + "\n", "--out")   # whole or not at all
    return doc
