"""Traces -> profile: every fit `lr calibrate` makes, and where its evidence comes from.

    doc = calibrate(["traces/samples/cpu.jsonl"])           # a profile dict (schema.py)
    doc = calibrate(paths, problems=keep)                   # only these problem ids (held-out runs)

Latency: per engine role, from vLLM forward passes when the traces have them, else from the
generation spans with reconstructed concurrency (fit.py). The pooled fit is `latency.<role>`; a
mode whose traces give enough points also gets `latency.<role>@<mode>`: an engine measured in
that mode's environment (the target alone in `ar`, beside a draft engine on the same cores in
`lr`), which the simulator then uses for that mode.
"""
from __future__ import annotations

import hashlib
import random
import time
from pathlib import Path

from ..errors import UserError
from . import overheads as oh
from .fit import MIN_POINTS, fit_roofline, table_from_passes
from .schema import PROFILE_VERSION

LR_MODES = ("lr", "lr+sd", "lr-sync")


def read_records(path: str | Path) -> list[dict]:
    p = Path(path)
    if not p.exists():  # a directory or unreadable file: the reader names it
        raise UserError(f"{p}: trace file not found")
    from lrreal.traces import read_traces

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


def _latency_entry(records, engine, kind: str) -> dict | None:
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
              latency_kind: str = "roofline", select_placement: bool = True) -> dict:
    if latency_kind not in ("roofline", "table"):
        raise UserError(f"--latency-model must be roofline or table, got {latency_kind!r}")
    records, sources = [], []
    for path in paths:
        recs = read_records(path)
        sources.append({"path": str(path), "sha256": sha256(path), "records": len(recs)})
        records += recs
    if problems is not None:
        records = [r for r in records if r["problem_id"] in problems]
    records = [r for r in records if r.get("steps")]
    if not records:
        raise UserError(f"{', '.join(map(str, paths))}: no trace record with steps"
                        + (" among the selected problems" if problems is not None else ""))
    by_mode: dict[str, list[dict]] = {}
    for r in records:
        by_mode.setdefault(r["mode"], []).append(r)
    lr = [r for r in records if r["mode"] in LR_MODES]

    latency = {}
    for role in ("target", "draft"):
        pooled = _latency_entry(records, role, latency_kind)
        if pooled is not None:
            latency[role] = pooled
        per_mode = {m: _latency_entry(recs, role, latency_kind) for m, recs in sorted(by_mode.items())}
        per_mode = {m: e for m, e in per_mode.items() if e is not None}
        if len(per_mode) > 1:          # one mode only: the pooled fit is that mode's fit
            latency.update({f"{role}@{m}": e for m, e in per_mode.items()})
    if "target" not in latency:
        raise UserError(f"{paths[0]}: too few target generations to fit a latency curve "
                        f"(need {MIN_POINTS}); record longer traces or run `lr calibrate measure`")

    ver = oh.verifier_latency(lr)
    judged = [(s["n"], s["mean_s"]) for s in ver.values() if s["n"]]
    n_judged = sum(n for n, _ in judged)
    ver_s = sum(n * m for n, m in judged) / n_judged if n_judged else 0.0
    gaps = oh.scheduling_gaps(records)
    sa = oh.step_acceptance(lr)
    reject = 1.0 - sa["rate"] if sa["rate"] is not None else 1.0
    jw = gaps["judge_wait"]["mean_s"] or 0.0
    rl = gaps["relaunch"]["mean_s"] or 0.0
    per_request = {m: oh.scheduling_gaps(recs)["request"]["mean_s"] or 0.0 for m, recs in by_mode.items()}
    prefill = {}
    for role in ("target", "draft"):
        sp = [s for r in records for s in oh.spans(r) if s.engine == role]
        if sp and role in latency and latency[role]["kind"] == "roofline":
            mean_pre = sum(s.prefill for s in sp) / len(sp)
            prefill[role] = {"mean_tokens": mean_pre,
                             "mean_s": mean_pre * latency[role]["prefill_per_token_s"]}
    sd = oh.sd_acceptance(records)
    flags = _first(lr, "run", "flags", default={}) or {}
    hw = _first(records, "run", "hardware", default={}) or {}
    doc = {
        "profile_version": PROFILE_VERSION,
        "name": name or Path(str(paths[0])).stem,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "source": {"traces": sources, "hardware": hw,
                   "models": {k: v for r in records for k, v in ((r.get("run") or {}).get("models") or {}).items()},
                   "vllm_version": _first(records, "run", "vllm_version"),
                   "problems": sorted({r["problem_id"] for r in records}),
                   "modes": {m: len(v) for m, v in sorted(by_mode.items())}},
        "latency": latency,
        "verifier": {"kind": "constant" if ver_s > 0 else "none", "seconds": ver_s, "by_method": ver},
        "steps": oh.step_lengths(records),
        "step_acceptance": {"rate": sa["rate"], "by_depth": sa["by_depth"],
                            "proposed": sa["proposed"], "accepted": sa["accepted"]},
        "sd": {"alpha2": sd["alpha2"], "acceptance_rate": sd["acceptance_rate"], "k2": sd["k2"],
               "accepted_length_hist": sd["accepted_length_hist"],
               "mean_accepted_length": sd["mean_accepted_length"]},
        "overheads": {
            # expected scheduling cost per decision: wait for the judge to start, plus the
            # relaunch of the target after a rejection (P(reject) of the decisions)
            "per_step_s": jw + reject * rl,
            "per_request_s": sum(per_request.values()) / len(per_request),
            "per_request_s_by_mode": per_request,
            "launch_gap_s": gaps,
            "prefill_s_per_step": prefill,
        },
        "placement": {
            "shared": bool(flags.get("target_cores", "0-1") == flags.get("draft_cores", "0-1")),
            "device_kind": str(hw.get("gpu") or hw.get("cpu_model") or "device"),
            "defaults": {"depth": int(flags.get("depth", 4)), "width": int(flags.get("width", 1))},
        },
    }
    doc["warnings"] = drift_warnings(latency)
    if select_placement and lr and "draft" in latency:
        choose_placement(doc, lr)
    return doc


DRIFT_RATIO = 1.25     # per-mode fits of one engine further apart than this get a warning


def drift_warnings(latency: dict) -> list[str]:
    """An engine whose single-sequence decode time differs between modes ran in a different
    environment in each (machine load, another engine on its cores): measured speedups between
    those modes then contain that difference, and a pooled fit cannot explain both."""
    from .profile import latency_from_doc

    out = []
    for role in ("target", "draft"):
        per = {k.split("@", 1)[1]: latency_from_doc(v).forward(1, 0, 1, 0.0)
               for k, v in latency.items() if k.startswith(role + "@")}
        if len(per) > 1 and max(per.values()) > DRIFT_RATIO * min(per.values()):
            desc = ", ".join(f"{m} {1e3 * t:.0f} ms" for m, t in sorted(per.items()))
            out.append(f"{role} decode pass differs {max(per.values()) / min(per.values()):.2f}x "
                       f"between modes ({desc}): its environment changed between the runs (machine "
                       f"load, a second engine on its cores); measured speedups between these modes "
                       f"include that")
    return out


def choose_placement(doc: dict, lr_records: list[dict]) -> None:
    """Engines that share cores are neither serialised nor independent: the OS interleaves them,
    and the measured pass times already include part of the slowdown. Both simulator models
    (time-sharing one device, or two devices with the measured, contended latencies) are replayed
    on the *calibration* records and the one with the lower MAPE is kept; the choice and both
    errors are recorded in placement.selected_by."""
    from .profile import Profile, validate_doc
    from .replay import replay

    errs = {}
    for shared in (True, False):
        d = dict(doc, placement=dict(doc["placement"], shared=shared))
        errs["shared" if shared else "dedicated"] = replay(Profile(validate_doc(d)), lr_records)["mape"]
    measured = doc["placement"]["shared"]
    doc["placement"]["shared"] = errs["shared"] <= errs["dedicated"]
    doc["placement"]["selected_by"] = {"cores_shared_in_traces": measured,
                                       "in_sample_lr_mape": errs}
