"""The engines' KV-cache capacity, from the traces: what the profile's `kv_cache` section holds.

vLLM's CPU backend gives each engine a fixed KV space, VLLM_CPU_KVCACHE_SPACE GiB (`lr collect
--kv-cache-space`, recorded as run.flags.kv_cache_space_gib), and cuts it into blocks of
`block_size` tokens (run.flags.block_size) of KV bytes per token = 2 (K, V) x layers x KV heads
x head dim x dtype bytes (float32 on CPU): num_blocks = floor(space / (block x bytes per token))
(vllm/platforms/cpu.py sets cache_config.kv_cache_memory_bytes from it). Records whose run
names the capacity the engine reported (run.kv_cache_tokens: vLLM's num_gpu_blocks x
block_size, recorded since the toolkit could read it) use that; older records are computed from
the space and the model's config.json (its folder from run.models, else the copy shipped in
lrsim/data/models/ for the packaged models). A GPU run's space is not VLLM_CPU_KVCACHE_SPACE:
without a recorded capacity, its engines stay unlimited.

    kv = engine_kv(records)   # {"target": {"capacity_tokens": 37440, "block_tokens": 32, ...}}
"""
from __future__ import annotations

from lrcore.errors import UserError

GIB = 1024 ** 3
DTYPE_BYTES = {"float32": 4, "float": 4, "bfloat16": 2, "float16": 2, "half": 2}
CPU_DEFAULT_BLOCK = 128  # vLLM-CPU's block_size when none is given (vllm/platforms/cpu.py):
#                          runs recorded before `lr collect` set --block-size (32) used it
GPU_DEFAULT_BLOCK = 16   # vLLM's CacheConfig.DEFAULT_BLOCK_SIZE (vllm/config/cache.py), a GPU
#                          engine's unless its attention backend prefers another
#                          (vllm/platforms/interface.py); a GPU run that names none gets it


def kv_bytes_per_token(run: dict, role: str) -> tuple[float, str] | None:
    """(bytes per token, where the shapes came from) of `role`'s model in this run, or None."""
    from ..plan import modelspec

    model = ((run.get("models") or {}).get(role)) or {}
    spec = where = None
    for ref, place in ((model.get("path"), "its folder's config.json"),
                       (model.get("name"), f"lrsim/data/models/{model.get('name')}.json")):
        if not ref:
            continue
        try:
            spec, where = modelspec.load(str(ref), f"run.models.{role}"), place
            break
        except UserError:
            continue
    if spec is None:
        return None
    dtype = str((run.get("flags") or {}).get("dtype") or "auto")
    per = DTYPE_BYTES.get(dtype, spec.dtype_bytes)
    return (2.0 * spec.layers * spec.kv_heads * spec.head_dim * per,
            f"{spec.name} ({where}): 2 x {spec.layers} layers x {spec.kv_heads} KV heads x "
            f"{spec.head_dim} x {per} B ({dtype})")


def _one(run: dict, role: str) -> dict | None:
    flags = run.get("flags") or {}
    gpu = bool((run.get("hardware") or {}).get("gpu"))
    block = int(flags.get("block_size") or (GPU_DEFAULT_BLOCK if gpu else CPU_DEFAULT_BLOCK))
    recorded = (run.get("kv_cache_tokens") or {}).get(role)
    if recorded:
        return {"capacity_tokens": int(recorded), "block_tokens": block,
                "source": "recorded: the engine's num_gpu_blocks x block_size",
                "_named": bool(flags.get("block_size"))}
    space = flags.get("kv_cache_space_gib")
    if not space or gpu:
        return None
    per = kv_bytes_per_token(run, role)
    if per is None:
        return None
    blocks = int(float(space) * GIB // (block * per[0]))
    if blocks < 1:
        return None
    return {"capacity_tokens": blocks * block, "block_tokens": block, "space_gib": float(space),
            "bytes_per_token": per[0],
            "source": f"computed: {float(space):g} GiB (VLLM_CPU_KVCACHE_SPACE) in blocks of "
                      f"{block} tokens of {per[0]:,.0f} B, {per[1]}",
            "_named": bool(flags.get("block_size"))}


def engine_kv(records: list[dict]) -> tuple[dict, list[str]]:
    """role -> the engine's KV cache, and warnings. Runs with different capacities: the smallest
    (named in a warning), of the runs that name their block size if any do: the block is also
    the prefix cache's granularity (each new LR request prefills its context's tail past a whole
    block, lrsim/sim/kvcache.request_prefill), and a run that left vLLM-CPU's default (older AR
    records) says nothing of the engines `lr collect` starts now."""
    found: dict[str, list[dict]] = {}
    for r in records:
        run = r.get("run") or {}
        for role in (run.get("models") or {}):
            if role in ("target", "draft"):
                e = _one(run, role)
                if e is not None:
                    found.setdefault(role, []).append(e)
    out, warnings = {}, []
    for role, entries in sorted(found.items()):
        caps = sorted({e["capacity_tokens"] for e in entries})
        named = [e for e in entries if e["_named"]] or entries
        out[role] = {k: v for k, v in min(named, key=lambda e: e["capacity_tokens"]).items() if k != "_named"}
        if len(caps) > 1:
            warnings.append(f"{role} KV cache differed between the runs ({caps[0]:,}-{caps[-1]:,} "
                            f"tokens): the profile keeps the smallest"
                            + (" of the runs that set their block size" if len(named) < len(entries) else ""))
        blocks = sorted({e["block_tokens"] for e in entries})
        if len(blocks) > 1:
            warnings.append(f"{role} KV block size differed between the runs ({', '.join(map(str, blocks))} "
                            f"tokens): the profile keeps {out[role]['block_tokens']}")
    return out, warnings
