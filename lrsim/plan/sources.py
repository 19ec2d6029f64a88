"""Where a plan's simulator configurations come from: a preset, a calibrated profile, a scenario.

Each source is small and picklable (it travels to worker processes and Ray tasks) and answers
`to_config(policy, k1=, depth=, width=, k2=, requests=, rate=, seed=) -> Config`, the interface
of a calibrated profile (`lrsim.calib.profile.Profile.to_config`). Every source carries the run's
what-if overrides (whatif.py) and, once the planner has chosen the hardware, the device kind
(`on_device`): a preset is rebuilt on that kind (measured table only where it applies, roofline
elsewhere); a scenario or profile is rescaled to it, except what was measured there.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from lrcore.errors import UserError

from . import presets
from .whatif import NONE, WhatIf

KNOBS = ("k1", "depth", "width", "k2", "requests", "rate", "steps", "seed")


@dataclass(frozen=True)
class _Source:
    """What every source shares: its label, "<noun> <name>", and what it carries: the run's what-if
    overrides and the device kind (`on_device`), keyword-only after the source's own fields."""
    noun = "source"   # a class attribute, not a field
    whatif: WhatIf = field(default=NONE, kw_only=True)
    kind: str | None = field(default=None, kw_only=True)

    def on_device(self, kind: str | None):
        """The source rebuilt or rescaled on `kind` (None: as it is)."""
        return replace(self, kind=kind) if kind else self

    @property
    def label(self) -> str:
        return f"{self.noun} {self.name}"


@dataclass(frozen=True)
class PresetSource(_Source):
    noun = "preset"
    name: str
    latency_file: str | None = None
    table1: str | None = None

    def preset(self):
        p = presets.with_latency_file(presets.get(self.name, self.table1), self.latency_file)
        p = self.whatif.apply_preset(p)
        return p.on_device(self.kind) if self.kind else p

    def to_config(self, policy, **knobs):
        return self.whatif.cap(self.preset().to_config(policy, **knobs))

    def latency_source(self) -> str:
        """Where the preset's latencies come on its device kind (Preset.latency_source)."""
        return self.preset().latency_source()

    def target_latency(self, tp: int, tp_efficiency: float | None = None):
        return self.preset().target_latency(tp, tp_efficiency)


@dataclass(frozen=True)
class ScenarioSource(_Source):
    noun = "scenario"
    name: str                  # a shipped scenario or a TOML file

    def to_config(self, policy, k1=None, depth=None, width=None, k2=None, requests=None, rate=None,
                  steps=None, seed=0):
        from ..sim.build import Options, build

        if policy == "lr-async":
            k1 = None
        else:
            depth = None
        cfg = build(Options(policy=policy, k1=k1, depth=depth, width=width, k2=k2, requests=requests,
                            rate=rate, steps=steps, seed=seed, scenario=self.name))
        return self.whatif.cap(self.whatif.apply_config(cfg, self.kind))


@dataclass(frozen=True)
class ProfileSource(_Source):
    noun = "profile"
    path: str

    @property
    def name(self) -> str:     # the label's second word
        return self.path

    @property
    def measured_tp_efficiency(self) -> float | None:
        """The equal-resources TP efficiency the profile's traces measured (None: not measured)."""
        from ..calib.profile import load_profile

        return load_profile(self.path).tp_efficiency

    def to_config(self, policy, **knobs):
        from ..calib.profile import load_profile

        knobs = {k: v for k, v in knobs.items() if v is not None}
        cfg = load_profile(self.path).to_config(policy, max_seqs=self.whatif.max_num_seqs, **knobs)
        return self.whatif.apply_config(cfg, self.kind)

    def unmeasured(self, modes, via: str = "") -> list[str]:
        """One note per acceptance the plan of `modes` prices without a measurement: a profile whose
        traces ran no SD has alpha2 None, which prices SD at 0 (every drafted token rejected); one
        whose traces judged no step prices LR at the neutral alpha1 0.5 (Profile.alpha1/alpha2).
        A what-if (--alpha2, --alpha1, --accept-by-width) gives the value instead: no note. `via`
        prefixes the flag the note names (`lr plot`, which has none: "lr plan ")."""
        from ..calib.profile import load_profile
        from .space import _uses_sd

        doc, w, notes = load_profile(self.path).doc, self.whatif, []
        if doc["sd"]["alpha2"] is None and w.alpha2 is None and any(_uses_sd(m) for m in modes):
            notes.append(f"{self.path} measured no SD acceptance (its traces ran no SD): the SD "
                         f"candidates are priced at alpha2 0, every drafted token rejected; {via}--alpha2 "
                         "sets one")
        # (--accept-by-width sets the step acceptance only with a width-1 entry: WhatIf)
        if (doc["step_acceptance"]["rate"] is None and w.alpha1 is None
                and not any(width == 1 for width, _ in w.accept_by_width)
                and any(m.startswith("lr") for m in modes)):
            notes.append(f"{self.path} measured no step acceptance (its traces judged no step): the "
                         f"LR candidates are priced at alpha1 0.5; {via}--alpha1 sets one")
        return notes

    def beyond_measured(self, rows: list[dict]) -> list[str]:
        """One note per engine (target, draft) and measured size whose simulated passes in the
        plan's `rows` (`max_batch`) held more sequences than any pass the profile measured for
        them: the latency entry each row runs with (`role@mode` where the profile has one, as
        Profile.latency picks), its `fit.ranges.sequences` or its largest batch factor, which a
        measured curve can extend. Past it a pass is priced by the fitted line's extrapolation.
        Calibrated on 1-2 requests in flight and held out at 3-8, that extrapolation was the
        replay's error on one CPU (docs/load.md, "Every load of a corpus of other depths, on the
        fourth CPU"). An entry without the range (a profile calibrated before it was recorded,
        `--latency-model table`): no note. A note says nothing of the prices inside the range."""
        from lrcore.modes import ADAPTIVE_MODES

        from ..calib.profile import load_profile

        latency, notes = load_profile(self.path).doc["latency"], []
        for role in ("target", "draft"):
            over: dict[float, list[tuple[int, str]]] = {}
            for r in rows:
                if role not in r.get("max_batch", {}):
                    continue
                mode = ADAPTIVE_MODES.get(r["mode"], r["mode"])
                entry = latency.get(f"{role}@{mode}") or latency.get(role) or {}
                seen = (entry.get("fit") or {}).get("ranges", {}).get("sequences")
                if seen is None:
                    continue
                held = max([seen[1]] + [b for b, _ in entry.get("batch_factors", [])])
                if r["max_batch"][role] > held:
                    over.setdefault(held, []).append((r["max_batch"][role], r["label"]))
            for held, big in sorted(over.items()):
                big.sort(reverse=True)
                names = ", ".join(lab for _, lab in big[:3]) + (f" and {len(big) - 3} more" if len(big) > 3 else "")
                notes.append(f"{self.path} measured {role} passes of at most {held:g} sequences; this plan "
                             f"prices {role} passes of up to {big[0][0]} ({names}), past {held:g} by the "
                             "fitted line's extrapolation: calibrate on traces whose passes reached that "
                             "size, a load sweep up to the planned load in the planned modes "
                             "(docs/calibration.md, 'Which loads to calibrate on')")
        return notes


def resolve(preset: str | None, profile: Path | None, scenario: str | None,
            latency: str | None = None, whatif: WhatIf = NONE, table1: str | None = None):
    given = [n for n, v in (("--preset", preset), ("--profile", profile), ("--scenario", scenario)) if v]
    if len(given) > 1:
        raise UserError(f"{' and '.join(given)} are exclusive: plan for one source")
    if latency not in (None, "auto", "roofline") and not Path(latency).is_file():
        raise UserError(f"--latency {latency}: no such file (or use 'auto' / 'roofline')")
    if latency not in (None, "auto") and preset is None and (profile or scenario):
        raise UserError("--latency applies to presets only (profiles and scenarios carry their own)")
    if whatif.models and preset is None and (profile or scenario):
        raise UserError("--target-model/--draft-model/--judge-model/--target-tp apply to presets "
                        "(--preset): a scenario or profile carries its own latencies")
    if whatif.max_num_seqs == "recorded" and profile is None:
        raise UserError("--max-num-seqs recorded: the caps a profile's traces ran with; a preset or "
                        "scenario records none (give a number)")
    if profile is not None:
        if not Path(profile).is_file():
            raise UserError(f"--profile {profile}: no such file")
        return ProfileSource(str(profile), whatif=whatif)
    if scenario is not None:
        from ..sim.scenario import resolve_path

        resolve_path(scenario)
        return ScenarioSource(scenario, whatif=whatif)
    name = preset or "r1-gsm8k"
    p = presets.get(name, table1)
    src = PresetSource(p.name, None if latency in (None, "auto") else latency, table1, whatif=whatif)
    src.preset()          # model files, device kind, TP checked now: one line, before any work
    return src
