"""Per-run what-if overrides on top of a preset, scenario or profile: one published
setting, changed on the command line, needs no file.

    --alpha1 P              step acceptance per judged draft
    --alpha2 P              token-level (n-gram) acceptance per drafted token
    --verifier-seconds S    a constant judgement time, taken as measured on the planned
                            hardware: never rescaled by --device-kind
    --accept-by-width W:P,..  per-position step acceptance measured at tree widths (width.py):
                            sets alpha1 (from W = 1) and the sibling correlation
    --device-kind KIND      catalog.py (H100, H200, A100, L40S, B200, cpu-2core, or a device file)
    --target-model / --draft-model / --judge-model CONFIG   presets: a Hugging Face config.json
                            (file, model folder or shipped name) replaces the pair's model
    --target-tp N           presets: the target's tensor parallelism
    --max-num-seqs N|recorded  each engine runs at most N sequences per pass (vLLM's flag; more
                            wait for a slot); "recorded": a profile's engines as its traces ran
                            them (placement.max_num_seqs); unset: the simulator's 256

`WhatIf` is frozen and picklable: it travels to sweep and plan worker processes.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

from lrcore.errors import UserError
from lrcore.limits import MAX_NUM_SEQS


@dataclass(frozen=True)
class WhatIf:
    alpha1: float | None = None
    alpha2: float | None = None
    verifier_seconds: float | None = None
    accept_by_width: tuple = ()           # ((width, per-position acceptance), ...)
    device_kind: str | None = None
    target_model: str | None = None
    draft_model: str | None = None
    judge_model: str | None = None
    target_tp: int | None = None
    device_file: str | None = None
    max_num_seqs: int | str | None = None   # an int, or "recorded" (a profile's own caps)

    def __post_init__(self):
        for flag, v in (("--alpha1", self.alpha1), ("--alpha2", self.alpha2)):
            if v is not None and not (isinstance(v, (int, float)) and math.isfinite(v) and 0.0 <= v <= 1.0):
                raise UserError(f"{flag} must be in [0, 1], got {v}")
        v = self.verifier_seconds
        if v is not None and not (math.isfinite(v) and 0.0 <= v <= 86400.0):
            raise UserError(f"--verifier-seconds must be in [0, 86400] s, got {v}")
        if self.target_tp is not None and not 1 <= self.target_tp <= 4096:
            raise UserError(f"--target-tp must be in [1, 4096], got {self.target_tp}")
        n = self.max_num_seqs
        if n is not None and n != "recorded" and not (isinstance(n, int) and 1 <= n <= MAX_NUM_SEQS):
            raise UserError(f"--max-num-seqs must be a number in [1, {MAX_NUM_SEQS}] or 'recorded', got {n!r}")
        if self.accept_by_width and self.alpha1 is not None and any(w == 1 for w, _ in self.accept_by_width):
            raise UserError("--alpha1 and width 1 of --accept-by-width both set the step acceptance: give one")

    @classmethod
    def from_flags(cls, alpha1=None, alpha2=None, verifier_seconds=None, accept_by_width=None,
                   device_kind=None, target_model=None, draft_model=None, judge_model=None,
                   target_tp=None, device_file=None, max_num_seqs=None) -> "WhatIf":
        from . import width

        abw = tuple(sorted(width.parse(accept_by_width).items())) if accept_by_width else ()
        if isinstance(max_num_seqs, str) and max_num_seqs.strip().isascii() and max_num_seqs.strip().isdigit():
            max_num_seqs = int(max_num_seqs)
        return cls(alpha1, alpha2, verifier_seconds, abw, device_kind, target_model, draft_model,
                   judge_model, target_tp, device_file, max_num_seqs)

    @property
    def models(self) -> bool:
        return any(v is not None for v in (self.target_model, self.draft_model, self.judge_model,
                                           self.target_tp))

    def describe(self) -> dict:
        d = {k: v for k, v in asdict(self).items() if v not in (None, ())}
        if self.accept_by_width:
            d["accept_by_width"] = {str(w): p for w, p in self.accept_by_width}
        return d

    def _width(self, alpha1: float | None) -> tuple[float | None, float | None]:
        """(alpha1, sibling_hard) from --accept-by-width, or (alpha1, None) without it."""
        if not self.accept_by_width:
            return alpha1, None
        from . import width

        return width.fit(dict(self.accept_by_width), self.alpha1 if self.alpha1 is not None else alpha1)

    # --- presets: rebuilt, never rescaled ---------------------------------------------------------
    def apply_preset(self, p):
        from . import catalog, modelspec

        changes = {}
        if self.device_file is not None:
            changes["device_file"] = self.device_file
        if self.target_model is not None:
            changes["target"] = modelspec.load(self.target_model, "--target-model")
        if self.draft_model is not None:
            changes["draft"] = modelspec.load(self.draft_model, "--draft-model")
        if self.judge_model is not None:
            changes["judge"] = modelspec.load(self.judge_model, "--judge-model")
        if self.target_tp is not None:
            changes["target_tp"] = self.target_tp
        if self.alpha1 is not None:
            changes.update(alpha1_used=float(self.alpha1), alpha1_source="--alpha1")
        if self.alpha2 is not None:
            changes.update(alpha2=float(self.alpha2), alpha2_source="--alpha2")
        if self.verifier_seconds is not None:
            changes["verifier_seconds"] = float(self.verifier_seconds)
        if self.accept_by_width:
            a1, hard = self._width(changes.get("alpha1_used", p.alpha1))
            changes.update(alpha1_used=a1, sibling_hard=hard)
            if any(w == 1 for w, _ in self.accept_by_width):
                changes["alpha1_source"] = "--accept-by-width (width 1)"
        out = replace(p, **changes)
        if self.device_kind is not None:
            out = out.on_device(catalog.get(self.device_kind, self.device_file).name)
        if out.target_tp > 1:
            out.device().allreduce_s(1, out.target.hidden, out.target.layers, out.target_tp)
        return out

    def cap(self, cfg):
        """--max-num-seqs N on the target and draft engines of `cfg` (every source's config;
        "recorded" was a profile's own, given to Profile.to_config)."""
        return cfg.capped(self.max_num_seqs) if isinstance(self.max_num_seqs, int) else cfg

    # --- any other Config: workload overrides, bandwidth rescaling, then the verifier -------------
    def apply_config(self, cfg, kind: str | None = None):
        """Workload overrides on a synthetic workload; `kind` (or --device-kind) rescales what was
        not measured there (hardware.rescale); --verifier-seconds last, as measured on the
        final hardware."""
        from ..sim.verifier import VerifierCost
        from ..sim.workload import Synthetic
        from . import hardware as hw

        if self.models:
            raise UserError("--target-model/--draft-model/--judge-model/--target-tp apply to presets "
                            "(--preset): a scenario or profile carries its own latencies")
        wl = cfg.workload
        wants = {k: v for k, v in (("alpha1", self.alpha1), ("alpha2", self.alpha2)) if v is not None}
        if self.accept_by_width:
            a1, hard = self._width(getattr(wl, "alpha1", None))
            wants.update(alpha1=a1, sibling_hard=hard)
        if wants:
            if not isinstance(wl, Synthetic):
                raise UserError("--alpha1/--alpha2/--accept-by-width apply to synthetic workloads, not "
                                "to a trace workload (its verdicts are recorded)")
            if self.alpha2 is not None:   # the what-if acceptance replaces the measured lengths
                wants["accepted_length_hist"] = None
            if "alpha1" in wants:         # ... and the measured acceptance by depth, which a
                wants["alpha_by_depth"] = None   # profile's workload draws instead of alpha1
            if "sibling_hard" not in wants and cfg.width > 1:
                wants["sibling_hard"] = min(wl.sibling_hard, 1.0 - wants.get("alpha1", wl.alpha1))
            cfg.workload = replace(wl, **wants)
        target = kind or self.device_kind
        if target is not None:
            if cfg.ideal:
                raise UserError("--device-kind: the --ideal world has no hardware to change")
            cfg = hw.rescale(cfg, target, self.device_file)
        if self.verifier_seconds is not None:
            if cfg.ideal:
                raise UserError("--verifier-seconds: the --ideal world has no verifier cost")
            cfg.verifier = VerifierCost("constant", float(self.verifier_seconds))
            cfg.measured_on = {**cfg.measured_on, "verifier": hw.device_kind(cfg)}
        return cfg


NONE = WhatIf()
