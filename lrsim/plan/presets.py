"""The paper's setups as presets built from published facts.

One preset per Table 1 setting: 2 model pairs (DeepSeek-R1-Distill-Qwen 32B/1.5B, Qwen3 32B/1.7B)
x 7 data sets (GSM8K, AIME24, AMC23, HumanEval, LiveCodeBench, GPQA, MT-Bench), read from
`lrsim/data/table1.json`, which says where every number comes from and which are assumed (the
reference lists 4 of the 14 rows; docs/planning.md). Hardware as in the paper: target TP=2, draft
and a Qwen2.5-7B judge one GPU each, vLLM, n-gram token-level SD with 8 speculative tokens.

Nothing is fitted to Table 1's LR or LR+SD speedups. Inputs: model shapes (their config.json,
lrsim/data/models/), the device (catalog.py: datasheets), the paper's judge latency, Table 1's step
acceptance, and the n-gram per-token acceptance implied by Table 1's SD speedups (the paper
publishes none: `implied_alpha2`).

Latency per model: the shipped table measured on the preset's device (lrsim/data/latency/:
H100 and H200, docs/gpu-latency-profile.md) where it has this model at this TP, plus its
modelled all-reduce and our engine overhead; the device roofline (modelspec.roofline) elsewhere.

The judge: 0.013 s per judgement, measured on H200 (the paper, arXiv 2506.19830). It is used as
given on H200; on another device its roofline part (a prefill of the two steps and the judge
template plus one decoded token) is priced on that device and the rest (HTTP, scheduling: 13 ms
minus the H200 roofline's 7.4 ms) kept: 16.1 ms on H100. A verifier time given by the user
(`--verifier-seconds`) is taken as measured on the planned hardware and never rescaled.

KV cache per engine, as vLLM sizes it (lrsim/sim/kvcache.kv_from_memory): 0.9
(gpu_memory_utilization) x the memory of the engine's devices less the model's weights, in tokens
of 2 x layers x KV heads x head dim x dtype bytes; a shared placement splits what is left after
all three models' weights. `kv_cache = False` plans with an unlimited cache.

A preset behaves like a calibrated profile: `to_config(policy, **knobs) -> Config`.
"""
from __future__ import annotations

import functools
import json
import math
import os
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path

from lrcore.errors import UserError

from ..sim.config import Config, Placement
from ..sim.kvcache import GPU_MEMORY_UTILIZATION, KVSpec, kv_from_memory
from ..sim.latency import Scaled
from ..sim.verifier import JUDGE_TEMPLATE_TOKENS, VerifierCost
from ..sim.workload import Synthetic
from . import catalog, modelspec
from .modelspec import ENGINE_OVERHEAD_MS, TP_EFFICIENCY, ModelSpec
from .width import PAPER_WIDTH_ACCEPTANCE, fit

JUDGE_MODEL = "qwen2.5-7b-instruct"   # the paper's default judge (arXiv 2506.19830)
JUDGE_SECONDS = 0.013           # paper: 7B judge latency per step ...
JUDGE_MEASURED_ON = "H200"      # ... measured on H200 (arXiv 2506.19830)
NGRAM_SPEC_TOKENS = 8           # paper's n-gram SD setting -> k2 = 9 positions per verify pass
LR_DEPTH = 4                    # the reference implementation's default max_depth
STEP_MEAN = 45.0                # tokens per step: R1/Qwen3 paragraphs, capped at 100 by the reference
TABLE1_FILE = "table1.json"
# Per-position acceptance 0.63 (W=1) -> 0.83 (W=8) (the paper's width ablation, arXiv 2506.19830)
# implies this sibling correlation
SIBLING_HARD = fit(PAPER_WIDTH_ACCEPTANCE)[1]


@dataclass(frozen=True)
class PaperRow:
    """Table 1 of the paper: step acceptance and measured single-stream speedups (None: not in
    this repository's reference)."""
    alpha1: float | None
    lr: float | None
    sd: float | None
    lr_sd: float | None


def implied_alpha2(sd_speedup: float, k2: int = NGRAM_SPEC_TOKENS + 1) -> float:
    """The n-gram per-token acceptance alpha2 whose closed form g(k2) with c2 = 0 (paper Sec. 3.3
    eq. 2; prompt lookup drafts for free) equals a measured SD speedup."""
    from scipy.optimize import brentq

    from ..theory.formulas import sd_speedup as g

    if not 1.0 < sd_speedup < k2:
        raise UserError(f"an SD speedup of {sd_speedup} cannot come from k2 = {k2} positions")
    return float(brentq(lambda a: float(g(a, 0.0, k2)) - sd_speedup, 1e-12, 1 - 1e-12, xtol=1e-12))


@dataclass(frozen=True)
class Preset:
    name: str
    pair: str                   # label, e.g. "R1-Distill 32B/1.5B"
    dataset: str                # label, e.g. "GSM8K"
    target: ModelSpec
    draft: ModelSpec
    paper: PaperRow
    steps: int                  # reasoning steps per answer ("\n\n"-separated, typical length below)
    alpha1_used: float | None = None    # None: paper.alpha1
    alpha2: float = 0.3
    alpha1_source: str = "Table 1"
    alpha2_source: str = "assumed"
    step_mean: float = STEP_MEAN
    step_sigma: float = 0.6     # lognormal spread of step lengths
    prompt_tokens: int = 200    # chat template + problem statement
    judge: ModelSpec | None = None
    device_kind: str = "H100"
    target_tp: int = 2
    latency_file: str | None = None   # None: the shipped table measured on device_kind where it
    #                                   applies; "roofline": never; else a table path
    sibling_hard: float = SIBLING_HARD
    verifier_seconds: float | None = None   # None: the paper's judge, priced for device_kind
    tp_efficiency: float = TP_EFFICIENCY
    device_file: str | None = None
    key: tuple = ()             # (pair key, dataset key) in table1.json
    kv_cache: bool = True       # size each engine's KV cache from device memory (False: unlimited)
    memory_utilisation: float = GPU_MEMORY_UTILIZATION   # vLLM's gpu_memory_utilization default

    @property
    def alpha1(self) -> float:
        return self.alpha1_used if self.alpha1_used is not None else self.paper.alpha1

    # --- hardware and latency --------------------------------------------------------------------
    def device(self) -> catalog.Device:
        return catalog.get(self.device_kind, self.device_file)

    def on_device(self, kind: str | None) -> "Preset":
        """The same setting on another device kind: latencies rebuilt there (measured table
        only where it applies), never rescaled from another device."""
        if kind is None or catalog.canonical(kind) == self.device_kind:
            return self
        dev = catalog.get(kind, self.device_file)
        return replace(self, device_kind=dev.name)

    def _table(self) -> str | None:
        if self.latency_file == "roofline":
            return None
        return self.latency_file or "auto"

    def _judge(self) -> ModelSpec:
        return self.judge or modelspec.load(JUDGE_MODEL)

    def _built(self):
        dev, t = self.device(), self._table()
        return (modelspec.latency(self.target, dev, self.target_tp, t, self.tp_efficiency),
                modelspec.latency(self.draft, dev, 1, t, self.tp_efficiency),
                modelspec.latency(self._judge(), dev, 1, t, self.tp_efficiency))

    def latency_source(self) -> str:
        built = self._built()
        srcs = [b.source for b in built]
        over = f"{ENGINE_OVERHEAD_MS:g} ms engine overhead"
        if all(s.startswith("measured") for s in srcs):
            return f"{srcs[0]} + modelled all-reduce + {over}"
        d = self.device()
        roof = (f"roofline ({d.name}: {d.hbm_tb_s:g} TB/s x {d.efficiency:g}, {d.bf16_tflops:g} "
                f"TFLOP/s, all-reduce over {d.link_gb_s or 0:g} GB/s) + {over}")
        if all(s.startswith("roofline") for s in srcs):
            return roof
        return "; ".join(f"{role}: {s}" for role, s in zip(("target", "draft", "judge"), srcs)) + f" + {over}"

    def target_latency(self, tp: int, tp_efficiency: float | None = None):
        """The target at another TP degree (equal-resources baseline). Roofline: rebuilt from
        hardware facts (the fixed engine overhead and all-reduce latency are not divided by TP).
        Measured table: the measured curve less the engine overhead, times the roofline's TP
        ratio; tp_efficiency: bandwidth kept per doubling of TP (the fairness what-if)."""
        eff = self.tp_efficiency if tp_efficiency is None else tp_efficiency
        dev = self.device()
        built = modelspec.latency(self.target, dev, self.target_tp, self._table(), eff)
        if built.source.startswith("roofline"):
            return modelspec.roofline(self.target, dev, tp, eff)
        oh = ENGINE_OVERHEAD_MS / 1e3
        at = modelspec.roofline(self.target, dev, tp, eff).per_token() - oh
        here = modelspec.roofline(self.target, dev, self.target_tp, eff).per_token() - oh
        return Scaled(built.latency, at / here, oh)

    def kv(self, spec: ModelSpec, devices: int) -> KVSpec | None:
        """The KV cache of `spec`'s engine on `devices` devices of this preset's kind."""
        if not self.kv_cache:
            return None
        d = self.device()
        return kv_from_memory(d.memory_gib, devices, spec.weight_gib(1), spec.kv_bytes_per_token,
                              self.memory_utilisation,
                              what=f"preset {self.name}: {spec.name} on {devices}x {d.name}")

    def judge_seconds(self) -> float:
        """Seconds per judgement on this preset's device (see the module docstring)."""
        if self.verifier_seconds is not None:
            return self.verifier_seconds
        if self.device_kind == JUDGE_MEASURED_ON:
            return JUDGE_SECONDS
        tokens = JUDGE_TEMPLATE_TOKENS + int(2 * self.step_mean)
        j = self._judge()
        src = catalog.get(JUDGE_MEASURED_ON)
        return (JUDGE_SECONDS - modelspec.judgement_roofline_s(j, src, tokens)
                + modelspec.judgement_roofline_s(j, self.device(), tokens))

    # --- profile interface -----------------------------------------------------------------------
    def to_config(self, policy: str = "lr-async", k1: int | None = None, depth: int | None = None,
                  width: int = 1, k2: int | None = None, requests: int = 1, rate: float | None = None,
                  steps: int | None = None, seed: int = 0, **unknown) -> Config:
        """The paper's hardware and this dataset's workload; k2 defaults to the paper's n-gram SD
        (9 positions) for `sd`, 1 otherwise (pass k2 for LR+SD)."""
        if unknown:
            raise UserError(f"preset {self.name}: unknown knob(s) {', '.join(sorted(unknown))}")
        tgt, drf, jdg = (b.latency for b in self._built())
        tdev = [f"gpu{i}" for i in range(self.target_tp)]
        devices = {d: self.device_kind for d in tdev + ["gpu-draft", "gpu-judge"]}
        depth = depth if depth is not None else (max(1, k1 - 1) if k1 else LR_DEPTH)
        k1 = k1 if k1 is not None else depth + 1
        width = width or 1
        if k2 is None:
            k2 = NGRAM_SPEC_TOKENS + 1 if policy == "sd" else 1
        hard = min(self.sibling_hard, 1.0 - self.alpha1) if width > 1 else 0.0
        wl = Synthetic(n_requests=requests or 1, steps=steps or self.steps, alpha1=self.alpha1,
                       alpha2=self.alpha2, step_mean=self.step_mean, step_sigma=self.step_sigma,
                       prompt_tokens=self.prompt_tokens, rate=rate, seed=seed, sibling_hard=hard)
        cfg = Config(policy=policy, k1=k1, depth=depth, width=width, k2=k2, devices=devices,
                     target=Placement(self.target.hf_id or self.target.name, tgt, tdev, tp=self.target_tp,
                                      kv=self.kv(self.target, self.target_tp)),
                     draft=Placement(self.draft.hf_id or self.draft.name, drf, ["gpu-draft"],
                                     kv=self.kv(self.draft, 1)),
                     judge=Placement(self._judge().hf_id or JUDGE_MODEL, jdg, ["gpu-judge"],
                                     kv=self.kv(self._judge(), 1)),
                     verifier=VerifierCost("constant", self.judge_seconds()), workload=wl,
                     name=f"preset:{self.name}")
        # every latency above is for device_kind itself: hardware rescaling leaves them as given
        cfg.measured_on = {r: self.device_kind for r in ("target", "draft", "judge", "verifier")}
        return cfg.validate()

    def describe(self) -> dict:
        return {"name": self.name, "pair": self.pair, "dataset": self.dataset,
                "target": self.target.hf_id, "draft": self.draft.hf_id, "judge": self._judge().hf_id,
                "hardware": f"{self.target_tp + 2}x {self.device_kind} (target TP={self.target_tp}, "
                            f"draft 1, judge 1)",
                "alpha1": self.alpha1, "alpha1_source": self.alpha1_source,
                "alpha2": self.alpha2, "alpha2_source": self.alpha2_source,
                "steps": self.steps, "step_mean": self.step_mean,
                "verifier_s": self.judge_seconds(), "sd_k2": NGRAM_SPEC_TOKENS + 1,
                "sibling_hard": self.sibling_hard, "latency": self.latency_source(),
                "kv_cache_tokens": None if not self.kv_cache else {
                    "target": self.kv(self.target, self.target_tp).capacity_tokens,
                    "draft": self.kv(self.draft, 1).capacity_tokens},
                "paper": {"alpha1": self.paper.alpha1, "lr": self.paper.lr, "sd": self.paper.sd,
                          "lr+sd": self.paper.lr_sd}}


# --- the 14 settings -------------------------------------------------------------------------------

def _read_table1(path: str | None) -> dict:
    from lrcore.limits import MAX_TEXT_FILE_BYTES, read_capped

    p = Path(path) if path else Path(str(resources.files("lrsim") / "data" / TABLE1_FILE))
    try:
        doc = json.loads(read_capped(p, MAX_TEXT_FILE_BYTES, "Table 1 file"))
        assert isinstance(doc["pairs"], dict) and isinstance(doc["datasets"], dict)
        assert isinstance(doc["rows"], list)
        return doc
    except (OSError, ValueError, KeyError, TypeError, AssertionError, RecursionError) as e:
        raise UserError(f"{p}: not a Table 1 file like lrsim/data/{TABLE1_FILE} ({e!r})") from None


def _prob(v, where: str) -> float | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 < v < 1.0:
        raise UserError(f"{where}: must be a probability in (0, 1) or null, got {v!r}")
    return float(v)


def _speed(v, where: str) -> float | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not (math.isfinite(v) and 0 < v < 100):
        raise UserError(f"{where}: must be a speedup in (0, 100) or null, got {v!r}")
    return float(v)


def build_presets(path: str | None = None) -> dict[str, Preset]:
    """The presets of a Table 1 file (default: the shipped lrsim/data/table1.json)."""
    try:  # cached per file version: an edited file is read again
        st = os.stat(path) if path else None
    except OSError:
        st = None
    return _build_presets(path, (st.st_mtime_ns, st.st_size) if st else None)


@functools.lru_cache(maxsize=8)
def _build_presets(path: str | None, version) -> dict[str, Preset]:
    doc = _read_table1(path)
    where = path or f"lrsim/data/{TABLE1_FILE}"
    rows = []
    for i, r in enumerate(doc["rows"]):
        at = f"{where}: rows[{i}]"
        if not isinstance(r, dict) or r.get("pair") not in doc["pairs"] or r.get("dataset") not in doc["datasets"]:
            raise UserError(f"{at}: needs a 'pair' and a 'dataset' declared in 'pairs' / 'datasets'")
        rows.append((r, PaperRow(_prob(r.get("alpha1"), f"{at}.alpha1"), _speed(r.get("lr"), f"{at}.lr"),
                                 _speed(r.get("sd"), f"{at}.sd"), _speed(r.get("lr+sd"), f"{at}.lr+sd"))))
    presets = {}
    for pk, pair in doc["pairs"].items():
        mine = [(r, p) for r, p in rows if r["pair"] == pk]
        known_a1 = [p.alpha1 for _, p in mine if p.alpha1 is not None]
        mean_a1 = sum(known_a1) / len(known_a1) if known_a1 else None

        def tokens(ds):
            return float(doc["datasets"][ds]["answer_tokens"][pk])
        known_a2 = sorted((math.log(tokens(r["dataset"])), implied_alpha2(p.sd)) for r, p in mine if p.sd)
        for r, p in mine:
            ds = doc["datasets"][r["dataset"]]
            name = f"{pk}-{r['dataset']}"
            if p.alpha1 is not None:
                a1, a1_src = p.alpha1, "Table 1"
            elif mean_a1 is not None:
                a1, a1_src = mean_a1, "assumed: mean of the pair's published rows"
            else:
                raise UserError(f"{where}: pair {pk!r} has no row with a published alpha1 to assume from")
            if p.sd:
                a2, a2_src = implied_alpha2(p.sd), "implied by Table 1's SD speedup"
            elif known_a2:
                a2, a2_src = _interp(math.log(tokens(r["dataset"])), known_a2), \
                    "assumed: interpolated by answer length"
            else:
                a2, a2_src = 0.3, "assumed: 0.3 (no SD speedup published for the pair)"
            steps = max(1, round(tokens(r["dataset"]) / STEP_MEAN))
            presets[name] = Preset(
                name, pair["label"], ds["label"], modelspec.load(pair["target"], "table1 pair target"),
                modelspec.load(pair["draft"], "table1 pair draft"), p, steps, alpha1_used=a1, alpha2=a2,
                alpha1_source=a1_src, alpha2_source=a2_src, key=(pk, r["dataset"]))
    return presets


def _interp(x: float, pts: list[tuple[float, float]]) -> float:
    """Linear in x between the known points, clamped to their range."""
    if x <= pts[0][0]:
        return pts[0][1]
    if x >= pts[-1][0]:
        return pts[-1][1]
    for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
        if x0 <= x <= x1:
            return y0 + (y1 - y0) * (x - x0) / (x1 - x0) if x1 > x0 else y0
    return pts[-1][1]


PRESETS = build_presets()
ALIASES = {"livecodebench": "lcb", "aime": "aime24", "amc": "amc23", "mt-bench": "mtbench",
           "human-eval": "humaneval"}


def get(name: str, table1: str | None = None) -> Preset:
    presets = build_presets(table1) if table1 else PRESETS
    if name not in presets:
        pair, _, ds = name.partition("-")
        alias = f"{pair}-{ALIASES.get(ds, ds)}"
        if alias in presets:
            return presets[alias]
        raise UserError(f"--preset: unknown preset {name!r} (shipped: {', '.join(presets)})")
    return presets[name]


def with_latency_file(preset: Preset, path: str | None) -> Preset:
    return replace(preset, latency_file=path) if path else preset

