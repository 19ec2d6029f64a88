"""Hardware latency profile of the paper's models on one GPU, with random bf16 weights.

Times forward passes (decode / verify steps and prefill) of decoder-only transformers with the
exact shapes of the Lookahead Reasoning paper's models (Qwen2.5 / Qwen3 families), in pure torch
(no vLLM), so the simulator (`lrsim`) can use measured step costs instead of guesses.

What one forward pass does (per layer, like vLLM's Qwen2/Qwen3 implementation):
  fused add+RMSNorm -> fused QKV projection (+bias for Qwen2) -> [Qwen3: per-head q/k RMSNorm]
  -> RoPE -> write K/V into a preallocated cache -> GQA attention over the cache
  (F.scaled_dot_product_attention; decode/verify steps GQA-packed, see Step.__init__)
  -> O projection -> add+RMSNorm -> fused gate/up projection -> SiLU*up -> down projection;
  then final RMSNorm and the lm_head (logits for every query token of a decode/verify step,
  for the last token only in prefill, as vLLM does).

Memory trick: the weights of only `--weight-sets` distinct layers (default 4) are allocated and
cycled across all layers. Each layer's weights (~1 GB for a 32B model, >=90 MB for the small
ones) are far larger than the H100's 50 MB L2, so every layer still streams its weights from HBM
exactly as the real model does. KV-cache buffers are cycled the same way (`--kv-sets`).
`--validate-cycling` measures the effect of this trick directly (4 sets vs all layers distinct).

Usage (on a CUDA machine):
  python benchmarks/gpu_latency_profile.py --models r1-distill-qwen-1.5b --out /tmp/p.json
  python benchmarks/gpu_latency_profile.py --merge a.json b.json --out merged.json
Smoke test on CPU with a tiny config:  python benchmarks/gpu_latency_profile.py --tiny
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, replace

MIB = 1 << 20
GB = 1e9
RMS_EPS = 1e-6
ROPE_THETA = 1_000_000.0  # Qwen2.5 / Qwen3 rope_theta; only affects values, not timing

# Modelled TP=2 all-reduce (NOT measured: one GPU here). vLLM's custom one-shot all-reduce on
# NVLink H100 pairs takes a few microseconds for decode-sized messages; large messages run at
# roughly 360 GB/s effective algorithm bandwidth (NVLink4 450 GB/s per direction, ~80% achieved).
ALLREDUCE_LATENCY_US = 6.0
ALLREDUCE_BW_GBPS = 360.0
ALLREDUCES_PER_LAYER = 2  # after o_proj and after down_proj (row-parallel layers)
FIT_SHARE = 0.9           # 'fits_real': vLLM's default gpu_memory_utilization ...
FIT_RESERVE_BYTES = 2e9   # ... less ~2 GB kept for activations and CUDA graphs


@dataclass(frozen=True)
class Arch:
    """Shapes of one decoder-only model (values from each model's published config.json)."""

    name: str
    hf_id: str
    family: str  # "qwen2" (QKV bias) or "qwen3" (per-head q/k RMSNorm, no bias)
    hidden: int
    layers: int
    n_q: int
    n_kv: int
    head_dim: int
    inter: int
    vocab: int
    tie_embeddings: bool
    tp: int = 1

    @property
    def qkv_bias(self) -> bool:
        return self.family == "qwen2"

    @property
    def qk_norm(self) -> bool:
        return self.family == "qwen3"

    def shard(self, tp: int) -> "Arch":
        """Per-GPU shapes under tensor parallelism (Megatron split, vocab-parallel lm_head)."""
        return replace(self, name=f"{self.name}-tp{tp}", tp=tp, n_q=self.n_q // tp,
                       n_kv=max(1, self.n_kv // tp), inter=self.inter // tp,
                       vocab=self.vocab // tp)

    def layer_params(self) -> int:
        d = self.head_dim
        attn = self.hidden * (self.n_q + 2 * self.n_kv) * d + self.n_q * d * self.hidden
        bias = (self.n_q + 2 * self.n_kv) * d if self.qkv_bias else 0
        norms = 2 * self.hidden + (2 * d if self.qk_norm else 0)
        return attn + bias + norms + 3 * self.hidden * self.inter

    def params(self) -> int:
        """Parameter count of these (possibly sharded) shapes."""
        emb = self.vocab * self.hidden
        return self.layers * self.layer_params() + emb * (1 if self.tie_embeddings else 2) \
            + self.hidden

    def streamed_bytes_per_step(self) -> int:
        """Weight bytes a decode step reads (all layers + lm_head; embedding is a gather)."""
        return 2 * (self.layers * self.layer_params() + self.vocab * self.hidden)

    def kv_bytes_per_token(self) -> int:
        return 2 * 2 * self.layers * self.n_kv * self.head_dim  # K and V, bf16, all layers


ARCHS = {a.name: a for a in [
    Arch("r1-distill-qwen-32b", "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B", "qwen2",
         5120, 64, 40, 8, 128, 27648, 152064, False),
    Arch("r1-distill-qwen-1.5b", "deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B", "qwen2",
         1536, 28, 12, 2, 128, 8960, 151936, False),
    Arch("qwen2.5-7b-instruct", "Qwen/Qwen2.5-7B-Instruct", "qwen2",
         3584, 28, 28, 4, 128, 18944, 152064, False),
    Arch("qwen3-32b", "Qwen/Qwen3-32B", "qwen3", 5120, 64, 64, 8, 128, 25600, 151936, False),
    Arch("qwen3-1.7b", "Qwen/Qwen3-1.7B", "qwen3", 2048, 28, 16, 8, 128, 6144, 151936, True),
]}
for _base in ("r1-distill-qwen-32b", "qwen3-32b"):
    ARCHS[f"{_base}-tp2"] = ARCHS[_base].shard(2)
TINY = Arch("tiny", "-", "qwen3", 64, 3, 4, 2, 16, 128, 1000, True)
TINY2 = Arch("tiny-qwen2", "-", "qwen2", 64, 3, 4, 2, 16, 128, 1000, False)


class Model:
    """Random bf16 weights: `weight_sets` distinct layers cycled over `arch.layers` layers."""

    def __init__(self, arch: Arch, weight_sets: int, device, dtype):
        import torch

        self.arch, self.device, self.dtype = arch, device, dtype
        a, d = arch, arch.head_dim

        def rnd(*shape):
            return torch.empty(*shape, device=device, dtype=dtype).normal_(0.0, 0.02)

        def ones(*shape):
            return torch.ones(*shape, device=device, dtype=dtype)

        self.sets = []
        for _ in range(min(weight_sets, a.layers)):
            w = {"qkv": rnd((a.n_q + 2 * a.n_kv) * d, a.hidden), "o": rnd(a.hidden, a.n_q * d),
                 "gate_up": rnd(2 * a.inter, a.hidden), "down": rnd(a.hidden, a.inter),
                 "ln1": ones(a.hidden), "ln2": ones(a.hidden),
                 "qkv_bias": rnd((a.n_q + 2 * a.n_kv) * d) if a.qkv_bias else None,
                 # q_norm and k_norm weights stacked per head, so one multiply covers both
                 "qk_norm": ones(a.n_q + a.n_kv, d) if a.qk_norm else None}
            self.sets.append(w)
        self.embed = rnd(a.vocab, a.hidden)
        self.lm_head = self.embed if a.tie_embeddings else rnd(a.vocab, a.hidden)
        self.norm = ones(a.hidden)


class Step:
    """One forward pass of `batch` sequences x `query` new tokens after `context` cached ones."""

    def __init__(self, model: Model, batch: int, query: int, context: int, kv_sets: int,
                 prefill: bool = False, exact_mask: bool = False, sdpa_backend: str = "flash"):
        import torch

        a, dev, dt = model.arch, model.device, model.dtype
        self.m, self.b, self.q, self.L, self.prefill = model, batch, query, context, prefill
        self.ids = torch.randint(0, a.vocab, (batch, query), device=dev)
        n = min(kv_sets, a.layers)
        shape = (batch, a.n_kv, context + query, a.head_dim)
        self.kv = [(torch.empty(shape, device=dev, dtype=dt).normal_(),
                    torch.empty(shape, device=dev, dtype=dt).normal_()) for _ in range(n)]
        pos = torch.arange(context, context + query, device=dev, dtype=torch.float32)
        inv = ROPE_THETA ** (-torch.arange(0, a.head_dim, 2, device=dev).float() / a.head_dim)
        ang = torch.outer(pos, inv)
        ang = torch.cat((ang, ang), -1)[None, :, None, :]  # (1, q, 1, d)
        self.cos, self.sin = ang.cos().to(dt), ang.sin().to(dt)
        # Attention: a fresh prefill is plain causal. A decode/verify step (L cached tokens) is by
        # default "GQA-packed": the g = n_q/n_kv query heads sharing a KV head become g*q query
        # rows of one head, so K/V are read once per KV head (what vLLM's FA3/FlashInfer decode
        # kernels do; PyTorch's FA2 re-reads K/V per query head when q>1). Packed rows see all
        # L+q keys, i.e. the causal mask inside the q-token verify block is dropped: exact for
        # q=1, and for q>1 it changes <= q^2/2 of ~q*L dot products per head, a timing no-op.
        # exact_mask=True keeps the exact bottom-right causal mask (unpacked; checked against
        # transformers on CPU).
        self.sdpa_backend = sdpa_backend
        self.mode = "prefill" if context == 0 else ("exact" if exact_mask and query > 1 else "packed")
        self.mask = None
        if self.mode == "exact":
            from torch.nn.attention.bias import causal_lower_right
            self.mask = causal_lower_right(query, context + query)

    def attention(self, q, kc, vc):
        """q: (b, q, n_q, d) -> (b, q, n_q*d) attention over the cache (b, n_kv, L+q, d)."""
        import torch.nn.functional as F

        a, b, n = self.m.arch, self.b, self.q
        g = a.n_q // a.n_kv
        if self.mode == "packed":
            qp = q.reshape(b, n, a.n_kv, g, a.head_dim).permute(0, 2, 1, 3, 4)
            o = F.scaled_dot_product_attention(qp.reshape(b, a.n_kv, n * g, a.head_dim), kc, vc)
            o = o.view(b, a.n_kv, n, g, a.head_dim).permute(0, 2, 1, 3, 4)
        else:
            o = F.scaled_dot_product_attention(
                q.transpose(1, 2), kc, vc, attn_mask=self.mask,
                is_causal=self.mode == "prefill", enable_gqa=True).transpose(1, 2)
        return o.reshape(b, n, a.n_q * a.head_dim)

    def forward(self):
        if self.sdpa_backend == "default":
            return self._forward()
        from torch.nn.attention import SDPBackend, sdpa_kernel

        backend = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
                   "efficient": SDPBackend.EFFICIENT_ATTENTION}[self.sdpa_backend]
        with sdpa_kernel([backend, SDPBackend.MATH] if self.m.device.type == "cpu" else [backend]):
            return self._forward()

    def _forward(self):
        import torch
        import torch.nn.functional as F

        m, a = self.m, self.m.arch
        b, q, L, d = self.b, self.q, self.L, a.head_dim
        eps = RMS_EPS
        x = F.embedding(self.ids, m.embed)  # (b, q, h)
        res = None
        for i in range(a.layers):
            w = m.sets[i % len(m.sets)]
            kc, vc = self.kv[i % len(self.kv)]
            res = x if res is None else res + x
            h = F.rms_norm(res, (a.hidden,), w["ln1"], eps)
            qkv = F.linear(h, w["qkv"], w["qkv_bias"]).view(b, q, a.n_q + 2 * a.n_kv, d)
            qk, v = qkv[:, :, : a.n_q + a.n_kv], qkv[:, :, a.n_q + a.n_kv:]
            if a.qk_norm:
                qk = F.rms_norm(qk, (d,), None, eps) * w["qk_norm"]
            x1, x2 = qk[..., : d // 2], qk[..., d // 2:]
            qk = torch.addcmul(qk * self.cos, torch.cat((-x2, x1), -1), self.sin)  # RoPE
            kc[:, :, L: L + q].copy_(qk[:, :, a.n_q:].transpose(1, 2))
            vc[:, :, L: L + q].copy_(v.transpose(1, 2))
            o = F.linear(self.attention(qk[:, :, : a.n_q], kc, vc), w["o"])
            res = res + o
            h = F.rms_norm(res, (a.hidden,), w["ln2"], eps)
            gu = F.linear(h, w["gate_up"])
            x = F.linear(F.silu(gu[..., : a.inter]) * gu[..., a.inter:], w["down"])
        h = F.rms_norm(res + x, (a.hidden,), m.norm, eps)
        if self.prefill:
            h = h[:, -1:]  # vLLM computes logits only for the last prompt token
        return F.linear(h, m.lm_head)


def _time(fn, sync, timer, min_reps: int, max_reps: int, budget_s: float) -> list[float]:
    """Per-call milliseconds: warm up, size the repetition count to a time budget, time each call."""
    for _ in range(3):
        fn()
    sync()
    t0 = timer(fn)
    reps = int(min(max_reps, max(min_reps, budget_s * 1000 / max(t0, 1e-3))))
    return [timer(fn) for _ in range(reps)]


def measure_best(model: Model, batch: int, query: int, context: int, args, prefill=False):
    """Time the config with each attention backend in --sdpa-backend; 'ms' is the fastest (a
    tuned server picks its best kernel too); every backend's median is kept as ms_<backend>."""
    import torch

    best, times = None, {}
    for bk in args.sdpa_backend.split(","):
        try:
            r = measure(model, batch, query, context, args, prefill, bk)
        except RuntimeError as e:  # no kernel of this backend for this shape
            if isinstance(e, torch.OutOfMemoryError):
                raise
            times[f"ms_{bk}"] = None
            continue
        times[f"ms_{bk}"] = r["ms"]
        if best is None or r["ms"] < best["ms"]:
            best = dict(r, attn=bk)
    if best is None:
        raise RuntimeError(f"no attention backend of {args.sdpa_backend} ran")
    return {**best, **(times if len(times) > 1 else {})}


def measure(model: Model, batch: int, query: int, context: int, args, prefill=False,
            backend="flash") -> dict:
    """Time one (batch, query, context) forward; CUDA graph if capture works, else eager."""
    import torch

    cuda = model.device.type == "cuda"
    step = Step(model, batch, query, context, args.kv_sets, prefill, args.exact_verify_mask,
                backend)
    fn, graph, err = step.forward, None, None
    if cuda and not args.eager:
        try:
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for _ in range(2):
                    step.forward()
            torch.cuda.current_stream().wait_stream(s)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                step.forward()
            fn = graph.replay
        except Exception as e:  # noqa: BLE001 - record and fall back to eager, as vLLM does
            graph, fn, err = None, step.forward, f"{type(e).__name__}: {e}"[:200]
            torch.cuda.synchronize()
    if cuda:
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

        def timer(f):
            e0.record()
            f()
            e1.record()
            e1.synchronize()
            return e0.elapsed_time(e1)
        sync = torch.cuda.synchronize
    else:
        def timer(f):
            t = time.perf_counter()
            f()
            return (time.perf_counter() - t) * 1000
        sync = lambda: None  # noqa: E731
    ms = _time(fn, sync, timer, args.min_reps, args.max_reps, args.budget_s)
    out = {"ms": round(statistics.median(ms), 4),
           "ms_p10": round(sorted(ms)[len(ms) // 10], 4), "reps": len(ms),
           "graph": graph is not None}
    if err:
        out["graph_error"] = err
    del graph, step, fn
    if cuda:
        torch.cuda.empty_cache()
    return out


def allreduce_ms(arch: Arch, tokens: int, logit_tokens: int) -> float:
    """Modelled TP all-reduce time per forward (see ALLREDUCE_* constants), plus the logits
    all-gather of the vocab-parallel lm_head."""
    per = lambda nbytes: ALLREDUCE_LATENCY_US * 1e-3 + nbytes / (ALLREDUCE_BW_GBPS * GB) * 1e3  # noqa: E731
    layer = ALLREDUCES_PER_LAYER * arch.layers * per(tokens * arch.hidden * 2)
    return round(layer + per(logit_tokens * arch.vocab * 2), 4)


def fits_real(arch: Arch, tokens_cached: int, device_bytes: int) -> bool:
    """Would the REAL model (distinct weights) plus this KV cache fit in 90% of the GPU?
    (vLLM's default gpu_memory_utilization; ~2 GB kept for activations and graphs)."""
    need = arch.params() * 2 + tokens_cached * arch.kv_bytes_per_token() + FIT_RESERVE_BYTES
    return need <= FIT_SHARE * device_bytes


def method_text(weight_sets: int, kv_sets: int) -> str:
    return (
        "Pure-torch decoder forward passes with the real architectures' exact shapes and random "
        "bf16 weights (no vLLM). Per layer: add+RMSNorm, fused QKV GEMM (+bias for Qwen2; "
        "per-head q/k RMSNorm for Qwen3), RoPE, KV write into a preallocated cache, "
        "F.scaled_dot_product_attention over the cache, O GEMM, add+RMSNorm, fused gate/up GEMM, "
        "SiLU*up, down GEMM; final norm + lm_head (all query tokens for decode/verify, last token "
        "for prefill). Attention: prefill is causal SDPA (enable_gqa=True); decode/verify steps "
        "use GQA-packed SDPA (the g query heads sharing a KV head become g*q rows of one head, so "
        "K/V are read once per KV head, as vLLM's FA3/FlashInfer kernels do) with the causal mask "
        "inside the q-token verify block dropped (exact for q=1; for q>1 a timing no-op; the "
        "exact bottom-right-causal path is --exact-verify-mask). Each config is timed with every "
        "SDPA backend in 'attn_backends'; 'ms' is the fastest, 'attn' names it, ms_<backend> "
        "keeps each. Whole forward captured as one CUDA graph per config (eager fallback would "
        "be recorded per entry as graph=false). Timing: 3 warm-up calls, then 5-30 timed calls "
        "(as many as fit 0.2 s; torch.cuda.Event around each replay), median in 'ms', 10th "
        f"percentile in 'ms_p10'. Memory trick: {weight_sets} distinct layer weight sets and "
        f"{kv_sets} KV-cache buffers are cycled across the layers (each layer's weights >> the "
        "50 MB L2, so all weights still stream from HBM; 'validation' compares against all "
        "layers distinct). Decode = one step of 'batch' sequences each adding 'query' tokens "
        "after 'context' cached tokens.")


CAVEATS = (
    "Forward pass only: no sampling, rejection sampling, scheduler or Python overhead (vLLM adds "
    "these per step). Per-layer glue is plain torch ops (~20 kernels per layer vs ~10 fused ones "
    "in vLLM): at batch 1 the non-GEMM kernels cost ~2.5 ms of a 32B step (~1 ms of a 1.5B "
    "step), see 'kernel_census', so absolute times are pessimistic by roughly that much and the "
    "draft/target ratio c somewhat high. Attention uses PyTorch's FA2 / cuDNN kernels, not "
    "vLLM's FA3. TP=2 entries are one shard on one GPU; communication is modelled, not "
    "measured. Random weights: GEMM timing on random data is representative of real weights.")


def model_notes(arch: Arch, weight_sets: int, kv_sets: int) -> str:
    notes = (f"{arch.hf_id} shapes, random bf16 weights; {weight_sets} distinct layer weight "
             f"sets and {kv_sets} KV-cache buffers cycled over {arch.layers} layers. Decode "
             f"entries with q>1 are verify passes of q tokens per sequence, logits for all q. "
             f"'fits_real': the real model's weights plus this KV cache (+2 GB) fit in 90% of "
             f"this GPU (vLLM's default gpu_memory_utilization).")
    if arch.tp > 1:
        notes += (f" TP={arch.tp} per-GPU shard (n_q={arch.n_q}, n_kv={arch.n_kv}, "
                  f"intermediate={arch.inter}, vocab-parallel lm_head {arch.vocab}); 'ms' EXCLUDES "
                  f"all-reduce. 'allreduce_ms_model' is modelled, not measured: "
                  f"{ALLREDUCES_PER_LAYER} all-reduces per layer of tokens*hidden*2 bytes plus one "
                  f"logits gather, each {ALLREDUCE_LATENCY_US} us + bytes/{ALLREDUCE_BW_GBPS} GB/s "
                  f"(NVLink4, vLLM custom all-reduce). Add it to 'ms' for a TP=2 step estimate.")
    return notes


def profile_model(arch: Arch, args, device, dtype) -> dict:
    import torch

    t_start = time.time()
    model = Model(arch, args.weight_sets, device, dtype)
    dev_bytes = torch.cuda.get_device_properties(device).total_memory if device.type == "cuda" \
        else 80 * GB
    decode, prefill = [], []
    for L in args.contexts:
        for q in args.queries:
            for b in args.batches:
                rec = {"batch": b, "query": q, "context": L}
                try:
                    rec.update(measure_best(model, b, q, L, args))
                except torch.OutOfMemoryError:
                    torch.cuda.empty_cache()
                    rec["skipped"] = "out of memory"
                except RuntimeError as e:  # e.g. no attention kernel for this backend/shape
                    rec["skipped"] = f"{type(e).__name__}: {e}"[:200]
                rec["fits_real"] = fits_real(arch, b * (L + q), dev_bytes)
                if arch.tp > 1:
                    rec["allreduce_ms_model"] = allreduce_ms(arch, b * q, b * q)
                decode.append(rec)
                print(json.dumps({"model": arch.name, **rec}), flush=True)
    for n in args.prefill:
        rec = {"tokens": n}
        try:
            rec.update(measure_best(model, 1, n, 0, args, prefill=True))
        except torch.OutOfMemoryError:
            torch.cuda.empty_cache()
            rec["skipped"] = "out of memory"
        if arch.tp > 1:
            rec["allreduce_ms_model"] = allreduce_ms(arch, n, 1)
        prefill.append(rec)
        print(json.dumps({"model": arch.name, "prefill": True, **rec}), flush=True)
    full = ARCHS.get(arch.name.removesuffix(f"-tp{arch.tp}"), arch)
    notes = model_notes(arch, len(model.sets), min(args.kv_sets, arch.layers))
    out = {"tp": arch.tp, "dtype": "bf16", "hf_id": arch.hf_id,
           "params_b": round(full.params() / 1e9, 3),
           "shapes": {k: v for k, v in asdict(arch).items() if k not in ("name", "hf_id")},
           "weight_gb_per_gpu": round(arch.params() * 2 / GB, 2),
           "streamed_gb_per_decode_step": round(arch.streamed_bytes_per_step() / GB, 2),
           "kv_kb_per_token_per_gpu": arch.kv_bytes_per_token() / 1024,
           "decode": decode, "prefill": prefill, "notes": notes,
           "profile_seconds": round(time.time() - t_start, 1)}
    del model
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return out


def validate_cycling(args, device, dtype) -> dict:
    """Check the memory trick: cycled vs all-distinct weights / KV buffers give the same time."""
    import torch

    arch = ARCHS[args.validate_model]
    res = {"model": arch.name}
    for sets in (args.weight_sets, arch.layers):
        m = Model(arch, sets, device, dtype)
        r = measure_best(m, 1, 1, 2048, args)
        res[f"decode_b1_L2048_weight_sets_{sets}_ms"] = r["ms"]
        del m
        torch.cuda.empty_cache()
    m = Model(arch, args.weight_sets, device, dtype)
    for kv in (args.kv_sets, arch.layers):
        r = measure_best(m, 8, 1, 8192, replace_args(args, kv_sets=kv))
        res[f"decode_b8_L8192_kv_sets_{kv}_ms"] = r["ms"]
    del m
    torch.cuda.empty_cache()
    print(json.dumps({"validate_cycling": res}), flush=True)
    return res


def kernel_census(arch: Arch, device, dtype, batch=1, query=1, context=2048,
                  sdpa_backend="flash") -> dict:
    """Count GPU kernels per (eager) forward with torch.profiler, sum their device time and
    name the attention kernel and the most expensive kernels."""
    import collections

    import torch
    from torch.profiler import ProfilerActivity, profile

    m = Model(arch, 2, device, dtype)
    st = Step(m, batch, query, context, 2, sdpa_backend=sdpa_backend)
    st.forward()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        st.forward()
        torch.cuda.synchronize()
    evs = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    names = [e.name for e in evs]
    by_name, by_kind = collections.Counter(), collections.Counter()
    for e in evs:
        us = e.time_range.elapsed_us()
        by_name[e.name[:60]] += us
        low = e.name.lower()
        kind = ("attention" if any(t in low for t in ("flash", "fmha", "sdpa", "attention"))
                else "gemm" if any(t in low for t in ("nvjet", "gemm", "cutlass", "sm90_xmma"))
                else "norm" if "norm" in low else "elementwise/copy")
        by_kind[kind] += us
    attn = sorted({n[:90] for n in names if "flash" in n.lower() or "fmha" in n.lower()
                   or "attention" in n.lower() or "cutlass" in n.lower() and "fmha" in n})
    res = {"model": arch.name, "batch": batch, "query": query, "context": context,
           "kernels_per_forward": len(names),
           "kernels_per_layer": round(len(names) / arch.layers, 1), "attention_kernels": attn,
           "sdpa_backend": sdpa_backend,
           "kernel_time_ms": round(sum(by_name.values()) / 1000, 3),
           "kernel_time_by_kind_ms": {k: round(v / 1000, 3) for k, v in by_kind.items()},
           "top_kernels_ms": {k: round(v / 1000, 3) for k, v in by_name.most_common(8)}}
    del st, m
    torch.cuda.empty_cache()
    print(json.dumps({"kernel_census": res}), flush=True)
    return res


def replace_args(args, **kw):
    ns = argparse.Namespace(**vars(args))
    for k, v in kw.items():
        setattr(ns, k, v)
    return ns


def env_info(device) -> dict:
    import torch

    info = {"torch": torch.__version__, "python": sys.version.split()[0]}
    if device.type == "cuda":
        p = torch.cuda.get_device_properties(device)
        info.update(cuda=torch.version.cuda, cudnn=torch.backends.cudnn.version(),
                    device_name=p.name, sm_count=p.multi_processor_count,
                    memory_gib=round(p.total_memory / 2**30, 1))
        try:
            info["driver"] = subprocess.run(
                ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                capture_output=True, text=True, timeout=20).stdout.strip()
        except Exception:  # noqa: BLE001
            pass
        try:
            import transformers
            info["transformers"] = transformers.__version__
        except ImportError:
            pass
    return info


def check_with_transformers(names) -> dict:
    """Count parameters of transformers' own Qwen2/Qwen3 models (meta device) with our shapes."""
    import torch
    from transformers import AutoModelForCausalLM, Qwen2Config, Qwen3Config

    out = {}
    for n in names:
        a = ARCHS[n]
        if a.tp > 1:
            continue
        cls = Qwen2Config if a.family == "qwen2" else Qwen3Config
        kw = dict(hidden_size=a.hidden, num_hidden_layers=a.layers, num_attention_heads=a.n_q,
                  num_key_value_heads=a.n_kv, intermediate_size=a.inter, vocab_size=a.vocab,
                  tie_word_embeddings=a.tie_embeddings)
        if a.family == "qwen3":
            kw["head_dim"] = a.head_dim
        cfg = cls(**kw)
        with torch.device("meta"):
            hf = AutoModelForCausalLM.from_config(cfg)
        n_hf = sum(p.numel() for p in hf.parameters())
        out[n] = {"ours": a.params(), "transformers": n_hf, "match": n_hf == a.params()}
    print(json.dumps({"transformers_check": out}), flush=True)
    return out


def check_numerics(arch: Arch) -> dict:
    """CPU float32: our forward (prefill, then a q=4 verify block on top of its KV cache) must
    reproduce transformers' Qwen2/Qwen3 logits with the same weights."""
    import torch
    from transformers import AutoModelForCausalLM, Qwen2Config, Qwen3Config

    global ROPE_THETA
    torch.manual_seed(0)
    cls = Qwen2Config if arch.family == "qwen2" else Qwen3Config
    kw = dict(hidden_size=arch.hidden, num_hidden_layers=arch.layers, vocab_size=arch.vocab,
              num_attention_heads=arch.n_q, num_key_value_heads=arch.n_kv, head_dim=arch.head_dim,
              intermediate_size=arch.inter, tie_word_embeddings=arch.tie_embeddings,
              rms_norm_eps=RMS_EPS)
    hf = AutoModelForCausalLM.from_config(cls(**kw), attn_implementation="eager").float().eval()
    with torch.no_grad():
        for p in hf.parameters():
            p.normal_(1.0 if p.ndim == 1 else 0.0, 0.1 if p.ndim == 1 else 0.05)
    ROPE_THETA = hf.config.rope_parameters["rope_theta"]
    m = Model(arch, arch.layers, torch.device("cpu"), torch.float32)
    sd = {k: v.detach() for k, v in hf.state_dict().items()}
    for i, w in enumerate(m.sets):
        p = f"model.layers.{i}."
        a = p + "self_attn."
        w["qkv"] = torch.cat([sd[a + f"{x}_proj.weight"] for x in "qkv"])
        if arch.qkv_bias:
            w["qkv_bias"] = torch.cat([sd[a + f"{x}_proj.bias"] for x in "qkv"])
        if arch.qk_norm:
            w["qk_norm"] = torch.cat([sd[a + "q_norm.weight"].expand(arch.n_q, -1),
                                      sd[a + "k_norm.weight"].expand(arch.n_kv, -1)])
        w["o"] = sd[a + "o_proj.weight"]
        w["gate_up"] = torch.cat([sd[p + "mlp.gate_proj.weight"], sd[p + "mlp.up_proj.weight"]])
        w["down"] = sd[p + "mlp.down_proj.weight"]
        w["ln1"], w["ln2"] = sd[p + "input_layernorm.weight"], sd[p + "post_attention_layernorm.weight"]
    m.embed, m.norm = sd["model.embed_tokens.weight"], sd["model.norm.weight"]
    m.lm_head = sd["lm_head.weight"] if "lm_head.weight" in sd else m.embed
    ids = torch.randint(0, arch.vocab, (2, 16))
    with torch.no_grad():
        ref = hf(ids).logits
        pre = Step(m, 2, 12, 0, arch.layers)
        pre.ids = ids[:, :12]
        out_pre = pre.forward()
        def after_prefill(query, exact):
            st = Step(m, 2, query, 12, arch.layers, exact_mask=exact)
            st.ids = ids[:, 12: 12 + query]
            for (k, v), (k0, v0) in zip(st.kv, pre.kv):
                k[:, :, :12], v[:, :, :12] = k0, v0
            return st.forward()
        out_ver = after_prefill(4, exact=True)  # verify block, exact causal mask
        out_dec = after_prefill(1, exact=False)  # decode step, packed GQA (exact for q=1)
        out_pack = after_prefill(4, exact=False)  # packed verify: no intra-block mask
    err = max((out_pre - ref[:, :12]).abs().max().item(),
              (out_ver - ref[:, 12:]).abs().max().item(),
              (out_dec - ref[:, 12:13]).abs().max().item())
    scale = ref.abs().max().item()
    res = {"max_abs_err": err, "ref_scale": scale, "ok": err < 1e-4 * max(1.0, scale),
           # the packed timing path differs only through the dropped intra-block mask
           "packed_verify_max_abs_diff": (out_pack - ref[:, 12:]).abs().max().item()}
    print(json.dumps({"numerics_check": {arch.name: res}}), flush=True)
    return res


def merge(paths, out_path):
    doc = None
    for p in paths:
        with open(p) as f:
            d = json.load(f)
        if doc is None:
            doc = d
        else:
            doc["models"].update(d["models"])
            for k in ("validation", "transformers_check", "kernel_census"):
                if isinstance(d.get(k), list):
                    doc[k] = doc.get(k, []) + d[k]
                elif d.get(k):
                    doc.setdefault(k, {}).update(d[k])
    with open(out_path, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"merged {len(paths)} files -> {out_path}: models {sorted(doc['models'])}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default=",".join(ARCHS), help="comma-separated names")
    ap.add_argument("--batches", default="1,2,4,8,16,32,64")
    ap.add_argument("--queries", default="1,4,8")
    ap.add_argument("--contexts", default="512,2048,8192")
    ap.add_argument("--prefill", default="128,512,2048,8192")
    ap.add_argument("--weight-sets", type=int, default=4)
    ap.add_argument("--kv-sets", type=int, default=4)
    ap.add_argument("--min-reps", type=int, default=5)
    ap.add_argument("--max-reps", type=int, default=30)
    ap.add_argument("--budget-s", type=float, default=0.2, help="timed seconds per config")
    ap.add_argument("--eager", action="store_true", help="no CUDA graphs")
    ap.add_argument("--sdpa-backend", default="flash,cudnn",
                    help="comma list of flash|cudnn|efficient|default; each is timed, the "
                         "fastest is reported as 'ms'")
    ap.add_argument("--exact-verify-mask", action="store_true",
                    help="exact lower-right causal mask for q>1 verify (unpacked GQA; slower)")
    ap.add_argument("--validate-cycling", action="store_true")
    ap.add_argument("--validate-model", default="r1-distill-qwen-32b")
    ap.add_argument("--check-transformers", action="store_true")
    ap.add_argument("--kernel-census", action="store_true",
                    help="profile one eager forward per model (q=1 and q=8) and count kernels")
    ap.add_argument("--tiny", action="store_true",
                    help="CPU smoke test: tiny configs, checked against transformers' logits")
    ap.add_argument("--out", default=None)
    ap.add_argument("--merge", nargs="+", default=None, help="merge result files into --out")
    args = ap.parse_args(argv)
    if args.merge:
        return merge(args.merge, args.out)
    import torch

    ints = lambda s: [int(x) for x in s.split(",") if x]  # noqa: E731
    args.batches, args.queries = ints(args.batches), ints(args.queries)
    args.contexts, args.prefill = ints(args.contexts), ints(args.prefill)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dtype = torch.bfloat16
    if args.tiny:
        ARCHS.update({TINY.name: TINY, TINY2.name: TINY2})
        args.models = "tiny,tiny-qwen2"
        doc_checks = {a.name: check_numerics(a) for a in (TINY, TINY2)}
        if not all(c["ok"] for c in doc_checks.values()):
            sys.exit("numerics check against transformers FAILED")
    names = [n for n in args.models.split(",") if n]
    for n in names:
        if n not in ARCHS:
            sys.exit(f"--models: unknown model {n!r}; known: {', '.join(ARCHS)}")
    env = env_info(device)
    doc = {"device": env.get("device_name", "cpu"), "source": "benchmarks/gpu_latency_profile.py",
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "method": method_text(args.weight_sets, args.kv_sets), "caveats": CAVEATS,
           "env": env, "attn_backends": args.sdpa_backend.split(","), "models": {}}
    if args.check_transformers and not args.tiny:
        try:
            doc["transformers_check"] = check_with_transformers(names)
        except Exception as e:  # noqa: BLE001
            doc["transformers_check"] = {"error": f"{type(e).__name__}: {e}"[:300]}

    def save():
        if args.out:
            with open(args.out, "w") as f:
                json.dump(doc, f, indent=1)

    if args.kernel_census and device.type == "cuda":
        doc["kernel_census"] = [kernel_census(ARCHS[n], device, dtype, 1, 1, 2048,
                                              args.sdpa_backend.split(",")[0]) for n in names]
        save()
    if args.validate_cycling:
        doc["validation"] = {"cycling": validate_cycling(args, device, dtype)}
        save()
    for n in names:
        doc["models"][n] = profile_model(ARCHS[n], args, device, dtype)
        save()  # partial results survive a timeout
    return doc


if __name__ == "__main__":
    main()
