"""Open loop: the simulator against real runs whose requests arrive by a Poisson process.

    .venv/bin/python benchmarks/bench_open_loop.py           # -> benchmarks/results/load_open.{json,md}

traces/load-open/ (benchmarks/collect_load.py --set open) holds blocks of N GSM8K problems that
arrived at R requests/s by a seeded Poisson process, every configuration of a round meeting the
same arrivals on the same problems (so the speedup pairs per block). Nothing here was calibrated
on it: the profiles come from traces/load's blocks of 1-2 requests started together (another
run, other problems, no arrival process), as in bench_load.py's held-out runs. Per configuration:

  measured     mean, p50 and p90 request latency (arrival to last token, queueing included),
               TTFT p50, tokens/s over the block's makespan; the speedup over ar is the ratio of
               mean latencies (what `lr plan` ranks by), with a 90% interval over blocks
  replayed     each block simulated with its records' own arrivals (TraceWorkload.arrivals), steps,
               acceptance and verdicts, at the corpus's median probe (and, `replayed_own_probe`,
               at the speed probed before each block; `replayed_bracketed`, at the mean of that
               probe and the next block's when it came right after, bracketed_speed)
  diagnosis    the replay's latency error within each block by the requests in flight at
               arrival (by_in_flight); the replay's engine work against the measured, each forward
               pass counted once, with its batches (engine_work); those passes priced by the
               profile (pass_pricing); the jobs, job by job (job_time: finished and cancelled
               jobs, tokens, seconds from submission to end), and the sequences the engines ran
               beyond the records' tokens, per job (unrecorded); request by request, the time
               one of its target jobs was on the target and the time none of its jobs was on
               an engine (measured_cover, replayed_cover); the prompt tokens each job prefilled
               (prompt_tokens - cached_tokens against the replay's, whose prefix cache hits
               whole KV blocks: kvcache.request_prefill), and a what-if: the stop tail
               (unrecorded sequences per job)
  planned      `lr plan --rate R --requests N` on the profile rescaled to the corpus's median
               probe: its own Poisson arrivals and synthetic steps (it knows the rate, the
               profile and the hardware, nothing of these problems)
"""
from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import bench_load as bl  # noqa: E402
from benchmarks.open_loop_diagnosis import (BRACKET_GAP_S, bracketed_speed, by_in_flight,  # noqa: E402
                                            engine_work, job_time, jobs_recorded, measured_cover,
                                            measured_jobs, pass_pricing, replayed_cover,
                                            replayed_jobs, stall_summary, summed, unrecorded)
from benchmarks.open_loop_report import diagnosis_lines  # noqa: E402
from lrsim.calib.calibrate import calibrate, read_records  # noqa: E402
from lrsim.calib.profile import Profile, save_profile, validate_doc  # noqa: E402
from lrsim.calib.rescale import machines, profile_machine  # noqa: E402

# the plan's label of each configuration traces/load-open runs (lrreal/load_corpus.py OPEN_CONFIGS)
PLAN_LABELS = {"lr-d2-emb": "lr depth=2"}
# a round is left out (every configuration's block of it) when other processes took more than
# this share of one core during one of its blocks (load.machine_during: CPU-seconds of processes
# outside the engines' trees over the records' wall time): the collection was not alone. Quiet
# blocks measure 0.3-3.1% of a core here (traces/load, and this corpus's kept rounds)
OTHER_CPU_LIMIT = 0.05


def load_open(root: Path, dataset: str = "gsm8k") -> dict[tuple[float, int], dict[str, list[dict]]]:
    """{(rate, N): {config: records}} of every non-empty rate<R>-n<N> trace file."""
    out: dict = {}
    for path in sorted((root / dataset).glob("rate*-n*/*.jsonl")):
        recs = [r for r in read_records(path) if r.get("steps") and r.get("load")]
        rate, n = path.parent.name[4:].split("-n")
        if recs:
            out.setdefault((float(rate), int(n)), {})[path.stem] = recs
    return out


def machine_speed(corpus: dict) -> dict:
    """The corpus's median probe over its kept blocks: a block left out for a busy machine is not
    this setup's speed (full_blocks), so its probes are not either."""
    kept = {k: {cfg: [r for b in bs for r in b] for cfg, bs in full_blocks(level)[0].items()}
            for k, level in corpus.items()}
    return bl.corpus_probe(dict(enumerate(kept.values())))


def other_cpu(block: list[dict]) -> float:
    """CPU-seconds other processes took during the block's records over their wall seconds."""
    md = [r["load"].get("machine_during") or {} for r in block]
    wall = sum(m.get("wall_s", 0.0) for m in md)
    return sum(m.get("other_cpu_s", 0.0) for m in md) / wall if wall > 0 else 0.0


def full_blocks(level: dict[str, list[dict]]) -> tuple[dict[str, list[list[dict]]], dict[int, dict]]:
    """Per configuration, the blocks (rounds) every configuration finished in full, in one run
    and alone, in round order; and the rounds left out, with why: a block killed part-way and
    resumed ran its survivors under another load with another clock (its records hold two
    runs' probes), and a busy machine (OTHER_CPU_LIMIT) is not this setup's speed."""
    by_cfg = {c: bl.blocks(recs) for c, recs in level.items()}
    n = max(len(b) for bs in by_cfg.values() for b in bs.values())
    rounds = sorted(set().union(*(set(bs) for bs in by_cfg.values())))
    kept, left = [], {}
    for k in rounds:
        if not all(len(bs.get(k, ())) == n for bs in by_cfg.values()):
            left[k] = {"why": "not every configuration finished the block"}
            continue
        if any(len({r["run"].get("probe_at_start", {}).get("t") for r in bs[k]}) > 1 for bs in by_cfg.values()):
            left[k] = {"why": "a block was resumed part-way (two runs)"}
            continue
        busy = {c: other_cpu(bs[k]) for c, bs in by_cfg.items()}
        if max(busy.values()) > OTHER_CPU_LIMIT:
            left[k] = {"why": "other processes ran", "other_cpu": busy}
            continue
        kept.append(k)
    return {c: [bs[k] for k in kept] for c, bs in by_cfg.items()}, left


def replay_block(prof: Profile, block: list[dict], speed: dict | None = None, tail: dict | None = None) -> dict:
    """The block simulated with its own arrivals at the speed probed before it (or at `speed`,
    {engine: {"decode_s", "prefill_s"}}, one probe for every block): per request latency and
    TTFT (s, every replay seed's), and the makespan (mean over seeds)."""
    with jobs_recorded(tail) as (log, cancelled):
        worlds, over = bl.replay_worlds(prof, block, speed, arrivals=True)
    lat, ttft, spans, per = [], [], [], []
    for world in worlds:
        lat += [r.finish - r.arrival + over for r in world.records]
        ttft += [r.first_output - r.arrival for r in world.records]
        spans.append(max(r.finish for r in world.records) - min(r.arrival for r in world.records))
        # the replay admits each record at its recorded arrival (distinct: Poisson), so arrival
        # order pairs a simulated request with its record
        per.append([r.finish - r.arrival + over for r in sorted(world.records, key=lambda r: r.arrival)])
    engines = {role: {"passes": float(np.mean([getattr(w, role).iterations for w in worlds])),
                      "busy_s": float(np.mean([getattr(w, role).busy_s for w in worlds])),
                      # sequences per pass, over the passes (each seed's batch histogram)
                      "sequences": float(np.mean([sum(b * k for b, k in getattr(w, role).batch_hist.items())
                                                  for w in worlds]))}
               for role in ("target", "draft") if getattr(worlds[0], role, None) is not None}
    return {"lat": lat, "ttft": ttft, "makespan": float(np.mean(spans)) + over,
            "by_arrival": [float(x) for x in np.mean(per, axis=0)], "engines": engines,
            "jobs": replayed_jobs(log, cancelled, len(worlds)),
            "cover": replayed_cover(worlds, log, cancelled, over)}


def latency_interval(cfg_blocks: list[list[dict]], ar_blocks: list[list[dict]]) -> list[float] | None:
    """90% bootstrap interval of the measured speedup (ar's mean latency over this one's), the
    blocks resampled in pairs (bench_load.speedup_interval's method; None below 3 blocks)."""
    from scipy.stats import bootstrap

    if len(cfg_blocks) < 3:
        return None
    # blocks hold N requests each in every configuration: the sums' ratio is the means'
    cols = [np.array([sum(r["load"]["latency_s"] for r in b) for b in bs]) for bs in (ar_blocks, cfg_blocks)]

    def ratio(a, c, axis=-1):
        return a.sum(axis) / c.sum(axis)

    ci = bootstrap(cols, ratio, paired=True, vectorized=True, confidence_level=bl.CI_LEVEL,
                   n_resamples=bl.CI_RESAMPLES, method="percentile",
                   rng=np.random.default_rng(0)).confidence_interval
    return [float(ci.low), float(ci.high)]


def level_table(level: dict[str, list[dict]], prof: Profile, speed: dict | None) -> dict:
    """Per configuration: measured and replayed latency figures over the kept blocks, replayed
    at `speed` (the corpus's median probe: the idle engines' probe moved 0.36-0.54 s between
    blocks minutes apart here) and, as `replayed_own_probe`, at each block's own probe, and as
    `replayed_bracketed`, at the probes before and right after it (bracketed_speed)."""
    sel, left = full_blocks(level)
    out = {}
    for cfg, bs in sorted(sel.items()):
        if not bs:                 # every round left out (e.g. while the collection runs)
            continue
        recs = [r for b in bs for r in b]
        lat = [r["load"]["latency_s"] for r in recs]
        toks = sum(r["output_tokens"] for r in recs)
        reps = [replay_block(prof, b, speed) for b in bs]
        owns = [replay_block(prof, b) for b in bs]
        brackets = [bracketed_speed(b, level, set(left)) for b in bs]
        bracks = [replay_block(prof, b, sp) for b, (sp, _) in zip(bs, brackets)]
        rlat = [x for rp in reps for x in rp["lat"]]
        own = [x for rp in owns for x in rp["lat"]]
        brk = [x for rp in bracks for x in rp["lat"]]
        by_block = [{"round": int(b[0]["run"]["flags"]["load_round"]),
                     "probe_decode_s": {e: v["decode_s"] for e, v in b[0]["run"]["probe_at_start"]["engines"].items()},
                     "mean_latency_s": float(np.mean([r["load"]["latency_s"] for r in b])),
                     "replayed_mean_latency_s": float(np.mean(rp["lat"])),
                     "own_probe_mean_latency_s": float(np.mean(ow["lat"])),
                     "bracketed": bk[1],
                     "bracketed_decode_s": {e: v["decode_s"] for e, v in bk[0].items()},
                     "bracketed_mean_latency_s": float(np.mean(br["lat"]))}
                    for b, rp, ow, bk, br in zip(bs, reps, owns, brackets, bracks)]
        out[cfg] = {"blocks": len(bs), "records": len(recs), "tokens": toks,
                    "tokens_per_s": toks / sum(bl.makespan(b) for b in bs),
                    "mean_latency_s": float(np.mean(lat)),
                    "latency_s": {"p50": float(np.percentile(lat, 50)), "p90": float(np.percentile(lat, 90))},
                    "ttft_p50_s": float(np.median([r["load"]["ttft_s"] for r in recs])),
                    "queue_p50_s": float(np.median([r["load"]["queue_s"] for r in recs])),
                    "step_acceptance": bl._ratio(bs, "accepted", "proposed"),
                    "replayed": {"mean_latency_s": float(np.mean(rlat)),
                                 "latency_s": {"p50": float(np.percentile(rlat, 50)),
                                               "p90": float(np.percentile(rlat, 90))},
                                 "ttft_p50_s": float(np.median([x for rp in reps for x in rp["ttft"]])),
                                 "tokens_per_s": toks / sum(rp["makespan"] for rp in reps)},
                    "replayed_by_in_flight_within_block": by_in_flight(bs, reps),
                    "passes_at_own_probe": pass_pricing(prof, bs),
                    "engine_work_own_probe": engine_work(bs, owns),
                    "job_time_own_probe": job_time([measured_jobs(b) for b in bs], [o["jobs"] for o in owns]),
                    "cover_own_probe": {"measured": summed(measured_cover(b) for b in bs),
                                        "replayed": summed(o["cover"] for o in owns)},
                    "collector_stalls": stall_summary(bs),
                    "replayed_own_probe": {"mean_latency_s": float(np.mean(own))},
                    "replayed_bracketed": {"mean_latency_s": float(np.mean(brk)),
                                           "blocks_bracketed": sum(x for _, x in brackets)},
                    "by_block": by_block}
    for cfg, row in out.items():
        # what-if: the same replay at each block's own probe with the tail of sequences per job
        # the engines ran beyond the records' tokens (unrecorded, measured on these blocks)
        tail = {e: x for e, x in unrecorded(row).items() if x > 0}
        if tail:
            reps = [replay_block(prof, b, tail=tail) for b in sel[cfg]]
            row["replayed_own_probe_with_tail"] = {
                "tail": tail, "mean_latency_s": float(np.mean([x for rp in reps for x in rp["lat"]])),
                "sequences": {e: float(sum(rp["engines"][e]["sequences"] for rp in reps)) for e in tail}}
    if "ar" in out:
        ar = out["ar"]
        for cfg, row in out.items():
            if cfg == "ar":
                continue
            row["speedup_vs_ar"] = ar["mean_latency_s"] / row["mean_latency_s"]
            row["speedup_vs_ar_ci90"] = latency_interval(sel[cfg], sel["ar"])
            for k in ("replayed", "replayed_own_probe", "replayed_bracketed"):
                row[k]["speedup_vs_ar"] = ar[k]["mean_latency_s"] / row[k]["mean_latency_s"]
            # the tail what-if against ar's own-probe replay (ar's tail, where it has one, is
            # its own what-if: this pairs the model's ar with LR's what-if)
            if "replayed_own_probe_with_tail" in row:
                k = "replayed_own_probe_with_tail"
                row[k]["speedup_vs_ar"] = ar["replayed_own_probe"]["mean_latency_s"] / row[k]["mean_latency_s"]
    return out


def plan_open(profile: Path, rate: float, n: int) -> dict:
    """`lr plan --rate R --requests N`: ar on the target's device alone (as measured), the LR
    configurations on both (bench_load.ONE_DEVICE / BOTH_DEVICES): {config: row figures}."""
    load = ("--rate", f"{rate:g}", "--requests", str(n))
    one = bl.lr_plan(profile, *load, *bl.ONE_DEVICE)
    both = bl.lr_plan(profile, *load, *bl.BOTH_DEVICES)
    rows = {r["label"]: r for r in both["candidates"]}

    def fig(r):
        return {"mean_latency_s": r["mean_latency_s"], "latency_s": {k: r["latency_s"][k] for k in ("p50", "p90")},
                "tokens_per_s": r["tokens_per_s"]}
    out = {"ar": fig(one["reference"])}
    for cfg, lab in PLAN_LABELS.items():
        if lab in rows:
            out[cfg] = fig(rows[lab]) | {"speedup_vs_ar": out["ar"]["mean_latency_s"] / rows[lab]["mean_latency_s"]}
    return out


def main() -> None:
    a = bl.corpus_args(__doc__, "traces/load-open", "traces/load", "benchmarks/results/load_open.json").parse_args()
    t0, c0 = time.perf_counter(), time.process_time()
    corpus = bl.read_or_exit("bench_open_loop", load_open, a.load, "open-loop traces", " (collect_load.py --set open)")
    paths = bl.read_or_exit("bench_open_loop", bl.calib_paths, a.calibrate_on, "level 1-2 traces", " to calibrate on")
    replay_prof = Profile(validate_doc(calibrate(paths, configs=set(bl.PROFILE_CONFIGS), select_placement=False)))
    today = machine_speed(corpus)
    levels = {}
    with tempfile.TemporaryDirectory() as tmp:
        cfgs = bl.PLAN_PROFILES["emb"][0]
        plan_path = save_profile(bl.plan_profile(paths, cfgs, today), Path(tmp) / "open-profile.json")
        for (rate, n), level in sorted(corpus.items()):
            table = level_table(level, replay_prof, today)
            planned = plan_open(plan_path, rate, n)
            for cfg, row in table.items():
                if cfg in planned:
                    row["planned"] = planned[cfg]
            left = {str(k): v for k, v in full_blocks(level)[1].items()}
            levels[f"rate{rate:g}-n{n}"] = {"rate": rate, "n": n, "configs": table, "left_out": left}
    doc = {"benchmark": "bench_open_loop", "load": a.load, "calibrated_on": paths,
           "calibration_corpus": a.calibrate_on.rstrip("/"),
           "records": sum(len(r) for lv in corpus.values() for r in lv.values()),
           "probe_today": today, "probe_profile": replay_prof.doc.get("probe"), "levels": levels,
           # the kept blocks' machines (a left-out round may have run on another)
           "machines": {"corpus": machines([r for lv in corpus.values() for bs in full_blocks(lv)[0].values()
                                            for b in bs for r in b]),
                        "profile": profile_machine(replay_prof.doc) or "an unnamed machine"},
           "wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0}
    out = ROOT / a.out
    out.write_text(json.dumps(doc, indent=1) + "\n")
    out.with_suffix(".md").write_text(render(doc))
    print(render(doc))


def render(doc: dict) -> str:
    lines = [f"Open-loop corpus: {doc['records']} records ({doc['load']}; GSM8K, 192-token budget; target "
             "on core 0, draft on core 1), each block's N requests arriving by a seeded Poisson process, "
             "the same arrivals for every configuration of a round. Held out: profiles calibrated on "
             f"{doc.get('calibration_corpus', 'traces/load')}'s blocks of 1-2 requests started together; replayed with each block's own "
             "arrivals at the corpus's median probe; planned by `lr plan --rate R --requests N` at the "
             "corpus's median probe.", ""]
    for name, lv in doc["levels"].items():
        t = lv["configs"]
        if not t or "ar" not in t:
            lines += [f"{lv['rate']:g} requests/s, {lv['n']} a block: no round with ar and every "
                      "configuration measured in full yet.", ""]
            continue
        blocks = min(r["blocks"] for r in t.values())
        lines += [f"{lv['rate']:g} requests/s, {lv['n']} a block, {blocks} blocks per configuration:", "",
                  "| config | mean latency s (measured / replayed / planned) | p90 latency s | TTFT p50 s "
                  "(measured / replayed) | speedup vs ar (measured / replayed / planned) "
                  "| measured, 90% interval | acceptance |",
                  "|---|---|---|---|---|---|---|"]
        for cfg, r in t.items():
            rp, pl = r["replayed"], r.get("planned") or {}
            ci = r.get("speedup_vs_ar_ci90")
            sp = ("-" if cfg == "ar" else
                  f"{r['speedup_vs_ar']:.2f} / {rp['speedup_vs_ar']:.2f} / "
                  + (f"{pl['speedup_vs_ar']:.2f}" if "speedup_vs_ar" in pl else "-"))
            acc = "-" if r["step_acceptance"] is None else f"{r['step_acceptance']:.2f}"
            lines.append(
                f"| {cfg} | {r['mean_latency_s']:.1f} / {rp['mean_latency_s']:.1f} / "
                + (f"{pl['mean_latency_s']:.1f}" if pl else "-")
                + f" | {r['latency_s']['p90']:.1f} / {rp['latency_s']['p90']:.1f} / "
                + (f"{pl['latency_s']['p90']:.1f}" if pl else "-")
                + f" | {r['ttft_p50_s']:.1f} / {rp['ttft_p50_s']:.1f} | {sp} | "
                + (f"{ci[0]:.2f}-{ci[1]:.2f}" if ci else "-") + f" | {acc} |")
        lines.append("")
        for k, why in lv["left_out"].items():
            busy = why.get("other_cpu")
            lines += [f"Round {k} left out: {why['why']}"
                      + (" (" + ", ".join(f"{c} {100 * v:.1f}%" for c, v in busy.items())
                         + " of a core)" if busy else "") + ".", ""]
        errs = {cfg: (r["replayed"]["mean_latency_s"] / r["mean_latency_s"] - 1,
                      (r["planned"]["mean_latency_s"] / r["mean_latency_s"] - 1) if r.get("planned") else None)
                for cfg, r in t.items()}
        lines += ["Mean latency, predicted minus measured: "
                  + "; ".join(f"{cfg} replayed {100 * e[0]:+.1f}%"
                              + (f", planned {100 * e[1]:+.1f}%" if e[1] is not None else "")
                              for cfg, e in errs.items()) + ". Replayed at each block's own probe: "
                  + "; ".join(f"{cfg} {100 * (r['replayed_own_probe']['mean_latency_s'] / r['mean_latency_s'] - 1):+.1f}%"
                              for cfg, r in t.items())
                  + (", speedup " + ", ".join(f"{cfg} {r['replayed_own_probe']['speedup_vs_ar']:.2f}"
                                              for cfg, r in t.items() if cfg != "ar") if "ar" in t else "")
                  + ". Replayed at the mean of the probes before and right after each block ("
                  + ", ".join(f"{cfg} {r['replayed_bracketed']['blocks_bracketed']} of {r['blocks']}"
                              for cfg, r in t.items())
                  + " blocks had a probe within " + f"{BRACKET_GAP_S:.0f} s after; the rest keep their own): "
                  + "; ".join(f"{cfg} {100 * (r['replayed_bracketed']['mean_latency_s'] / r['mean_latency_s'] - 1):+.1f}%"
                              for cfg, r in t.items())
                  + (", speedup " + ", ".join(f"{cfg} {r['replayed_bracketed']['speedup_vs_ar']:.2f}"
                                              for cfg, r in t.items() if cfg != "ar") if "ar" in t else "")
                  + ".", "",
                  "Within a block (each block's replay scaled to its measured mean latency), replayed "
                  "minus measured by the requests already in flight when one arrived (requests, blocks): "
                  + "; ".join(
                      f"{cfg} " + ", ".join(f"{k} {100 * (v['replayed_mean_latency_s'] / v['mean_latency_s'] - 1):+.1f}% "
                                           f"({v['requests']}, {v['blocks']})"
                                           for k, v in r["replayed_by_in_flight_within_block"].items())
                      for cfg, r in t.items()) + ".", "",
                  *diagnosis_lines(t),
                  "Tokens/s over the blocks' makespans (measured / replayed / planned; the last arrival "
                  "bounds a block's makespan, so these differ less than latencies): "
                  + "; ".join(f"{cfg} {r['tokens_per_s']:.2f} / {r['replayed']['tokens_per_s']:.2f} / "
                              + (f"{r['planned']['tokens_per_s']:.2f}" if r.get("planned") else "-")
                              for cfg, r in t.items()) + ". The rate times the measured mean latency (the mean in flight "
                  "of an endless stream at this rate; a block of N fills and drains): "
                  + ", ".join(f"{cfg} {lv['rate'] * r['mean_latency_s']:.1f}" for cfg, r in t.items()) + ".", ""]
    today, ref = doc["probe_today"], doc.get("probe_profile") or {}
    lines.append("Machine speed (decode pass of the idle-engine probe): the corpus's median "
                 + ", ".join(f"{e} {today[e]['decode_s']:.3f} s" for e in sorted(today))
                 + (" against the profile's " + ", ".join(f"{e} {ref[e]['decode_s']:.3f} s" for e in sorted(ref)
                                                         if e in today)
                    if ref else "") + ".")
    if doc.get("machines"):       # the CPU (or GPU) models: a probe carries speed within one only
        m = doc["machines"]
        lines.append("Machines: the corpus's kept blocks ran on " + ", ".join(f"{k} ({v} records)" for k, v in m["corpus"].items())
                     + f"; the profile describes {m['profile']}.")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
