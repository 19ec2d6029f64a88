"""Real Lookahead Reasoning under load: measured speedup and break-even vs what the simulator,
calibrated at 1 and 2 requests in flight only, predicts at 4 and 8.

    .venv/bin/python benchmarks/bench_load.py [--load traces/load] [--json]
        [--out benchmarks/results/load.json]

Reads the load corpus (benchmarks/collect_load.py: traces/load/gsm8k/c<N>/<config>.jsonl; a
block = N problems run together, a closed loop of N). Per level N and configuration:

  measured     tokens/s = the blocks' output tokens / the sum of their makespans (first request
               start to last request end); speedup = tokens/s over ar's on the same blocks (the
               target on its own core) and over ar-er's (AR on both cores: equal resources);
               TTFT and TPOT medians (load.ttft_s / load.tpot_s).
  replayed     a profile calibrated on the c1 and c2 records of every configuration (ar-er's,
               another binding, only give the equal-resources TP efficiency: lrsim/calib/
               equal.py) replays every block but ar-er's: its N records simulated together
               (their recorded steps, lengths and verdicts; N requests in flight on the
               simulated engines, which batch them with the calibrated batch-latency curve), the
               profile scaled to the machine speed probed before the block.
  planned      `lr plan --profile P --concurrency N` (a synthetic workload from the profile's
               acceptance and step lengths; one profile per verifier, calibrated on 1-2 in
               flight): each configuration's planned tokens/s as measured (ar and sd on one
               device, `--devices 1`; the LR ones on both) over ar's and ar-er's (the ratio of
               mean latencies, the plan's own `speedup`, is kept beside it: plan_at).
  break-even   the first measured level at which each configuration's speedup is <= 1, against
               ar and against ar-er; the same from the replay and from the plan, and the one
               `lr plan --find-break-even --objective throughput` finds by bisection over every
               level up to the highest (the tokens/s ratio, as measured).

Targets: predicted speedup within 10% of measured at every level, the predicted
break-even level equal to the measured one. Levels 1 and 2 are in-sample for the replay's latency
curves; 4 and 8 are not.

Held out (`--calibrate-on traces/load --load traces/load-heldout`): the profiles come from the
calibration corpus's 1-2 in flight and predict a corpus collected at another time, on another
host, on other problems and at other levels (benchmarks/collect_load.py --first-problem 400
--levels 1,3,6): every level is out of sample. The replay and the plan's profiles are rescaled
once to the held-out corpus's median probe (what a user does: `lr calibrate probe`, then plan; a
single probe of idle engines is noisy), so the replayed tokens/s are absolute predictions too; the
replay at each block's own probe is reported beside it, and, as a diagnosis, the replay with the
profile's contention replaced by the held-out corpus's own fit (what the alone probe cannot carry;
docs/calibration.md, "Contention").

Held out in time (`--load traces/load-cold-epyc-side --calibrate-rounds 0 --rounds 1`): the profiles
come from one round's levels 1-2 and predict the corpus's other rounds, collected after them in
the same sitting. A held-out corpus's median probe leaves its equal-resources blocks' probes out
(their target runs on both cores), and the replay is also reported with each block at its own
probe, since a speedup over ar pairs blocks that collect_load ran in different engine phases.

Transfer (`--calibrate-on traces/load --load traces/load-transfer`): the same, on configurations
the profiles never ran (benchmarks/collect_load.py --set transfer: lr at depths 1 and 3, lr+sd at
depth 3, all with the embedding verifier, beside ar on problems 600 on). The replay moves the
latency curves to them (their own steps and verdicts replayed); the plan prices them from the
depth-2 profile alone, acceptance by depth included (a depth past the profile's deepest takes the
deepest's acceptance).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.write import batch_curves, parse_or_render, write_results  # noqa: E402
from lrsim.calib import physical  # noqa: E402
from lrsim.calib.calibrate import read_records  # noqa: E402
from lrsim.calib.profile import save_profile  # noqa: E402
from lrsim.calib.rescale import contention_scales, machine  # noqa: E402

# the corpus and its replay (load_replay.py) and the plan's side (load_plan.py); the names other
# benchmarks and tests read through this module are re-exported here
from benchmarks.load_plan import (ACCEPTANCE_CONFIGS, BOTH_DEVICES, ONE_DEVICE, PLAN_ARGS,  # noqa: E402,F401
                                  PLAN_PROFILES, break_even, level, lr_plan, measured_acceptance,
                                  plan_at, plan_profile, search, wanted_profiles)
from benchmarks import load_replay  # noqa: E402
from benchmarks.load_replay import (CALIB_CONFIGS, CALIB_LEVELS, CI_LEVEL, CI_RESAMPLES,  # noqa: E402,F401
                                    PROFILE_CONFIGS, REPLAY_SEEDS, _median, _ratio, blocks,
                                    calib_paths, corpus_probe, fit_summary, level_table, load_corpus,
                                    makespan, measure, predict_block, replay_errors,
                                    replay_speedup_errors, replay_worlds, speedup_interval,
                                    contention_whatif, levels_said, parse_levels, speedup_error_map,
                                    speedup_errors)

SPEEDUP_TARGET = 0.10          # relative error of the predicted speedup we aim for


def corpus_args(doc: str, load: str, calibrate_on: str | None, out: str, calibrate_help: str | None = None):
    """The flags of a benchmark that predicts a load corpus from a calibration corpus's 1-2 in flight."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--load", default=load)
    ap.add_argument("--calibrate-on", default=calibrate_on, help=calibrate_help)
    ap.add_argument("--out", default=out)
    return ap


def parse_rounds(text: str | None, flag: str = "--rounds") -> set[int] | None:
    if not text:
        return None
    try:
        out = {int(x) for x in text.split(",")}
    except ValueError:
        sys.exit(f"bench_load: {flag} {text!r}: comma-separated round numbers (0, 1, ...)")
    if min(out) < 0:
        sys.exit(f"bench_load: {flag} {text!r}: rounds count from 0")
    return out


def only_rounds(corpus: dict, rounds: set[int] | None, configs: set[str] | None = None) -> dict:
    """The corpus's records of `rounds` and `configs` only (all when None): a corpus whose
    sittings ran the host at different speeds is compared within what one sitting ran, since a
    measured speedup over ar pairs blocks of one round."""
    if rounds is None and configs is None:
        return corpus
    out: dict = {}
    for n, lv in corpus.items():
        for cfg, recs in lv.items():
            if configs is not None and cfg not in configs:
                continue
            keep = [r for r in recs if rounds is None or int(r["run"]["flags"]["load_round"]) in rounds]
            if keep:
                out.setdefault(n, {})[cfg] = keep
    return out


def read_or_exit(bench: str, read, folder: str, what: str, hint: str = ""):
    """`read(ROOT / folder)`, or a one-line exit naming the folder when it found nothing."""
    got = read(ROOT / folder)
    if not got:
        sys.exit(f"{bench}: no {what} under {folder}{hint}")
    return got


def carry_fields(prof, corpus: dict, today: dict, carry: bool) -> dict:
    """A held-out result's contention carry: the factor on each engine's fitted contention the
    side-by-side probes measured (c of the corpus's median probe over the profile's reference; {}
    where either has none), whether the replay and the plan applied it (--carry-contention), and
    the replayed speedup's errors the other way (speedup_errors; None when there was nothing to
    carry): with the carry when it was left out, the default, and without it when not. In sample
    (`today` None: each block at its own probe) nothing is carried."""
    scales = contention_scales(prof.doc.get("probe") or {}, [today]) if today is not None else None
    other = speedup_errors(prof, corpus, today, carry=not carry) if scales else None
    return {"contention_scales": scales, "contention_carried": bool(scales) and carry,
            "replay_speedup_error_with_carry": None if carry else other,
            "replay_speedup_error_no_carry": other if carry else None}


def main() -> None:
    ap = corpus_args(__doc__, "traces/load", None, "benchmarks/results/load.json",
                     "calibrate on this corpus's 1-2 in flight instead (held out: every level "
                     "of --load is predicted; default: --load itself); comma-separated: those "
                     "corpora pooled into one profile (e.g. two sittings predicting a third)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--rounds", help="comma-separated rounds (run.flags.load_round) of --load to "
                    "predict, e.g. those one sitting ran all configurations of (default: all)")
    ap.add_argument("--configs", help="comma-separated configurations of --load to predict "
                    "(default: all; ar is always kept: speedups are over it)")
    ap.add_argument("--calibrate-levels", default="1,2",
                    help="calibrate on these levels in flight of the calibration corpus, comma-separated "
                         "(default 1,2: predict loads never measured; e.g. 1,2,4,8: every load a corpus "
                         "of other configurations ran)")
    ap.add_argument("--calibrate-rounds", help="calibrate on these rounds of the calibration "
                    "corpus only, e.g. a sitting's first round to predict its later ones with "
                    "--rounds (held out when the two do not overlap; in sample when they are "
                    "the same rounds, so a corpus still being collected keeps its answer)")
    ap.add_argument("--carry-contention", action="store_true",
                    help="held out: scale the profile's fitted contention by the side-by-side "
                         "probes' c (corpus over profile), as `lr calibrate probe --carry-contention` "
                         "does; off by default: across sittings it brought fewer replayed points within 10%% "
                         "(docs/load.md, \"Two sittings with side-by-side probes\")")
    ap.add_argument("--batch-factors", action="store_true",
                    help="calibrate every profile with `lr calibrate --batch-factors` (the measured "
                         "correction per batch size of a plain decode pass; docs/load.md, \"A fourth CPU\")")
    ap.add_argument("--target-batch-curve", metavar="PATH",
                    help="calibrate every profile with `lr calibrate --target-batch-curve PATH` (a "
                         "measured curve, lr calibrate measure, gives the target's line its shape in "
                         "the batch size; docs/load.md, \"What the line charges a larger batch\")")
    ap.add_argument("--draft-batch-curve", metavar="PATH", help="the same for the draft's line")
    ap.add_argument("--batch-curve-as-measured", action="store_true",
                    help="with the batch curves: their points as measured, not smoothed by a rising "
                         "fit (`lr calibrate --batch-curve-as-measured`: a curve that dips)")
    ap.add_argument("--adaptive-afresh", action="store_true",
                    help="replay adaptive records (lr-adaptive) with the simulator's lr-adaptive "
                         "deciding afresh, not with the depth, width and k2 each record's run chose")
    ap.add_argument("--afresh-as-run", action="store_true",
                    help="with --adaptive-afresh: decide as the real backend does, one Estimator "
                         "for a block's requests (acceptance included, its price checked against "
                         "their commits: a scenario's [policy] adaptive_scope \"run\"), with the "
                         "run's recorded knobs, starting from the estimates the recorded run held "
                         "at the block's first decision; off: each "
                         "request from the neutral prior, learning its acceptance alone")
    ap.add_argument("--off-path-prefill", action="store_true",
                    help="replay a job off the committed path (after a rejected draft) with the "
                         "prefill its record counts for the discarded or cancelled job of that "
                         "depth, where it counts one, instead of the prefix cache's blocks "
                         "(a diagnosis; docs/load.md, \"What the replay's passes hold\")")
    ap.add_argument("--sd-plain-first-pass", action="store_true",
                    help="replay each new target request's first pass (its prefill) as sampling one "
                         "token and verifying no SD proposal, as vLLM runs it, not as one of its SD "
                         "rounds (a diagnosis of the replay only; docs/load.md)")
    ap.add_argument("--own-sd-rate", action="store_true",
                    help="replay each record run beside others with token-level SD at its own tokens per "
                         "target pass (its spans' tokens over the passes they ran in), not at its window's, "
                         "which counts every request in flight (lrsim/calib/replay.ReplayWorkload)")
    ap.add_argument("--recorded-sd-rounds", nargs="?", const="committed", default="", choices=("committed", "first"),
                    help="replay each committed-path target job of an SD record in the passes its recorded span ran in "
                         "(the span's own SD rate), not in rounds drawn at the record's one rate; 'first': the "
                         "first step's job only (lrsim/sim/traces.TraceWorkload.spec_rounds; docs/load.md)")
    ap.add_argument("--max-num-seqs", metavar="N|recorded",
                    help="cap each engine's sequences per pass in the replays and the plans (lr plan "
                         "--max-num-seqs): a number, or 'recorded', as the calibration traces ran them "
                         "(the profile's placement.max_num_seqs); default: the simulator's 256")
    ap.add_argument("--probe-decode-fallback", action="store_true",
                    help="read a probe whose alone decode timed no plain pass (an SD engine's "
                         "n-gram proposer matched the probe's output) from its side-by-side decode "
                         "pass, else its prefill, not as the reference speed, in the fits and the "
                         "replays (lrsim/calib/physical.PROBE_DECODE_FALLBACK)")
    a = parse_or_render(ap, render, "replay or plan")
    if a is None:
        return
    if a.afresh_as_run and not a.adaptive_afresh:
        raise SystemExit("error: --afresh-as-run applies with --adaptive-afresh")
    load_replay.DECIDE_AFRESH = a.adaptive_afresh
    load_replay.AFRESH_AS_RUN = a.afresh_as_run
    load_replay.OFF_PATH_PREFILL = a.off_path_prefill
    load_replay.SD_PLAIN_FIRST_PASS = a.sd_plain_first_pass
    load_replay.OWN_SD_RATE = a.own_sd_rate
    load_replay.RECORDED_SD_ROUNDS = a.recorded_sd_rounds
    load_replay.MAX_NUM_SEQS = load_replay.max_num_seqs_arg(a.max_num_seqs)
    physical.PROBE_DECODE_FALLBACK = a.probe_decode_fallback
    curves = batch_curves(a, ROOT, "error")
    if curves and a.batch_factors:
        raise SystemExit("error: --batch-factors and --target-batch-curve/--draft-batch-curve each "
                         "shape the line in the batch size: use one or the other")
    if a.batch_curve_as_measured and not curves:
        raise SystemExit("error: --batch-curve-as-measured keeps the --target-batch-curve/"
                         "--draft-batch-curve points unsmoothed: give one")
    load_replay.BATCH_CURVES = {r: str(ROOT / c) for r, c in curves.items()}
    load_replay.CURVE_AS_MEASURED = a.batch_curve_as_measured
    t0, c0 = time.perf_counter(), time.process_time()
    rounds = parse_rounds(a.rounds)
    cal_rounds = parse_rounds(a.calibrate_rounds, "--calibrate-rounds")
    cal_levels = parse_levels(a.calibrate_levels, "bench_load")
    wanted = set(a.configs.split(",")) | {"ar"} if a.configs else None
    # --calibrate-on may name several corpora (comma-separated: sittings pooled into one profile)
    cal_names = [c.strip() for c in (a.calibrate_on or a.load).split(",") if c.strip()]
    cal_roots = [(ROOT / c).resolve() for c in cal_names]
    same = (ROOT / a.load).resolve() in cal_roots
    if same and len(cal_roots) > 1:
        sys.exit(f"bench_load: --calibrate-on {a.calibrate_on}: names --load {a.load} beside other "
                 "corpora; pool other corpora only (or --calibrate-rounds for other rounds of it)")
    if len(set(cal_roots)) < len(cal_roots):
        sys.exit(f"bench_load: --calibrate-on {a.calibrate_on}: a corpus named twice")
    if same and cal_rounds is not None and cal_rounds != rounds and (rounds is None or rounds & cal_rounds):
        sys.exit(f"bench_load: --calibrate-rounds {a.calibrate_rounds} of the corpus predicted: "
                 "--rounds must name other rounds (a held-out prediction) or the same ones (in sample)")
    corpus = read_or_exit("bench_load", lambda root: only_rounds(load_corpus(root), rounds, wanted),
                          a.load, "load traces" + (f" of rounds {a.rounds}" if rounds else "")
                          + (f" of configurations {a.configs}" if wanted else ""),
                          " (benchmarks/collect_load.py)")
    # held out: another corpus, or other rounds of this one (a later part of its sitting)
    held_out = not same or (cal_rounds is not None and cal_rounds != rounds)
    scratch = tempfile.TemporaryDirectory()
    cal_paths = [p for i, name in enumerate(cal_names) for p in read_or_exit(
        "bench_load", lambda root: calib_paths(root, cal_rounds, Path(scratch.name) / str(i), cal_levels),
        name, f"level {levels_said(cal_levels, ',')} traces" + (f" of rounds {a.calibrate_rounds}" if cal_rounds else ""),
        " to calibrate on")]
    # the CPU models each side ran on: the render says whether the profile crossed machines
    predicted = [r for lv in corpus.values() for rs in lv.values() for r in rs]
    cal_records = [r for p in cal_paths for r in read_records(p)]
    hw = {"corpus": cpus(predicted), "calibrated_on": cpus(cal_records)}
    # problems the calibration records ran that the predicted corpus runs too
    shared = len({r["problem_id"] for r in predicted} & {r["problem_id"] for r in cal_records})
    today = corpus_probe(corpus) if held_out else None
    # held out: every block replayed at the corpus's median probe, as the plan is priced (a
    # single probe of idle engines is noisy); each block's own probe only for the record below
    paths, measured, replay_profile = measure(cal_roots[0], corpus, today, cal_paths, a.carry_contention,
                                              a.batch_factors)
    # the same profile, not calibrated a second time, each block at its own probe: a speedup pairs
    # blocks that may have run at different host speeds (collect_load's phases restart the engines)
    own_levels = {n: level_table(lv, replay_profile) for n, lv in sorted(corpus.items())} if held_out else None
    own = replay_errors(own_levels) if held_out else None
    # the held-out corpus's own contention, fit on the rounds predicted (every round unless --rounds)
    whatif = (contention_whatif(replay_profile, ROOT / a.load, corpus, today,
                                rounds, Path(scratch.name) / "predicted", a.batch_factors)
              if held_out else None)
    with tempfile.TemporaryDirectory() as tmp:
        # a profile per verifier the calibration corpus ran LR with (traces/load-cold-epyc-side:
        # the embedding verifier only)
        ran = {Path(p).stem for p in paths}
        plan_names = wanted_profiles(ran)
        if not plan_names:
            sys.exit(f"bench_load: {a.calibrate_on or a.load}: no lr, lr+sd or sd records at {levels_said(cal_levels, ',')} in flight "
                     "to calibrate a plan profile on")
        profiles = {name: save_profile(plan_profile(paths, PLAN_PROFILES[name][0], today, a.carry_contention,
                                                    a.batch_factors),
                                       Path(tmp) / f"load-profile-{name}.json") for name in plan_names}
        # what the profiles were calibrated with, read back from them (not the flag): every one
        # took the curves as measured, or none did
        as_measured = {bool(json.loads(Path(p).read_text())["source"].get("batch_curves_as_measured"))
                       for p in profiles.values()} | {bool(replay_profile.doc["source"].get("batch_curves_as_measured"))}
        if as_measured != {a.batch_curve_as_measured}:
            sys.exit("bench_load: the replay and plan profiles disagree with --batch-curve-as-measured")
        # the plan prices every configuration of its grid; kept: those the corpus measured, and
        # the equal-resources baseline
        def kept(n, rows):
            return {c: r for c, r in rows.items() if c in corpus[n] or c == "ar-er"}
        planned = {n: kept(n, plan_at(profiles, n)) for n in sorted(corpus)}
        planned_acc = {n: kept(n, plan_at(measured_acceptance(profiles, corpus[n], Path(tmp), n), n))
                       for n in sorted(corpus)}
        searched = search(profiles, max(corpus))
        tp_eff = {name: json.loads(Path(path).read_text())["placement"].get("equal_resources")
                  for name, path in profiles.items()}
    configs = sorted({c for t in measured.values() for c in t} - {"ar"})
    be = {c: {"measured_vs_ar": break_even(measured, "speedup_vs_ar", c),
              "measured_vs_ar-er": break_even(measured, "speedup_vs_ar-er", c),
              "replayed_vs_ar": break_even(measured, "predicted_speedup_vs_ar", c),
              "planned_vs_ar": break_even(planned, "speedup_vs_ar", c),
              "planned_vs_ar-er": break_even(planned, "speedup_vs_ar-er", c),
              "searched_vs_ar": searched.get(c, {}).get("vs_ar", "-"),
              "searched_vs_ar-er": searched.get(c, {}).get("vs_ar-er", "-")}
          for c in configs}
    errs = replay_speedup_errors(measured)
    tps = replay_errors(measured)
    out = {"corpus": a.load,                                  # the corpus predicted
           "levels": {str(n): t for n, t in measured.items()},
           "planned": {str(n): t for n, t in planned.items()},
           # the plan given each level's measured step acceptance (measured_acceptance)
           "planned_at_measured_acceptance": {str(n): t for n, t in planned_acc.items()},
           "break_even": be,
           # the calibration corpus; corpora pooled into one profile: comma-separated
           "calibrated_on": {"corpus": ",".join(cal_names), "levels": list(cal_levels),
                             "rounds": sorted(cal_rounds) if cal_rounds else None,
                             "same_corpus": same, "shared_problems": shared,
                             "configs": list(PROFILE_CONFIGS), "held_out": held_out,
                             # configurations predicted that no calibration record ran (a
                             # file the profile does not read, e.g. lr-adaptive-d2's, runs none)
                             "unseen_configs": sorted({c for t in measured.values() for c in t}
                                                      - (ran & set(PROFILE_CONFIGS))),
                             # every profile with lr calibrate --batch-factors (absent: without)
                             **({"batch_factors": True} if a.batch_factors else {}),
                             # every profile's line shaped by these measured curves (absent: without)
                             **({"batch_curves": curves} if curves else {}),
                             # the curves' points as measured, not smoothed (absent: smoothed)
                             **({"batch_curves_as_measured": True} if True in as_measured else {})},
           # off-path jobs replayed with their recorded prefill (absent: the prefix cache's blocks)
           **({"off_path_prefill": True} if a.off_path_prefill else {}),
           **({"sd_plain_first_pass": True} if a.sd_plain_first_pass else {}),
           **({"own_sd_rate": True} if a.own_sd_rate else {}),
           **({"recorded_sd_rounds": a.recorded_sd_rounds} if a.recorded_sd_rounds else {}),
           # each engine's cap in the replays and plans (absent: the simulator's 256)
           **({"max_num_seqs": load_replay.MAX_NUM_SEQS} if load_replay.MAX_NUM_SEQS is not None else {}),
           **({"probe_decode_fallback": True} if a.probe_decode_fallback else {}),
           # how adaptive records replayed (absent: with their recorded decisions)
           **({"adaptive_replay": "afresh-as-run" if a.afresh_as_run else "afresh"}
              if a.adaptive_afresh else {}),
           "machines": hw,
           # the machine boots the corpus predicted ran in: a level whose blocks ran in several
           # compares runs of several machines (a resumed collection; lrsim/calib/equal.py)
           "boots": boots(corpus),
           "machine_speed": {"profile": replay_profile.doc.get("probe"), "corpus": today} if held_out else None,
           **carry_fields(replay_profile, corpus, today, a.carry_contention),
           "latency_fit": fit_summary(replay_profile),
           "tp_efficiency": tp_eff,
           "replay_speedup_error_max": max(errs) if errs else None,
           # replayed over measured tokens/s, minus 1 (each block at its probed speed): absolute
           "replay_tokens_per_s_error": {"min": min(tps), "max": max(tps)} if tps else None,
           "replay_probe": "the corpus's median" if held_out else "its own",
           # held out: the same replay with each block at its own probe
           "replay_tokens_per_s_error_own_probe": {"min": min(own), "max": max(own)} if own else None,
           # held out: the replayed speedup's error with each block at its own probe
           "replay_speedup_error_own_probe": speedup_error_map(own_levels) if own_levels else None,
           # held out: the replay again with the corpus's own fitted contention (a diagnosis)
           "contention_whatif": whatif,
           "target": {"speedup_rel_error": SPEEDUP_TARGET},
           "records": sum(len(r) for lv in corpus.values() for r in lv.values()),
           "rounds": sorted(rounds) if rounds else None,
           "configs": sorted(wanted) if wanted else None,
           "max_tokens": next(r["run"]["flags"]["max_tokens"] for lv in corpus.values()
                              for rs in lv.values() for r in rs),
           "elapsed_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0}
    scratch.cleanup()
    write_results(a.out, out, render)
    print(json.dumps(out, indent=1) if a.json else render(out))


def corpora(names: str) -> str:
    """--calibrate-on's corpora as prose: "a", or "a and b" for corpora pooled into one profile."""
    *rest, last = names.split(",")
    return f"{', '.join(rest)} and {last}" if rest else last


UNRECORDED = "family and model not recorded"   # the traces before cpu_id: a CPU's name alone


def cpus(records: list[dict]) -> dict[str, int]:
    """Records per CPU (its model name and, where the trace records it, family and model: every
    EPYC here reads "AMD EPYC", so a name alone does not tell two models apart); records that name
    none count under "unnamed"."""
    out: dict[str, int] = {}
    for r in records:
        hw = (r.get("run") or {}).get("hardware") or {}
        name = machine(hw) or "unnamed"
        if hw.get("cpu_model") and not hw.get("gpu"):
            name += f" ({hw['cpu_id']})" if hw.get("cpu_id") else f" ({UNRECORDED})"
        out[name] = out.get(name, 0) + 1
    return dict(sorted(out.items()))


def boots(corpus: dict) -> dict:
    """{"boots": distinct run.hardware.boot_id, "unrecorded": records without one, "levels_across":
    the levels where the blocks of one round, which its speedups compare, ran in more than one
    boot} (records before the boot id: unrecorded, never "across")."""
    from lrsim.calib.equal import boot

    recs = [r for lv in corpus.values() for rs in lv.values() for r in rs]
    rounds: dict[tuple, set] = {}
    for n, lv in corpus.items():
        for r in (r for rs in lv.values() for r in rs):
            rounds.setdefault((n, r["run"]["flags"].get("load_round")), set()).add(boot(r))
    return {"boots": len({boot(r) for r in recs} - {None}),
            "unrecorded": sum(boot(r) is None for r in recs),
            "levels_across": sorted({n for (n, _), b in rounds.items() if len(b - {None}) > 1})}


def provenance(out: dict) -> str:
    """Where a held-out prediction's profiles came from, against the corpus predicted, as far as
    the records say: other rounds of it; another run (or several pooled), on other problems or
    not (calibrated_on.shared_problems), on the same CPU or another (out["machines"]: records
    per CPU on each side, `cpus`). Results written before these were recorded claim neither."""
    cal = out["calibrated_on"]
    if cal.get("same_corpus"):
        return "other rounds of the same corpus"
    runs = "other runs" if "," in cal["corpus"] else "another run"
    shared = cal.get("shared_problems")
    if shared is not None:
        runs += " on other problems" if not shared else f" sharing {shared} problems"
    hw = out.get("machines") or {}
    mine, theirs = set(hw.get("corpus") or ()), set(hw.get("calibrated_on") or ())
    if not mine or not theirs or "unnamed" in mine | theirs:
        return runs
    named_only = any(UNRECORDED in m for m in mine | theirs)      # "AMD EPYC" is more than one model
    if mine == theirs and len(mine) == 1:
        return f"{runs}, the same CPU{' name' if named_only else ''}: {next(iter(mine))}"
    base = lambda ms: {m.split(" (")[0] for m in ms}  # noqa: E731
    if not mine & theirs and not (named_only and base(mine) & base(theirs)):
        return f"{runs}, another CPU: {', '.join(sorted(theirs))}, predicting {', '.join(sorted(mine))}"
    return f"{runs}; CPUs: {', '.join(sorted(theirs))}, predicting {', '.join(sorted(mine))}"


def plan_errors(out: dict, key: str, speedup: str = "speedup_vs_ar") -> list[float]:
    """|planned / measured - 1| of every configuration's speedup vs ar at every level (`speedup`:
    latency_speedup_vs_ar for the ratio of mean latencies, planned and measured)."""
    return [abs(p[speedup] / out["levels"][n][cfg][speedup] - 1)
            for n, t in out[key].items() for cfg, p in t.items()
            if p.get(speedup) and out["levels"].get(n, {}).get(cfg, {}).get(speedup)]


def misses_inside_interval(out: dict, key: str) -> tuple[int, int]:
    """(how many of the pairs planned more than 10% off lie inside the measured speedup's 90%
    interval over blocks, how many pairs are that far off): the misses the measurement's own
    spread over problems cannot tell from a hit."""
    tol = out["target"]["speedup_rel_error"]
    inside = off = 0
    for n, t in out[key].items():
        for cfg, p in t.items():
            m = out["levels"].get(n, {}).get(cfg, {})
            if p.get("speedup_vs_ar") and m.get("speedup_vs_ar") and abs(p["speedup_vs_ar"] / m["speedup_vs_ar"] - 1) > tol:
                off += 1
                ci = m.get("speedup_vs_ar_ci90")
                inside += bool(ci and ci[0] <= p["speedup_vs_ar"] <= ci[1])
    return inside, off


def interval(ci) -> str:
    return "-" if not ci else f"{ci[0]:.2f}-{ci[1]:.2f}"


def boots_note(b: dict | None) -> str:
    """One sentence on the machine boots the corpus ran in, where its records name them."""
    if not b or not b["boots"]:
        return ""
    s = f" Its records ran in {b['boots']} machine boot{'s' if b['boots'] > 1 else ''}"
    if b["levels_across"]:
        s += (f"; at {', '.join(map(str, b['levels_across']))} in flight the blocks of a round, which "
              "its speedups compare, ran in more than one (a resumed collection: perhaps on another "
              "host, at another speed)")
    return s + (f"; {b['unrecorded']} records name none." if b["unrecorded"] else ".")


def render(out: dict) -> str:
    f = lambda v, fmt="{:.2f}": "-" if v is None else fmt.format(v)  # noqa: E731
    cal = out["calibrated_on"]
    acc = out.get("planned_at_measured_acceptance")
    lines = [f"Load corpus: {out['records']} records (GSM8K, {out['max_tokens']}-token budget; target on core 0, "
             "draft on core 1; ar-er = AR on both cores)."
             + (f" Held out: every prediction comes from profiles calibrated on "
                + (f"round {', '.join(map(str, cal['rounds']))} of " if cal.get("rounds") else "")
                + f"{corpora(cal['corpus'])}'s levels {', '.join(map(str, cal['levels']))} ("
                + provenance(out)
                + (f"; configurations it never ran: {', '.join(cal['unseen_configs'])}"
                   if cal.get("unseen_configs") else "")
                + "), rescaled to this corpus's median probe." if cal.get("held_out") else "")
             + (f" Rounds {', '.join(map(str, out['rounds']))} only." if out.get("rounds") else "")
             + (f" Configurations {', '.join(out['configs'])} only." if out.get("configs") else "")
             + (" Every profile with --batch-factors (a measured correction per batch size of a plain "
                "decode pass)." if cal.get("batch_factors") else "")
             + (" Every profile's line shaped in the batch size by a measured curve ("
                + ", ".join(f"{r}: {c}" for r, c in cal["batch_curves"].items())
                + (", its points as measured, not smoothed" if cal.get("batch_curves_as_measured") else "")
                + ")." if cal.get("batch_curves") else "")
             + (" Adaptive records replayed deciding afresh (the simulator's lr-adaptive), not "
                "with their recorded decisions." if out.get("adaptive_replay") == "afresh" else "")
             + (" Adaptive records replayed deciding afresh as the real backend decides (the "
                "simulator's lr-adaptive with one Estimator for a block's requests, its price "
                "checked against their commits), from the estimates the recorded run held at the "
                "block's first decision, not with their recorded decisions."
                if out.get("adaptive_replay") == "afresh-as-run" else "")
             + (" Jobs off the committed path replayed with the prefill their records count "
                "(--off-path-prefill)." if out.get("off_path_prefill") else "")
             + (" Each new target request's first pass replayed as sampling one token without an SD "
                "proposal (--sd-plain-first-pass)." if out.get("sd_plain_first_pass") else "")
             + (" Each record run beside others replays token-level SD at its own tokens per target pass, "
                "not its window's (--own-sd-rate)." if out.get("own_sd_rate") else "")
             + load_replay.sd_rounds_note(out.get("recorded_sd_rounds"))
             + load_replay.max_num_seqs_note(out.get("max_num_seqs"))
             + (" A probe that timed no plain decode pass read from its side-by-side pass "
                "(--probe-decode-fallback)." if out.get("probe_decode_fallback") else "")
             + boots_note(out.get("boots")),
             "",
             "| in flight | config | tok/s | speedup vs ar (measured / replayed / planned"
             + (" / planned at the level's acceptance" if acc is not None else "") + ") "
             "| measured, 90% interval | vs ar-er (measured / planned) | TTFT p50 s | TPOT p50 s |",
             "|---|---|---|---|---|---|---|---|"]
    for n, t in out["levels"].items():
        pl = out["planned"].get(n, {})
        for cfg, r in t.items():
            p = pl.get(cfg, {})
            pa = "" if acc is None else " / " + f((acc.get(n, {}).get(cfg) or {}).get("speedup_vs_ar"))
            lines.append(f"| {n} | {cfg} | {f(r['tokens_per_s'])} | "
                         f"{f(r.get('speedup_vs_ar'))} / {f(r.get('predicted_speedup_vs_ar'))} / "
                         f"{f(p.get('speedup_vs_ar'))}{pa} | {interval(r.get('speedup_vs_ar_ci90'))} | "
                         f"{f(r.get('speedup_vs_ar-er'))} / "
                         f"{f(p.get('speedup_vs_ar-er'))} | {f(r['ttft_p50_s'], '{:.1f}')} | "
                         f"{f(r['tpot_p50_s'], '{:.2f}')} |")
    top = max(map(int, out["levels"]))
    lines += ["", f"Break-even (the first level at which the speedup is <= 1; >{top}: never up to {top}; "
              f"searched: `lr plan --find-break-even --objective throughput --concurrency {top}`, bisection over every level "
              f"1-{top}; sd on one device as measured, the LR configurations against the plan's own AR, "
              f"replicas on both devices):", "",
              "| config | vs ar measured | replayed | planned | searched | vs ar-er measured | planned | searched |",
              "|---|---|---|---|---|---|---|---|"]
    for c, b in out["break_even"].items():
        lines.append(f"| {c} | {b['measured_vs_ar']} | {b['replayed_vs_ar']} | {b['planned_vs_ar']} | "
                     f"{b.get('searched_vs_ar', '-')} | {b['measured_vs_ar-er']} | {b['planned_vs_ar-er']} | "
                     f"{b.get('searched_vs_ar-er', '-')} |")
    per = ", ".join(f"{n} in flight: {next(iter(t.values()))['blocks']}" for n, t in out["levels"].items())
    lines += ["", f"Blocks run by every configuration (N problems each): {per}."]
    lines += ["", f"Largest replayed-speedup error: {f(out['replay_speedup_error_max'], '{:.1%}')} "
              f"(target {out['target']['speedup_rel_error']:.0%}); calibrated on levels "
              f"{', '.join(map(str, cal['levels']))} " + (f"of {corpora(cal['corpus'])}." if cal.get("held_out") else
                                                           f"of rounds {', '.join(map(str, cal['rounds']))} only."
                                                           if cal.get("rounds") else "only.")]
    rep = replay_speedup_errors(out["levels"])
    if rep:
        lines += ["", f"Replayed: speedup within {out['target']['speedup_rel_error']:.0%} of measured at "
                  f"{sum(x <= out['target']['speedup_rel_error'] for x in rep)} of {len(rep)} "
                  "(configuration, level) pairs."]
    if acc is not None:
        for name, key in (("planned", "planned"), ("planned at each level's measured step acceptance",
                                                    "planned_at_measured_acceptance")):
            e = plan_errors(out, key)
            inside = misses_inside_interval(out, key)
            lines += ["", f"{name.capitalize()}: speedup within {out['target']['speedup_rel_error']:.0%} of "
                      f"measured at {sum(x <= out['target']['speedup_rel_error'] for x in e)} of {len(e)} "
                      f"(configuration, level) pairs, largest error {max(e):.1%}"
                      + (f"; of the {inside[1]} outside 10%, {inside[0]} inside the measured speedup's 90% "
                         "interval over blocks" if inside[1] else "") + "."]
        e = plan_errors(out, "planned", "latency_speedup_vs_ar")
        if e:
            lines += ["", "Speedups are tokens/s ratios (a block of N requests started together: tokens over "
                      "makespans, planned and measured). The plan's own speedup, the ratio of mean request "
                      "latencies, is higher for LR (its requests finish at different times, so their mean "
                      "latency is shorter than the block's makespan); against the measured ratio of mean "
                      f"latencies it is within {out['target']['speedup_rel_error']:.0%} at "
                      f"{sum(x <= out['target']['speedup_rel_error'] for x in e)} of {len(e)} pairs, largest error "
                      f"{max(e):.1%}."]
    tps = out.get("replay_tokens_per_s_error")
    if tps:
        own = out.get("replay_tokens_per_s_error_own_probe")
        lines += ["", f"Replayed tokens/s over measured (absolute; every block at "
                  f"{out.get('replay_probe', 'its own')} probe): {tps['min']:+.1%} to {tps['max']:+.1%}"
                  + (f"; each block at its own probe: {own['min']:+.1%} to {own['max']:+.1%}." if own else ".")]
    own_sp = out.get("replay_speedup_error_own_probe")
    if own_sp:
        e, t = [abs(x) for x in own_sp.values()], out["target"]["speedup_rel_error"]
        lines += ["", f"Each block at its own probe (a speedup over ar pairs blocks that ran apart in time, "
                  f"at the host's speed then): replayed speedup within {t:.0%} at {sum(x <= t for x in e)} "
                  f"of {len(e)} pairs, largest error {max(e):.1%}."]
    ms = out.get("machine_speed")
    if ms and ms.get("corpus") and ms.get("profile"):
        lines += ["", "Machine speed, this corpus's median probe over the profile's (decode pass): " + ", ".join(
            f"{role} {ms['corpus'][role]['decode_s'] / ms['profile'][role]['decode_s']:.2f}x"
            for role in ("target", "draft") if role in ms["corpus"] and role in ms["profile"]) + "."]
    cs = out.get("contention_scales")
    if cs:
        lines += ["", "Contention measured by the side-by-side probes (c of this corpus's over the profile's): "
                  + ", ".join(f"{r} x{v:.2f}" for r, v in sorted(cs.items()))
                  + ("; carried (--carry-contention)." if out.get("contention_carried")
                     else "; not carried (the profile's contention as fitted, the default).")]
    for key, how in (("replay_speedup_error_with_carry", "With that carry (--carry-contention)"),
                     ("replay_speedup_error_no_carry", "Without that carry (the profile's contention as fitted)")):
        if out.get(key):
            e, t = [abs(x) for x in out[key].values()], out["target"]["speedup_rel_error"]
            lines += ["", f"{how}: replayed speedup within {t:.0%} at {sum(x <= t for x in e)} of "
                      f"{len(e)} pairs, largest error {max(e):.1%}."]
    wi = out.get("contention_whatif")
    if wi and wi.get("skipped"):
        lines += ["", f"Contention (a diagnosis, not a prediction): not refit; {wi['skipped']}."]
    elif wi:
        e = [abs(x) for x in wi["replay_speedup_error"].values()]
        t = out["target"]["speedup_rel_error"]
        lines += ["", "Contention (each engine's slowdown while the other runs a pass; a diagnosis, not a "
                  "prediction): the profile's (" + ", ".join(f"{r} {b:.3f}" for r, b in wi["profile"].items())
                  + ") replaced by this corpus's own fit on its levels 1-2 ("
                  + ", ".join(f"{r} {b:.3f}" for r, b in wi["held_out_fit"].items())
                  + f"): replayed speedup within {t:.0%} at {sum(x <= t for x in e)} of {len(e)} pairs, "
                  f"largest error {max(e):.1%} (" + ", ".join(
                      f"{k} {v:+.1%}" for k, v in wi["replay_speedup_error"].items()) + ")."]
    for role, fit in (out.get("latency_fit") or {}).items():
        rows = ", ".join(f"{c} {r['linear_sum_diff_pct']:+.1f}% / {r['sum_diff_pct']:+.1f}%"
                         for c, r in fit["by_config"].items() if "linear_sum_diff_pct" in r)
        knots = ", ".join(f"{q:g}: {v:.3f}" for q, v in fit["position_factors"]) or "none"
        bk = ", ".join(f"{b:g}: {v:.3f}" for b, v in fit.get("batch_factors") or ())
        lines += ["", f"{role.capitalize()} forward passes, predicted minus measured time by configuration "
                  f"(the replay's profile; the physical model's line / with its "
                  f"{'batch and position factors' if bk else 'position factors'}): {rows}. "
                  f"Position factors (SD verification positions v = q - B: measured / line): {knots}."
                  + (f" Batch factors (sequences in a plain decode pass: "
                     + (f"curve {fit['batch_factors_from']} / line, relative to the traces' batch sizes"
                        if fit.get("batch_factors_from") else "measured / line") + f"): {bk}." if bk else "")]
    eff = next((e for e in (out.get("tp_efficiency") or {}).values() if e), None)
    if eff:
        lines += ["", f"Equal-resources TP efficiency measured on levels {levels_said(cal.get('levels'))} "
                  "(lrsim/calib/equal.py): "
                  f"AR on both cores {eff['speedup']:.2f}x AR on one over {eff['pairs']} problem pairs, "
                  f"tp_efficiency {eff['tp_efficiency']:.2f} (the simulator's default: 0.90); the plan's "
                  f"ar-er uses it."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
