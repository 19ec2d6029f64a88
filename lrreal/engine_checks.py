"""Cheap checks before a vLLM engine loads anything: one line instead of a late, obscure failure.

`check_model_folder`: the folder's config.json parses and names a model, weights and tokenizer
files exist, its safetensors files are complete (a damaged prepared model says to re-prepare it).
`check_engine_fits`: `--max-model-len` fits the model and the KV cache, and the weights plus the
KV cache fit in the memory available now. Each failure is a `UserError` naming the cause and
what to do (numbers as vLLM itself would compute them). `lrreal.engine_errors` translates what
still fails once vLLM starts.
"""
from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from pathlib import Path

from lrcore.errors import UserError

GIB = 1024 ** 3
DTYPE_BYTES = {"float32": 4, "float": 4, "bfloat16": 2, "float16": 2, "half": 2,
               "F32": 4, "BF16": 2, "F16": 2, "F64": 8, "I64": 8, "I32": 4, "I16": 2, "I8": 1,
               "U8": 1, "BOOL": 1, "F8_E4M3": 1, "F8_E5M2": 1}
TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "vocab.json", "tokenizer_config.json")


FOLDER_ADVICE = ("pass a complete Hugging Face model folder, or a packaged model name "
                 "(`lr models list` shows them)")


class ModelFolderError(UserError):
    """A model folder vLLM would reject; `cause` is the fault alone, so callers that know a
    better remedy (a prepared packaged model: delete and re-prepare) can say so."""

    def __init__(self, folder: Path, cause: str, advice: str = FOLDER_ADVICE):
        self.folder, self.cause = Path(folder), cause
        super().__init__(f"model folder {folder}: {cause}: {advice}")


def read_config(folder: Path) -> dict:
    """config.json of a Hugging Face model folder, or a ModelFolderError naming what is wrong."""
    cfg = folder / "config.json"
    if not cfg.is_file():
        raise ModelFolderError(folder, "no config.json, so not a Hugging Face model folder")
    try:
        config = json.loads(cfg.read_text())
    except (OSError, UnicodeDecodeError) as e:
        raise ModelFolderError(folder, f"cannot read config.json ({e})") from None
    except ValueError as e:
        raise ModelFolderError(folder, f"config.json is not valid JSON ({e}), the file is damaged") from None
    if not isinstance(config, dict) or not (config.get("model_type") or config.get("architectures")):
        raise ModelFolderError(folder, "config.json names no model_type or architectures, so it is "
                                       "not a model config")
    return config


def safetensors_params(path: Path, skip: tuple[str, ...] = ()) -> dict[str, int]:
    """{'params': n, 'bytes': expected file size} from a .safetensors header; ModelFolderError if
    the file is shorter than its header says (a truncated copy) or the header is unreadable."""
    size = path.stat().st_size

    def bad(why: str) -> ModelFolderError:
        return ModelFolderError(path.parent, f"weights file {path.name} is damaged ({why})")

    try:
        with open(path, "rb") as f:
            head = f.read(8)
            if len(head) < 8:
                raise bad(f"{size} B, no safetensors header")
            n = struct.unpack("<Q", head)[0]
            if n > min(size - 8, 100 * 1024 * 1024):
                raise bad(f"its header claims {n:,} B of its {size:,} B")
            header = json.loads(f.read(n))
        end, params = 0, 0
        for name, t in header.items():
            if name == "__metadata__":
                continue
            end = max(end, int(t["data_offsets"][1]))
            if name in skip:
                continue
            count = 1
            for d in t["shape"]:
                count *= int(d)
            params += count
    except (ValueError, UnicodeDecodeError, KeyError, TypeError, IndexError, AttributeError):
        raise bad("its safetensors header is not valid") from None
    expected = 8 + n + end
    if size < expected:
        raise bad(f"truncated: {size:,} of {expected:,} B")
    return {"params": params, "bytes": expected}


def check_model_folder(folder: Path) -> dict:
    """Fail fast (milliseconds) on a folder vLLM would reject after a long load; returns
    {"config": ..., "params": n or None} for the memory check."""
    folder = Path(folder)
    try:
        return _check_model_folder(folder)
    except ModelFolderError as e:
        marker = folder / "lr-model.json"  # a packaged model `lr models prepare` built
        if not marker.is_file():
            raise
        try:
            name = json.loads(marker.read_text()).get("name") or folder.name
        except (OSError, ValueError, AttributeError):
            name = folder.name
        raise UserError(f"model {name}: its prepared folder {folder} is damaged ({e.cause}): delete it "
                        f"(rm -r {folder}) and run `lr models prepare {name}`") from None


def _check_model_folder(folder: Path) -> dict:
    if not folder.is_dir():
        raise ModelFolderError(folder, "no such folder")
    config = read_config(folder)
    weights = sorted(folder.glob("*.safetensors"))
    if not weights and not any(folder.glob("*.bin")) and not any(folder.glob("*.pt")):
        raise ModelFolderError(folder, "no weights (*.safetensors or *.bin)")
    if not any((folder / f).is_file() for f in TOKENIZER_FILES):
        raise ModelFolderError(folder, f"no tokenizer files ({', '.join(TOKENIZER_FILES)})")
    # a tied lm_head is stored but shares the embedding's memory once loaded
    skip = ("lm_head.weight",) if config.get("tie_word_embeddings") else ()
    params = sum(safetensors_params(w, skip)["params"] for w in weights) if weights else None
    return {"config": config, "params": params}


def _dtype_bytes(dtype: str, config: dict) -> int | None:
    if dtype == "auto":
        dtype = str(config.get("torch_dtype") or config.get("dtype") or "")
    return DTYPE_BYTES.get(dtype.replace("torch.", ""))


def kv_bytes_per_token(config: dict, dtype: str) -> int | None:
    """K and V of every layer for one token, for plain full-attention decoders; None where the
    model is not one (sliding windows, MLA, hybrid layers), so no check is made there."""
    cfg = config.get("text_config", config)
    if (cfg.get("use_sliding_window") or cfg.get("kv_lora_rank")
            or any(t != "full_attention" for t in cfg.get("layer_types") or [])):
        return None
    try:
        layers = int(cfg["num_hidden_layers"])
        heads = int(cfg["num_attention_heads"])
        kv_heads = int(cfg.get("num_key_value_heads") or heads)
        head_dim = int(cfg.get("head_dim") or int(cfg["hidden_size"]) // heads)
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return None
    b = _dtype_bytes(dtype, cfg)
    return None if b is None else layers * 2 * kv_heads * head_dim * b


def _model_max_len(config: dict) -> int | None:
    cfg = config.get("text_config", config)
    rope = cfg.get("rope_scaling") or cfg.get("rope_parameters") or {}
    if isinstance(rope, dict) and rope.get("rope_type", rope.get("type", "default")) not in (None, "default"):
        return None  # scaled RoPE: vLLM derives a longer maximum; leave the check to it
    m = cfg.get("max_position_embeddings")
    return int(m) if isinstance(m, (int, float)) else None


def available_memory_bytes() -> int | None:
    """MemAvailable, capped by this cgroup's memory limit when there is one."""
    avail = None
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemAvailable:"):
                avail = int(line.split()[1]) * 1024
    except (OSError, ValueError):
        return None
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        if limit != "max":
            used = int(Path("/sys/fs/cgroup/memory.current").read_text())
            avail = min(avail, int(limit) - used) if avail is not None else int(limit) - used
    except (OSError, ValueError):
        pass
    return avail


@dataclass
class StartContext:
    """What a message may name: which engine, its model and the flags that size it."""
    what: str                       # "target engine", "judge server", ...
    model: str
    max_model_len: int
    kv_cache_space_gib: float
    dtype: str = "float32"
    block_size: int = 32
    port: int | None = None
    log_path: str | None = None
    exit_code: int | None = None    # of a server process that died while starting

    def head(self) -> str:
        return f"{self.what} ({Path(self.model).name})"

    def failed(self) -> str:
        return (f"exited with code {self.exit_code} during start-up" if self.exit_code is not None
                else "failed to start")


def check_engine_fits(ctx: StartContext, folder_info: dict, available: int | None = None) -> None:
    """Both checks below. Every number is vLLM's own rule, so a start these checks pass is not
    refused for these reasons (vLLM may still refuse for others; `translate` names those)."""
    check_engine_config(ctx, folder_info)
    check_free_memory(ctx, folder_info, available)


def check_engine_config(ctx: StartContext, folder_info: dict) -> None:
    """--max-model-len against the model's limit and against the KV cache space (no I/O)."""
    config = folder_info["config"]
    mx = _model_max_len(config)
    if mx and ctx.max_model_len > mx:
        raise UserError(f"{ctx.head()}: --max-model-len {ctx.max_model_len} is more than the model's "
                        f"maximum context ({mx} tokens): lower --max-model-len to {mx} or less")
    kv = ctx.kv_cache_space_gib * GIB
    per_tok = kv_bytes_per_token(config, ctx.dtype)
    bs = ctx.block_size
    if per_tok and -(-ctx.max_model_len // bs) * bs * per_tok > kv:  # vLLM: whole blocks per request
        fit = max(0, int(kv // (per_tok * bs)) - 1) * bs  # vLLM's own estimate keeps a spare block
        raise UserError(f"{ctx.head()}: not enough KV cache for one request of --max-model-len "
                        f"{ctx.max_model_len}: it needs {per_tok * ctx.max_model_len / GIB:.2f} GiB, "
                        f"--kv-cache-space gives {ctx.kv_cache_space_gib:g} GiB: lower --max-model-len "
                        f"to {fit} or less, or raise --kv-cache-space")


def check_free_memory(ctx: StartContext, folder_info: dict, available: int | None = None) -> None:
    """Weights + KV cache against the memory available now (call it holding the vLLM lock)."""
    config, params = folder_info["config"], folder_info.get("params")
    kv = ctx.kv_cache_space_gib * GIB
    available = available_memory_bytes() if available is None else available
    b = _dtype_bytes(ctx.dtype, config.get("text_config", config))
    weights = params * b if (params and b) else 0
    if available is not None and weights + kv > available:
        raise UserError(f"{ctx.head()}: not enough memory: weights {weights / GIB:.1f} GiB + KV cache "
                        f"{ctx.kv_cache_space_gib:g} GiB > {available / GIB:.1f} GiB available now: "
                        f"lower --kv-cache-space, or stop other runs using memory (see `free -g`)")


