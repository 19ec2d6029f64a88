"""Traces -> profile: every fit `lr calibrate` makes, and where its evidence comes from.

    doc = calibrate(["traces/corpus/gsm8k/ar.jsonl", ...])   # a profile dict (schema.py)
    doc = calibrate(paths, problems=keep)                      # only these problem ids (held out)
    doc = calibrate(paths, configs={"ar", "lr-d2"})            # only these configurations
    doc = calibrate(paths, batch_factors=True)                # a correction per batch size

Latency: one physical model per engine role, shared by every mode (physical.py): per-pass time
as a function of decode positions, prefill positions, context and whether the other engine was
busy, corrected for the machine's speed by the probe each record carries, with error bars. The
simulator uses the same model for ar, sd, lr, lr+sd and lr-sync, so a configuration that was
never measured is predicted from the physics, not from a fit of its own. Traces without
forward-pass statistics fall back to generation spans with reconstructed concurrency (fit.py).
Acceptance (by depth), step lengths, SD acceptance and the verifier are fitted separately; the
engines' KV-cache capacity is read or computed from the runs' settings (kv.py). AR records of
the equal-resources binding (the target on every core) give the baseline's measured TP
efficiency (equal.py) and nothing else.
Records of the acceptance protocol (mode "accept") feed the latency fit and are the preferred
source of alpha1 (with its 95% interval: lrcore/acceptance.py, acceptance.py); they carry no LR schedule, so the
scheduling overheads and the replay leave them out.
"""
from __future__ import annotations

import hashlib
import random
import time
from pathlib import Path

from lrcore.acceptance import accept_records, protocol_acceptance
from lrcore.errors import UserError
from lrcore.modes import ACCEPT_MODE, LR_MODES
from lrcore.profile_schema import PROFILE_VERSION

from . import overheads as oh
from .acceptance import acceptance_warnings, profile_step_acceptance
from .equal import is_equal_resources, measured, pairs_across_boots
from .fit import MIN_POINTS, fit_roofline, table_from_passes
from .kv import engine_kv
from .seqs import engine_max_seqs


def read_records(path: str | Path) -> list[dict]:
    p = Path(path)
    if not p.exists():  # a directory or unreadable file: the reader names it
        raise UserError(f"{p}: trace file not found")
    from lrcore.traces import read_traces

    return read_traces(p, strict=True)  # a torn last line: say so, do not calibrate on less


def sha256(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def split_problems(problem_ids, fraction: float, seed: int = 0) -> tuple[set, set]:
    """(calibration, held-out) problem ids: a seeded shuffle, `fraction` of them held out (at
    least one on each side when there are two or more). The same (ids, fraction, seed) always
    gives the same split, so `lr calibrate --holdout` and `lr replay --holdout` agree."""
    if not 0.0 < fraction < 1.0:
        raise UserError(f"--holdout must be in (0, 1), got {fraction}")
    ids = sorted(set(problem_ids))
    if len(ids) < 2:
        raise UserError(f"--holdout needs traces of at least 2 problems, got {len(ids)}")
    random.Random(seed).shuffle(ids)
    n_out = min(len(ids) - 1, max(1, round(fraction * len(ids))))
    return set(ids[n_out:]), set(ids[:n_out])


def _points(records, engine):
    """Forward passes when any record has them for this engine, else spans."""
    p = oh.pass_points(records, engine)
    return p if len(p) >= MIN_POINTS else oh.span_points(records, engine)


def _latency_entry(records, engine, kind: str, ref: dict | None, batch_factors: bool = False,
                   batch_curve: tuple[str, list] | None = None, smooth: bool = True) -> dict | None:
    from .physical import fit_physical, pass_data

    if kind == "roofline":
        d = pass_data(records, engine, ref)
        if len(d) >= 8 and any(((r.get("engine_stats") or {}).get(engine) or {}).get("forward_passes")
                               for r in records):
            return fit_physical(d, engine, batch_factors, batch_curve, smooth)
    if batch_curve is not None:
        raise UserError(f"--{engine}-batch-curve shapes the fitted line of the {engine}'s forward "
                        f"passes, and these traces record none of the {engine}'s (none ran it, or "
                        "they were collected without engine statistics)")
    pts = _points(records, engine)
    if len(pts) < MIN_POINTS:
        return None
    model, rep = fit_roofline(pts, source=f"{engine} {pts.kind}")
    if kind == "table" and pts.kind == "passes":
        entry = table_from_passes(pts)
    else:
        entry = {"kind": "roofline", **model.params()}
    entry["fit"] = rep.as_dict()
    return entry


def _first(records, *keys, default=None):
    for r in records:
        v = r
        for k in keys:
            v = v.get(k) if isinstance(v, dict) else None
        if v is not None:
            return v
    return default


def calibrate(paths, problems: set | None = None, name: str | None = None,
              latency_kind: str = "roofline", select_placement: bool = True,
              configs: set | None = None, batch_factors: bool = False,
              batch_curves: dict | None = None, smooth_curves: bool = True) -> dict:
    """`batch_factors`: the physical model's measured correction per batch size too
    (physical.py; `lr calibrate --batch-factors`), recorded in source.batch_factors.
    `batch_curves`: {role: measured curve file} whose shape in the batch size the role's line
    takes instead (`lr calibrate --target-batch-curve`; physical.curve_batch_knots), recorded in
    source.batch_curves; `smooth_curves` False: their points as measured, not smoothed
    (physical.curve_batch_knots; source.batch_curves_as_measured)."""
    if latency_kind not in ("roofline", "table"):
        raise UserError(f"--latency-model must be roofline or table, got {latency_kind!r}")
    if batch_factors and latency_kind != "roofline":
        raise UserError("--batch-factors corrects the roofline fit per batch size; --latency-model "
                        "table already bins the passes by batch size: use one or the other")
    batch_curves = {k: v for k, v in (batch_curves or {}).items() if v is not None}
    if batch_curves and latency_kind != "roofline":
        raise UserError("--target-batch-curve/--draft-batch-curve shape the roofline fit; "
                        "--latency-model table already bins the passes by batch size")
    if batch_curves and batch_factors:
        raise UserError("--batch-factors and --target-batch-curve/--draft-batch-curve each give the "
                        "line its shape in the batch size: use one or the other")
    if not smooth_curves and not batch_curves:
        raise UserError("--batch-curve-as-measured keeps a --target-batch-curve/--draft-batch-curve's "
                        "points unsmoothed: give one")
    from .curve import plain_decode_points

    curves = {role: plain_decode_points(path) for role, path in batch_curves.items()}
    records, sources = [], []
    for path in paths:
        recs = read_records(path)
        sources.append({"path": str(path), "sha256": sha256(path), "records": len(recs)})
        records += recs
    if problems is not None:
        records = [r for r in records if r["problem_id"] in problems]
    if configs is not None:
        from .physical import config_label
        records = [r for r in records if config_label(r) in configs]
    records = [r for r in records if r.get("steps")]
    if not records:
        raise UserError(f"{', '.join(map(str, paths))}: no trace record with steps"
                        + (" among the selected problems" if problems is not None else "")
                        + (" in the selected configurations" if configs is not None else ""))
    # AR bound to every core (the equal-resources baseline) ran on other cores than the rest:
    # measured against AR on the split binding (equal.py), kept out of every other fit
    er = [r for r in records if is_equal_resources(r)]
    equal = measured(records) if er else None
    er_warnings = []
    if er and (n := pairs_across_boots(records)):
        er_warnings.append(f"{n} equal-resources pair(s) left out: AR on every core and AR on the "
                           "target's cores ran in different machine boots (run.hardware.boot_id), "
                           "so their speeds are not comparable")
    if len(er) < len(records):
        records = [r for r in records if not is_equal_resources(r)]
    by_mode: dict[str, list[dict]] = {}
    for r in records:
        by_mode.setdefault(r["mode"], []).append(r)
    lr = [r for r in records if r["mode"] in LR_MODES]
    # the acceptance protocol (`lr collect --mode accept`): real target and draft passes for the
    # latency fit and the preferred source of alpha1, but no LR schedule (its waits are not the
    # LR loop's: no scheduling overheads from it, and replay skips it)
    accept = accept_records(records)

    from .physical import reference_probe

    ref = reference_probe(records)
    latency = {}
    for role in ("target", "draft"):
        entry = _latency_entry(records, role, latency_kind, ref, batch_factors, curves.get(role),
                               smooth_curves)
        if entry is not None:
            latency[role] = entry
    if "target" not in latency:
        raise UserError(f"{paths[0]}: too few target generations to fit a latency curve "
                        f"(need {MIN_POINTS}); record longer traces or run `lr calibrate measure`")

    ver = oh.verifier_latency(lr or accept)  # the LR runs' verifier; accept's when there are none
    judged = [(s["n"], s["mean_s"]) for s in ver.values() if s["n"]]
    n_judged = sum(n for n, _ in judged)
    ver_s = sum(n * m for n, m in judged) / n_judged if n_judged else 0.0
    # the loop's own overheads, from the asynchronous scheduler only: in lr-sync (Algorithm 1)
    # the gap before a verification or a relaunch is the drafting phase, which the simulator's
    # lr-sync policy runs itself (counted as overhead it priced every async step +12 s here)
    # (nor in accept mode, where every step waits for its verdict before the next one starts)
    gaps = oh.scheduling_gaps([r for r in records if r["mode"] not in ("lr-sync", ACCEPT_MODE)])
    sa = oh.step_acceptance(lr)
    reject = 1.0 - sa["rate"] if sa["rate"] is not None else 1.0
    jw = gaps["judge_wait"]["mean_s"] or 0.0
    rl = gaps["relaunch"]["mean_s"] or 0.0
    per_request = {m: oh.scheduling_gaps(recs)["request"]["mean_s"] or 0.0 for m, recs in by_mode.items()
                   if m != ACCEPT_MODE}  # per simulated mode (accept is never simulated)
    prefill = {}
    for role in ("target", "draft"):
        sp = [s for r in records for s in oh.spans(r) if s.engine == role]
        if sp and role in latency and latency[role]["kind"] == "roofline":
            mean_pre = sum(s.prefill for s in sp) / len(sp)
            prefill[role] = {"mean_tokens": mean_pre,
                             "mean_s": mean_pre * latency[role]["prefill_per_token_s"]}
    sd = oh.sd_acceptance(records)
    flags = _first(lr or accept, "run", "flags", default={}) or {}
    hw = _first(records, "run", "hardware", default={}) or {}
    doc = {
        "profile_version": PROFILE_VERSION,
        "name": name or Path(str(paths[0])).stem,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "source": {"traces": sources, "hardware": hw,
                   "models": {k: v for r in records for k, v in ((r.get("run") or {}).get("models") or {}).items()},
                   "vllm_version": _first(records, "run", "vllm_version"),
                   "problems": sorted({r["problem_id"] for r in records}),
                   "modes": {m: len(v) for m, v in sorted(by_mode.items())},
                   **({"batch_factors": True} if batch_factors else {}),
                   **({"batch_curves": {r: {"path": str(p), "sha256": sha256(p)}
                                        for r, p in batch_curves.items()}} if batch_curves else {}),
                   **({"batch_curves_as_measured": True} if batch_curves and not smooth_curves else {})},
        "latency": latency,
        "verifier": {"kind": "constant" if ver_s > 0 else "none", "seconds": ver_s, "by_method": ver},
        "steps": oh.step_lengths(records),
        # alpha1 from accept-mode records when there are any (with its interval), else the LR
        # records' pooled acceptance, as always (acceptance.py)
        "step_acceptance": profile_step_acceptance(sa, protocol_acceptance(accept)),
        "sd": {"alpha2": sd["alpha2"], "acceptance_rate": sd["acceptance_rate"], "k2": sd["k2"],
               "proposal_rate": sd["proposal_rate"],
               "accepted_length_hist": sd["accepted_length_hist"],
               "mean_accepted_length": sd["mean_accepted_length"]},
        "overheads": {
            # expected scheduling cost per decision: wait for the judge to start, plus the
            # relaunch of the target after a rejection (P(reject) of the decisions)
            "per_step_s": jw + reject * rl,
            "per_request_s": sum(per_request.values()) / len(per_request) if per_request else 0.0,
            "per_request_s_by_mode": per_request,
            "launch_gap_s": gaps,
            "prefill_s_per_step": prefill,
        },
        "placement": {
            "shared": bool(flags.get("target_cores", "0-1") == flags.get("draft_cores", "0-1")),
            "device_kind": str(hw.get("gpu") or hw.get("cpu_model") or "device"),
            "defaults": {"depth": int(flags.get("depth", 4)), "width": int(flags.get("width", 1)),
                         # when the LR runs judged a draft (records without the flag: deferred)
                         "judge_timing": "eager" if flags.get("judge_timing") == "eager" else "deferred"},
        },
    }
    if ref:
        doc["probe"] = ref
    kv, kv_warnings = engine_kv(records)
    if kv:
        doc["kv_cache"] = kv
    doc["source"]["configs"] = _configs(records)
    caps, cap_warnings = engine_max_seqs(records)
    if caps:
        doc["placement"]["max_num_seqs"] = caps
    doc["warnings"] = (drift_warnings(latency, records) + acceptance_warnings(lr, accept) + kv_warnings
                       + cap_warnings + er_warnings)
    if equal is not None:
        doc["placement"]["equal_resources"] = equal
    if select_placement and lr and "draft" in latency:
        choose_placement(doc, lr)
    return doc


PROBE_SPREAD = 1.15    # probe speeds further apart than this over the records get a warning
CONFIG_RESIDUAL = 0.15  # a configuration whose passes the shared model misses by more: warning


def _configs(records) -> dict:
    from .physical import config_label

    out: dict[str, int] = {}
    for r in records:
        out[config_label(r)] = out.get(config_label(r), 0) + 1
    return dict(sorted(out.items()))


def drift_warnings(latency: dict, records: list[dict]) -> list[str]:
    """Real differences, in plain numbers: traces of several machine models, the machine's speed
    changing while the traces were recorded (the probes), and configurations whose forward
    passes the one physical model of an engine does not explain (an environment the model does
    not describe)."""
    from .physical import record_probe
    from .rescale import machines

    out = []
    per = machines(records)
    if len(per) > 1:
        out.append(f"the traces ran on {len(per)} machines ("
                   + ", ".join(f"{m}: {n} records" for m, n in per.items())
                   + "): the probes correct each record's speed, not the batch curve's shape, "
                     "which differs between machine models; calibrate one machine's traces per "
                     "profile")
    for role in ("target", "draft"):
        vals = [e["decode_s"] for r in records for side in ("before", "after")
                for e in [((record_probe(r).get(side) or {}).get("engines") or {}).get(role) or {}]
                if e.get("decode_s")]
        if vals and max(vals) > PROBE_SPREAD * min(vals):
            out.append(f"{role} probe decode pass ranged {1e3 * min(vals):.0f}-{1e3 * max(vals):.0f} ms "
                       f"over the records ({max(vals) / min(vals):.2f}x): the machine's speed changed "
                       f"while recording; pass times are corrected by the probe of each record")
        fit = (latency.get(role) or {}).get("fit") or {}
        for cfg, row in sorted((fit.get("by_config") or {}).items()):
            if cfg == "probe" or row["passes"] < 20 or abs(row["sum_diff_pct"]) <= 100 * CONFIG_RESIDUAL:
                continue
            slow = row["sum_diff_pct"] < 0
            out.append(f"{role} forward passes of {cfg} took {abs(row['sum_diff_pct']):.0f}% "
                       f"{'longer' if slow else 'less'} than the shared {role} model predicts "
                       f"({row['passes']} passes): they ran in a different environment (machine "
                       f"load{'' if any(r.get('probe') for r in records) else ' - these traces carry no probe to correct it'}"
                       f", or an effect the model does not describe)")
    return out


def choose_placement(doc: dict, lr_records: list[dict]) -> None:
    """Engines that share cores are neither serialised nor independent: the OS interleaves them,
    and the measured pass times already include part of the slowdown. Both simulator models
    (time-sharing one device, or two devices with the measured, contended latencies) are replayed
    on the *calibration* records and the one with the lower MAPE is kept; the choice and both
    errors are recorded in placement.selected_by. Traces whose engines ran on separate cores
    (--target-cores and --draft-cores differ) ran on two devices: nothing to choose, and the
    in-sample replay would choose anyway (on traces/load-cold-epyc-f25m17-3's levels 1, 2, 4 and
    8, whose records ran side by side, it picked the time-shared device)."""
    from .profile import Profile, validate_doc
    from .replay import replay

    if not doc["placement"]["shared"]:
        doc["placement"]["selected_by"] = {"cores_shared_in_traces": False}
        return
    errs = {}
    for shared in (True, False):
        d = dict(doc, placement=dict(doc["placement"], shared=shared))
        errs["shared" if shared else "dedicated"] = replay(Profile(validate_doc(d)), lr_records)["mape"]
    measured = doc["placement"]["shared"]
    doc["placement"]["shared"] = errs["shared"] <= errs["dedicated"]
    doc["placement"]["selected_by"] = {"cores_shared_in_traces": measured,
                                       "in_sample_lr_mape": errs}
