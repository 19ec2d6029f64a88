"""A model described by its Hugging Face config.json, and its forward-pass latency on a device.

    spec = load("path/to/config.json" | "path/to/hf-folder" | "qwen3-32b")   # shipped names:
                                                    # lrsim/data/models/*.json (the paper's models)
    lat  = latency(spec, device, tp=2)              # the shipped table measured on this device
                                                    # (H100, H200) where it has this model at
                                                    # this TP, else the roofline of catalog.Device

Fields read (dense decoder-only transformers: Llama, Qwen2/2.5/3, Mistral, ...):
num_hidden_layers, hidden_size, num_attention_heads, num_key_value_heads, head_dim (default
hidden / heads), intermediate_size, vocab_size, tie_word_embeddings, torch_dtype (or dtype).
Mixture-of-experts and latent-attention configs are refused by name: their bytes per token are not
these formulas'.

Weights read per decode iteration = every parameter except the input embedding (a lookup reads
one row; a tied lm_head reads the matrix once). Compute = 2 x those parameters per token.
KV cache per token = 2 (K, V) x layers x KV heads x head dim x dtype bytes.
"""
from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from lrcore import latency_file
from lrcore.errors import UserError

from ..sim.latency import LatencyModel, Roofline
from ..sim.latency_kv import measured_model
from .catalog import Device

DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "half": 2, "float32": 4, "float": 4, "fp8": 1,
               "float8_e4m3fn": 1, "int8": 1}
MODELS_PACKAGE = ("data", "models")
ENGINE_OVERHEAD_MS = 2.0        # vLLM scheduling + sampling per iteration (assumption; h100-paper.toml)
TP_EFFICIENCY = 0.9             # bandwidth kept per doubling of TP: shards that do not halve (norms,
#                                 attention glue: the measured TP=2 step is 0.59x TP=1, not 0.5x,
#                                 docs/gpu-latency-profile.md). The all-reduce itself is priced
#                                 separately from the device's link (catalog.Device.allreduce_s).
# The shipped latency tables (lrsim/data/latency/, benchmarks/gpu_latency_profile.py), by the
# catalogue device they were measured on (each file's "device" field names it).
MEASURED_TABLES = {"H100": "h100_paper_models.json", "H200": "h200_paper_models.json"}
LEGACY_TABLE_DEVICE = "H100"    # a table whose "device" names no catalogue kind: the planner
#                                 took every table as measured on an H100 before H200's existed


@dataclass(frozen=True)
class ModelSpec:
    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int
    dtype_bytes: float = 2.0
    tie_embeddings: bool = False
    qkv_bias: bool = False
    qk_norm: bool = False
    hf_id: str = ""
    source: str = ""

    @property
    def params(self) -> float:
        """All parameters (embedding counted once when tied)."""
        h, d = self.hidden, self.head_dim
        attn = h * self.heads * d + 2 * h * self.kv_heads * d + self.heads * d * h
        if self.qkv_bias:
            attn += self.heads * d + 2 * self.kv_heads * d
        if self.qk_norm:
            attn += 2 * d
        layer = attn + 3 * h * self.intermediate + 2 * h
        emb = self.vocab * h
        return float(self.layers * layer + h + emb + (0 if self.tie_embeddings else emb))

    @property
    def streamed_params(self) -> float:
        """Parameters read from memory by one decode iteration (the input embedding is a lookup)."""
        return self.params - (0 if self.tie_embeddings else self.vocab * self.hidden)

    @property
    def kv_bytes_per_token(self) -> float:
        return 2.0 * self.layers * self.kv_heads * self.head_dim * self.dtype_bytes

    def weight_gib(self, tp: int = 1) -> float:
        return self.params * self.dtype_bytes / tp / 1024 ** 3

    def describe(self) -> dict:
        return {"name": self.name, "hf_id": self.hf_id, "params_b": round(self.params / 1e9, 3),
                "layers": self.layers, "hidden": self.hidden, "heads": self.heads,
                "kv_heads": self.kv_heads, "head_dim": self.head_dim, "vocab": self.vocab,
                "dtype_bytes": self.dtype_bytes, "kv_bytes_per_token": self.kv_bytes_per_token}

    def shapes(self) -> tuple:
        return (self.layers, self.hidden, self.heads, self.kv_heads, self.head_dim,
                self.intermediate, self.vocab, self.tie_embeddings)


def from_config(config: dict, name: str, where: str = "config.json") -> ModelSpec:
    """The roofline's view of a Hugging Face config dict; a one-line error naming the field."""
    cfg = config.get("text_config", config) if isinstance(config, dict) else None
    if not isinstance(cfg, dict):
        raise UserError(f"{where}: not a JSON object (a Hugging Face config.json)")
    if cfg.get("num_experts") or cfg.get("num_local_experts") or cfg.get("n_routed_experts"):
        raise UserError(f"{where}: a mixture-of-experts model: the planner's roofline covers dense "
                        "decoders only (weights read per token differ); use a measured latency table")
    if cfg.get("kv_lora_rank"):
        raise UserError(f"{where}: latent attention (kv_lora_rank): not a dense decoder the roofline covers")

    def num(key, default=None):
        v = cfg.get(key, default)
        if v is None:
            raise UserError(f"{where}: missing field {key!r} (a Hugging Face config.json of a "
                            "decoder-only model has it)")
        if isinstance(v, bool) or not isinstance(v, int) or not 0 < v <= 10_000_000:
            raise UserError(f"{where}: {key} must be a positive integer, got {v!r}")
        return v

    heads = num("num_attention_heads")
    hidden = num("hidden_size")
    kv = num("num_key_value_heads", heads)
    if cfg.get("head_dim") is not None or hidden % heads:
        head_dim = num("head_dim")
    else:
        head_dim = hidden // heads
    dtype = str(cfg.get("torch_dtype") or cfg.get("dtype") or "bfloat16").replace("torch.", "")
    if dtype not in DTYPE_BYTES:
        raise UserError(f"{where}: torch_dtype {dtype!r} unknown (known: {', '.join(DTYPE_BYTES)})")
    mtype = str(cfg.get("model_type", ""))
    return ModelSpec(
        name=name, layers=num("num_hidden_layers"), hidden=hidden, heads=heads, kv_heads=kv,
        head_dim=head_dim, intermediate=num("intermediate_size"), vocab=num("vocab_size"),
        dtype_bytes=DTYPE_BYTES[dtype], tie_embeddings=bool(cfg.get("tie_word_embeddings", False)),
        qkv_bias=bool(cfg.get("attention_bias", mtype == "qwen2")), qk_norm=mtype.startswith("qwen3"),
        hf_id=str(config.get("_hf_id") or config.get("_name_or_path") or name),
        source=str(config.get("_source") or where))


def shipped() -> list[str]:
    folder = resources.files("lrsim").joinpath(*MODELS_PACKAGE)
    return sorted(f.name[:-5] for f in folder.iterdir() if f.name.endswith(".json"))


@functools.lru_cache(maxsize=64)
def load(ref: str, flag: str = "--target-model") -> ModelSpec:
    """A config.json path, a Hugging Face folder holding one, or a shipped model name."""
    from lrcore.limits import MAX_TEXT_FILE_BYTES, read_capped

    p = Path(ref)
    if p.is_dir():
        p = p / "config.json"
    if not p.is_file():
        q = resources.files("lrsim").joinpath(*MODELS_PACKAGE, f"{ref}.json")
        if not q.is_file():
            raise UserError(f"{flag} {ref!r}: no such config.json or model folder, and no shipped "
                            f"model of that name (shipped: {', '.join(shipped())})")
        p = Path(str(q))
        name = ref
    else:
        name = p.parent.name if p.name == "config.json" else p.stem
    try:
        doc = json.loads(read_capped(p, MAX_TEXT_FILE_BYTES, "model config"))
    except (OSError, ValueError, RecursionError) as e:
        raise UserError(f"{flag} {p}: cannot read the config ({e})") from None
    return from_config(doc, name, where=f"{flag} {p}")


# --- latency ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class RooflineTP(LatencyModel):
    """A device roofline (lrsim.sim.latency.Roofline) plus the tensor-parallel all-reduce of every
    iteration: fixed (per call) and per batch token. `overhead_s` is what more devices do not
    shorten (engine overhead and the all-reduce's fixed part)."""
    roofline: Roofline
    allreduce_fixed_s: float = 0.0
    allreduce_per_token_s: float = 0.0

    def forward(self, decode_tokens, prefill_tokens, seqs, context):
        return (self.roofline.forward(decode_tokens, prefill_tokens, seqs, context)
                + self.allreduce_fixed_s + self.allreduce_per_token_s * (decode_tokens + prefill_tokens))

    @property
    def overhead_s(self) -> float:
        return self.roofline.overhead_s + self.allreduce_fixed_s


def roofline(spec: ModelSpec, device: Device, tp: int = 1, tp_efficiency: float = TP_EFFICIENCY,
             overhead_ms: float = ENGINE_OVERHEAD_MS) -> RooflineTP:
    """Memory floor = streamed weights / (tp x bandwidth x efficiency x tp_efficiency^log2 tp);
    compute = 2 x streamed params FLOPs per token on tp devices; KV read per context token;
    plus the all-reduce over the device's link and a fixed engine overhead."""
    if tp > 1 and device.link_gb_s is None:
        device.allreduce_s(1, spec.hidden, spec.layers, tp)       # raises the one-line error
    r = Roofline.from_hardware(params=spec.streamed_params, bytes_per_param=spec.dtype_bytes, tp=tp,
                               hbm_bytes_per_s=device.hbm_tb_s * 1e12, flops=device.bf16_tflops * 1e12,
                               kv_bytes_per_token=spec.kv_bytes_per_token,
                               bandwidth_efficiency=device.efficiency, tp_efficiency=tp_efficiency,
                               overhead_s=overhead_ms / 1e3)
    fixed = device.allreduce_s(0, spec.hidden, spec.layers, tp)
    per_tok = device.allreduce_s(1, spec.hidden, spec.layers, tp) - fixed if tp > 1 else 0.0
    return RooflineTP(r, fixed, per_tok)


@functools.lru_cache(maxsize=8)
def _table_doc(path: str) -> dict:
    from lrcore.limits import MAX_TEXT_FILE_BYTES, read_capped

    try:
        doc = json.loads(read_capped(Path(path), MAX_TEXT_FILE_BYTES, "GPU latency table"))
        if not isinstance(doc.get("models"), dict):
            raise ValueError("no 'models' object")
        return doc
    except (OSError, ValueError, AttributeError, RecursionError) as e:
        raise UserError(f"{path}: not a GPU latency table ({e!r}); see docs/gpu-latency-profile.md") from None


def shipped_table(device: str = "H100") -> str | None:
    """The shipped latency table measured on catalogue device `device` (None: none shipped)."""
    name = MEASURED_TABLES.get(device)
    if name is None:
        return None
    try:
        p = resources.files("lrsim") / "data" / "latency" / name
        return str(p) if p.is_file() else None
    except (ModuleNotFoundError, FileNotFoundError):
        return None


def table_device(path: str) -> str:
    """The catalogue kind a latency table was measured on: the one its "device" field names as a
    word ("NVIDIA H100 80GB HBM3" -> H100, "NVIDIA H200" -> H200; torch's device name), else
    LEGACY_TABLE_DEVICE."""
    from .catalog import CATALOGUE

    dev = str(_table_doc(path).get("device", ""))
    named = [k for k in CATALOGUE if re.search(rf"(?<![A-Za-z0-9]){re.escape(k)}(?![A-Za-z0-9])", dev,
                                               re.I)]
    return named[0] if len(named) == 1 else LEGACY_TABLE_DEVICE


def table_key(spec: ModelSpec, tp: int, path: str) -> str | None:
    """The entry of a measured table (benchmarks/gpu_latency_profile.py format) holding this
    model at this TP: same Hugging Face id, or the same shapes (a TP=t entry stores one shard:
    heads, KV heads, intermediate and vocabulary divided by t)."""
    for key, m in _table_doc(path)["models"].items():
        if not isinstance(m, dict) or int(m.get("tp", 1)) != tp:
            continue
        if spec.hf_id and m.get("hf_id") == spec.hf_id:
            return key
        s = m.get("shapes") or {}
        try:
            full = (int(s["layers"]), int(s["hidden"]), int(s["n_q"]) * tp, int(s["n_kv"]) * tp,
                    int(s["head_dim"]), int(s["inter"]) * tp, int(s["vocab"]) * tp,
                    bool(s.get("tie_embeddings", False)))
        except (KeyError, TypeError, ValueError):
            continue
        if full == spec.shapes():
            return key
    return None


def measured(spec: ModelSpec, tp: int, path: str, overhead_ms: float = ENGINE_OVERHEAD_MS) -> LatencyModel | None:
    """The measured model of this model at this TP from a latency table (sim/latency_kv.py:
    the positions' cost plus the KV cache's, fitted to the table's steps), with what the
    pure-torch timing leaves out added back: the entry's modelled all-reduce
    ('allreduce_ms_model') and the engine's per-iteration overhead. None when the table has no
    such entry."""
    key = table_key(spec, tp, path)
    if key is None:
        return None
    dec, pre = latency_file.rows(path, key, _table_doc(path)["models"][key],
                                 extra_ms="allreduce_ms_model")
    return measured_model([(b, q, c, ms / 1e3) for b, q, c, ms in dec],
                          [(t, ms / 1e3) for t, ms in pre], name=f"{Path(path).name}:{key}",
                          overhead_s=overhead_ms / 1e3)


@dataclass(frozen=True)
class Built:
    latency: LatencyModel
    source: str                 # "measured H100 table (file)" | "roofline (DEVICE)"


def latency(spec: ModelSpec, device: Device, tp: int = 1, table: str | None = "auto",
            tp_efficiency: float = TP_EFFICIENCY) -> Built:
    """The measured table where it applies (measured on this device, with this model at this TP),
    the device roofline elsewhere. table: "auto" = the shipped table measured on this device
    (MEASURED_TABLES: H100, H200), a path = that table (on the device its "device" field names,
    table_device), None/"roofline" = never."""
    if table == "auto":
        path, on = shipped_table(device.name), device.name
    elif table in (None, "roofline"):
        path, on = None, None
    else:
        path = table
        on = table_device(path)
    if path is not None and device.name == on:
        t = measured(spec, tp, path)
        if t is not None:
            return Built(t, f"measured {on} table ({Path(path).name})")
    return Built(roofline(spec, device, tp, tp_efficiency), f"roofline ({device.name})")


def judgement_roofline_s(spec: ModelSpec, device: Device, prompt_tokens: int) -> float:
    """Roofline time of one LLM-judge call without overheads: a prefill of the prompt and one
    decoded token (max_tokens 1)."""
    r = roofline(spec, device, 1, overhead_ms=0.0)
    return r.forward(0, prompt_tokens, 1, 0.0) + r.forward(1, 0, 1, float(prompt_tokens))
