"""The replay's passes beside the real ones, block by block: whether a replayed makespan misses
because the simulated engines ran other passes (more of them, larger batches) or the same passes
at another cost.

    .venv/bin/python benchmarks/bench_replay_passes.py [--load traces/load-f6m207-36]
        [--calibrate-on traces/load-f6m207] [--out benchmarks/results/replay_passes.json]
        [--off-path-prefill] [--sd-plain-first-pass] [--own-sd-rate] [--recorded-sd-rounds]
        [--max-num-seqs N|recorded]

Per level, configuration and block (the blocks bench_load.py replays: its profile of the
calibration corpus's 1-2 in flight, every block at the predicted corpus's median probe, the
replay's seeds averaged):
  makespan     real / replayed, s (the replayed one with the profile's per-request overhead)
  passes       each engine's forward passes: real (each counted once: load_replay.pass_key) /
               simulated iterations
  busy         the seconds they took, real / simulated
  batch        sequences per pass weighted by its time within the block (sum of B x duration
               over the busy seconds), real / simulated (the engine's admitted sequences
               integrated over its busy time); a level's cell sums them over its blocks
  positions    decode positions (a sequence's token, or the positions an SD pass verifies) and
               prefill positions per pass, replayed / real (the engine's `positions` and
               `prefilled` over its iterations; the real passes' q and P)
  by batch     the target's passes by sequences in the pass (bench_pass_pricing.BATCHES),
               replayed (the engine's batch_hist, the seeds' mean) / real
Reads the traces and runs the replay; about a minute.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import load_replay  # noqa: E402
from benchmarks.bench_pass_pricing import BATCHES, block_passes  # noqa: E402
from benchmarks.load_replay import (PROFILE_CONFIGS, blocks, calib_paths, corpus_probe,  # noqa: E402
                                    levels_said, load_corpus, makespan, parse_levels, replay_worlds)
from benchmarks.write import table_head, write_results  # noqa: E402

ENGINES = ("target", "draft")
CONFIGS = ("ar", "sd", "lr-d2", "lr-d2-emb", "lr+sd-d2-emb")


def real_side(block: list[dict], engine: str) -> dict | None:
    """The block's real passes of `engine`, each once (bench_pass_pricing.block_passes), as measured."""
    d = block_passes(block, engine, None)
    if d is None or not len(d):
        return None
    return {"passes": len(d), "busy_s": float(d.t.sum()), "batch": float((d.B * d.t).sum() / d.t.sum()),
            "positions": float(d.q.sum()), "prefill": float(d.P.sum()),
            "by_batch": [int(((d.B >= lo) & (d.B <= hi)).sum()) for lo, hi in BATCHES]}


def sim_side(worlds: list, engine: str) -> dict | None:
    engs = [getattr(w, engine) for w in worlds]
    if any(e is None or not e.busy_s for e in engs):
        return None
    return {"passes": float(np.mean([e.iterations for e in engs])), "busy_s": float(np.mean([e.busy_s for e in engs])),
            "batch": float(np.mean([e.area / e.busy_s for e in engs])),
            "positions": float(np.mean([e.positions for e in engs])), "prefill": float(np.mean([e.prefilled for e in engs])),
            "by_batch": [float(np.mean([sum(c for b, c in e.batch_hist.items() if lo <= b <= hi) for e in engs]))
                         for lo, hi in BATCHES]}


def bench(load: str, cal: str, levels: tuple[int, ...] | None = None) -> dict:
    from lrsim.calib.calibrate import calibrate
    from lrsim.calib.profile import Profile, validate_doc

    corpus = load_corpus(ROOT / load)
    prof = Profile(validate_doc(calibrate(calib_paths(ROOT / cal, levels=levels), configs=set(PROFILE_CONFIGS),
                                          select_placement=False)))
    today = corpus_probe(corpus) if cal != load else None
    out: dict = {"corpus": load, "calibrated_on": cal, "levels": {},
                 # the calibration corpus's levels the profile was fit on (absent: 1-2)
                 **({"calibrate_levels": list(levels)} if levels and tuple(levels) != (1, 2) else {}),
                 # off-path jobs replayed with their recorded prefill (absent: the prefix cache's blocks)
                 **({"off_path_prefill": True} if load_replay.OFF_PATH_PREFILL else {}),
                 # each new target request's first pass without an SD proposal (absent: one of its rounds)
                 **({"sd_plain_first_pass": True} if load_replay.SD_PLAIN_FIRST_PASS else {}),
                 # each record of N > 1 in flight replays SD at its own tokens per target pass
                 # (absent: its window's, every request's)
                 **({"own_sd_rate": True} if load_replay.OWN_SD_RATE else {}),
                 # each committed-path target job of an SD record runs its recorded span's passes
                 # (absent: rounds drawn at the record's rate)
                 **({"recorded_sd_rounds": load_replay.RECORDED_SD_ROUNDS} if load_replay.RECORDED_SD_ROUNDS else {}),
                 # each engine's sequences per pass capped (absent: the simulator's 256)
                 **({"max_num_seqs": load_replay.MAX_NUM_SEQS} if load_replay.MAX_NUM_SEQS is not None else {})}
    for n, level in sorted(corpus.items()):
        # the load corpus's configurations in their order, then any other (a transfer corpus's);
        # ar-er's target runs on both cores, which the replay's profile does not model
        for cfg in [c for c in CONFIGS if c in level] + sorted(set(level) - set(CONFIGS) - {"ar-er"}):
            for k, blk in sorted(blocks(level.get(cfg, [])).items()):
                worlds, over = replay_worlds(prof, blk, today)
                span = float(np.mean([max(r.finish for r in w.records) - min(r.arrival for r in w.records)
                                      for w in worlds])) + over
                row = {"block": k, "makespan_s": [makespan(blk), span]}
                for eng in ENGINES:
                    real, sim = real_side(blk, eng), sim_side(worlds, eng)
                    if real and sim:
                        row[eng] = {"real": real, "replayed": sim}
                out["levels"].setdefault(str(n), {}).setdefault(cfg, []).append(row)
    return out


def ratio(rows: list[dict], eng: str, key: str) -> float | None:
    """A level's replayed over real `key` of `eng`, summed over its blocks (None: no block ran it)."""
    got = [r[eng] for r in rows if eng in r]
    return sum(g["replayed"][key] for g in got) / sum(g["real"][key] for g in got) if got else None


def makespan_ratio(rows: list[dict]) -> float:
    """A level's replayed over real makespans, summed over its blocks."""
    return sum(r["makespan_s"][1] for r in rows) / sum(r["makespan_s"][0] for r in rows)


def per_pass(rows: list[dict], eng: str, key: str) -> tuple[float, float] | None:
    """A level's (replayed, real) `key` (positions, prefill) per pass of `eng` over its blocks."""
    got = [r[eng] for r in rows if eng in r and key in r[eng]["real"]]
    if not got:
        return None
    return tuple(sum(g[side][key] for g in got) / sum(g[side]["passes"] for g in got)  # type: ignore[return-value]
                 for side in ("replayed", "real"))


def by_batch(rows: list[dict], lo: int, hi: int) -> tuple[float, int] | None:
    """A level's (replayed, real) target passes of lo..hi sequences (one of BATCHES)."""
    got = [r["target"] for r in rows if "target" in r and "by_batch" in r["target"]["real"]]
    i = BATCHES.index((lo, hi))
    return (sum(g["replayed"]["by_batch"][i] for g in got), sum(g["real"]["by_batch"][i] for g in got)) if got else None


def _cell(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def render(doc: dict) -> str:
    lines = table_head(f"{doc['corpus']} replayed by the profile of {doc['calibrated_on']}'s levels "
                       f"{levels_said(doc.get('calibrate_levels'))} "
                       "(bench_load.py's replay): replayed over real, summed over the blocks of each "
                       "level (passes: the simulated engine's iterations over the real forward passes, "
                       "each counted once; busy: their seconds; batch: sequences per pass weighted by "
                       "time within a block, the blocks' sum, the real blocks' mean beside)."
                       + (" Jobs off the committed path replayed with the prefill their records count "
                          "(--off-path-prefill)." if doc.get("off_path_prefill") else "")
                       + (" Each new target request's first pass replayed as sampling one token without an "
                          "SD proposal (--sd-plain-first-pass)." if doc.get("sd_plain_first_pass") else "")
                       + (" Each record run beside others replays token-level SD at its own tokens per "
                          "target pass, not its window's (--own-sd-rate)." if doc.get("own_sd_rate") else "")
                       + load_replay.sd_rounds_note(doc.get("recorded_sd_rounds"))
                       + load_replay.max_num_seqs_note(doc.get("max_num_seqs"), "the replays"),
                       "in flight", "config", "makespan", "target passes", "target busy",
                       "target batch (real)", "draft passes", "draft busy", "draft batch (real)")
    for n, by in doc["levels"].items():
        for cfg, rows in by.items():
            cells = [f"{makespan_ratio(rows):.2f}"]
            for eng in ENGINES:
                got = [r[eng] for r in rows if eng in r]
                real_b = (f" ({np.mean([g['real']['batch'] for g in got]):.1f})" if got else "")
                cells += [_cell(ratio(rows, eng, "passes")), _cell(ratio(rows, eng, "busy_s")),
                          (_cell(ratio(rows, eng, "batch")) + real_b) if got else "-"]
            lines.append(f"| {n} | {cfg} | " + " | ".join(cells) + " |")
    lines += [""] + table_head("What the passes hold: decode positions (a sequence's token, or the k2 "
                               "positions an SD pass verifies) and prefill positions per pass, replayed / "
                               "real, summed over the blocks of each level.",
                               "in flight", "config", "target decode", "target prefill",
                               "draft decode", "draft prefill")
    for n, by in doc["levels"].items():
        for cfg, rows in by.items():
            cells = []
            for eng in ENGINES:
                for key in ("positions", "prefill"):
                    pp = per_pass(rows, eng, key)
                    cells.append("-" if pp is None else f"{pp[0]:.2f} / {pp[1]:.2f}")
            lines.append(f"| {n} | {cfg} | " + " | ".join(cells) + " |")
    heads = [f"{lo}-{hi}" if hi > lo else str(lo) for lo, hi in BATCHES]
    lines += [""] + table_head("The target's passes by sequences in the pass: replayed / real passes, "
                               "summed over the blocks of each level.", "in flight", "config",
                               *(f"{h} seqs" for h in heads))
    for n, by in doc["levels"].items():
        for cfg, rows in by.items():
            got = [by_batch(rows, lo, hi) for lo, hi in BATCHES]
            if got[0] is not None:
                lines.append(f"| {n} | {cfg} | " + " | ".join(f"{a:.0f} / {b}" for a, b in got) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--load", default="traces/load-f6m207-36")
    ap.add_argument("--calibrate-on", default="traces/load-f6m207")
    ap.add_argument("--out", default="benchmarks/results/replay_passes.json")
    ap.add_argument("--off-path-prefill", action="store_true",
                    help="replay jobs off the committed path with the prefill their records count "
                         "(bench_load.py --off-path-prefill)")
    ap.add_argument("--sd-plain-first-pass", action="store_true",
                    help="replay each new target request's first pass as sampling one token without an "
                         "SD proposal (bench_load.py --sd-plain-first-pass)")
    ap.add_argument("--own-sd-rate", action="store_true",
                    help="replay each record run beside others with token-level SD at its own tokens per "
                         "target pass (its spans' tokens over the passes they ran in), not at its "
                         "window's, which counts every request in flight (lrsim/calib/replay.ReplayWorkload)")
    ap.add_argument("--recorded-sd-rounds", nargs="?", const="committed", default="", choices=("committed", "first"),
                    help="replay each committed-path target job of an SD record in the passes its recorded span ran in "
                         "(the span's own SD rate), not in rounds drawn at the record's one rate; 'first': the "
                         "first step's job only (lrsim/sim/traces.TraceWorkload.spec_rounds; docs/load.md)")
    ap.add_argument("--max-num-seqs", metavar="N|recorded",
                    help="cap each engine's sequences per pass (bench_load.py --max-num-seqs)")
    ap.add_argument("--calibrate-levels", default="1,2",
                    help="calibrate on these levels in flight of --calibrate-on (bench_load.py --calibrate-levels)")
    a = ap.parse_args()
    levels = parse_levels(a.calibrate_levels, "bench_replay_passes")
    load_replay.OFF_PATH_PREFILL = a.off_path_prefill
    load_replay.SD_PLAIN_FIRST_PASS = a.sd_plain_first_pass
    load_replay.OWN_SD_RATE = a.own_sd_rate
    load_replay.RECORDED_SD_ROUNDS = a.recorded_sd_rounds
    load_replay.MAX_NUM_SEQS = load_replay.max_num_seqs_arg(a.max_num_seqs, "bench_replay_passes")
    if not load_corpus(ROOT / a.load):
        sys.exit(f"bench_replay_passes: no load traces under {a.load}")
    if not calib_paths(ROOT / a.calibrate_on, levels=levels):
        sys.exit(f"bench_replay_passes: no level {levels_said(levels, ',')} traces under {a.calibrate_on} to calibrate on")
    doc = bench(a.load, a.calibrate_on, levels)
    write_results(ROOT / a.out, doc, render)
    print(render(doc))


if __name__ == "__main__":
    main()
