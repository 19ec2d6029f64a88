"""Engine start-up faults -> one line that names the cause and what to do.

A vLLM engine that cannot start fails late (after 20-90 s of imports and weight loading) and
obscurely: the engine-core process prints a multi-line traceback, and the caller only gets
"Engine core initialization failed. See root cause above". This module does three things:

- `check_model_folder` / `check_engine_fits`: cheap checks before anything is loaded (the
  folder's config.json parses, its safetensors files are complete, `--max-model-len` fits the
  model and the KV cache, the weights plus the KV cache fit in the memory available now);
- `StartupCapture`: routes this process's stderr, and so the spawned engine core's, through a
  pipe while the engine starts, so its traceback is kept (and written to a log file) instead of
  flooding the terminal; after a successful start the engine's output passes through as before;
- `translate`: turns the exception plus the captured log into a `UserError` with one line.
"""
from __future__ import annotations

import json
import os
import re
import struct
import sys
import tempfile
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from lrsim.errors import UserError

GIB = 1024 ** 3
DTYPE_BYTES = {"float32": 4, "float": 4, "bfloat16": 2, "float16": 2, "half": 2,
               "F32": 4, "BF16": 2, "F16": 2, "F64": 8, "I64": 8, "I32": 4, "I16": 2, "I8": 1,
               "U8": 1, "BOOL": 1, "F8_E4M3": 1, "F8_E5M2": 1}
CAPTURE_LINES = 400          # log lines kept in memory while an engine starts
DRAIN_S = 3.0                # after a failed start: wait this long for the dying core's last words
TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "vocab.json", "tokenizer_config.json")


# ------------------------------------------------------------------------ checks before start

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


# ------------------------------------------------------------------------ capture while starting

class StartupCapture:
    """While an engine starts, this process's fd 2 is a pipe read by a thread: the engine core
    (a spawned process, which inherits fd 2 for its whole life) writes its start-up log there.
    `done(ok=True)`: restore fd 2; the engine's later output passes through to the real stderr.
    `done(ok=False)`: restore fd 2, wait briefly for the dying core's last lines, keep them all."""

    def __init__(self, name: str = "engine"):
        self.name = name
        self.lines: deque[str] = deque(maxlen=CAPTURE_LINES)
        self._saved: int | None = None
        self._passthrough = False
        self._thread: threading.Thread | None = None
        self._partial = b""

    def __enter__(self) -> "StartupCapture":
        try:
            sys.stderr.flush()
        except (AttributeError, ValueError, OSError):
            pass
        self._saved = os.dup(2)
        r, w = os.pipe()
        os.dup2(w, 2)
        os.close(w)
        self._thread = threading.Thread(target=self._pump, args=(r,), daemon=True,
                                        name=f"lr-{self.name}-stderr")
        self._thread.start()
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.done(ok=exc_type is None)

    def _pump(self, r: int) -> None:
        with os.fdopen(r, "rb", buffering=0) as pipe:
            while chunk := pipe.read(65536):
                if self._passthrough and self._saved is not None:
                    try:
                        os.write(self._saved, chunk)
                    except OSError:
                        pass
                    continue
                data = self._partial + chunk
                *full, self._partial = data.split(b"\n")
                self.lines.extend(x.decode(errors="replace").rstrip("\r") for x in full)
        if self._partial:
            self.lines.append(self._partial.decode(errors="replace"))
            self._partial = b""

    def done(self, ok: bool) -> None:
        if self._saved is None or self._thread is None:
            return
        try:
            sys.stderr.flush()
        except (AttributeError, ValueError, OSError):
            pass
        self._passthrough = ok
        os.dup2(self._saved, 2)  # this process writes to the real stderr again
        if not ok:
            self._thread.join(DRAIN_S)  # EOF comes once the dying core's processes exit

    def text(self) -> str:
        return "\n".join(list(self.lines) + ([self._partial.decode(errors="replace")] if self._partial else []))

    def save(self) -> str | None:
        """Write what was captured to a log file (kept for the user); returns its path."""
        try:
            fd, path = tempfile.mkstemp(prefix=f"lr-{self.name}-start-", suffix=".log")
            with os.fdopen(fd, "w") as f:
                f.write(self.text() + "\n")
            return path
        except OSError:
            return None


# ------------------------------------------------------------------------ translation

_RULES: list[tuple[str, str]] = [
    # vLLM-CPU worker: requested KV space larger than the node's free memory
    (r"Available memory on node \d+ \((?P<avail>[\d.]+)/(?P<total>[\d.]+) GiB\) on kv cache allocation "
     r"is less than requested memory for kv \((?P<kv>[\d.]+) GiB\)",
     "{head}: not enough memory for the KV cache: {kv} GiB requested, {avail} of {total} GiB free "
     "after loading the model: lower --kv-cache-space, or stop other runs using memory"),
    # KV space smaller than one max-length request
    (r"max seq len \((?P<mml>\d+)\), \((?P<need>[\d.]+) GiB KV cache is needed, which is larger than "
     r"the available KV cache memory \((?P<have>[\d.]+) GiB\)(?:.*?estimated maximum model length is "
     r"(?P<fit>\d+))?",
     "{head}: not enough KV cache for one request of --max-model-len {mml}: it needs {need} GiB, "
     "--kv-cache-space gives {have} GiB: lower --max-model-len to {fit} or less, or raise "
     "--kv-cache-space"),
    (r"User-specified max_model_len \((?P<mml>\d+)\) is greater than the derived max_model_len "
     r"\((?:max_position_embeddings=)?(?P<mx>\d+)",
     "{head}: --max-model-len {mml} is more than the model's maximum context ({mx} tokens): lower "
     "--max-model-len"),
    (r"config file at '(?P<path>[^']+)' is not a valid JSON",
     "{head}: {path} is not valid JSON (the model folder is damaged): copy the folder again, or for a "
     "packaged model delete its folder and run `lr models prepare NAME`"),
    (r"(?i)error while attempting to bind on address \((?P<addr>[^)]*)\): (?:\[errno \d+\] )?address "
     r"already in use",
     "{head}: address {addr} is already in use by another process: omit --port to use a free port, "
     "or stop what holds it"),
    (r"(?i)(?:zmq\w*error|zmq\.error)[^\n]*?(?P<why>address already in use|address in use|permission "
     r"denied|no such file or directory|too many open files)",
     "{head}: the engine core could not open its local socket (zmq: {why}): a stale vLLM process may "
     "hold it; stop leftover vLLM processes and retry"),
    (r"(?i)(?:SafetensorError|safetensors_rust\.SafetensorError|HeaderTooLarge|MetadataIncompleteBuffer|"
     r"incomplete metadata)[: ]*(?P<why>[^\n]*)",
     "{head}: the model's weights are damaged ({why}): copy the folder again, or for a packaged "
     "model delete its folder and run `lr models prepare NAME`"),
    (r"(?i)(?P<why>MemoryError|Cannot allocate memory|std::bad_alloc|can't allocate memory|"
     r"DefaultCPUAllocator: not enough memory|out of memory)",
     "{head}: out of memory while starting ({why}): lower --kv-cache-space or --max-model-len, or "
     "stop other runs using memory"),
]
_GENERIC = ("Engine core initialization failed", "WorkerProc initialization failed",
            "See root cause above", "please check the stack trace above")
_ERROR_LINE = re.compile(r"\b(?P<type>[A-Za-z_][\w.]*(?:Error|Exception)): (?P<msg>.+)$")
_KILLED = re.compile(r"Failed core proc\(s\): \{[^}]*: (?P<code>-?\d+)\}")


def _chain_text(exc: BaseException | None) -> str:
    parts, seen = [], set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        parts.append(f"{type(exc).__name__}: {exc}")
        exc = exc.__cause__ or exc.__context__
    return "\n".join(parts)


def _one_line(s: str, limit: int = 300) -> str:
    s = " ".join(s.split())
    return s if len(s) <= limit else s[: limit - 3] + "..."


def translate(exc: BaseException | None, log: str, ctx: StartContext) -> UserError:
    """The UserError for an engine that failed to start: the first known cause found in the
    exception chain or the log, else the last concrete error line, else the exit code."""
    text = _chain_text(exc) + "\n" + (log or "")
    where = f"; full log {ctx.log_path}" if ctx.log_path else ""
    for pattern, message in _RULES:
        m = re.search(pattern, text)
        if m:
            fields = {k: (v if v is not None else "?") for k, v in m.groupdict().items()}
            return UserError(_one_line(message.format(head=ctx.head(), **fields)) + where)
    for line in reversed(text.splitlines()):
        m = _ERROR_LINE.search(line)
        if m and not any(g in line for g in _GENERIC):
            return UserError(f"{ctx.head()} {ctx.failed()}: {_one_line(m['type'] + ': ' + m['msg'])}"
                             f"{where or ': run again with VLLM_LOGGING_LEVEL=DEBUG to see more'}")
    codes = [int(c) for c in _KILLED.findall(text)]
    if codes:
        code = min(codes)  # a signal (negative) says more than the exit code 1 it caused
        why = (f"killed by signal {-code}" + (" (SIGKILL: often the kernel's out-of-memory killer)"
                                              if code == -9 else "")) if code < 0 else f"exit code {code}"
        return UserError(f"{ctx.head()}: the engine core died during start-up ({why}) without a Python "
                         f"error: check free memory (`free -g`) and the model folder's files{where}")
    return UserError(f"{ctx.head()} {ctx.failed()}: {_one_line(_chain_text(exc) or 'no error text')}{where}")


def translated_start(ctx: StartContext, start, capture_name: str = "engine"):
    """Run `start()` under a StartupCapture; any failure becomes a one-line UserError."""
    cap = StartupCapture(capture_name)
    t0 = time.monotonic()
    with cap:
        try:
            return start()
        except UserError:
            raise
        except BaseException as e:
            if isinstance(e, (KeyboardInterrupt, SystemExit)):
                raise
            cap.done(ok=False)
            ctx.log_path = cap.save()
            err = translate(e, cap.text(), ctx)
            err.startup_s = time.monotonic() - t0
            raise err from None
