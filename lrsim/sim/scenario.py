"""Scenario files (TOML): hardware, placement, models, verifier, token-level SD, workload, policy.

    name = "..."
    [devices]               name = "kind"  (e.g. gpu0 = "H100")
    [models.target]         devices = [...], tp = 2, max_seqs = 256, latency = {...},
                            kv_cache_tokens = 200000 | kv_cache_gib = 40 (+ kv_bytes_per_token,
                            unless the latency is of kind "model"), kv_block_tokens = 16:
                            the engine's KV cache (lrsim/sim/kvcache.py); none = unlimited
    [models.draft]          same (needed by lr-* policies)
    [models.judge]          optional: an LLM judge on its own device (verifier.kind = "llm")
    [verifier]              kind = "none" | "constant" | "per_token" | "llm" | "score", seconds = 0.013
                            (score: the target scores the drafted step, on its own engine)
    [sd]                    k2 = 1, drafter = "ngram" | "model", latency = {...} (drafter="model")
    [workload]              kind = "synthetic" (Synthetic's fields) | "trace" (path = "...jsonl",
                            arrivals = true: the records' own load.arrival_s, else all at t = 0)
    [policy]                name = "lr-async", depth = 4, width = 1, k1 = 2,
                            judge_timing = "eager" | "deferred" (lr-async; default eager),
                            adaptive_scope = "request" | "run" (lr-adaptive: an Estimator per
                            request, or one for the run as the real backend's; default request)

latency tables:
    {kind = "roofline", params_b = 32.8, bytes_per_param = 2, tp = 2, kv_bytes_per_token = ...,
     bandwidth_efficiency = 0.8, overhead_ms = 2}        derived from hardware facts, or
    {kind = "roofline", base_ms = 12, knee_tokens = 300, per_token_ms = 0.04, per_ctx_token_us = 0}
    {kind = "table", decode = [[batch, ms] | [batch, context, ms], ...], prefill = [[tokens, ms]]}
    {kind = "table", file = "path.json", model = "name"}  (lrsim/data/latency/*.json format)
    {kind = "ideal", unit_ms = 1}
    {kind = "model", config = "qwen3-32b" | "path/config.json", device = "H200", tp = 2}
                            a Hugging Face config.json on a catalogue device (lrsim/plan/
                            modelspec.py, catalog.py): the shipped table measured on that device
                            (H100, H200) where it has this model at this TP, the device
                            roofline elsewhere
    [verifier] measured_on = "H200"      the device kind `seconds` was measured on (--device-kind
                                         leaves it as given when planning on that kind)
    [workload] accept_by_width = [[1, 0.63], [8, 0.83]]   per-position acceptance by tree width
                                         (sets alpha1 and sibling_hard, lrsim/plan/width.py)
    [workload] phase_alpha1 = 0.3, phase_at = 0.5   a phase change: from half the steps on, the
                                         step acceptance is 0.3 (for adaptive lookahead)
    [workload] rate = 0.05, rate_end = 3      a load ramp: Poisson arrivals whose rate rises
                                         linearly over the requests (for adaptive lookahead)
Every error names the file and the field: `lr: error: FILE: models.target.latency.kind: ...`.
"""
from __future__ import annotations

import math
from importlib import resources

try:
    import tomllib
except ImportError:  # Python 3.10 (pyproject allows it): the same parser under its PyPI name
    import tomli as tomllib
from pathlib import Path

from lrcore import limits
from lrcore.errors import UserError
from lrcore.limits import MAX_STEPS_PER_REQUEST

from .build import MAX_KNOB, MAX_KV_TOKENS, MAX_WORKLOAD   # the flags' caps hold in files too
from .config import ADAPTIVE_SCOPES, JUDGE_TIMINGS, POLICIES, Config, Placement
from .kvcache import BLOCK_TOKENS, MAX_BLOCK_TOKENS, KVSpec
from .latency import H100_BF16_FLOPS, H100_HBM_BYTES_PER_S, Ideal, Roofline, Tabulated, load_measurements
from .verifier import KINDS as VERIFIER_KINDS, VerifierCost
from .workload import Synthetic

SHIPPED = "lrsim.scenarios"
MAX_DEVICES = 4096        # tensor parallelism of one model (= lr plan's --devices cap)


class _Doc:
    """Typed access to a TOML table that names file and field in every error."""

    def __init__(self, path: Path, table: dict, where: str = ""):
        self.path, self.t, self.where = path, table, where

    def err(self, key: str, msg: str) -> UserError:
        field = f"{self.where}.{key}" if self.where else key
        return UserError(f"{self.path}: {field}: {msg}")

    def sub(self, key: str, required: bool = False) -> "_Doc | None":
        v = self.t.get(key)
        if v is None:
            if required:
                raise self.err(key, "missing table")
            return None
        if not isinstance(v, dict):
            raise self.err(key, "must be a table")
        return _Doc(self.path, v, f"{self.where}.{key}" if self.where else key)

    def get(self, key, typ, default=None, lo=None, hi=None, required=False):
        if key not in self.t:
            if required:
                raise self.err(key, "missing")
            return default
        v = self.t[key]
        ok = isinstance(v, typ) and not (typ in ((int,), int) and isinstance(v, bool))
        if typ is float and isinstance(v, int) and not isinstance(v, bool):
            v, ok = (float(v) if abs(v) <= 1e300 else math.inf), True  # huge ints: "not finite" below
        if not ok:
            raise self.err(key, f"expected {getattr(typ, '__name__', typ)}, got {v!r}")
        if isinstance(v, float) and not math.isfinite(v):
            raise self.err(key, f"must be a finite number, got {v!r}")
        if lo is not None and v < lo or hi is not None and v > hi:
            raise self.err(key, f"must be in [{lo}, {hi}], got {v!r}")
        return v

    def check_keys(self, allowed: set[str]) -> None:
        for k in self.t:
            if k not in allowed:
                raise self.err(k, f"unknown field (allowed: {', '.join(sorted(allowed))})")


LATENCY_KEYS = {
    "ideal": {"kind", "unit_ms", "note"},
    "roofline": {"kind", "params_b", "bytes_per_param", "tp", "hbm_tb_s", "tflops", "kv_bytes_per_token",
                 "bandwidth_efficiency", "tp_efficiency", "overhead_ms", "base_ms", "knee_tokens",
                 "per_token_ms", "per_ctx_token_us", "note"},
    "table": {"kind", "file", "model", "decode", "prefill", "overhead_ms", "note"},
    "model": {"kind", "config", "device", "tp", "table", "tp_efficiency", "note"},
}


def _number(x) -> bool:
    """A finite number (TOML integers are unbounded; float() of a 400-digit one overflows)."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return False
    return abs(x) <= 1e300 if isinstance(x, int) else math.isfinite(x)


def _rows(doc: _Doc, key: str, widths: tuple[int, ...], shape: str, required: bool) -> list[list[float]]:
    """A table of numeric rows ([batch, ms] ...): finite, >= 0, the right width."""
    rows = doc.get(key, list, [] if not required else None, required=required)
    if required and not rows:
        raise doc.err(key, f"needs at least one row {shape}")
    out = []
    for i, r in enumerate(rows):
        if not (isinstance(r, list) and len(r) in widths and all(_number(x) and x >= 0 for x in r)):
            raise doc.err(f"{key}[{i}]", f"rows must be {shape} of finite numbers >= 0, got {r!r}")
        out.append([float(x) for x in r])
    return out


def _latency(doc: _Doc, tp: int):
    kind = doc.get("kind", str, required=True)
    if kind in LATENCY_KEYS:
        doc.check_keys(LATENCY_KEYS[kind])
    if kind == "ideal":
        return Ideal(doc.get("unit_ms", float, 1.0, lo=0.0) / 1e3)
    if kind == "model":
        from ..plan import catalog, modelspec
        try:
            spec = _model_spec(doc)
            dev = catalog.get(doc.get("device", str, "H100"), flag="device")
            table = doc.get("table", str, "auto")
            if table not in ("auto", "roofline") and not Path(table).is_absolute() \
                    and (doc.path.parent / table).exists():
                table = str(doc.path.parent / table)
            return modelspec.latency(spec, dev, doc.get("tp", int, tp, lo=1, hi=MAX_DEVICES), table,
                                     doc.get("tp_efficiency", float, 0.9, lo=0.01, hi=1.0)).latency
        except UserError as e:
            if str(e).startswith(str(doc.path)):
                raise
            raise doc.err("config", str(e)) from None
    if kind == "roofline":
        if "params_b" in doc.t:
            return Roofline.from_hardware(
                params=doc.get("params_b", float, lo=1e-6, hi=1e6) * 1e9,   # 1k to 1e15 parameters
                bytes_per_param=doc.get("bytes_per_param", float, 2.0, lo=0.01, hi=64.0),
                tp=doc.get("tp", int, tp, lo=1, hi=MAX_DEVICES),
                hbm_bytes_per_s=doc.get("hbm_tb_s", float, H100_HBM_BYTES_PER_S / 1e12, lo=0.001) * 1e12,
                flops=doc.get("tflops", float, H100_BF16_FLOPS / 1e12, lo=0.001) * 1e12,
                kv_bytes_per_token=doc.get("kv_bytes_per_token", float, 0.0, lo=0.0),
                bandwidth_efficiency=doc.get("bandwidth_efficiency", float, 0.8, lo=0.01, hi=1.0),
                tp_efficiency=doc.get("tp_efficiency", float, 0.9, lo=0.01, hi=1.0),
                overhead_s=doc.get("overhead_ms", float, 0.0, lo=0.0) / 1e3)
        per = doc.get("per_token_ms", float, None, lo=0.0)
        return Roofline(base_s=doc.get("base_ms", float, required=True, lo=1e-9) / 1e3,
                        knee_tokens=doc.get("knee_tokens", float, required=True, lo=1e-9),
                        per_token_s=None if per is None else per / 1e3,
                        per_ctx_token_s=doc.get("per_ctx_token_us", float, 0.0, lo=0.0) / 1e6,
                        overhead_s=doc.get("overhead_ms", float, 0.0, lo=0.0) / 1e3)
    if kind == "table":
        if "file" in doc.t:
            f = Path(doc.get("file", str))
            if not f.is_absolute():
                f = (doc.path.parent / f) if (doc.path.parent / f).exists() else f
            models = load_measurements(f)
            name = doc.get("model", str, required=True)
            if name not in models:
                raise doc.err("model", f"{name!r} not in {f} (has: {', '.join(models)})")
            m = models[name]
            m.overhead_s = doc.get("overhead_ms", float, 0.0, lo=0.0) / 1e3
            return m
        dec = _rows(doc, "decode", (2, 3), "[batch, ms] or [batch, context, ms]", required=True)
        rows = [(r[0], 0.0, r[1] / 1e3) if len(r) == 2 else (r[0], r[1], r[2] / 1e3) for r in dec]
        pre = [(r[0], r[1] / 1e3) for r in _rows(doc, "prefill", (2,), "[tokens, ms]", required=False)]
        return Tabulated(rows, pre, name=f"{doc.path.name}:{doc.where}",
                         overhead_s=doc.get("overhead_ms", float, 0.0, lo=0.0) / 1e3)
    raise doc.err("kind", f"must be 'roofline', 'table', 'model' or 'ideal', got {kind!r}")


def _model_spec(doc: _Doc):
    """The config.json named by a latency table of kind "model" (beside the scenario, or as given)."""
    from ..plan import modelspec

    ref = doc.get("config", str, required=True)
    if not Path(ref).is_absolute() and (doc.path.parent / ref).exists():
        ref = str(doc.path.parent / ref)
    return modelspec.load(ref, "config")


def _kv(doc: _Doc, lat: _Doc) -> KVSpec | None:
    """The model's KV cache: kv_cache_tokens, or kv_cache_gib / KV bytes per token (given, or
    the latency's: a roofline's kv_bytes_per_token, a "model" latency's config.json)."""
    tokens = doc.get("kv_cache_tokens", int, None, lo=1, hi=MAX_KV_TOKENS)
    gib = doc.get("kv_cache_gib", float, None, lo=1e-9, hi=1e9)
    block = doc.get("kv_block_tokens", int, BLOCK_TOKENS, lo=1, hi=MAX_BLOCK_TOKENS)
    if tokens is None and gib is None:
        for k in ("kv_block_tokens", "kv_bytes_per_token"):
            if k in doc.t:
                raise doc.err(k, "needs kv_cache_tokens or kv_cache_gib (the KV cache's size)")
        return None
    if tokens is not None and gib is not None:
        raise doc.err("kv_cache_gib", "and kv_cache_tokens both set the KV cache: give one")
    key = "kv_cache_tokens"
    if gib is not None:
        key = "kv_cache_gib"
        per = doc.get("kv_bytes_per_token", float, None, lo=1e-6, hi=1e12)
        if per is None and lat.t.get("kind") == "roofline" and lat.t.get("kv_bytes_per_token"):
            per = lat.get("kv_bytes_per_token", float, lo=1e-6, hi=1e12)
        if per is None and lat.t.get("kind") == "model":
            try:
                per = _model_spec(lat).kv_bytes_per_token
            except UserError as e:
                raise lat.err("config", str(e)) from None
        if per is None:
            raise doc.err("kv_cache_gib", "needs kv_bytes_per_token (2 x layers x KV heads x head "
                                          "dim x dtype bytes) or a latency of kind 'model'")
        tokens = int(gib * 1024 ** 3 // per)
    elif "kv_bytes_per_token" in doc.t:
        raise doc.err("kv_bytes_per_token", "is only used with kv_cache_gib")
    if tokens < block:
        raise doc.err(key, f"holds {tokens} tokens, less than one block of {block}")
    return KVSpec(tokens // block * block, block)


def _placement(doc: _Doc, role: str, devices: dict) -> Placement:
    doc.check_keys({"name", "devices", "tp", "max_seqs", "latency", "params_b", "note",
                    "kv_cache_tokens", "kv_cache_gib", "kv_bytes_per_token", "kv_block_tokens"})
    devs = doc.get("devices", list, required=True)
    if not devs:
        raise doc.err("devices", "needs at least one device name")
    for d in devs:
        if not isinstance(d, str):
            raise doc.err("devices", f"must be a list of device names (strings), got {d!r}")
        if d not in devices:
            raise doc.err("devices", f"unknown device {d!r} (declared: {', '.join(devices)})")
    tp = doc.get("tp", int, len(devs), lo=1, hi=MAX_DEVICES)
    lat_doc = doc.sub("latency", required=True)
    lat = _latency(lat_doc, tp)
    return Placement(doc.get("name", str, role), lat, list(devs), tp,
                     doc.get("max_seqs", int, 256, lo=1, hi=MAX_WORKLOAD), kv=_kv(doc, lat_doc))


def _workload(doc: _Doc | None, seed: int):
    if doc is None:
        return Synthetic(seed=seed)
    kind = doc.get("kind", str, "synthetic")
    if kind == "trace":
        from .traces import TraceWorkload
        doc.check_keys({"kind", "path", "mode", "arrivals", "note"})
        p = Path(doc.get("path", str, required=True))
        if not p.is_absolute() and (doc.path.parent / p).exists():
            p = doc.path.parent / p
        if not p.exists():
            raise doc.err("path", f"{p}: trace file not found (a relative path is looked up beside "
                                  "the scenario, then in the current directory)")
        mode = doc.get("mode", str, None)
        arrivals = doc.get("arrivals", bool, False)
        try:
            return TraceWorkload.from_file(p, mode=mode, arrivals=arrivals)
        except UserError as e:  # the trace's own error (file:line: field), under this field
            raise doc.err("path", str(e)) from None
    if kind != "synthetic":
        raise doc.err("kind", f"must be 'synthetic' or 'trace', got {kind!r}")
    doc.check_keys({"kind", "requests", "steps", "alpha1", "alpha2", "alpha_by_depth", "step_mean",
                    "step_sigma", "prompt_tokens", "rate", "rate_end", "seed", "sibling_hard",
                    "accept_by_width", "phase_alpha1", "phase_at", "accepted_length_hist", "note"})
    abd = doc.get("alpha_by_depth", list, None)
    if abd is not None and not all(_number(a) and 0 <= a <= 1 for a in abd):
        raise doc.err("alpha_by_depth", "must be a list of probabilities in [0, 1]")
    alh = doc.get("accepted_length_hist", list, None)
    if alh is not None and not (len(alh) > 1 and all(isinstance(c, int) and not isinstance(c, bool)
                                                      and c >= 0 for c in alh) and sum(alh) > 0):
        raise doc.err("accepted_length_hist", "must count SD passes by accepted draft tokens "
                                              "0..gamma: [n0, n1, ...] (non-negative integers, some > 0)")
    alpha1 = doc.get("alpha1", float, 0.6, lo=0.0, hi=1.0)
    hard = doc.get("sibling_hard", float, 0.0, lo=0.0, hi=0.999)
    abw = doc.get("accept_by_width", list, None)
    if abw is not None:
        if "sibling_hard" in doc.t:
            raise doc.err("accept_by_width", "and sibling_hard both set the sibling correlation: give one")
        if not abw or not all(isinstance(r, list) and len(r) == 2 and isinstance(r[0], int)
                              and not isinstance(r[0], bool) and 1 <= r[0] <= MAX_KNOB
                              and _number(r[1]) and 0 < r[1] < 1 for r in abw):
            raise doc.err("accept_by_width", "must be [[width, acceptance per position], ...] with "
                                             f"widths 1-{MAX_KNOB} and acceptances in (0, 1)")
        from ..plan.width import fit
        by = {int(w): float(p) for w, p in abw}
        if 1 in by and "alpha1" in doc.t:
            raise doc.err("accept_by_width", "width 1 and alpha1 both set the step acceptance: give one")
        try:
            alpha1, hard = fit(by, alpha1, flag=f"{doc.path}: {doc.where}.accept_by_width")
        except UserError as e:
            raise doc.err("accept_by_width", str(e).split(": ", 2)[-1]) from None
    return Synthetic(
        n_requests=doc.get("requests", int, 1, lo=1, hi=MAX_WORKLOAD),
        steps=doc.get("steps", int, 200, lo=1, hi=MAX_STEPS_PER_REQUEST),
        alpha1=alpha1,
        alpha2=doc.get("alpha2", float, 0.0, lo=0.0, hi=1.0), alpha_by_depth=abd,
        step_mean=doc.get("step_mean", float, 40.0, lo=1.0, hi=1e6), step_sigma=doc.get("step_sigma", float, 0.5, lo=0.0, hi=10.0),
        prompt_tokens=doc.get("prompt_tokens", int, 300, lo=0, hi=10_000_000), rate=doc.get("rate", float, None, lo=1e-9),
        rate_end=doc.get("rate_end", float, None, lo=1e-9),
        seed=doc.get("seed", int, seed, lo=0, hi=2**63 - 1), sibling_hard=hard,
        phase_alpha1=doc.get("phase_alpha1", float, None, lo=0.0, hi=1.0),
        phase_at=doc.get("phase_at", float, 0.5, lo=0.0, hi=1.0),
        accepted_length_hist=None if alh is None else tuple(alh))


def resolve_path(name: str) -> Path:
    """A path, or the name of a shipped scenario (with or without .toml)."""
    p = Path(name)
    if p.exists():
        return p
    shipped = resources.files(SHIPPED)
    for cand in (name, f"{name}.toml"):
        q = shipped / cand
        if q.is_file():
            return Path(str(q))
    names = sorted(f.name for f in shipped.iterdir() if f.name.endswith(".toml"))
    raise UserError(f"--scenario: no file {name!r} and no shipped scenario of that name "
                    f"(shipped: {', '.join(names)})")


def load(name: str, seed: int = 0) -> Config:
    path = resolve_path(name)
    try:
        data = limits.read_capped(path, limits.MAX_TEXT_FILE_BYTES, "scenario file")
        raw = tomllib.loads(data.decode("utf-8-sig"))  # -sig: a BOM is fine
    except tomllib.TOMLDecodeError as e:
        raise UserError(f"{path}: invalid TOML ({e})") from None
    except RecursionError:
        raise UserError(f"{path}: TOML nested too deeply to be a scenario") from None
    except UnicodeDecodeError as e:
        raise UserError(f"{path}: not a UTF-8 text file (byte {e.start}); scenarios are TOML") from None
    except ValueError:   # an integer of more than 4300 digits (Python's conversion limit)
        raise UserError(f"{path}: a number with more than 4300 digits; numbers must be in "
                        "range") from None
    except OSError as e:
        raise UserError(f"{path}: cannot read ({e.strerror or e})") from None
    doc = _Doc(path, raw)
    doc.check_keys({"name", "description", "devices", "models", "verifier", "sd", "workload", "policy"})
    devices = doc.get("devices", dict, required=True)
    if not devices:
        raise doc.err("devices", "must be a non-empty table of name = \"kind\"")
    for name, kind in devices.items():
        if not isinstance(kind, str):
            raise doc.err(f"devices.{name}", f"must be a string (the device kind), got {kind!r}")
    models = doc.sub("models", required=True)
    models.check_keys({"target", "draft", "judge"})
    target_doc = models.sub("target", required=True)
    target = _placement(target_doc, "target", devices)
    t1 = target.latency.per_token()
    if not (t1 > 0 and math.isfinite(t1)):  # every speedup is a ratio to it (c1 = draft / target)
        raise target_doc.err("latency", f"a target decode step takes {t1!r} s at batch 1; it must "
                                        "take a positive, finite time")
    draft = models.sub("draft")
    draft = _placement(draft, "draft", devices) if draft else None
    judge = models.sub("judge")
    judge = _placement(judge, "judge", devices) if judge else None
    v = doc.sub("verifier")
    verifier = VerifierCost()
    measured_on = {}
    if v is not None:
        v.check_keys({"kind", "seconds", "template_tokens", "measured_on", "note"})
        if "measured_on" in v.t:
            measured_on["verifier"] = v.get("measured_on", str)
        kind = v.get("kind", str, "none")
        if kind not in VERIFIER_KINDS:
            raise v.err("kind", f"must be one of {', '.join(VERIFIER_KINDS)}, got {kind!r}")
        if kind == "llm" and judge is None:
            raise v.err("kind", "'llm' needs [models.judge]")
        verifier = VerifierCost(kind, v.get("seconds", float, 0.0, lo=0.0, hi=86400.0),
                                v.get("template_tokens", int, 120, lo=0, hi=10_000_000))
    sd = doc.sub("sd")
    k2, sd_draft = 1, None
    if sd is not None:
        sd.check_keys({"k2", "drafter", "latency", "note"})
        k2 = sd.get("k2", int, 1, lo=1, hi=MAX_KNOB)
        drafter = sd.get("drafter", str, "ngram")
        if drafter == "model":
            sd_draft = _latency(sd.sub("latency", required=True), 1)
        elif drafter != "ngram":
            raise sd.err("drafter", f"must be 'ngram' or 'model', got {drafter!r}")
    pol = doc.sub("policy")
    cfg = Config(devices=dict(devices), target=target, draft=draft, judge=judge, verifier=verifier,
                 sd_draft=sd_draft, k2=k2, workload=_workload(doc.sub("workload"), seed),
                 name=doc.get("name", str, path.stem), source=str(path), measured_on=measured_on)
    if pol is not None:
        pol.check_keys({"name", "k1", "depth", "width", "k2", "equal_resources", "judge_timing",
                       "adaptive_scope", "note"})
        cfg.policy = pol.get("name", str, cfg.policy)
        if cfg.policy not in POLICIES:
            raise pol.err("name", f"must be one of {', '.join(POLICIES)}, got {cfg.policy!r}")
        cfg.k1 = pol.get("k1", int, cfg.k1, lo=1, hi=MAX_KNOB)
        cfg.depth = pol.get("depth", int, cfg.depth, lo=1, hi=MAX_KNOB)
        cfg.width = pol.get("width", int, cfg.width, lo=1, hi=MAX_KNOB)
        cfg.k2 = pol.get("k2", int, cfg.k2, lo=1, hi=MAX_KNOB)
        cfg.equal_resources = pol.get("equal_resources", bool, False)
        cfg.judge_timing = pol.get("judge_timing", str, cfg.judge_timing)
        if cfg.judge_timing not in JUDGE_TIMINGS:
            raise pol.err("judge_timing", f"must be one of {', '.join(JUDGE_TIMINGS)}, "
                                          f"got {cfg.judge_timing!r}")
        cfg.adaptive_scope = pol.get("adaptive_scope", str, cfg.adaptive_scope)
        if cfg.adaptive_scope not in ADAPTIVE_SCOPES:
            raise pol.err("adaptive_scope", f"must be one of {', '.join(ADAPTIVE_SCOPES)}, "
                                            f"got {cfg.adaptive_scope!r}")
        if cfg.policy.startswith("lr") and draft is None:
            raise models.err("draft", f"missing table (policy.name {cfg.policy!r} needs a draft model)")
    return cfg
