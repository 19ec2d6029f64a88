"""A calibration profile: what `lr calibrate` measured, in a form the simulator runs.

    prof = load_profile("profile.json")              # validated (UserError names file + field)
    cfg = prof.to_config("lr", depth=2)              # -> lrsim.sim.config.Config, ready to run
    save_profile(prof, "copy.json")                  # indented, stable key order

The file is JSON, versioned (`profile_version`, see schema.py), human-readable, and records the
traces (paths + sha256) and hardware it was fitted from. Sections (docs/calibration.md):
latency (per engine role, optionally per mode), verifier, steps, step_acceptance, sd, overheads,
placement. Policy names: simulator names (ar, sd, lr-sync, lr-async, lr-stage) or the trace modes
(ar, sd, lr, lr+sd, lr-sync: lrcore/modes.py MODE_POLICY; not accept, the acceptance protocol,
which is a measurement of alpha1 and has no simulated policy). alpha1() is the acceptance
protocol's estimate when the profile was calibrated from accept-mode records
(step_acceptance.source "accept").
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from lrcore import jsonin
from lrcore.errors import UserError
from lrcore.modes import ADAPTIVE_MODES, SIM_MODE_POLICY, latency_mode
from lrcore.profile_schema import PROFILE_VERSION, SCHEMA

from ..sim.config import POLICIES, Config, Placement
from ..sim.kvcache import KVSpec
from ..sim.latency import LatencyModel, Tabulated
from ..sim.verifier import VerifierCost
from ..sim.workload import Synthetic
from .models import FittedRoofline

DEFAULT_K2 = 7          # vLLM n-gram SD with 6 speculative tokens (the repo default) -> 7 positions


def latency_from_doc(doc: dict, name: str = "latency") -> LatencyModel:
    """One `latency.<role>` entry -> a LatencyModel (the doc is already schema-valid)."""
    if doc["kind"] == "roofline":
        keys = ("base_s", "knee_tokens", "per_token_s", "prefill_per_token_s", "per_ctx_token_s",
                "overhead_s", "per_seq_s")
        return FittedRoofline(**{k: float(doc[k]) for k in keys if k in doc},
                              position_factors=tuple(map(tuple, doc.get("position_factors", ()))),
                              batch_factors=tuple(map(tuple, doc.get("batch_factors", ()))))
    dec = [(float(b), float(c), float(ms) / 1e3) for b, c, ms in doc["decode"]]
    pre = [(float(t), float(ms) / 1e3) for t, ms in doc.get("prefill", [])]
    return Tabulated(dec, pre, name=name)


@dataclass
class Profile:
    doc: dict
    path: str | None = None
    _models: dict = field(default_factory=dict, repr=False)

    # --- accessors -------------------------------------------------------------------------
    @property
    def shared(self) -> bool:
        return bool(self.doc["placement"]["shared"])

    @property
    def tp_efficiency(self) -> float | None:
        """The equal-resources baseline's TP efficiency measured on these traces (equal.py)."""
        eq = self.doc["placement"].get("equal_resources")
        return float(eq["tp_efficiency"]) if eq else None

    def has(self, role: str) -> bool:
        return role in self.doc["latency"]

    def latency(self, role: str, mode: str | None = None) -> LatencyModel:
        """The latency model of `role`; `role@mode` when the profile has one for that mode."""
        lat = self.doc["latency"]
        key = f"{role}@{mode}" if mode and f"{role}@{mode}" in lat else role
        if key not in lat:
            raise UserError(f"{self.path or 'profile'}: field latency.{role}: missing (the traces "
                            f"had no {role} engine; calibrate from traces of an LR mode)")
        if key not in self._models:
            self._models[key] = latency_from_doc(lat[key], f"{self.path or 'profile'}:{key}")
        return self._models[key]

    def max_num_seqs(self, role: str) -> int | None:
        """The engine's vLLM --max-num-seqs as its traces ran it (placement.max_num_seqs, calib/seqs.py;
        None: a profile calibrated before it was kept)."""
        return (self.doc["placement"].get("max_num_seqs") or {}).get(role)

    def _seqs(self, role: str, max_seqs: int | str | None) -> dict:
        """Placement's max_seqs for `role`: a number, "recorded" (max_num_seqs), None: its default."""
        if max_seqs == "recorded":
            cap = self.max_num_seqs(role)
            if cap is None:
                raise UserError(f"{self.path or 'profile'}: field placement.max_num_seqs.{role}: missing "
                                "(calibrated before the engines' cap was kept): re-run `lr calibrate`, "
                                "or give --max-num-seqs a number")
            return {"max_seqs": cap}
        return {"max_seqs": int(max_seqs)} if max_seqs else {}

    def contention(self, role: str, mode: str | None = None) -> float:
        """Fractional slowdown of `role`'s passes while the other engine runs (physical.py)."""
        lat = self.doc["latency"]
        key = f"{role}@{mode}" if mode and f"{role}@{mode}" in lat else role
        return float((lat.get(key) or {}).get("contention", 0.0))

    def rescaled(self, factors: dict, why: str = "", contention: dict | None = None) -> "Profile":
        """A copy whose latency models run `factors[role] = (f_dec, f_pre)` times slower: decode
        terms (weights, extra positions, context) by f_dec, prefill by f_pre; and whose
        `contention[role]` (rescale.contention_scales) scales that engine's slowdown beside the
        other. How a probe of the machine today (or before a record) carries a profile to that
        speed."""
        import copy

        contention = contention or {}
        doc = copy.deepcopy(self.doc)
        applied = {}
        for key, lat in doc["latency"].items():
            role = key.split("@", 1)[0]
            if role in contention and "contention" in lat:
                lat["contention"] = float(lat["contention"]) * contention[role]
                applied[role] = contention[role]
            if role not in factors or lat["kind"] != "roofline":
                continue
            f_dec, f_pre = factors[role]
            # memory-bound terms (the weight and KV reads) follow the decode probe; the compute
            # per query token (prefill, and extra decode positions) follows the prefill probe
            for k, f in (("base_s", f_dec), ("per_ctx_token_s", f_dec), ("overhead_s", f_dec),
                         ("per_token_s", f_pre), ("prefill_per_token_s", f_pre), ("per_seq_s", f_pre)):
                if k in lat:
                    lat[k] = float(lat[k]) * f
        doc["rescaled"] = {"factors": {r: {"decode": f[0], "prefill": f[1]} for r, f in factors.items()},
                           "why": why}
        if applied:
            doc["rescaled"]["contention"] = applied
        return Profile(doc, self.path)

    def kv(self, role: str) -> KVSpec | None:
        """The engine's KV cache (kv_cache.<role>; None: unlimited). A fixed space, as vLLM-CPU
        gives it: more cores (equal resources) do not enlarge it."""
        e = (self.doc.get("kv_cache") or {}).get(role)
        if e is None:
            return None
        return KVSpec(int(e["capacity_tokens"]), int(e["block_tokens"]), per_device=False)

    def verifier_cost(self, per_step: bool = True) -> VerifierCost:
        """The measured verifier latency, plus the per-step scheduling gap (the simulator's only
        hook between a target step's end and the next launch is the verdict delay)."""
        v = self.doc["verifier"]
        extra = float(self.doc["overheads"].get("per_step_s", 0.0)) if per_step else 0.0
        if v["kind"] == "per_token":
            return VerifierCost("per_token", float(v["seconds"]))
        secs = (float(v["seconds"]) if v["kind"] == "constant" else 0.0) + extra
        return VerifierCost("constant" if secs > 0 else "none", secs)

    def alpha_by_depth(self) -> list[float] | None:
        by = {int(d): pa for d, pa in self.doc["step_acceptance"]["by_depth"].items() if pa[0] > 0}
        if not by:
            return None
        out, last = [], None
        for d in range(1, max(by) + 1):
            if d in by:
                last = by[d][1] / by[d][0]
            out.append(last if last is not None else self.alpha1())
        return out

    def alpha1(self) -> float:
        r = self.doc["step_acceptance"]["rate"]
        return 0.5 if r is None else float(r)

    def alpha2(self) -> float:
        a = self.doc["sd"]["alpha2"]
        return 0.0 if a is None else float(a)

    def sd_lengths(self) -> tuple[int, ...] | None:
        """The measured accepted-length histogram of SD's proposals (None: none recorded), which
        the workload draws from instead of Geometric(alpha2) (lrsim/sim/tokensd.py)."""
        h = self.doc["sd"].get("accepted_length_hist") or []
        return tuple(int(c) for c in h) if len(h) > 1 and sum(h) > 0 else None

    def sd_hit(self) -> float:
        """P(an SD round carries a proposal); 1 for profiles without the measurement."""
        h = self.doc["sd"].get("proposal_rate")
        return 1.0 if not h else float(h)

    def workload(self, requests: int = 1, steps: int | None = None, rate: float | None = None,
                 seed: int = 0, sd_lengths: bool = False) -> Synthetic:
        """A synthetic workload with the profile's step lengths, acceptance and prompt size;
        `sd_lengths`: SD draws the profile's accepted-length histogram instead of Geometric(alpha2)
        (opt-in: it did not move the plan, benchmarks/results/plan_gap_histogram.md)."""
        s = self.doc["steps"]
        # runs that stopped on an output budget: requests as long as the budget (unless --steps)
        budget = s.get("budget_tokens") if steps is None else None
        return Synthetic(n_requests=requests, steps=steps or max(1, round(s["steps_per_request"])),
                         max_tokens=budget,
                         alpha1=self.alpha1(), alpha2=self.alpha2(), sd_hit=self.sd_hit(),
                         accepted_length_hist=self.sd_lengths() if sd_lengths else None,
                         alpha_by_depth=self.alpha_by_depth(), step_mean=float(s["mean_tokens"]),
                         step_sigma=float(s["lognormal_sigma"]),
                         prompt_tokens=int(round(s["prompt_tokens"])),
                         prompt_cached=int(round(s.get("prompt_cached_tokens", 0.0))),
                         draft_prompt_cached=(None if s.get("draft_prompt_cached_tokens") is None
                                              else int(round(s["draft_prompt_cached_tokens"]))),
                         # traces whose LR runs mostly never drafted after the prompt
                         draft_first=(s.get("first_step_drafted") is None or s["first_step_drafted"] >= 0.5),
                         rate=rate, seed=seed)

    # --- the simulator configuration -------------------------------------------------------
    def to_config(self, policy: str, *, k1: int | None = None, depth: int | None = None,
                  width: int | None = None, k2: int | None = None, workload=None,
                  requests: int = 1, steps: int | None = None, rate: float | None = None,
                  seed: int = 0, shared: bool | None = None, equal_resources: bool = False,
                  per_step_overhead: bool = True, max_seqs: int | str | None = None,
                  judge_timing: str | None = None) -> Config:
        """A ready-to-run Config. `policy`: a simulator policy or a trace mode. Knobs left None
        take the values the traces were recorded with (placement.defaults; a profile without a
        judge timing was calibrated from deferred runs). `shared` overrides
        the measured placement (True: draft and target time-share one device). `max_seqs`: each
        engine's sequences per pass, a number or "recorded" (as the traces ran them,
        max_num_seqs()); None keeps the simulator's 256, vLLM's default (opt-in: the recorded
        cap changes every plan past it, docs/load.md "The engines' sequence cap")."""
        mode = policy if policy in SIM_MODE_POLICY else None
        if mode is not None:
            sim_policy, uses_sd = SIM_MODE_POLICY[mode]
        elif policy in POLICIES:
            sim_policy, uses_sd = policy, policy == "sd"
        else:
            raise UserError(f"policy must be one of {', '.join(sorted(set(POLICIES) | set(SIM_MODE_POLICY)))}, "
                            f"got {policy!r}")
        defaults = self.doc["placement"].get("defaults", {})
        depth = depth or int(defaults.get("depth", 4))
        k2 = k2 or (int(self.doc["sd"]["k2"]) if uses_sd else 1)
        if uses_sd and k2 < 2:
            k2 = DEFAULT_K2
        if k1 is None:
            k1 = depth + 1          # lr-sync: `--depth` drafted steps per cycle + the target's
        share = self.shared if shared is None else shared
        kind = self.doc["placement"].get("device_kind", "device")
        lat_mode = ADAPTIVE_MODES.get(mode, mode) or latency_mode(sim_policy)   # adaptive: its static mode's
        needs_draft = sim_policy.startswith("lr")
        target = Placement("target", self.latency("target", lat_mode), ["dev0"],
                           contention=self.contention("target", lat_mode), kv=self.kv("target"),
                           **self._seqs("target", max_seqs))
        draft = None
        devices = {"dev0": kind}
        if needs_draft:
            dev = "dev0" if share else "dev1"
            devices[dev] = kind
            draft = Placement("draft", self.latency("draft", lat_mode), [dev],
                              contention=self.contention("draft", lat_mode), kv=self.kv("draft"),
                              **self._seqs("draft", max_seqs))
        cfg = Config(policy=sim_policy, k1=k1, depth=depth, width=width or int(defaults.get("width", 1)),
                     judge_timing=judge_timing or str(defaults.get("judge_timing", "deferred")),
                     k2=k2, devices=devices, target=target, draft=draft,
                     verifier=self.verifier_cost(per_step_overhead),
                     workload=workload if workload is not None else self.workload(requests, steps, rate, seed),
                     equal_resources=equal_resources, name=self.doc.get("name", "profile"))
        if self.tp_efficiency is not None:   # measured (equal.py), else the Config default
            cfg.tp_efficiency = self.tp_efficiency
        return cfg.validate()

    def summary(self) -> dict:
        """The headline numbers (for tables and --json)."""
        lat = {k: {"kind": v["kind"], **({"fit": v["fit"]} if "fit" in v else {})}
               for k, v in self.doc["latency"].items()}
        out = {"profile_version": self.doc["profile_version"], "latency": lat,
               "verifier_s": self.doc["verifier"]["seconds"], "alpha1": self.doc["step_acceptance"]["rate"],
               "alpha2": self.doc["sd"]["alpha2"], "step_mean_tokens": self.doc["steps"]["mean_tokens"],
               "overheads": {k: v for k, v in self.doc["overheads"].items() if not isinstance(v, dict)},
               "shared": self.shared}
        if self.doc.get("kv_cache"):
            out["kv_cache_tokens"] = {r: e["capacity_tokens"] for r, e in self.doc["kv_cache"].items()}
        if self.has("draft"):
            out["c1"] = self.latency("draft").per_token() / self.latency("target").per_token()
        proto = self.doc["step_acceptance"].get("accept")
        if proto:  # alpha1 measured by the acceptance protocol: with its 95% interval
            out["alpha1_source"] = "accept"
            out["alpha1_ci95"] = proto.get("ci95")
            out["alpha1_judged"] = proto.get("judged")
            out["alpha1_by_verifier_dataset"] = proto.get("groups", [])
        return out


# --- files ---------------------------------------------------------------------------------
def _field(err) -> str:
    path = ".".join(str(p) for p in err.absolute_path)
    key = None
    if err.validator == "required":
        key = next((m for m in err.validator_value if m not in (err.instance or {})), None)
    elif err.validator in ("additionalProperties", "unevaluatedProperties"):
        key = next(iter(re.findall(r"'([^']*)'", err.message)), None)  # the (first) unknown key
    elif err.validator == "propertyNames":
        key = str(err.instance)
    if key:
        path = f"{path}.{key}" if path else key
    return path or "(top level)"


def validate_doc(doc, where: str = "profile") -> dict:
    import jsonschema

    if not isinstance(doc, dict):
        raise UserError(f"{where}: a profile must be a JSON object")
    v = doc.get("profile_version")
    if v != PROFILE_VERSION:
        raise UserError(f"{where}: field profile_version: this toolkit reads version "
                        f"{PROFILE_VERSION}, found {v!r} (re-run `lr calibrate`)")
    errors = sorted(jsonschema.Draft202012Validator(SCHEMA).iter_errors(doc),
                    key=lambda e: (len(list(e.absolute_path)), str(list(e.absolute_path))))
    if errors:
        # An entry whose own checks fail also reports its keys as "unevaluated": name the cause.
        errors = [e for e in errors if e.validator != "unevaluatedProperties"] or errors
        e = jsonschema.exceptions.best_match(errors)
        msg = {"required": "missing", "additionalProperties": "unknown field (a typo?)",
               "unevaluatedProperties": "unknown field (a typo?)"}.get(e.validator, e.message)
        raise UserError(f"{where}: field {_field(e)}: {' '.join(msg.split())[:200]}")
    bad = _non_finite(doc)
    if bad is not None:
        raise UserError(f"{where}: field {bad}: is infinite, NaN or beyond 1e300 (numbers must be finite)")
    for role, e in (doc.get("kv_cache") or {}).items():
        if e["capacity_tokens"] < e["block_tokens"]:
            raise UserError(f"{where}: field kv_cache.{role}.capacity_tokens: {e['capacity_tokens']} "
                            f"is less than one block ({e['block_tokens']} tokens)")
    from lrcore.limits import MAX_PROFILE_DEPTH

    for d, (proposed, accepted) in doc["step_acceptance"]["by_depth"].items():
        if len(d) > 6 or int(d) > MAX_PROFILE_DEPTH:  # alpha_by_depth() lists all depths up to it
            raise UserError(f"{where}: field step_acceptance.by_depth.{d}: depth {d} is over the "
                            f"cap of {MAX_PROFILE_DEPTH} (MAX_PROFILE_DEPTH, = the --depth cap)")
        if accepted > proposed:
            raise UserError(f"{where}: field step_acceptance.by_depth.{d}: accepted {accepted} > "
                            f"proposed {proposed}")
    for key, lat in doc["latency"].items():
        try:
            t1 = latency_from_doc(lat, key).per_token()
        except UserError as e:
            raise UserError(f"{where}: field latency.{key}: {e}") from None
        if not (t1 > 0 and math.isfinite(t1)):  # c1 and every speedup divide by it
            raise UserError(f"{where}: field latency.{key}: a decode step takes {t1!r} s at batch 1; "
                            "it must take a positive, finite time")
    return doc


def load_profile(path: str | Path) -> Profile:
    p = Path(path)
    try:
        from lrcore.limits import MAX_TEXT_FILE_BYTES, read_capped

        text = read_capped(p, MAX_TEXT_FILE_BYTES, "profile").decode("utf-8-sig")  # BOM is fine
    except UnicodeDecodeError as e:
        raise UserError(f"{p}: not a UTF-8 text file (byte {e.start}); a profile is JSON") from None
    except OSError as e:
        raise UserError(f"{p}: cannot read profile ({e.strerror or e})") from None
    doc = jsonin.parse(text, str(p), not_json="{where}:{line}: not JSON ({msg})",
                       too_deep="{where}: JSON nested too deeply to be a profile",
                       too_big="{where}: a number with more than 4300 digits; numbers must be "
                               "finite and in range",
                       parse_constant=lambda c: _reject_constant(p, c),
                       object_pairs_hook=lambda pairs: _unique_keys(p, pairs))
    return Profile(validate_doc(doc, str(p)), str(p))


def _unique_keys(p: Path, pairs: list) -> dict:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set = set()
        dup = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise UserError(f"{p}: field {dup}: appears twice in one JSON object (a hand edit?); keep one")
    return obj


def _non_finite(x, where: str = "") -> str | None:
    """The dotted path of the first non-finite number (1e400 parses as inf), or None."""
    if isinstance(x, float) and not math.isfinite(x) or (
            isinstance(x, int) and not isinstance(x, bool) and abs(x) > 1e300):  # float() overflows
        return where or "(top level)"
    items = x.items() if isinstance(x, dict) else enumerate(x) if isinstance(x, list) else ()
    for k, v in items:
        bad = _non_finite(v, f"{where}[{k}]" if isinstance(k, int) else f"{where}.{k}" if where else k)
        if bad is not None:
            return bad
    return None


def _reject_constant(p: Path, c: str):
    raise UserError(f"{p}: {c} is not allowed in a profile (numbers must be finite)")


def _finite(x, where="profile"):
    if isinstance(x, float) and not math.isfinite(x):
        raise ValueError(f"non-finite number at {where}")
    if isinstance(x, dict):
        for k, v in x.items():
            _finite(v, f"{where}.{k}")
    elif isinstance(x, (list, tuple)):
        for i, v in enumerate(x):
            _finite(v, f"{where}[{i}]")


def save_profile(profile: Profile | dict, path: str | Path, flag: str = "--out") -> Path:
    """Validate, then write atomically (lrcore/outputs.py: a temporary file beside it, fsynced,
    renamed over it): a profile on disk is always whole; a write error is one line naming `flag`."""
    from lrcore.outputs import write_atomic

    doc = profile.doc if isinstance(profile, Profile) else profile
    validate_doc(doc, str(path))   # a non-finite number is a UserError here (one line)
    _finite(doc)
    return write_atomic(path, json.dumps(doc, indent=2, sort_keys=False, allow_nan=False) + "\n", flag)
