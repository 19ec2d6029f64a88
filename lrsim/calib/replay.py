"""Fidelity: replay real traces through the simulator and compare predicted with measured.

Every trace record (one problem, sample, mode: one request run alone, as `lr collect` runs them)
becomes a one-request trace-driven simulation (lrsim.sim.traces.TraceWorkload: the same steps,
lengths and verdicts) under the profile's latency models and the record's own knobs (depth,
width, SD tokens). Predicted latency = simulated makespan + the profile's per-request overhead of
that mode; measured = the record's wall_time_s.

Per mode: tokens/s, per-request latency (mean, P50, P90: predicted, measured, diff %), speedup
vs AR on the same problems, MAPE of per-request latency and Pearson r (scipy.stats.pearsonr).
Overall: MAPE and Pearson r over all records. Held-out validation: `holdout_split` calibrates on
one subset of problems and replays the other (calibrate.split_problems).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from lrcore.errors import UserError
from lrcore.modes import ACCEPT_MODE, LR_MODES, MODE_POLICY
from lrcore.theory import geometric_sum
from lrcore.traces import in_flight

from ..sim.runner import run
from ..sim.traces import TraceWorkload, own_tokens_per_pass
from .calibrate import calibrate, read_records, split_problems
from .overheads import alpha_for_mean, mean_alpha
from .profile import Profile, validate_doc
from .rescale import machine_warning, machines


def sd_tokens_per_pass(hit: float, alpha2: float, gamma: int) -> float:
    """Tokens a target pass emits on average in the simulator's SD model (lrsim/sim/tokensd.py):
    1 + hit * E[min(X, gamma)], X ~ Geometric(alpha2), gamma = k2 - 1 drafted tokens."""
    return 1.0 + hit * (float(geometric_sum(alpha2, gamma + 1)) - 1.0)


def own_sd_knobs(rate: float, hit: float, gamma: int) -> tuple[float, float]:
    """(proposal rate, alpha2) whose sd_tokens_per_pass is `rate`: the window's proposal rate
    `hit` kept and alpha2 solved (overheads.alpha_for_mean); where even alpha2 = 1 falls short
    (1 + hit * gamma < rate), the proposal rate raised instead, at most 1."""
    extra = max(0.0, rate - 1.0)      # accepted draft tokens per pass
    if hit > 0 and extra <= hit * gamma:
        return hit, alpha_for_mean(extra / hit, gamma)
    return min(1.0, extra / gamma), 1.0


def _sd_gamma(rec: dict) -> int | None:
    """Draft tokens per proposal the record ran with: its histogram's (as mean_alpha reads it),
    else run.flags.num_speculative_tokens; None: neither."""
    hist = (rec.get("sd") or {}).get("accepted_length_hist") or []
    flags = (rec.get("run") or {}).get("flags") or {}
    gamma = len(hist) - 1 if len(hist) > 1 else int(flags.get("num_speculative_tokens") or 0)
    return gamma if gamma >= 1 else None


@dataclass
class ReplayWorkload(TraceWorkload):
    """The trace adapter, with the recorded *rejections* replayed too: a committed target step
    whose comparison reached no verdict (no draft ran: the first step, or a context that did not
    end on a step boundary; or a verifier error) was a rejection in the real run, not a coin flip
    at the pooled acceptance rate."""

    # opt-in (benchmarks/load_replay.OWN_SD_RATE): a record run beside others replays SD at its
    # own tokens per target pass (traces.own_tokens_per_pass), not at its window's, which is
    # every request's in flight (a diagnosis: it moved lr+sd's replay by 0.5-1.5 points, docs/load.md)
    own_sd_rate: bool = False

    def own_sd(self, req) -> tuple[float, float] | None:
        """With own_sd_rate, for a record of N > 1 in flight: the (proposal rate, alpha2) whose
        tokens per pass (sd_tokens_per_pass) are the record's own rate (own_sd_knobs, from the
        window's proposal rate); None: the window's knobs (alone, the window is its own). LR
        modes only: there each target span is an engine request of its own, from its prefill to
        its end; plain SD's spans are steps cut from one request (no prefill of their own), and
        counting their passes so read traces/load-f6m207-36's sd at 1.14-1.26 tokens a pass
        where its window says 1.50-1.60."""
        rec = req.trace
        if not self.own_sd_rate or in_flight(rec) <= 1 or rec.get("mode") not in LR_MODES:
            return None
        rate, gamma = own_tokens_per_pass(rec), _sd_gamma(rec)
        if rate is None or gamma is None:
            return None
        return own_sd_knobs(rate, super().token_hit(req), gamma)

    def token_hit(self, req) -> float:
        own = getattr(req, "own_sd", None)
        return super().token_hit(req) if own is None else own[0]

    def token_alpha(self, req) -> float:
        """The simulator's SD model draws min(Geometric(alpha2), k2 - 1) accepted tokens per pass:
        alpha2 is the one whose mean matches the record's accepted-length histogram, not
        accepted / drafted (overheads.mean_alpha); with own_sd_rate, own_sd's."""
        own = getattr(req, "own_sd", None)
        if own is not None:
            return own[1]
        hist = (req.trace.get("sd") or {}).get("accepted_length_hist") or []
        a = mean_alpha(hist)
        return super().token_alpha(req) if a is None else a

    def token_lengths(self, req):
        # own_sd's request draws Geometric(its alpha2): the recorded histogram is the window's
        return None if getattr(req, "own_sd", None) is not None else super().token_lengths(req)

    def requests(self):
        reqs = super().requests()
        for req in reqs:
            steps = [s for s in req.trace["steps"] if s.get("tokens", 0) > 0]
            req.verdicts = [False if (v is None and s.get("source") == "target") else v
                            for v, s in zip(req.verdicts, steps)]
            if self.own_sd_rate:
                req.own_sd = self.own_sd(req)
        return reqs


def as_the_run(cfg, wl: TraceWorkload) -> None:
    """Decide afresh as the recorded run's real backend did: one Estimator for the run
    (Config.adaptive_scope "run": acceptance shared, its price checked against the commits), the
    run's knobs (TraceWorkload.adaptive_config); the workload (carried_prior) gives the
    estimates it starts from."""
    cfg.adaptive_scope = "run"
    cfg.adaptive = wl.adaptive_config() or cfg.adaptive


def _knobs(rec: dict, prof: Profile) -> dict:
    flags = (rec.get("run") or {}).get("flags") or {}
    mode = rec["mode"]
    k = {}
    if mode in LR_MODES:
        k["depth"] = int(flags.get("depth", prof.doc["placement"].get("defaults", {}).get("depth", 4)))
        k["width"] = int(flags.get("width", 1))
    if MODE_POLICY[mode][1]:
        k["k2"] = int(flags.get("num_speculative_tokens", prof.doc["sd"]["k2"] - 1)) + 1
    return k


def probe_scaled(prof: Profile, rec: dict, which: str = "before", contention: bool = False) -> Profile:
    """The profile at the machine speed of this record's probe (taken before the record: known
    before the run, so a prediction may use it); unchanged without probes on either side. With
    `contention` (the probe is an aggregate: a corpus's median, load_replay's `speed`), the
    profile's contention is carried too where both ran side by side (rescale.contention_scales;
    one record's probe is too noisy for it, and the fit divides out speed only)."""
    from .physical import record_probe, speed_factors
    from .rescale import contention_scales

    ref = prof.doc.get("probe")
    probe = record_probe(rec)
    if not ref or not probe or which == "none":
        return prof
    factors = {role: speed_factors(rec, role, ref, which) for role in ("target", "draft")
               if role in ref}
    sides = ["before"] if which == "before" else ["before", "after"]
    scales = (contention_scales(ref, [(probe.get(s) or {}).get("engines") for s in sides])
              if contention else {})
    return prof.rescaled(factors, f"probe {which} {rec.get('problem_id')}", contention=scales)


def predict_record(prof: Profile, rec: dict, seed: int = 0, probe: str = "before",
                   recorded_decisions: bool = True, afresh_as_run: bool = False) -> dict:
    """Simulated latency of one trace record (seconds) and what the simulator saw; an adaptive
    record with the decisions its run made (`recorded_decisions`, TraceWorkload), else decided
    afresh by the simulator's lr-adaptive (`afresh_as_run`: as the real backend decides, one
    Estimator for the run, Config.adaptive_scope "run", from the estimates the recorded run held
    at the record's first decision, TraceWorkload.carried_prior)."""
    mode = rec["mode"]
    if mode not in MODE_POLICY:
        raise UserError(f"trace record {rec.get('problem_id')}: unknown mode {mode!r}")
    prof = probe_scaled(prof, rec, probe)
    as_run = afresh_as_run and not recorded_decisions
    wl = ReplayWorkload([rec], source=str(rec.get("problem_id")), seed=seed,
                        recorded_decisions=recorded_decisions, carried_prior=as_run)
    cfg = prof.to_config(mode, workload=wl, **_knobs(rec, prof))
    if as_run:
        as_the_run(cfg, wl)
    summary, _ = run(cfg)
    extra = prof.doc["overheads"].get("per_request_s_by_mode", {}).get(
        mode, prof.doc["overheads"].get("per_request_s", 0.0))
    return {"latency_s": summary["wall_s"] + extra, "sim_wall_s": summary["wall_s"],
            "tokens": summary["output_tokens"], "step_acceptance": summary["step_acceptance_rate"]}


def _pct_diff(pred: float, meas: float) -> float | None:
    return None if not meas else 100.0 * (pred - meas) / meas


def _pearson(x, y) -> float | None:
    from scipy.stats import pearsonr

    if len(x) < 2 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return None
    return float(pearsonr(x, y).statistic)


def compare(rows: list[dict], group: str = "mode") -> dict:
    """Predicted vs measured over rows {mode, config, key, tokens, measured_s, predicted_s},
    grouped by `group` ("mode", or "config": one entry per configuration); speedups are against
    the "ar" group on the same (problem, sample)."""
    by_mode: dict[str, list[dict]] = {}
    for r in rows:
        by_mode.setdefault(r[group], []).append(r)
    ar = {r["key"]: r for r in by_mode.get("ar", [])}
    modes = {}
    for mode, rs in sorted(by_mode.items()):
        meas = np.array([r["measured_s"] for r in rs])
        pred = np.array([r["predicted_s"] for r in rs])
        tok = sum(r["tokens"] for r in rs)
        lat = {}
        for stat, fn in (("mean", np.mean), ("p50", lambda a: np.percentile(a, 50)),
                         ("p90", lambda a: np.percentile(a, 90))):
            m, p = float(fn(meas)), float(fn(pred))
            lat[stat] = {"measured_s": m, "predicted_s": p, "diff_pct": _pct_diff(p, m)}
        entry = {
            "records": len(rs),
            "mape": float(np.mean(np.abs(pred - meas) / meas)),
            "pearson_r": _pearson(pred, meas),
            "tokens_per_s": {"measured": tok / meas.sum(), "predicted": tok / pred.sum(),
                             "diff_pct": _pct_diff(tok / pred.sum(), tok / meas.sum())},
            "latency": lat,
            "speedup": None,
        }
        pairs = [(ar[r["key"]], r) for r in rs if r["key"] in ar]
        if pairs and mode != "ar":
            def speed(which):
                a = sum(x["tokens"] for x, _ in pairs) / sum(x[which] for x, _ in pairs)
                m = sum(y["tokens"] for _, y in pairs) / sum(y[which] for _, y in pairs)
                return m / a
            sm, sp = speed("measured_s"), speed("predicted_s")
            entry["speedup"] = {"measured": sm, "predicted": sp, "diff_pct": _pct_diff(sp, sm),
                                "pairs": len(pairs)}
        modes[mode] = entry
    meas = np.array([r["measured_s"] for r in rows])
    pred = np.array([r["predicted_s"] for r in rows])
    return {"records": len(rows), "mape": float(np.mean(np.abs(pred - meas) / meas)),
            "pearson_r": _pearson(pred, meas), "modes": modes}


def replay(prof: Profile, records: list[dict], seed: int = 0, probe: str = "both",
           baseline: list[dict] | None = None, recorded_decisions: bool = True,
           afresh_as_run: bool = False) -> dict:
    """Predict every record; `baseline`: AR records predicted too but only used as the speedup
    reference (when AR was in the calibration set and is not being validated)."""
    from .physical import config_label

    rows, replayed, not_replayed = [], [], 0
    for rec in records:
        if not rec.get("steps") or not rec.get("wall_time_s"):
            continue
        if rec.get("mode") == ACCEPT_MODE:  # a measurement of alpha1, not a schedule to simulate
            not_replayed += 1
            continue
        p = predict_record(prof, rec, seed, probe, recorded_decisions, afresh_as_run)
        replayed.append(rec)
        rows.append({"mode": rec["mode"], "config": config_label(rec),
                     "key": (rec["problem_id"], rec["sample"]),
                     "problem_id": rec["problem_id"], "sample": rec["sample"],
                     "tokens": rec["output_tokens"], "measured_s": float(rec["wall_time_s"]),
                     "predicted_s": p["latency_s"]})
    skipped = (f"{not_replayed} accept-mode record(s) not replayed: the acceptance protocol "
               "measures alpha1 (`lr calibrate` reports it); the simulator has no policy for it")
    if not rows:
        raise UserError("replay: no trace record with steps and a wall time to compare"
                        + (f" ({skipped})" if not_replayed else ""))
    out = compare(rows)
    out["warnings"] = []
    if not_replayed:
        out["not_replayed"] = {ACCEPT_MODE: not_replayed}
        out["warnings"].append(skipped)
    foreign = machine_warning(prof.doc, machines(replayed), "the replayed records ran on")
    if foreign:
        out["warnings"].append(foreign)
    base_rows = []
    for rec in baseline or []:
        if rec.get("steps") and rec.get("wall_time_s") and config_label(rec) == "ar":
            p = predict_record(prof, rec, seed, probe, recorded_decisions, afresh_as_run)
            base_rows.append({"mode": "ar", "config": "ar", "key": (rec["problem_id"], rec["sample"]),
                              "tokens": rec["output_tokens"], "measured_s": float(rec["wall_time_s"]),
                              "predicted_s": p["latency_s"]})
    by_cfg = compare(rows + base_rows, group="config")["modes"]
    if base_rows and not any(r["config"] == "ar" for r in rows):
        by_cfg.pop("ar", None)   # the reference only: it was calibrated on, not validated
    out["configs"] = by_cfg
    out["per_record"] = [{k: v for k, v in r.items() if k != "key"} for r in rows]
    for mode, entry in out["modes"].items():
        if not all(math.isfinite(x) for x in (entry["mape"],)):
            raise RuntimeError(f"replay: non-finite MAPE in mode {mode}")
    return out


def replay_files(paths, profile: Profile | None = None, holdout: float | None = None,
                 seed: int = 0, name: str | None = None, calibrate_on: set | None = None,
                 probe: str = "both", recorded_decisions: bool = True,
                 afresh_as_run: bool = False) -> tuple[dict, Profile]:
    """`lr replay`: with `holdout`, calibrate on the other problems (unless a profile is given,
    which must not have seen the held-out ones) and replay the held-out problems only. With
    `calibrate_on` (configuration labels), calibrate on those configurations and predict every
    other one: what `lr plan` does for a configuration nobody has measured."""
    from .physical import config_label

    records = [r for p in paths for r in read_records(p)]
    if not records:
        raise UserError(f"{', '.join(map(str, paths))}: no trace records to replay")
    if calibrate_on is not None:
        if holdout is not None or profile is not None:
            raise UserError("--calibrate-on calibrates its own profile: it excludes --holdout "
                            "and --profile")
        labels = {config_label(r) for r in records}
        unknown = sorted(set(calibrate_on) - labels)
        if unknown:
            raise UserError(f"--calibrate-on: no records of configuration(s) {', '.join(unknown)} "
                            f"in these traces (they hold {', '.join(sorted(labels))})")
        rest = [r for r in records if config_label(r) not in calibrate_on]
        if not rest:
            raise UserError("--calibrate-on names every configuration in the traces: nothing is "
                            "left to predict")
        profile = Profile(validate_doc(calibrate(paths, configs=set(calibrate_on), name=name)))
        out = replay(profile, rest, seed, probe,
                     baseline=[r for r in records if config_label(r) == "ar"],
                     recorded_decisions=recorded_decisions, afresh_as_run=afresh_as_run)
        out["holdout"] = {"calibrated_on": sorted(calibrate_on),
                          "predicted": sorted({config_label(r) for r in rest})}
        out["profile"] = "(in memory)"
        return out, profile
    held = None
    if holdout is not None:
        calib_ids, held = split_problems([r["problem_id"] for r in records], holdout, seed)
        if profile is None:
            profile = Profile(validate_doc(calibrate(paths, problems=calib_ids, name=name)))
        else:
            seen = set(profile.doc["source"].get("problems", [])) & held
            if seen:
                raise UserError(f"--profile {profile.path}: it was calibrated on held-out problems "
                                f"({', '.join(sorted(seen)[:3])}); calibrate with the same "
                                f"--holdout and --seed")
        records = [r for r in records if r["problem_id"] in held]
    elif profile is None:
        raise UserError("lr replay: give --profile PATH, or --holdout FRACTION to calibrate on the "
                        "other problems")
    out = replay(profile, records, seed, probe, recorded_decisions=recorded_decisions,
                 afresh_as_run=afresh_as_run)
    out["holdout"] = None if held is None else {"fraction": holdout, "seed": seed,
                                               "validated_problems": sorted(held),
                                               "calibration_problems": profile.doc["source"].get("problems")}
    out["profile"] = profile.path or "(in memory)"
    return out, profile
