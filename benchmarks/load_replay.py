"""The load corpus's blocks and their replay: reading traces/load-style corpora (a block = N
problems run together, run.flags.load_round), the measured figures of a level, the simulator
replaying each block's records together at the machine speed probed before it, and the profile
those replays use (calibrated on 1-2 in flight). bench_load.py, bench_open_loop.py,
bench_plan_gap.py and bench_adaptive_real.py build on it."""
from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import numpy as np

from lrsim.calib.calibrate import calibrate, read_records
from lrsim.calib.profile import Profile, validate_doc
from lrsim.calib.replay import ReplayWorkload, _knobs, as_the_run, probe_scaled
from lrsim.calib.seqs import record_max_seqs

CALIB_LEVELS = (1, 2)
CALIB_CONFIGS = ("ar", "sd", "lr-d2", "lr-d2-emb", "lr+sd-d2-emb")   # the replay's calibration
# and ar-er, whose AR on both cores against ar's gives the baseline's measured TP efficiency
PROFILE_CONFIGS = (*CALIB_CONFIGS, "ar-er")


def load_corpus(root: Path, dataset: str = "gsm8k") -> dict[int, dict[str, list[dict]]]:
    """{level: {config: records}} of every non-empty trace file."""
    out: dict[int, dict[str, list[dict]]] = {}
    for path in sorted((root / dataset).glob("c*/*.jsonl")):
        recs = [r for r in read_records(path) if r.get("steps") and r.get("load")]
        if recs:
            out.setdefault(int(path.parent.name[1:]), {})[path.stem] = recs
    return out


def blocks(recs: list[dict]) -> dict[int, list[dict]]:
    """Records by block (run.flags.load_round)."""
    out: dict[int, list[dict]] = {}
    for r in recs:
        out.setdefault(int(r["run"]["flags"]["load_round"]), []).append(r)
    return out


def pass_key(rec: dict, p: dict) -> float:
    """A forward pass's start on its block's clock: at N in flight every record of a block holds
    the engine's passes over its own window, so one pass appears in several records; this keys
    it once. A pass's `start` counts from its record's start, which on the block's clock is where
    makespan puts it (load.arrival_s + load.latency_s - wall_time_s), not load.admitted_s: the two
    differ (in traces/load-f6m207-36 a block's first request was admitted at about 0 s and its
    record started 0.8-1.4 s later), and keyed by admission one pass had a key per record."""
    load = rec.get("load") or {}
    start = load.get("arrival_s", 0.0) + load.get("latency_s", rec.get("wall_time_s", 0.0)) - rec.get("wall_time_s", 0.0)
    return round(start + float(p.get("start", 0.0)), 3)


def makespan(block: list[dict]) -> float:
    """First request start to last request end (the block's own clock: load.arrival_s + latency)."""
    ends = [r["load"]["arrival_s"] + r["load"]["latency_s"] for r in block]
    starts = [e - r["wall_time_s"] for e, r in zip(ends, block)]
    return max(ends) - min(starts)


# Replays of each speculative block, averaged: what a record does not hold (SD's accepted lengths,
# the verdicts of drafts it never judged) is drawn, and one draw of a one-record block is noisy
# (SD's accepted tokens per proposal: about +-8% over one 192-token answer)
REPLAY_SEEDS = 4
# adaptive records replay their recorded decisions (TraceWorkload.recorded_decisions); bench_load's
# --adaptive-afresh sets this to let the simulator's lr-adaptive decide afresh instead
DECIDE_AFRESH = False
# bench_load's --off-path-prefill (TraceWorkload.off_path_prefill): a diagnosis, off by default
OFF_PATH_PREFILL = False
# bench_load's --sd-plain-first-pass (Config.sd_plain_first_pass): a diagnosis, off by default
SD_PLAIN_FIRST_PASS = False
# --own-sd-rate (ReplayWorkload.own_sd_rate): each record of N > 1 in flight replays SD at its own
# tokens per target pass, not its window's (every request's); opt-in, off by default
OWN_SD_RATE = False
# --recorded-sd-rounds (TraceWorkload.recorded_sd_rounds): each committed-path target job of an SD
# record runs the passes its recorded span ran in, not rounds drawn at the record's rate ("first":
# the first step's job only); opt-in, "" off
RECORDED_SD_ROUNDS = ""
# --max-num-seqs recorded|N (Profile.to_config's max_seqs, and lr plan's flag in load_plan.lr_plan):
# each engine's sequences per pass in the replays and the plans; "recorded": a replay at its
# block's own run's cap (lrsim/calib/seqs.record_max_seqs), a plan at its profile's; None: the
# simulator's 256 (opt-in: docs/load.md, "The engines' sequence cap")
MAX_NUM_SEQS: int | str | None = None
# with DECIDE_AFRESH: decide as the real backend does (Config.adaptive_scope "run", from the
# estimates the recorded run held at the block's first decision: TraceWorkload.carried_prior);
# bench_load's --afresh-as-run
AFRESH_AS_RUN = False
# {role: measured curve file} whose shape in the batch size every profile's line takes (`lr
# calibrate --target-batch-curve`); bench_load's --target-batch-curve/--draft-batch-curve
BATCH_CURVES: dict[str, str] = {}
# bench_load's --batch-curve-as-measured: BATCH_CURVES' points as measured, not smoothed
CURVE_AS_MEASURED = False


def sd_rounds_note(how: str | None) -> str:
    """The renders' sentence for a replay with --recorded-sd-rounds ("" without)."""
    if not how:
        return ""
    if how == "first":
        return (" The first step's target job of an SD record replayed in the passes its recorded span "
                "ran in (--recorded-sd-rounds first).")
    return (" Each committed-path target job of an SD record replayed in the passes its recorded span "
            "ran in (--recorded-sd-rounds).")


def max_num_seqs_arg(text: str | None, script: str = "bench_load") -> int | str | None:
    """The benchmarks' --max-num-seqs: a number or "recorded" (None: not given), read as `lr plan`
    reads it (lrsim.plan.whatif.WhatIf)."""
    from lrcore.errors import UserError
    from lrsim.plan.whatif import WhatIf

    try:
        return WhatIf.from_flags(max_num_seqs=text and text.strip()).max_num_seqs
    except UserError as e:
        raise SystemExit(f"{script}: {e}") from None


def max_num_seqs_note(cap: int | str | None, where: str = "the replays and the plans") -> str:
    """The renders' sentence for `where` run with --max-num-seqs ("" without)."""
    if cap is None:
        return ""
    how = ("as the real engines had it (a replay at its block's run's, a plan at its calibration "
           "traces')" if cap == "recorded" else f"at {cap}")
    return (f" Each engine's sequences per pass capped {how} in {where} (--max-num-seqs {cap}), "
            "not at the simulator's 256.")


def curve_shaping() -> dict:
    """calibrate()'s batch-curve arguments as bench_load set them (BATCH_CURVES, CURVE_AS_MEASURED):
    one place, so no profile of a run takes the curves one way and another the other."""
    return {"batch_curves": BATCH_CURVES, "smooth_curves": not CURVE_AS_MEASURED}


def predict_block(prof: Profile, block: list[dict], speed: dict | None = None, carry: bool = False) -> float:
    """Simulated makespan of the block's records run together, at the machine speed probed
    before it (the record's own probe at level 1; the run's probe of the idle engines above), or
    at `speed` ({engine: {"decode_s", "prefill_s"}}: one probe for every block) when given
    (`carry`: replay_worlds)."""
    worlds, over = replay_worlds(prof, block, speed, carry=carry)
    spans = [max(r.finish for r in w.records) - min(r.arrival for r in w.records) for w in worlds]
    return sum(spans) / len(spans) + over


def block_probe(block: list[dict]) -> dict:
    """The probes a block ran at: its first record's (lrsim.calib.physical.record_probe: a lone
    record's own, else its run's probe of the idle engines before the first request)."""
    from lrsim.calib.physical import record_probe

    return record_probe(block[0])


def replay_worlds(prof: Profile, block: list[dict], speed: dict | None = None,
                  arrivals: bool = False, carry: bool = False) -> tuple[list, float]:
    """The block's records simulated together (predict_block's machine speed), once per replay
    seed (ar draws nothing: once), with their recorded arrivals when `arrivals` (an open-loop
    block); returns the simulated worlds and the profile's per-request overhead (s) of the mode.
    `carry` (with `speed`, an aggregate probe): the profile's fitted contention scaled by the
    side-by-side probes' c too (rescale.contention_scales); off by default, since across two
    sittings of one host it brought fewer replayed points within 10% (docs/load.md, "Two
    sittings with side-by-side probes")."""
    from lrsim.sim.runner import run

    first = block[0]
    probe = {"before": {"engines": speed}} if speed is not None else block_probe(block)
    # only one probe for every block (a corpus's median) may carry the machine's contention
    prof = probe_scaled(prof, {"probe": probe, "problem_id": first["problem_id"]}, "before",
                        contention=carry and speed is not None)
    worlds = []
    for seed in range(1 if first["mode"] == "ar" else REPLAY_SEEDS):
        as_run = DECIDE_AFRESH and AFRESH_AS_RUN
        wl = ReplayWorkload(block, source=f"block {first['run']['flags']['load_round']}", seed=seed,
                            arrivals=arrivals, recorded_decisions=not DECIDE_AFRESH,
                            off_path_prefill=OFF_PATH_PREFILL, carried_prior=as_run,
                            own_sd_rate=OWN_SD_RATE, recorded_sd_rounds=RECORDED_SD_ROUNDS)
        cap = record_max_seqs(first) if MAX_NUM_SEQS == "recorded" else MAX_NUM_SEQS   # as it ran
        cfg = prof.to_config(first["mode"], workload=wl, max_seqs=cap, **_knobs(first, prof))
        cfg.sd_plain_first_pass = SD_PLAIN_FIRST_PASS
        if as_run:
            as_the_run(cfg, wl)
        worlds.append(run(cfg)[1])
    over = prof.doc["overheads"].get("per_request_s_by_mode", {}).get(
        first["mode"], prof.doc["overheads"].get("per_request_s", 0.0))
    return worlds, over


def level_table(level: dict[str, list[dict]], prof: Profile | None, speed: dict | None = None,
                carry: bool = False) -> dict:
    """Per configuration: measured (and replayed) tokens/s over the blocks every configuration
    of the level finished, and speedups over ar and ar-er on those blocks; `speed`: replay every
    block at that one probe (predict_block; `carry`: replay_worlds)."""
    by_cfg = {c: blocks(recs) for c, recs in level.items()}
    common = set.intersection(*(set(b) for b in by_cfg.values())) if by_cfg else set()
    # only full blocks (a killed block's survivors ran beside fewer requests than N)
    n = max((len(b) for bs in by_cfg.values() for b in bs.values()), default=0)
    common = {k for k in common if all(len(bs[k]) == n for bs in by_cfg.values())}
    out = {}
    for cfg, bs in sorted(by_cfg.items()):
        sel = [bs[k] for k in sorted(common)]
        if not sel:
            continue
        toks = sum(r["output_tokens"] for b in sel for r in b)
        meas = sum(makespan(b) for b in sel)
        row = {"blocks": len(sel), "records": sum(len(b) for b in sel), "tokens": toks,
               "tokens_per_s": toks / meas,
               "mean_latency_s": float(np.mean([r["load"]["latency_s"] for b in sel for r in b])),
               "ttft_p50_s": _median([r["load"]["ttft_s"] for b in sel for r in b]),
               "tpot_p50_s": _median([r["load"]["tpot_s"] for b in sel for r in b]),
               "step_acceptance": _ratio(sel, "accepted", "proposed"),
               "correct": sum(bool(r["correct"]) for b in sel for r in b)}
        if prof is not None and cfg != "ar-er":      # another binding: only its TP efficiency
            row["predicted_tokens_per_s"] = toks / sum(predict_block(prof, b, speed, carry) for b in sel)
        out[cfg] = row
    for cfg, row in out.items():
        if "ar" in out and cfg != "ar":
            row["speedup_vs_ar_ci90"] = speedup_interval([by_cfg[cfg][k] for k in sorted(common)],
                                                         [by_cfg["ar"][k] for k in sorted(common)])
        for base in ("ar", "ar-er"):
            if base in out and cfg != base:
                row[f"speedup_vs_{base}"] = row["tokens_per_s"] / out[base]["tokens_per_s"]
                if base == "ar":    # the ratio of mean request latencies, as lr plan's speedup is
                    row["latency_speedup_vs_ar"] = out["ar"]["mean_latency_s"] / row["mean_latency_s"]
                if "predicted_tokens_per_s" in row and base == "ar":
                    row["predicted_speedup_vs_ar"] = (row["predicted_tokens_per_s"]
                                                      / out["ar"]["predicted_tokens_per_s"])
    return out


CI_LEVEL, CI_RESAMPLES = 0.90, 2000   # the measured speedup's interval over blocks (speedup_interval)


def speedup_interval(cfg_blocks: list[list[dict]], ar_blocks: list[list[dict]]) -> list[float] | None:
    """A 90% bootstrap interval of the measured speedup over ar (tokens over makespans, both
    summed over the blocks), the blocks resampled in pairs (block k of both ran the same
    problems): how far the measurement itself could move with other problems. None below 3
    blocks. scipy.stats.bootstrap, percentile method (BCa needs more blocks than a level has),
    seeded: the same traces give the same interval."""
    from scipy.stats import bootstrap

    if len(cfg_blocks) < 3:
        return None
    cols = [np.array([sum(r["output_tokens"] for r in b) for b in cfg_blocks], float),
            np.array([makespan(b) for b in cfg_blocks]),
            np.array([sum(r["output_tokens"] for r in b) for b in ar_blocks], float),
            np.array([makespan(b) for b in ar_blocks])]

    def ratio(tc, sc, ta, sa, axis=-1):
        return (tc.sum(axis) / sc.sum(axis)) / (ta.sum(axis) / sa.sum(axis))

    ci = bootstrap(cols, ratio, paired=True, vectorized=True, confidence_level=CI_LEVEL,
                   n_resamples=CI_RESAMPLES, method="percentile",
                   rng=np.random.default_rng(0)).confidence_interval
    return [float(ci.low), float(ci.high)]


def _median(xs):
    xs = [x for x in xs if x is not None]
    return float(np.median(xs)) if xs else None


def _ratio(sel, a, b):
    num = sum(r["step_acceptance"][a] for blk in sel for r in blk)
    den = sum(r["step_acceptance"][b] for blk in sel for r in blk)
    return num / den if den else None


def calib_paths(load_root: Path, rounds: set[int] | None = None, scratch: Path | None = None,
                levels: tuple[int, ...] | None = None) -> list[str]:
    """The corpus's level 1-2 trace files (or those of `levels`: --calibrate-levels); with
    `rounds`, copies of them holding those rounds' records only (run.flags.load_round), written
    under `scratch`: a profile from one round of a sitting, to predict its later rounds."""
    paths = [p for n in (levels or CALIB_LEVELS) for p in sorted((load_root / "gsm8k" / f"c{n}").glob("*.jsonl"))]
    if rounds is None:
        return [str(p) for p in paths]
    out = []
    for p in paths:
        keep = [line for line in p.read_text().splitlines()
                if line.strip() and int(json.loads(line)["run"]["flags"]["load_round"]) in rounds]
        if keep:
            dst = Path(scratch) / p.parent.name / p.name
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.write_text("\n".join(keep) + "\n")
            out.append(str(dst))
    return out


def levels_said(levels, sep: str = ", ") -> str:
    """Calibration levels as a text names them: "1-2" for the default (or none given), else the
    levels joined by `sep`."""
    levels = tuple(levels or ())
    return "1-2" if levels in ((), (1, 2)) else sep.join(map(str, levels))


def parse_levels(text: str, prog: str, flag: str = "--calibrate-levels") -> tuple[int, ...]:
    """Comma-separated levels (sequences in flight) to calibrate on, e.g. "1,2,4,8"; a bad one
    exits with one line."""
    try:
        out = tuple(sorted({int(x) for x in text.split(",")}))
    except ValueError:
        sys.exit(f"{prog}: {flag} {text!r}: comma-separated levels in flight (1, 2, ...)")
    if not out or out[0] < 1:
        sys.exit(f"{prog}: {flag} {text!r}: levels in flight count from 1")
    return out


def measure(calib_root: Path, corpus: dict, speed: dict | None = None,
            paths: list[str] | None = None, carry: bool = False,
            batch_factors: bool = False) -> tuple[list[str], dict, Profile]:
    """Every level's measured and replayed table (the replay's profile calibrated on 1-2 in
    flight of the corpus at `calib_root`, or on `paths`; `speed`: every block replayed at that
    one probe; `carry`: replay_worlds; `batch_factors`: lr calibrate --batch-factors); returns the calibration files and that profile too."""
    paths = paths or calib_paths(calib_root)
    prof = Profile(validate_doc(calibrate(paths, configs=set(PROFILE_CONFIGS), select_placement=False,
                                          batch_factors=batch_factors, **curve_shaping())))
    return paths, {n: level_table(lv, prof, speed, carry) for n, lv in sorted(corpus.items())}, prof


def speedup_error_map(levels: dict) -> dict[str, float]:
    """{config@level: replayed / measured speedup over ar - 1} of every replayed configuration."""
    return {f"{cfg}@{n}": row["predicted_speedup_vs_ar"] / row["speedup_vs_ar"] - 1
            for n, t in levels.items() for cfg, row in t.items() if row.get("predicted_speedup_vs_ar")}


def speedup_errors(prof: Profile, corpus: dict, speed: dict | None, carry: bool = False) -> dict[str, float]:
    """speedup_error_map of `corpus` replayed by `prof` (at `speed`; `carry`: replay_worlds)."""
    return speedup_error_map({n: level_table(lv, prof, speed, carry) for n, lv in sorted(corpus.items())})


def replay_speedup_errors(levels: dict) -> list[float]:
    """|replayed / measured - 1| of every replayed configuration's speedup over ar."""
    return [abs(e) for e in speedup_error_map(levels).values()]


def replay_errors(levels: dict) -> list[float]:
    """Replayed over measured tokens/s, minus 1, of every replayed (level, configuration)."""
    return [r["predicted_tokens_per_s"] / r["tokens_per_s"] - 1
            for t in levels.values() for r in t.values() if r.get("predicted_tokens_per_s")]


def fit_summary(prof: Profile) -> dict:
    """Per engine: the measured position (and batch) factors and, per configuration, the sum of its
    forward passes as priced by the line alone and with the factors, minus the measured sum."""
    out = {}
    for role in ("target", "draft"):
        lat = prof.doc["latency"].get(role) or {}
        fit = lat.get("fit") or {}
        out[role] = {"position_factors": lat.get("position_factors", []),
                     **({"batch_factors": lat["batch_factors"]} if lat.get("batch_factors") else {}),
                     **({"batch_factors_from": fit["batch_factors_from"]}
                        if fit.get("batch_factors_from") else {}),
                     "by_config": {c: {k: row[k] for k in ("passes", "linear_sum_diff_pct", "sum_diff_pct")
                                       if k in row}
                                   for c, row in (fit.get("by_config") or {}).items() if c != "probe"}}
    return out


def corpus_probe(corpus: dict) -> dict:
    """The median probe of every engine over a corpus (each record's own probes at level 1, the
    run's probe of the idle engines before each block above): the machine speed it ran at (the
    equal-resources blocks' probes left out, as in a profile's reference)."""
    from lrsim.calib.physical import reference_probe

    return reference_probe([r for lv in corpus.values() for rs in lv.values() for r in rs]) or {}


def contention_whatif(prof: Profile, held_root: Path, corpus: dict, speed: dict | None,
                      rounds: set[int] | None = None, scratch: Path | None = None,
                      batch_factors: bool = False) -> dict:
    """A diagnosis, not a prediction: the replay once more with the profile's contention (each
    engine's slowdown beside the other, lrsim/calib/physical.py) replaced by the one the held-out
    corpus's own levels 1-2 fit (of `rounds`, the rounds the replay predicts, every round when
    None; of the configurations `corpus` holds). How much of a held-out miss the
    machine's contention explains, which a probe of idle engines cannot carry
    (docs/calibration.md, "Contention")."""
    # the blocks the replay predicts: their rounds, and their configurations (a corpus's others,
    # left out by --configs, may have run in another sitting: traces/load-cold-epyc-more's sd)
    labels = {c for level in corpus.values() for c in level} & set(CALIB_CONFIGS)
    paths = [p for p in calib_paths(held_root, rounds, scratch) if Path(p).stem in labels]
    if not paths:   # e.g. --rounds names a round whose levels 1-2 were not collected
        which = ("every round" if rounds is None else
                 ("round " if len(rounds) == 1 else "rounds ") + ", ".join(map(str, sorted(rounds))))
        return {"skipped": f"{held_root.name} holds no level 1-2 traces of {which} for "
                           f"{', '.join(sorted(labels))}: no contention of its own to fit"}
    own = calibrate(paths, configs=set(CALIB_CONFIGS), select_placement=False, batch_factors=batch_factors,
                    **curve_shaping())
    doc = copy.deepcopy(prof.doc)
    beta = {r: float(own["latency"][r].get("contention", 0.0)) for r in ("target", "draft")
            if r in own["latency"] and r in doc["latency"]}
    for r, b in beta.items():
        doc["latency"][r]["contention"] = b
    # replaced outright: no side-by-side probe scales it again (speedup_errors carries nothing)
    errs = speedup_errors(Profile(validate_doc(doc)), corpus, speed)
    return {"profile": {r: float(prof.doc["latency"][r].get("contention", 0.0)) for r in beta},
            "held_out_fit": beta, "replay_speedup_error": errs}
