"""Flags -> Config: the one place where CLI/sweep options are applied to a scenario or the ideal world."""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

from lrcore.errors import UserError
from lrcore.limits import MAX_NUM_SEQS

from .config import POLICIES, Config
from .kvcache import BLOCK_TOKENS, KVSpec
from .latency import Scaled
from .workload import Synthetic

DEFAULT_SCENARIO = "h100-paper"
# Upper limits on what one simulation may ask for: far above any real setting, low enough that
# the workload arrays fit in memory and a typo (--steps 1e20, --width 1e9) fails at once.
MAX_KNOB = 1024            # --k1, --depth, --width, --k2
MAX_TREE = 1 << 16         # lr-async target positions: 1 + W + ... + W^depth
MAX_WORKLOAD = 1_000_000   # --requests, --steps (per request)
MAX_REPLICAS = 4096        # --replicas: a fleet of thousands of GPUs at a few per replica
MAX_KV_TOKENS = 1 << 50    # --kv-cache-tokens: far above any device's memory


@dataclass(kw_only=True)   # 21 fields: built by name only, so none can land in another's place
class Options:
    policy: str | None = None
    alpha1: float | None = None
    c1: float | None = None
    k1: int | None = None
    depth: int | None = None
    width: int | None = None
    k2: int | None = None
    alpha2: float | None = None
    c2: float | None = None
    ideal: bool = False
    budget: float | None = None
    requests: int | None = None
    rate: float | None = None
    steps: int | None = None
    seed: int = 0
    scenario: str | None = None
    equal_resources: bool = False
    preset: str | None = None      # a paper preset instead of a scenario (lrsim/plan/presets.py)
    whatif: object | None = None   # lrsim.plan.whatif.WhatIf: verifier seconds, width acceptance,
    #                                device kind (and models for presets), applied last
    kv_cache_tokens: int | None = None   # the target engine's KV cache in tokens (None: the
    #                                      scenario's or preset's, unlimited if it has none)
    max_num_seqs: int | None = None  # sequences per pass of the target and draft engines
    #                                  (Placement.max_seqs; None: the scenario's or preset's)
    stream: bool | None = None     # streaming summaries (Config.stream; None = automatic)
    adaptive_scope: str | None = None   # lr-adaptive's Estimator per request or run
    #                                     (Config.adaptive_scope; None: the scenario's)


def _check(o: Options) -> None:
    if o.policy is not None and o.policy not in POLICIES:
        raise UserError(f"--policy must be one of {', '.join(POLICIES)}, got {o.policy!r}")
    for flag, v in (("--alpha1", o.alpha1), ("--c1", o.c1), ("--alpha2", o.alpha2), ("--c2", o.c2)):
        if v is not None and not (math.isfinite(v) and 0.0 <= v <= 1.0):
            raise UserError(f"{flag} must be in [0, 1], got {v}")
    for flag, v in (("--k1", o.k1), ("--depth", o.depth), ("--width", o.width), ("--k2", o.k2),
                    ("--requests", o.requests), ("--steps", o.steps)):
        if v is not None and v < 1:
            raise UserError(f"{flag} must be >= 1, got {v}")
        top = MAX_WORKLOAD if flag in ("--requests", "--steps") else MAX_KNOB
        if v is not None and v > top:
            raise UserError(f"{flag} must be <= {top}, got {v}")
    if o.rate is not None and not (o.rate > 0 and math.isfinite(o.rate)):
        raise UserError(f"--rate must be > 0 requests/s, got {o.rate}")
    if o.budget is not None and not o.budget >= 1:  # written so that NaN is refused too
        raise UserError(f"--budget must be >= 1 (inf = unlimited), got {o.budget}")
    if o.k1 is not None and o.depth is not None:
        raise UserError("--k1 and --depth are exclusive (lr-async: k1 = depth + 1 target steps in flight)")
    if o.seed < 0:
        raise UserError(f"--seed must be >= 0, got {o.seed}")
    if o.kv_cache_tokens is not None:
        if o.ideal:
            raise UserError("--kv-cache-tokens does not apply to --ideal (the theory's free batching)")
        if not BLOCK_TOKENS <= o.kv_cache_tokens <= MAX_KV_TOKENS:
            raise UserError(f"--kv-cache-tokens must be in [{BLOCK_TOKENS}, {MAX_KV_TOKENS}] (at least "
                            f"one block), got {o.kv_cache_tokens}")
    if o.max_num_seqs is not None:
        if o.ideal:
            raise UserError("--max-num-seqs does not apply to --ideal (the theory's free batching)")
        if not 1 <= o.max_num_seqs <= MAX_NUM_SEQS:
            raise UserError(f"--max-num-seqs must be in [1, {MAX_NUM_SEQS}], got {o.max_num_seqs}")


def _check_tree(cfg: Config) -> Config:
    """lr-async holds up to 1 + W + ... + W^depth target positions: refuse trees too big to run."""
    size, level = 1, 1
    for _ in range(cfg.depth):
        level *= cfg.width
        size += level
        if size > MAX_TREE:
            raise UserError(f"--width {cfg.width} with --depth {cfg.depth}: the draft tree would hold "
                            f"more than {MAX_TREE} target positions")
    return cfg


def _k1_depth(o: Options) -> tuple[int | None, int | None]:
    """--k1 and --depth name the same knob: k1 target steps in parallel = depth drafts + 1."""
    if o.k1 is not None:
        return o.k1, max(1, o.k1 - 1)
    if o.depth is not None:
        return o.depth + 1, o.depth
    return None, None


def build(o: Options) -> Config:
    _check(o)
    k1, depth = _k1_depth(o)
    if o.preset is not None and (o.scenario is not None or o.ideal):
        raise UserError("--preset, --scenario and --ideal are exclusive: simulate one source")
    if o.ideal:
        if o.alpha1 is None or o.c1 is None:
            raise UserError("--ideal needs --alpha1 and --c1 (the theory's parameters)")
        if o.scenario is not None:
            raise UserError("--ideal and --scenario are exclusive (--ideal replaces the hardware)")
        cfg = _check_tree(Config.ideal_setup(
            o.policy or "lr-async", o.alpha1, o.c1, k1=k1 or 2, depth=depth or 4, width=o.width or 1,
            k2=o.k2 or 1, alpha2=o.alpha2 or 0.0, c2=o.c2 or 0.0, steps=o.steps or 2000,
            requests=o.requests or 1, seed=o.seed, budget=o.budget or math.inf, rate=o.rate))
        cfg.stream = o.stream
        _scope(o, cfg)
        return o.whatif.apply_config(cfg) if o.whatif is not None else cfg
    if o.preset is not None:
        cfg = _preset_config(o, k1, depth)
    else:
        from . import scenario as scenario_mod
        cfg = scenario_mod.load(o.scenario or DEFAULT_SCENARIO, seed=o.seed)
    if o.policy:
        cfg.policy = o.policy
    if k1 is not None:
        cfg.k1, cfg.depth = k1, depth
    if o.width is not None:
        cfg.width = o.width
    if o.k2 is not None:
        cfg.k2 = o.k2
    if o.c1 is not None:
        if cfg.draft is None:
            raise UserError("--c1 needs a draft model in the scenario")
        cur = cfg.c1
        cfg.draft = replace(cfg.draft, latency=Scaled(cfg.draft.latency, o.c1 / cur if cur else 1.0))
    if o.c2 is not None:
        cfg.sd_draft = Scaled(cfg.target.latency, o.c2) if o.c2 > 0 else None
    cfg.equal_resources = o.equal_resources or cfg.equal_resources
    wl = cfg.workload
    if isinstance(wl, Synthetic):
        changes = {k: v for k, v in (("alpha1", o.alpha1), ("alpha2", o.alpha2), ("n_requests", o.requests),
                                     ("steps", o.steps), ("rate", o.rate)) if v is not None}
        if o.seed:
            changes["seed"] = o.seed
        if o.rate is not None:          # --rate: a constant rate, in place of a scenario's ramp
            changes["rate_end"] = None
        if o.alpha2 is not None:        # the what-if acceptance replaces the measured lengths
            changes["accepted_length_hist"] = None
        cfg.workload = replace(wl, **changes)
    elif any(v is not None for v in (o.alpha1, o.alpha2, o.steps, o.requests, o.rate)):
        raise UserError("--alpha1/--alpha2/--steps/--requests/--rate apply to synthetic workloads, "
                        "not to the scenario's trace workload")
    if o.whatif is not None and o.preset is None:
        cfg = o.whatif.apply_config(cfg)
    if o.kv_cache_tokens is not None:
        cfg.target = replace(cfg.target, kv=KVSpec(o.kv_cache_tokens // BLOCK_TOKENS * BLOCK_TOKENS))
    if o.max_num_seqs is not None:
        cfg = cfg.capped(o.max_num_seqs)
    cfg.stream = o.stream
    _scope(o, cfg)
    return _check_tree(cfg.validate())


def _scope(o: Options, cfg: Config) -> None:
    """--adaptive-scope onto the Config: only lr-adaptive has an Estimator to scope."""
    if o.adaptive_scope is None:
        return
    if cfg.policy != "lr-adaptive":
        raise UserError(f"--adaptive-scope applies to --policy lr-adaptive, not {cfg.policy}")
    cfg.adaptive_scope = o.adaptive_scope


def _preset_config(o: Options, k1, depth) -> Config:
    """A paper preset (lrsim/plan/presets.py) with the run's knobs; its what-ifs (models, device
    kind, verifier seconds, width acceptance, alpha1/alpha2) rebuild it rather than rescale it."""
    from dataclasses import replace as _replace

    from ..plan import presets
    from ..plan.whatif import NONE

    wi = o.whatif if o.whatif is not None else NONE
    wi = _replace(wi, alpha1=o.alpha1 if o.alpha1 is not None else wi.alpha1,
                  alpha2=o.alpha2 if o.alpha2 is not None else wi.alpha2)
    p = wi.apply_preset(presets.get(o.preset))
    return p.to_config(o.policy or "lr-async", k1=k1, depth=depth, width=o.width or 1, k2=o.k2,
                       requests=o.requests or 1, rate=o.rate, steps=o.steps, seed=o.seed)
