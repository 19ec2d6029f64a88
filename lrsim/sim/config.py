"""What one simulation runs: policy and its knobs, hardware and placement, workload.

`Config.ideal(...)` builds the theory's world (`--ideal`): free batching up to M, zero verifier
cost, equal step costs, i.i.d. acceptance; time is then measured in target iterations (one token
of the target = 1 time unit, one target step = IDEAL_STEP_TOKENS units).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from lrcore.errors import UserError

from ..theory.formulas import geometric_sum
from .kvcache import KVSpec
from .latency import Ideal, LatencyModel, Scaled
from .verifier import VerifierCost
from .workload import Synthetic

IDEAL_STEP_TOKENS = 32        # equal steps under --ideal; long enough for k2 <= 32 SD rounds
POLICIES = ("ar", "sd", "lr-sync", "lr-async", "lr-stage", "lr-adaptive")
JUDGE_TIMINGS = ("eager", "deferred")
ADAPTIVE_SCOPES = ("request", "run")


@dataclass
class Placement:
    name: str
    latency: LatencyModel
    devices: list[str]
    tp: int = 1                   # tensor-parallel degree the latency model was measured/derived at
    max_seqs: int = 256           # vLLM's default max_num_seqs
    contention: float = 0.0       # fractional slowdown of this model's forward pass while another
    #                               model runs a pass on other devices of the same machine (shared
    #                               memory bandwidth); 0 on GPUs
    kv: KVSpec | None = None      # KV-cache capacity of this model's engine; None = unlimited
    #                               (the simulator before KV was modelled)


@dataclass
class Config:
    policy: str = "lr-async"
    k1: int = 2                   # lr-sync / lr-stage: target steps in parallel (drafts + 1)
    depth: int = 4                # lr-async: drafts ahead of the committed root (reference default 4)
    width: int = 1                # lr-async: sibling drafts per node
    judge_timing: str = "eager"   # lr-async: judge a draft as soon as it and its parent's target
    #                               step exist, as the reference does ("deferred": only once its
    #                               parent is the root); a trace workload replays its recorded one
    k2: int = 1                   # token-level SD positions per verification pass (1 = off)
    # a new engine request's first target pass, which prefills, samples one token and verifies
    # no proposal (vLLM proposes from a pass's output, so a request's first pass has none); off:
    # that pass is one of the job's SD rounds, as the simulator has always priced it (opt-in, a
    # diagnosis of lr+sd's replayed passes: bench_load.py / bench_replay_passes.py
    # --sd-plain-first-pass, docs/load.md)
    sd_plain_first_pass: bool = False
    ideal: bool = False
    budget: float = math.inf      # M: free batching up to M positions (--ideal only)
    devices: dict[str, str] = field(default_factory=dict)   # name -> kind
    target: Placement | None = None
    draft: Placement | None = None
    judge: Placement | None = None
    sd_draft: LatencyModel | None = None   # token-level drafter per pass; None = n-gram (free)
    verifier: VerifierCost = field(default_factory=VerifierCost)
    workload: object = field(default_factory=Synthetic)
    equal_resources: bool = False  # AR/SD baseline gets the draft's and judge's devices as TP
    tp_efficiency: float = 0.9     # per doubling of TP (all-reduce cost); used by equal resources
    stage_c1: float | None = None  # lr-stage threshold ratio; None = from the latency models
    # lr-adaptive: the decision rule's knobs (lrcore.adaptive.AdaptiveConfig); None = its defaults
    # bounded by this config: depths 0..depth, widths 1..width, k2 1, k2 or 3, 5 below it
    # (policies/lr_adaptive.py)
    adaptive: object | None = None
    # lr-adaptive: what one Estimator serves. "request": one per request, sharing the run's step
    # costs (a request follows its own acceptance and its phase changes: the paper presets' long
    # requests); "run": one for every request, acceptance included, its price checked against the
    # commits (Estimator.observe_paid), as the real backend's (lrreal/scheduler/lr_adaptive.py:
    # its ~5-step answers are too short to learn alone)
    adaptive_scope: str = "request"
    name: str = "flags"
    source: str = ""               # the scenario file this came from (named in errors)
    # role ("target", "draft", "judge", "sd_draft", "verifier") -> device kind its latency was
    # measured or derived on; unnamed roles: the kind of `devices`. Hardware rescaling
    # (lrsim/plan/hardware.py) leaves what was measured on the new kind as given.
    measured_on: dict[str, str] = field(default_factory=dict)
    # a streaming run (lrsim/sim/stream.py: each finished request folded into fixed-size
    # accumulators and dropped; percentiles from a sketch): True, False, or None = automatic,
    # streaming only `simulate` runs of more than STREAM_AUTO_REQUESTS requests
    stream: bool | None = None

    def validate(self) -> "Config":
        if self.policy not in POLICIES:
            raise UserError(f"--policy must be one of {', '.join(POLICIES)}, got {self.policy!r}")
        for flag, v in (("--k1", self.k1), ("--depth", self.depth), ("--width", self.width),
                        ("--k2", self.k2)):
            if not isinstance(v, int) or v < 1:
                raise UserError(f"{flag} must be an integer >= 1, got {v!r}")
        if self.stream not in (None, True, False):
            raise UserError(f"stream must be true, false or unset (automatic), got {self.stream!r}")
        if self.judge_timing not in JUDGE_TIMINGS:
            raise UserError(f"judge_timing must be one of {', '.join(JUDGE_TIMINGS)}, "
                            f"got {self.judge_timing!r}")
        if self.adaptive_scope not in ADAPTIVE_SCOPES:
            raise UserError(f"adaptive_scope must be one of {', '.join(ADAPTIVE_SCOPES)}, "
                            f"got {self.adaptive_scope!r}")
        if self.policy == "sd" and self.k2 < 2:
            raise UserError("--k2 must be >= 2 for --policy sd (k2 = drafted tokens + 1)")
        where = self.source or "scenario"
        if self.target is None:
            raise UserError(f"{where}: models.target: a target model placement is required")
        if self.policy.startswith("lr") and self.draft is None:
            raise UserError(f"{where}: models.draft: policy {self.policy} needs a draft model placement")
        names = set(self.devices)
        for p in (self.target, self.draft, self.judge):
            if p is not None:
                for d in p.devices:
                    if d not in names:
                        raise UserError(f"{where}: model {p.name!r} is placed on unknown device {d!r}")
                c = p.contention
                if not (isinstance(c, (int, float)) and not isinstance(c, bool) and math.isfinite(c)
                        and c >= 0):
                    raise UserError(f"{where}: model {p.name!r}: contention must be a finite number "
                                    f">= 0, got {c!r}")
        return self

    @property
    def c1(self) -> float:
        """Draft/target time of one step for a single sequence (ratio of per-token latencies)."""
        if self.stage_c1 is not None:
            return self.stage_c1
        if self.draft is None:
            return 0.0
        return self.draft.latency.per_token() / self.target.latency.per_token()

    def widened(self) -> "Config":
        """The target alone on its devices plus the draft's and judge's (extra TP; equal
        resources). Latency (less the fixed per-iteration overhead) scales by
        tp/tp' / tp_efficiency^log2(tp'/tp)."""
        cfg = replace(self)
        extra = [d for p in (self.draft, self.judge) if p is not None for d in p.devices
                 if d not in self.target.devices]
        extra = list(dict.fromkeys(extra))
        if extra and not self.ideal:
            tp_new = self.target.tp + len(extra)
            ratio = tp_new / self.target.tp
            factor = (1.0 / ratio) / (self.tp_efficiency ** math.log2(ratio))
            lat = self.target.latency
            kv = self.target.kv.widened(self.target.tp, tp_new) if self.target.kv else None
            cfg.target = replace(self.target, latency=Scaled(lat, factor, getattr(lat, "overhead_s", 0.0)),
                                 devices=self.target.devices + extra, tp=tp_new, kv=kv)
            cfg.draft = cfg.judge = None
        return cfg

    def effective(self) -> "Config":
        """What actually runs: with equal resources, ar and sd (which use neither the draft
        model nor the judge) run the target on all the devices."""
        if self.equal_resources and self.policy in ("ar", "sd"):
            return self.widened()
        return self

    def capped(self, max_seqs: int) -> "Config":
        """This config with its target and draft engines taking at most `max_seqs` sequences a
        pass (vLLM's --max-num-seqs: `lr simulate`, `lr plan`)."""
        for role in ("target", "draft"):
            if getattr(self, role) is not None:
                setattr(self, role, replace(getattr(self, role), max_seqs=max_seqs))
        return self

    def baseline(self) -> "Config":
        """AR on the same hardware (with equal resources: on all the devices)."""
        cfg = replace(self, policy="ar", k2=1)
        return cfg.widened() if self.equal_resources else cfg

    @classmethod
    def ideal_setup(cls, policy: str, alpha1: float, c1: float, k1: int = 2, depth: int = 4,
                    width: int = 1, k2: int = 1, alpha2: float = 0.0, c2: float = 0.0,
                    steps: int = 200, requests: int = 1, seed: int = 0, budget: float = math.inf,
                    rate: float | None = None) -> "Config":
        """The theory's assumptions. c1 is relative to the target's step time *with* SD inside
        it (the product h = f g treats the SD-accelerated target as the step-level target):
        draft time per token = c1 (1 + (k2-1) c2) / m, m = tokens per SD round."""
        use_sd = k2 > 1 and policy != "ar"
        m = float(geometric_sum(alpha2, k2)) if use_sd else 1.0
        sd_cost = (1.0 + (k2 - 1) * c2) if use_sd else 1.0
        wl = Synthetic(n_requests=requests, steps=steps, alpha1=alpha1, alpha2=alpha2,
                       step_mean=IDEAL_STEP_TOKENS, step_sigma=0.0, prompt_tokens=0, rate=rate,
                       seed=seed)
        return cls(policy=policy, k1=k1, depth=depth, width=width, k2=k2, ideal=True, budget=budget,
                   devices={"gpu-target": "ideal", "gpu-draft": "ideal"},
                   target=Placement("target", Ideal(1.0, budget), ["gpu-target"]),
                   draft=Placement("draft", Ideal(c1 * sd_cost / m), ["gpu-draft"]),
                   sd_draft=Ideal(c2) if c2 > 0 else None, workload=wl, stage_c1=c1,
                   name="ideal").validate()
