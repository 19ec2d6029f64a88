"""`lr plan` on profiles calibrated from the load corpus, as bench_load.py asks it: the plan's
label of each measured configuration, planned speedups at a level (plan_at), the plan with a
level's measured acceptance (measured_acceptance), the break-even search (search) and the
measured break-even (break_even)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from lrsim.calib.calibrate import calibrate
from lrsim.calib.profile import Profile, save_profile, validate_doc

ROOT = Path(__file__).resolve().parents[1]

# `lr plan` prices one verifier's acceptance per profile: one profile per verifier, each calibrated
# on 1-2 in flight, and the plan's label of each measured configuration
PLAN_PROFILES = {
    "exact": (("ar", "ar-er", "sd", "lr-d2"), {"sd": "sd k2=7", "lr-d2": "lr depth=2"}),
    "emb": (("ar", "ar-er", "sd", "lr-d2-emb", "lr+sd-d2-emb"),
            {"lr-d2-emb": "lr depth=2", "lr+sd-d2-emb": "lr+sd depth=2 k2=7",
             # traces/load-transfer's configurations (collect_load.py --set transfer), which the
             # profiles of depth 2 never ran: priced at their depth from the same profile
             "lr-d1-emb": "lr depth=1", "lr-d3-emb": "lr depth=3", "lr+sd-d3-emb": "lr+sd depth=3 k2=7"}),
}
# the step acceptance a level's records of these configurations measured (measured_acceptance)
ACCEPTANCE_CONFIGS = {"exact": ("lr-d2",), "emb": ("lr-d2-emb", "lr+sd-d2-emb", "lr-d1-emb", "lr-d3-emb",
                                                    "lr+sd-d3-emb")}
PLAN_ARGS = ("--depth", "1-3", "--k2", "7", "--placement", "dedicated",
             "--samples", "32", "--ci-target", "0", "--jobs", "1", "--json")
# The measured ar and sd ran on the target's core alone, N requests on it. `lr plan` on the
# profile's two devices would run them as two replicas of N/2 (its reference AR too): priced so,
# sd at 2 in flight looked like sd alone (planned 1.06x, measured 0.88x). So ar and sd are planned
# on one device, and the LR configurations (one replica on both) against that AR.
ONE_DEVICE = ("--devices", "1", "--modes", "sd")
BOTH_DEVICES = ("--modes", "sd,lr,lr+sd")


def wanted_profiles(ran: set[str]) -> list[str]:
    """The PLAN_PROFILES a calibration corpus can price, by the configurations its trace files ran
    (`ran`: file stems): a profile per verifier it ran LR with, the exact one also where it ran sd
    alone (sd is priced by it)."""
    return [name for name in PLAN_PROFILES
            if ran & (set(ACCEPTANCE_CONFIGS[name]) | ({"sd"} if name == "exact" else set()))]


def plan_profile(paths: list[str], cfgs, today: dict | None, carry: bool = False,
                 batch_factors: bool = False) -> Profile:
    """One plan profile calibrated on `paths`; rescaled to `today`'s probe when given (held out),
    its contention scaled by the side-by-side probes only with `carry` (load_replay.replay_worlds);
    `batch_factors`: lr calibrate --batch-factors."""
    from lrsim.calib.rescale import contention_scales, factors_from_probe

    from benchmarks.load_replay import curve_shaping

    prof = Profile(validate_doc(calibrate(paths, configs=set(cfgs), select_placement=False,
                                          batch_factors=batch_factors, **curve_shaping())))
    if today:
        prof = prof.rescaled(factors_from_probe(prof.doc["probe"], {"engines": today}),
                             "the held-out corpus's median probe",
                             contention=contention_scales(prof.doc["probe"], [today]) if carry else {})
    return prof


def lr_plan(profile_path: Path, *args: str) -> dict:
    from benchmarks import load_replay

    cap = load_replay.MAX_NUM_SEQS
    cmd = [sys.executable, str(ROOT / "cli.py"), "plan", "--profile", str(profile_path), *args, *PLAN_ARGS,
           *(("--max-num-seqs", str(cap)) if cap is not None else ())]
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=1800)
    if p.returncode != 0:
        raise SystemExit(f"bench_load: lr plan failed: {p.stderr.strip()}")
    return json.loads(p.stdout)


def measured_labels(name: str, path: Path) -> dict[str, str]:
    """PLAN_PROFILES[name]'s {config: plan label} for its profile at `path`, less the configurations
    whose acceptance it never measured (lrsim.plan.sources.ProfileSource.unmeasured: SD where its
    traces ran no SD, which `lr plan` prices at alpha2 0; LR where they judged no step, at 0.5).
    A profile of ar and lr-d2 alone does not plan sd. A label's first word is its plan mode."""
    from lrsim.plan.sources import ProfileSource

    src = ProfileSource(str(path))
    return {cfg: lab for cfg, lab in PLAN_PROFILES[name][1].items() if not src.unmeasured({lab.split()[0]})}


def plan_at(profiles: dict[str, Path], level: int) -> dict:
    """`lr plan` at `level` requests in flight: {config: speedups vs ar and vs equal resources},
    each the ratio of planned tokens/s of the configurations as measured (ONE_DEVICE): a block of
    N requests started together, as the measured speedup (tokens over makespans) is. The ratio of
    mean latencies, the plan's own `speedup`, is kept as latency_speedup_vs_ar: an LR block's
    requests finish at different times, so its mean latency is shorter than its makespan and that
    ratio is the more optimistic one (0.77 against 0.71 for lr-d2-emb at 6 in flight, held out).
    Each configuration also carries `lr plan`'s "not measured" warning as the engines it names
    (`beyond_measured`: the roles whose simulated passes, in its row or ar's, held more sequences
    than the profile's traces measured; ProfileSource.beyond_measured) and its row's max_batch
    (ar's beside ar-er), so a plan written before its runs records which of its speedups the
    product itself flagged, and why."""
    from lrsim.plan.sources import ProfileSource

    out = {}
    for name, path in profiles.items():
        both = lr_plan(path, "--concurrency", str(level), *BOTH_DEVICES)
        one = lr_plan(path, "--concurrency", str(level), *ONE_DEVICE)
        ar, er = one["reference"], both.get("equal_resources_baseline") or {}
        rows = {r["label"]: r for r in both["candidates"]} | {r["label"]: r for r in one["candidates"]}
        src = ProfileSource(str(path))
        for cfg, lab in measured_labels(name, path).items():
            if lab in rows:
                r = rows[lab]
                out[cfg] = {"speedup_vs_ar": r["tokens_per_s"] / ar["tokens_per_s"],
                            "speedup_vs_ar-er": r["tokens_per_s"] / er["tokens_per_s"] if er else None,
                            "latency_speedup_vs_ar": ar["mean_latency_s"] / r["mean_latency_s"],
                            "beyond_measured": warned(src, r, ar), "max_batch": r.get("max_batch")}
        if er and "ar-er" not in out:    # the first profile's (exact, where the corpus ran it)
            out["ar-er"] = {"speedup_vs_ar": er["tokens_per_s"] / ar["tokens_per_s"],
                            "latency_speedup_vs_ar": ar["mean_latency_s"] / er["mean_latency_s"],
                            "beyond_measured": warned(src, er, ar), "max_batch": er.get("max_batch"),
                            "ar_max_batch": ar.get("max_batch")}
    return out


def warned(src, *rows: dict) -> list[str]:
    """The engines (target, draft) of which `lr plan` says 'not measured' for these plan rows."""
    notes = src.beyond_measured(list(rows))
    return [role for role in ("target", "draft") if any(f"measured {role} passes" in n for n in notes)]


def measured_acceptance(profiles: dict[str, Path], level: dict[str, list[dict]], tmp: Path, n: int) -> dict[str, Path]:
    """Each plan profile with its step acceptance (by depth) replaced by what the level's own
    records of that profile's configurations accepted: the plan with the acceptance it could not
    know, so its remaining error is the latency model's (the calibration's few problems accepted
    differently from a level's others: a sampling error no latency model removes)."""
    out = {}
    for name, path in profiles.items():
        by: dict[str, list[int]] = {}
        for cfg in ACCEPTANCE_CONFIGS[name]:
            for r in level.get(cfg, []):
                for d, (p, a) in r["step_acceptance"]["by_depth"].items():
                    by.setdefault(d, [0, 0])
                    by[d][0] += p
                    by[d][1] += a
        if not any(p for p, _ in by.values()):
            continue
        doc = json.loads(Path(path).read_text())
        proposed, accepted = sum(p for p, _ in by.values()), sum(a for _, a in by.values())
        doc["step_acceptance"] |= {"by_depth": dict(sorted(by.items())), "rate": accepted / proposed,
                                   "proposed": proposed, "accepted": accepted}
        out[name] = save_profile(Profile(validate_doc(doc)), tmp / f"load-profile-{name}-c{n}-acc.json")
    return out


def search(profiles: dict[str, Path], top: int) -> dict:
    """`lr plan --find-break-even --objective throughput --concurrency TOP`: {config: {"vs_ar":
    cell, "vs_ar-er": cell}} (the bisection's break-even at any level 1..TOP, not only the measured
    ones, on the tokens/s ratio, as measured)."""
    from lrsim.plan.breakeven import Range

    out = {}
    for name, path in profiles.items():
        for devices in (BOTH_DEVICES, ONE_DEVICE):   # sd as measured: on one device
            res = lr_plan(path, "--find-break-even", "--objective", "throughput", "--concurrency", str(top),
                          *devices)
            rng = Range(res["axis"], *res["range"])
            rows = {r["label"]: r for r in res["rows"]}
            out |= {cfg: {"vs_ar": level(rows[lab]["vs_ar"], rng), "vs_ar-er": level(rows[lab]["vs_equal"], rng)}
                    for cfg, lab in measured_labels(name, path).items() if lab in rows}
    return out


def level(r: dict, rng) -> str:
    """The search's answer in the measured columns' terms: 'never' (no gain even at the lowest
    load) is the first level at which the speedup is <= 1, the lowest."""
    from lrsim.plan.breakeven import cell

    return rng.text(rng.lo) if r["status"] == "never" else cell(r, rng)


def break_even(levels: dict[int, dict], key: str, cfg: str) -> str:
    """The first level at which cfg's `key` speedup is <= 1 (the lowest level if it never beat
    the baseline; ">N" if it still does at the highest level N; "-" without data)."""
    seen = [(n, t[cfg][key]) for n, t in sorted(levels.items()) if cfg in t and t[cfg].get(key) is not None]
    if not seen:
        return "-"
    for n, s in seen:
        if s <= 1.0:
            return str(n)
    return f">{seen[-1][0]}"
