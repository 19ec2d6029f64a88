"""The paper's setups as presets built from published facts (issue 5, "Fidelity").

One preset per (model pair, dataset) of the paper's Table 1 (method.md): DeepSeek-R1-Distill-Qwen
32B/1.5B and Qwen3 32B/1.7B on H100s, target TP=2, draft and Qwen2.5-7B judge one GPU each, vLLM,
n-gram token-level SD with 8 speculative tokens. Nothing here is fitted to Table 1's speedups: the
inputs are model sizes (public configs), H100 datasheet bandwidth, the paper's measured judge
latency (0.013 s per step, H200) and the paper's step acceptance per dataset. The speedups the
simulator predicts from them are compared with Table 1 in `compare_table1` (docs/planning.md says
where and why they differ).

Latency: a measured GPU table `lrsim/data/latency/h100_paper_models.json` when one is installed
(docs/gpu-latency-profile.md; pure-torch forward passes: the 32B targets are measured per TP
shard, so the file's modelled all-reduce and our engine overhead are added), otherwise a bandwidth roofline (model bytes / achieved HBM
bandwidth per decode iteration + a fixed engine overhead). `Preset.latency_source()` says which.

A preset behaves like a calibrated profile: `to_config(policy, **knobs) -> Config`.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path

from ..errors import UserError
from ..sim.config import Config, Placement
from ..sim.latency import Roofline, Scaled, Tabulated
from ..sim.verifier import VerifierCost
from ..sim.workload import Synthetic

H100_HBM_TB_S = 3.35            # H100 SXM HBM3 (NVIDIA datasheet)
BANDWIDTH_EFFICIENCY = 0.8      # achieved / peak HBM bandwidth of a decode GEMV (typical 75-85%)
TP_EFFICIENCY = 0.9             # per doubling of TP: all-reduce cost (same as the simulator's default)
ENGINE_OVERHEAD_MS = 2.0        # vLLM scheduling + sampling per iteration (assumption, h100-paper.toml)
JUDGE_SECONDS = 0.013           # paper: 7B judge latency per step, measured on H200 (method.md)
NGRAM_SPEC_TOKENS = 8           # paper's n-gram SD setting -> k2 = 9 positions per verify pass
NGRAM_ALPHA2 = 0.3              # per-token n-gram acceptance (theory.md: ~0.3; not published per set)
LR_DEPTH = 4                    # the reference implementation's default max_depth
MEASURED_FILE = "h100_paper_models.json"


@dataclass(frozen=True)
class ModelFacts:
    name: str                   # Hugging Face id
    params_b: float             # parameters (billions) read per decode step
    kv_bytes_per_token: int     # 2 (K,V) x layers x KV heads x head dim x 2 bytes
    measured_key: str           # model name in the GPU latency table (benchmarks/gpu_latency_profile.py)


R1_32B = ModelFacts("deepseek-ai/DeepSeek-R1-Distill-Qwen-32B", 32.76, 2 * 64 * 8 * 128 * 2, "r1-distill-qwen-32b-tp2")
R1_1_5B = ModelFacts("deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B", 1.78, 2 * 28 * 2 * 128 * 2, "r1-distill-qwen-1.5b")
QWEN3_32B = ModelFacts("Qwen/Qwen3-32B", 32.76, 2 * 64 * 8 * 128 * 2, "qwen3-32b-tp2")
QWEN3_1_7B = ModelFacts("Qwen/Qwen3-1.7B", 2.03, 2 * 28 * 8 * 128 * 2, "qwen3-1.7b")
JUDGE_7B = ModelFacts("Qwen/Qwen2.5-7B-Instruct", 7.62, 2 * 28 * 4 * 128 * 2, "qwen2.5-7b-instruct")


@dataclass(frozen=True)
class PaperRow:
    """Table 1 of the paper (method.md): step acceptance and measured single-stream speedups."""
    alpha1: float
    lr: float
    sd: float
    lr_sd: float


@dataclass(frozen=True)
class Preset:
    name: str
    pair: str
    dataset: str
    target: ModelFacts
    draft: ModelFacts
    paper: PaperRow
    steps: int                  # reasoning steps per answer ("\n\n"-separated, typical length below)
    step_mean: float = 45.0     # tokens per step: R1/Qwen3 paragraphs, capped at 100 by the reference
    step_sigma: float = 0.6     # lognormal spread of step lengths
    prompt_tokens: int = 200    # chat template + problem statement
    alpha2: float = NGRAM_ALPHA2
    judge: ModelFacts = JUDGE_7B
    device_kind: str = "H100"
    target_tp: int = 2
    latency_file: str | None = None   # None: the shipped measured table when present, else roofline;
                                      # "roofline": force the bandwidth roofline; else a table path

    @property
    def alpha1(self) -> float:
        return self.paper.alpha1

    # --- latency ---------------------------------------------------------------------------------
    def _measured_path(self) -> Path | None:
        if self.latency_file == "roofline":
            return None
        if self.latency_file:
            return Path(self.latency_file)
        try:
            p = resources.files("lrsim") / "data" / "latency" / MEASURED_FILE
            return Path(str(p)) if p.is_file() else None
        except (ModuleNotFoundError, FileNotFoundError):
            return None

    def _measured(self):
        path = self._measured_path()
        if path is None:
            return None
        table = load_gpu_table(path)
        keys = (self.target.measured_key, self.draft.measured_key, self.judge.measured_key)
        return table if all(k in table for k in keys) else None

    def latency_source(self) -> str:
        return (f"measured H100 table ({self._measured_path().name}) + modelled all-reduce + "
                f"{ENGINE_OVERHEAD_MS:g} ms engine overhead") if self._measured() else \
            f"roofline (HBM bandwidth x {BANDWIDTH_EFFICIENCY} + {ENGINE_OVERHEAD_MS:g} ms engine overhead)"

    def _latencies(self):
        table = self._measured()
        if table is not None:
            return table[self.target.measured_key], table[self.draft.measured_key], table[self.judge.measured_key]
        return tuple(_roofline(m, tp) for m, tp in ((self.target, self.target_tp), (self.draft, 1), (self.judge, 1)))

    def target_latency(self, tp: int, tp_efficiency: float = TP_EFFICIENCY):
        """The target at another TP degree (equal-resources baseline). Roofline: rebuilt from
        hardware facts, so the fixed engine overhead is not divided by TP. Measured table (TP=2
        only): the measured TP=2 curve times the roofline's TP ratio. tp_efficiency: achieved
        bandwidth kept per doubling of TP (all-reduce, imbalance); the key what-if of a fair
        comparison."""
        table = self._measured()
        if table is None:
            return _roofline(self.target, tp, tp_efficiency)
        ratio = _roofline(self.target, tp, tp_efficiency).per_token() / \
            _roofline(self.target, self.target_tp, tp_efficiency).per_token()
        return Scaled(table[self.target.measured_key], ratio)

    # --- profile interface -----------------------------------------------------------------------
    def to_config(self, policy: str = "lr-async", k1: int | None = None, depth: int | None = None,
                  width: int = 1, k2: int | None = None, requests: int = 1, rate: float | None = None,
                  steps: int | None = None, seed: int = 0, **unknown) -> Config:
        """The paper's hardware and this dataset's workload; k2 defaults to the paper's n-gram SD
        (9 positions) for `sd`, 1 otherwise (pass k2 for LR+SD)."""
        if unknown:
            raise UserError(f"preset {self.name}: unknown knob(s) {', '.join(sorted(unknown))}")
        tgt, drf, jdg = self._latencies()
        tdev = [f"gpu{i}" for i in range(self.target_tp)]
        devices = {d: self.device_kind for d in tdev + ["gpu-draft", "gpu-judge"]}
        depth = depth if depth is not None else (max(1, k1 - 1) if k1 else LR_DEPTH)
        k1 = k1 if k1 is not None else depth + 1
        if k2 is None:
            k2 = NGRAM_SPEC_TOKENS + 1 if policy == "sd" else 1
        wl = Synthetic(n_requests=requests, steps=steps or self.steps, alpha1=self.alpha1,
                       alpha2=self.alpha2, step_mean=self.step_mean, step_sigma=self.step_sigma,
                       prompt_tokens=self.prompt_tokens, rate=rate, seed=seed)
        return Config(policy=policy, k1=k1, depth=depth, width=width, k2=k2, devices=devices,
                      target=Placement(self.target.name, tgt, tdev, tp=self.target_tp),
                      draft=Placement(self.draft.name, drf, ["gpu-draft"]),
                      judge=Placement(self.judge.name, jdg, ["gpu-judge"]),
                      verifier=VerifierCost("constant", JUDGE_SECONDS), workload=wl,
                      name=f"preset:{self.name}").validate()

    def describe(self) -> dict:
        return {"name": self.name, "pair": self.pair, "dataset": self.dataset,
                "target": self.target.name, "draft": self.draft.name, "judge": self.judge.name,
                "hardware": f"{self.target_tp + 2}x {self.device_kind} (target TP={self.target_tp}, "
                            f"draft 1, judge 1)",
                "alpha1": self.alpha1, "alpha2": self.alpha2, "steps": self.steps,
                "step_mean": self.step_mean, "verifier_s": JUDGE_SECONDS,
                "sd_k2": NGRAM_SPEC_TOKENS + 1, "latency": self.latency_source(),
                "paper": {"alpha1": self.paper.alpha1, "lr": self.paper.lr, "sd": self.paper.sd,
                          "lr+sd": self.paper.lr_sd}}


def load_gpu_table(path: Path) -> dict[str, Tabulated]:
    """benchmarks/gpu_latency_profile.py output -> Tabulated per model, with what the pure-torch
    timing leaves out added back: the modelled TP all-reduce of each entry ('allreduce_ms_model')
    and the engine's per-iteration overhead (scheduling + sampling)."""
    try:
        doc = json.loads(Path(path).read_text())
        out = {}
        for name, m in doc["models"].items():
            def ms(r):
                return (float(r["ms"]) + float(r.get("allreduce_ms_model", 0.0))) / 1e3
            dec = [(float(r["batch"]) * float(r.get("query", 1)), float(r.get("context", 0)), ms(r))
                   for r in m["decode"]]
            pre = [(float(r["tokens"]), ms(r)) for r in m.get("prefill", [])]
            out[name] = Tabulated(dec, pre, name=f"{Path(path).name}:{name}",
                                  overhead_s=ENGINE_OVERHEAD_MS / 1e3)
        return out
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise UserError(f"{path}: not a GPU latency table ({e!r}); see docs/gpu-latency-profile.md") from None


def _roofline(m: ModelFacts, tp: int, tp_efficiency: float = TP_EFFICIENCY) -> Roofline:
    return Roofline.from_hardware(params=m.params_b * 1e9, bytes_per_param=2.0, tp=tp,
                                  hbm_bytes_per_s=H100_HBM_TB_S * 1e12,
                                  kv_bytes_per_token=m.kv_bytes_per_token,
                                  bandwidth_efficiency=BANDWIDTH_EFFICIENCY, tp_efficiency=tp_efficiency,
                                  overhead_s=ENGINE_OVERHEAD_MS / 1e3)


# Typical answer lengths (tokens) of these models, divided by step_mean: GSM8K ~1,600 tokens,
# AIME24 ~11,000 (R1-Distill-32B) / ~12,500 (Qwen3-32B, thinking mode).
PRESETS = {p.name: p for p in (
    Preset("r1-gsm8k", "R1-Distill 32B/1.5B", "GSM8K", R1_32B, R1_1_5B, PaperRow(0.63, 1.71, 1.39, 2.11), steps=36),
    Preset("r1-aime24", "R1-Distill 32B/1.5B", "AIME24", R1_32B, R1_1_5B, PaperRow(0.47, 1.36, 1.53, 1.82), steps=240),
    Preset("qwen3-gsm8k", "Qwen3 32B/1.7B", "GSM8K", QWEN3_32B, QWEN3_1_7B, PaperRow(0.50, 1.32, 1.32, 1.68), steps=36),
    Preset("qwen3-aime24", "Qwen3 32B/1.7B", "AIME24", QWEN3_32B, QWEN3_1_7B, PaperRow(0.43, 1.12, 1.40, 1.49), steps=280),
)}


def get(name: str) -> Preset:
    if name not in PRESETS:
        raise UserError(f"--preset: unknown preset {name!r} (shipped: {', '.join(PRESETS)})")
    return PRESETS[name]


def with_latency_file(preset: Preset, path: str | None) -> Preset:
    return replace(preset, latency_file=path) if path else preset
