"""Every prediction of a real load corpus in one table: what each of bench_load.py's committed
results predicted, from which profile, and how much of it held.

    .venv/bin/python benchmarks/load_summary.py [--json]

Reads benchmarks/results/<stem>.json for each entry of PREDICTIONS (bench_load.py's outputs; the
command that made each is its entry's last field) and writes benchmarks/results/load_summary.{json,
md}. No simulation runs here: the counts are the ones bench_load.py rendered into each result's own
.md, recomputed from its JSON with bench_load's own functions. Per result:

  replayed     speculative (configuration, level) pairs whose replayed speedup over ar is within
               the target (10%) of the measured one, and the largest error
  planned      the same for `lr plan --concurrency N`'s speedup
  ar-er        AR on both cores: its planned speedup over ar (bench_load.py's planned counts hold
               these rows too: planned + ar-er = its "Planned" line)
  break-even   speculative configurations whose planned break-even level (the first level at which
               the speedup is <= 1) is the measured one, against ar and against ar-er
  held out     the profile was calibrated on records the prediction does not include (another
               corpus, or other rounds of the same one); "own": levels 1-2 of the same records
A result whose profiles had `--batch-factors` (opt-in) is listed with its profile marked so and
totalled apart: the default totals stay those of the default calibration; so is one whose profiles
were fit on other levels of the calibration corpus than 1-2 (`--calibrate-levels`), by that flag and
its shaping flag together.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
sys.path.insert(0, str(ROOT))

# (result stem, corpus predicted, what it asks, the command that wrote it; "..." = --out <stem>.json)
PREDICTIONS = (
    ("load", "traces/load", "its own levels 1-2 predict 4 and 8",
     "bench_load.py"),
    ("load_heldout", "traces/load-heldout", "another host (same CPU name), other problems, other levels",
     "bench_load.py --load traces/load-heldout --calibrate-on traces/load ..."),
    ("load_transfer", "traces/load-transfer", "depths 1 and 3 the profile never ran",
     "bench_load.py --load traces/load-transfer --calibrate-on traces/load ..."),
    ("load_cold_epyc_all", "traces/load-cold-epyc-all", "its own levels 1-2, cold caches",
     "bench_load.py --load traces/load-cold-epyc-all ..."),
    ("load_cold_epyc_all_heldout", "traces/load-cold-epyc-all", "traces/load's profile, cold caches",
     "bench_load.py --load traces/load-cold-epyc-all --calibrate-on traces/load ..."),
    ("load_cold_epyc_more_heldout", "traces/load-cold-epyc-more", "a host 4x slower, round 0",
     "bench_load.py --load traces/load-cold-epyc-more --calibrate-on traces/load-cold-epyc-all "
     "--rounds 0 --configs lr-d2,lr-d2-emb ..."),
    ("load_cold_epyc_more_r1_heldout", "traces/load-cold-epyc-more", "the same, round 1 (another sitting)",
     "bench_load.py --load traces/load-cold-epyc-more --calibrate-on traces/load-cold-epyc-all "
     "--rounds 1 --configs lr-d2,lr-d2-emb ..."),
    ("load_cold_epyc_side", "traces/load-cold-epyc-side", "its own levels 1-2, side-by-side probes",
     "bench_load.py --load traces/load-cold-epyc-side ..."),
    ("load_cold_epyc_side_r1_heldout", "traces/load-cold-epyc-side", "its round 0 predicts round 1",
     "bench_load.py --load traces/load-cold-epyc-side --calibrate-rounds 0 --rounds 1 ..."),
    ("load_cold_epyc_side_heldout", "traces/load-cold-epyc-side", "another sitting's profile",
     "bench_load.py --load traces/load-cold-epyc-side --calibrate-on traces/load-cold-epyc-more ..."),
    ("load_cold_epyc_side12", "traces/load-cold-epyc-side12", "its own levels 1-2, 12-pass probes",
     "bench_load.py --load traces/load-cold-epyc-side12 ..."),
    ("load_cold_epyc_side12_r1_heldout", "traces/load-cold-epyc-side12", "its round 0 predicts round 1",
     "bench_load.py --load traces/load-cold-epyc-side12 --calibrate-rounds 0 --rounds 1 ..."),
    ("load_cold_epyc_side12_heldout", "traces/load-cold-epyc-side12", "the other side-by-side sitting's profile",
     "bench_load.py --load traces/load-cold-epyc-side12 --calibrate-on traces/load-cold-epyc-side ..."),
    ("load_cold_epyc_side_heldout12", "traces/load-cold-epyc-side", "the reverse: side12's profile",
     "bench_load.py --load traces/load-cold-epyc-side --calibrate-on traces/load-cold-epyc-side12 ..."),
    ("load_cold_epyc_side3", "traces/load-cold-epyc-side3", "its own levels 1-2, a third sitting",
     "bench_load.py --load traces/load-cold-epyc-side3 ..."),
    ("load_cold_epyc_side3_heldout", "traces/load-cold-epyc-side3", "the first side-by-side sitting's profile",
     "bench_load.py --load traces/load-cold-epyc-side3 --calibrate-on traces/load-cold-epyc-side ..."),
    ("load_cold_epyc_side3_heldout12", "traces/load-cold-epyc-side3", "the second sitting's (side12's) profile",
     "bench_load.py --load traces/load-cold-epyc-side3 --calibrate-on traces/load-cold-epyc-side12 ..."),
    ("load_cold_epyc_side3_pooled", "traces/load-cold-epyc-side3", "both earlier sittings pooled in one profile",
     "bench_load.py --load traces/load-cold-epyc-side3 --calibrate-on "
     "traces/load-cold-epyc-side,traces/load-cold-epyc-side12 ..."),
    ("load_cold_xeon_side", "traces/load-cold-xeon-side", "its own levels 1-2, on an Intel Xeon",
     "bench_load.py --load traces/load-cold-xeon-side ..."),
    ("load_cold_xeon_side_r1_heldout", "traces/load-cold-xeon-side", "its round 0 predicts round 1",
     "bench_load.py --load traces/load-cold-xeon-side --calibrate-rounds 0 --rounds 1 ..."),
    ("load_cold_xeon_side_epyc", "traces/load-cold-xeon-side", "the three EPYC sittings pooled",
     "bench_load.py --load traces/load-cold-xeon-side --calibrate-on traces/load-cold-epyc-side,"
     "traces/load-cold-epyc-side12,traces/load-cold-epyc-side3 ..."),
    ("load_cold_xeon_2", "traces/load-cold-xeon-2", "its own levels 1-2, a second Xeon sitting",
     "bench_load.py --load traces/load-cold-xeon-2 ..."),
    ("load_cold_xeon_2_r1_heldout", "traces/load-cold-xeon-2", "its round 0 predicts round 1",
     "bench_load.py --load traces/load-cold-xeon-2 --calibrate-rounds 0 --rounds 1 ..."),
    ("load_cold_xeon_2_heldout", "traces/load-cold-xeon-2", "the first Xeon sitting's profile",
     "bench_load.py --load traces/load-cold-xeon-2 --calibrate-on traces/load-cold-xeon-side ..."),
    ("load_cold_xeon_2_epyc", "traces/load-cold-xeon-2", "the three EPYC sittings pooled",
     "bench_load.py --load traces/load-cold-xeon-2 --calibrate-on traces/load-cold-epyc-side,"
     "traces/load-cold-epyc-side12,traces/load-cold-epyc-side3 ..."),
    ("load_cold_xeon_side_heldout2", "traces/load-cold-xeon-side", "the reverse: the second Xeon sitting's profile",
     "bench_load.py --load traces/load-cold-xeon-side --calibrate-on traces/load-cold-xeon-2 ..."),
    ("load_cold_epyc_f23", "traces/load-cold-epyc-f23", "its own round 0's levels 1-2, a third CPU",
     "bench_load.py --load traces/load-cold-epyc-f23 --rounds 0 --calibrate-rounds 0 ..."),
    ("load_cold_epyc_f23_xeon", "traces/load-cold-epyc-f23", "the two Xeon sittings pooled",
     "bench_load.py --load traces/load-cold-epyc-f23 --rounds 0 --calibrate-on traces/load-cold-xeon-side,"
     "traces/load-cold-xeon-2 ..."),
    ("load_cold_epyc_f23_epyc", "traces/load-cold-epyc-f23", "the three EPYC (family 25) sittings pooled",
     "bench_load.py --load traces/load-cold-epyc-f23 --rounds 0 --calibrate-on traces/load-cold-epyc-side,"
     "traces/load-cold-epyc-side12,traces/load-cold-epyc-side3 ..."),
    ("load_cold_epyc_f23_r1_heldout", "traces/load-cold-epyc-f23", "its round 0 predicts round 1, a third CPU",
     "bench_load.py --load traces/load-cold-epyc-f23 --calibrate-rounds 0 --rounds 1 ..."),
    ("load_cold_epyc_f23_xeon_r1", "traces/load-cold-epyc-f23", "the two Xeon sittings pooled, round 1",
     "bench_load.py --load traces/load-cold-epyc-f23 --rounds 1 --calibrate-on traces/load-cold-xeon-side,"
     "traces/load-cold-xeon-2 ..."),
    ("load_cold_epyc_f23_epyc_r1", "traces/load-cold-epyc-f23", "the three EPYC (family 25) sittings, round 1",
     "bench_load.py --load traces/load-cold-epyc-f23 --rounds 1 --calibrate-on traces/load-cold-epyc-side,"
     "traces/load-cold-epyc-side12,traces/load-cold-epyc-side3 ..."),
    ("load_cold_epyc_f25m17", "traces/load-cold-epyc-f25m17", "its own levels 1-2, a fourth CPU",
     "bench_load.py --load traces/load-cold-epyc-f25m17"),
    ("load_cold_epyc_f25m17_r1_heldout", "traces/load-cold-epyc-f25m17", "its round 0 predicts round 1, a fourth CPU",
     "bench_load.py --load traces/load-cold-epyc-f25m17 --calibrate-rounds 0 --rounds 1 ..."),
    ("load_cold_epyc_f25m17_xeon", "traces/load-cold-epyc-f25m17", "the two Xeon sittings pooled, a fourth CPU",
     "bench_load.py --load traces/load-cold-epyc-f25m17 --calibrate-on traces/load-cold-xeon-side,"
     "traces/load-cold-xeon-2 ..."),
    ("load_cold_epyc_f25m17_epyc", "traces/load-cold-epyc-f25m17", "the three EPYC (family 25 model 1) sittings pooled",
     "bench_load.py --load traces/load-cold-epyc-f25m17 --calibrate-on traces/load-cold-epyc-side,"
     "traces/load-cold-epyc-side12,traces/load-cold-epyc-side3 ..."),
    ("load_cold_epyc_f25m17_f23", "traces/load-cold-epyc-f25m17", "the third CPU's (family 23) corpus",
     "bench_load.py --load traces/load-cold-epyc-f25m17 --calibrate-on traces/load-cold-epyc-f23 ..."),
    ("load_cold_epyc_f25m17_2", "traces/load-cold-epyc-f25m17-2", "its own levels 1-2, the fourth CPU's second sitting",
     "bench_load.py --load traces/load-cold-epyc-f25m17-2 ..."),
    ("load_cold_epyc_f25m17_2_heldout", "traces/load-cold-epyc-f25m17-2", "the first sitting's profile, same host, six hours later",
     "bench_load.py --load traces/load-cold-epyc-f25m17-2 --calibrate-on traces/load-cold-epyc-f25m17 ..."),
    ("load_cold_epyc_f25m17_heldout2", "traces/load-cold-epyc-f25m17", "the reverse: the second sitting's profile",
     "bench_load.py --load traces/load-cold-epyc-f25m17 --calibrate-on traces/load-cold-epyc-f25m17-2 ..."),
    ("load_cold_epyc_f25m17_bf", "traces/load-cold-epyc-f25m17", "its own levels 1-2, with batch factors",
     "bench_load.py --load traces/load-cold-epyc-f25m17 --batch-factors ..."),
    ("load_cold_epyc_f25m17_r1_heldout_bf", "traces/load-cold-epyc-f25m17", "its round 0 predicts round 1, with batch factors",
     "bench_load.py --load traces/load-cold-epyc-f25m17 --calibrate-rounds 0 --rounds 1 --batch-factors ..."),
    ("load_cold_epyc_f25m17_2_heldout_bf", "traces/load-cold-epyc-f25m17-2", "the first sitting's profile, with batch factors",
     "bench_load.py --load traces/load-cold-epyc-f25m17-2 --calibrate-on traces/load-cold-epyc-f25m17 --batch-factors ..."),
    ("load_adaptive_f26m2", "traces/load-adaptive-f26m2", "its own levels 1-2, an EPYC of family 26",
     "bench_load.py --load traces/load-adaptive-f26m2 --configs ar,lr-d2 ..."),
    ("load_adaptive_f26m2_f23m1", "traces/load-adaptive-f26m2", "the family 23 CPU's adaptive corpus",
     "bench_load.py --load traces/load-adaptive-f26m2 --configs ar,lr-d2 --calibrate-on traces/load-adaptive-f23m1 ..."),
    ("load_adaptive_f26m2_f25m17", "traces/load-adaptive-f26m2", "the family 25 model 17 CPU's adaptive corpus",
     "bench_load.py --load traces/load-adaptive-f26m2 --configs ar,lr-d2 --calibrate-on traces/load-adaptive-f25m17-paid ..."),
    ("load_adaptive_f26m2_v3", "traces/load-adaptive-f26m2", "traces/load-adaptive-v3's (an earlier EPYC)",
     "bench_load.py --load traces/load-adaptive-f26m2 --configs ar,lr-d2 --calibrate-on traces/load-adaptive-v3 ..."),
    ("load_adaptive_f26m2_unit_heldout", "traces/load-adaptive-f26m2-unit",
     "its first sitting's profile, same host, seven hours later",
     "bench_load.py --load traces/load-adaptive-f26m2-unit --configs ar,lr-d2 --calibrate-on traces/load-adaptive-f26m2 ..."),
    ("load_adaptive_f26m2_3_heldout", "traces/load-adaptive-f26m2-3",
     "its first sitting's profile, same host, a third sitting eight hours later",
     "bench_load.py --load traces/load-adaptive-f26m2-3 --configs ar,lr-d2 --calibrate-on traces/load-adaptive-f26m2 ..."),
    ("load_adaptive_f6m167_f26m2_3", "traces/load-adaptive-f6m167",
     "the family 26 EPYC's third sitting: another vendor, an Intel Xeon family 6 model 167",
     "bench_load.py --load traces/load-adaptive-f6m167 --configs ar,lr-d2 --calibrate-on traces/load-adaptive-f26m2-3 ..."),
    ("load_adaptive_f6m207", "traces/load-adaptive-f6m207", "its own levels 1-2, an Intel Xeon family 6 model 207",
     "bench_load.py --load traces/load-adaptive-f6m207 --configs ar,lr-d2 ..."),
    ("load_adaptive_f6m207_f6m167", "traces/load-adaptive-f6m207",
     "the Intel Xeon family 6 model 167's corpus: another Intel generation",
     "bench_load.py --load traces/load-adaptive-f6m207 --configs ar,lr-d2 --calibrate-on traces/load-adaptive-f6m167 ..."),
    ("load_adaptive_f6m207_f26m2_3", "traces/load-adaptive-f6m207",
     "the family 26 EPYC's third sitting: another vendor, the Intel Xeon family 6 model 207",
     "bench_load.py --load traces/load-adaptive-f6m207 --configs ar,lr-d2 --calibrate-on traces/load-adaptive-f26m2-3 ..."),
    ("load_f6m207", "traces/load-f6m207", "its own levels 1-2, every configuration on the Intel Xeon family 6 model 207",
     "bench_load.py --load traces/load-f6m207 ..."),
    ("load_f6m207_r12_heldout", "traces/load-f6m207", "its round 0 predicts rounds 1-2, the Intel Xeon family 6 model 207",
     "bench_load.py --load traces/load-f6m207 --calibrate-rounds 0 --rounds 1,2 ..."),
    ("load_f6m207_adaptive", "traces/load-f6m207",
     "the same host's adaptive corpus (ar and lr-d2 only), hours earlier in the same boot",
     "bench_load.py --load traces/load-f6m207 --calibrate-on traces/load-adaptive-f6m207 ..."),
    ("load_f6m207_xeon", "traces/load-f6m207", "the two cold-cache Xeon sittings pooled (the same CPU model)",
     "bench_load.py --load traces/load-f6m207 --calibrate-on traces/load-cold-xeon-side,traces/load-cold-xeon-2 ..."),
    ("load_f6m207_epyc", "traces/load-f6m207", "traces/load's (an AMD EPYC, the same problems, warm caches)",
     "bench_load.py --load traces/load-f6m207 --calibrate-on traces/load ..."),
    ("load_f6m207_curve", "traces/load-f6m207", "its own levels 1-2, the line shaped by the host's measured batch curves",
     "bench_load.py --load traces/load-f6m207 --target-batch-curve traces/curves/f6m207-target.json "
     "--draft-batch-curve traces/curves/f6m207-draft.json ..."),
    ("load_f6m207_r12_heldout_curve", "traces/load-f6m207", "its round 0 predicts rounds 1-2, shaped by the batch curves",
     "bench_load.py --load traces/load-f6m207 --calibrate-rounds 0 --rounds 1,2 --target-batch-curve ... ..."),
    ("load_f6m207_xeon_curve", "traces/load-f6m207", "the cold-cache Xeon sittings' profile, shaped by this host's batch curves",
     "bench_load.py --load traces/load-f6m207 --calibrate-on traces/load-cold-xeon-side,traces/load-cold-xeon-2 "
     "--target-batch-curve ... ..."),
    ("load_f6m207_36_heldout", "traces/load-f6m207-36",
     "levels 3 and 6 on new problems, from traces/load-f6m207's 1-2 (its plan pre-registered)",
     "bench_load.py --load traces/load-f6m207-36 --calibrate-on traces/load-f6m207 ..."),
    ("load_f6m207_36_heldout_curve", "traces/load-f6m207-36", "the same, shaped by the host's batch curves",
     "bench_load.py --load traces/load-f6m207-36 --calibrate-on traces/load-f6m207 --target-batch-curve ... ..."),
    ("load_f6m207_36_xeon", "traces/load-f6m207-36", "the cold-cache Xeon sittings pooled (the same CPU model)",
     "bench_load.py --load traces/load-f6m207-36 --calibrate-on traces/load-cold-xeon-side,traces/load-cold-xeon-2 ..."),
    ("load_f6m207_36_epyc", "traces/load-f6m207-36", "traces/load's (an AMD EPYC, warm caches)",
     "bench_load.py --load traces/load-f6m207-36 --calibrate-on traces/load ..."),
    ("load_f6m207_transfer_36_heldout", "traces/load-f6m207-transfer-36",
     "lr at depths 1 and 3, lr+sd at depth 3, levels 3 and 6, new problems, from traces/load-f6m207's 1-2 "
     "(its plan pre-registered)",
     "bench_load.py --load traces/load-f6m207-transfer-36 --calibrate-on traces/load-f6m207 ..."),
    ("load_f6m207_transfer_36_heldout_curve", "traces/load-f6m207-transfer-36",
     "the same, shaped by the host's batch curves",
     "bench_load.py --load traces/load-f6m207-transfer-36 --calibrate-on traces/load-f6m207 "
     "--target-batch-curve ... ..."),
    ("load_f6m207_510_heldout", "traces/load-f6m207-510",
     "levels 5 and 10 on new problems (one round), from traces/load-f6m207's 1-2 (its plan pre-registered)",
     "bench_load.py --load traces/load-f6m207-510 --calibrate-on traces/load-f6m207 ..."),
    ("load_f6m207_510_heldout_curve", "traces/load-f6m207-510", "the same, shaped by the host's batch curves",
     "bench_load.py --load traces/load-f6m207-510 --calibrate-on traces/load-f6m207 --target-batch-curve ... ..."),
    ("load_cold_epyc_f25m17_3_heldout", "traces/load-cold-epyc-f25m17-3",
     "another machine boot of the same EPYC, from the earlier boot's 1-2 (its plan pre-registered)",
     "bench_load.py --load traces/load-cold-epyc-f25m17-3 --calibrate-on traces/load-cold-epyc-f25m17 ..."),
    ("load_cold_epyc_f25m17_3_heldout_curve", "traces/load-cold-epyc-f25m17-3",
     "the same, shaped by this boot's measured batch curves",
     "bench_load.py --load traces/load-cold-epyc-f25m17-3 --calibrate-on traces/load-cold-epyc-f25m17 "
     "--target-batch-curve traces/curves/f25m17-target.json --draft-batch-curve ... ..."),
    ("load_cold_epyc_f25m17_3_heldout_bf", "traces/load-cold-epyc-f25m17-3",
     "the same, with the earlier boot's batch factors",
     "bench_load.py --load traces/load-cold-epyc-f25m17-3 --calibrate-on traces/load-cold-epyc-f25m17 --batch-factors ..."),
    ("load_cold_epyc_f25m17_t36_heldout", "traces/load-cold-epyc-f25m17-t36",
     "lr at depths 1 and 3, lr+sd at depth 3, levels 3 and 6, from the same boot's depth-2 1-2 (its plan pre-registered)",
     "bench_load.py --load traces/load-cold-epyc-f25m17-t36 --calibrate-on traces/load-cold-epyc-f25m17-3 ..."),
    ("load_cold_epyc_f25m17_t36_heldout_curve", "traces/load-cold-epyc-f25m17-t36",
     "the same, shaped by this boot's measured batch curves",
     "bench_load.py --load traces/load-cold-epyc-f25m17-t36 --calibrate-on traces/load-cold-epyc-f25m17-3 "
     "--target-batch-curve traces/curves/f25m17-target.json --draft-batch-curve ... ..."),
    ("load_cold_epyc_f25m17_t36_heldout_bf", "traces/load-cold-epyc-f25m17-t36",
     "the same, with the calibration corpus's batch factors",
     "bench_load.py --load traces/load-cold-epyc-f25m17-t36 --calibrate-on traces/load-cold-epyc-f25m17-3 --batch-factors ..."),
    ("load_cold_epyc_f25m17_t36_heldout_raw", "traces/load-cold-epyc-f25m17-t36",
     "the same, shaped by the curves as measured (after the runs: a diagnosis)",
     "bench_load.py --load traces/load-cold-epyc-f25m17-t36 --calibrate-on traces/load-cold-epyc-f25m17-3 "
     "--target-batch-curve ... --draft-batch-curve ... --batch-curve-as-measured ..."),
    ("load_cold_epyc_f25m17_3_heldout_raw", "traces/load-cold-epyc-f25m17-3",
     "load_cold_epyc_f25m17_3_heldout_curve with the curves as measured (after the runs: a diagnosis)",
     "bench_load.py --load traces/load-cold-epyc-f25m17-3 --calibrate-on traces/load-cold-epyc-f25m17 "
     "--target-batch-curve ... --draft-batch-curve ... --batch-curve-as-measured ..."),
    ("load_cold_epyc_f25m17_t36_heldout_lv", "traces/load-cold-epyc-f25m17-t36",
     "load_cold_epyc_f25m17_t36_heldout from every level its calibration corpus ran (after the runs)",
     "bench_load.py --load traces/load-cold-epyc-f25m17-t36 --calibrate-on traces/load-cold-epyc-f25m17-3 "
     "--calibrate-levels 1,2,4,8 ..."),
    ("load_cold_epyc_f25m17_t36_heldout_lv_bf", "traces/load-cold-epyc-f25m17-t36",
     "the same, with that corpus's batch factors (after the runs)",
     "bench_load.py --load traces/load-cold-epyc-f25m17-t36 --calibrate-on traces/load-cold-epyc-f25m17-3 "
     "--calibrate-levels 1,2,4,8 --batch-factors ..."),
    ("load_cold_epyc_f25m17_t48_heldout", "traces/load-cold-epyc-f25m17-t48",
     "lr at depths 1 and 3, lr+sd at depth 3, levels 4 and 8, from the same boot's depth-2 1, 2, 4 and 8 (its plan pre-registered)",
     "bench_load.py --load traces/load-cold-epyc-f25m17-t48 --calibrate-on traces/load-cold-epyc-f25m17-3 "
     "--calibrate-levels 1,2,4,8 ..."),
    ("load_cold_epyc_f25m17_t48_heldout_bf", "traces/load-cold-epyc-f25m17-t48",
     "the same, with that corpus's batch factors (its plan pre-registered)",
     "bench_load.py --load traces/load-cold-epyc-f25m17-t48 --calibrate-on traces/load-cold-epyc-f25m17-3 "
     "--calibrate-levels 1,2,4,8 --batch-factors ..."),
    ("load_cold_epyc_f25m17_t48_heldout_pooled", "traces/load-cold-epyc-f25m17-t48",
     "the same, from traces/load-cold-epyc-f25m17-3 and -t36 pooled, every level each ran (its plan pre-registered)",
     "bench_load.py --load traces/load-cold-epyc-f25m17-t48 --calibrate-on traces/load-cold-epyc-f25m17-3,"
     "traces/load-cold-epyc-f25m17-t36 --calibrate-levels 1,2,3,4,6,8 ..."),
    ("load_cold_epyc_f25m17_t48_heldout_pooled_bf", "traces/load-cold-epyc-f25m17-t48",
     "the same, with their batch factors (its plan pre-registered)",
     "bench_load.py --load traces/load-cold-epyc-f25m17-t48 --calibrate-on traces/load-cold-epyc-f25m17-3,"
     "traces/load-cold-epyc-f25m17-t36 --calibrate-levels 1,2,3,4,6,8 --batch-factors ..."),
    ("load_cold_epyc_f25m17_t48_heldout_12", "traces/load-cold-epyc-f25m17-t48",
     "the control: from traces/load-cold-epyc-f25m17-3's 1-2 only (after the runs)",
     "bench_load.py --load traces/load-cold-epyc-f25m17-t48 --calibrate-on traces/load-cold-epyc-f25m17-3 ..."),
    ("load_cold_epyc_f25m17_t48_heldout_12_bf", "traces/load-cold-epyc-f25m17-t48",
     "the control with the batch factors (after the runs)",
     "bench_load.py --load traces/load-cold-epyc-f25m17-t48 --calibrate-on traces/load-cold-epyc-f25m17-3 --batch-factors ..."),
    ("load_cold_epyc_f25m17_b36_heldout", "traces/load-cold-epyc-f25m17-b36",
     "lr at depths 1 and 3, lr+sd at depth 3, levels 3 and 6, between the depth-2 1, 2, 4 and 8 it was calibrated on (its plan pre-registered)",
     "bench_load.py --load traces/load-cold-epyc-f25m17-b36 --calibrate-on traces/load-cold-epyc-f25m17-3 "
     "--calibrate-levels 1,2,4,8 ..."),
    ("load_cold_epyc_f25m17_b36_heldout_bf", "traces/load-cold-epyc-f25m17-b36",
     "the same, with that corpus's batch factors (its plan pre-registered)",
     "bench_load.py --load traces/load-cold-epyc-f25m17-b36 --calibrate-on traces/load-cold-epyc-f25m17-3 "
     "--calibrate-levels 1,2,4,8 --batch-factors ..."),
    ("load_cold_epyc_f25m17_b36_heldout_pooled", "traces/load-cold-epyc-f25m17-b36",
     "the same, from traces/load-cold-epyc-f25m17-3 and -t48 pooled, levels 1, 2, 4 and 8 (its plan pre-registered)",
     "bench_load.py --load traces/load-cold-epyc-f25m17-b36 --calibrate-on traces/load-cold-epyc-f25m17-3,"
     "traces/load-cold-epyc-f25m17-t48 --calibrate-levels 1,2,4,8 ..."),
    ("load_cold_epyc_f25m17_b36_heldout_pooled_bf", "traces/load-cold-epyc-f25m17-b36",
     "the same, with their batch factors (its plan pre-registered)",
     "bench_load.py --load traces/load-cold-epyc-f25m17-b36 --calibrate-on traces/load-cold-epyc-f25m17-3,"
     "traces/load-cold-epyc-f25m17-t48 --calibrate-levels 1,2,4,8 --batch-factors ..."),
    ("load_cold_epyc_f25m17_b36_heldout_12", "traces/load-cold-epyc-f25m17-b36",
     "the control: from traces/load-cold-epyc-f25m17-3's 1-2 only (after the runs)",
     "bench_load.py --load traces/load-cold-epyc-f25m17-b36 --calibrate-on traces/load-cold-epyc-f25m17-3 ..."),
    ("load_cold_epyc_f25m17_b36_heldout_12_bf", "traces/load-cold-epyc-f25m17-b36",
     "the control with the batch factors (after the runs)",
     "bench_load.py --load traces/load-cold-epyc-f25m17-b36 --calibrate-on traces/load-cold-epyc-f25m17-3 --batch-factors ..."),
    ("load_cold_epyc_f25m17_b12_heldout", "traces/load-cold-epyc-f25m17-b12",
     "lr at depths 1 and 3, lr+sd at depth 3, 12 in flight, past the depth-2 1, 2, 4 and 8 it was calibrated on (its plan pre-registered)",
     "bench_load.py --load traces/load-cold-epyc-f25m17-b12 --calibrate-on traces/load-cold-epyc-f25m17-3 "
     "--calibrate-levels 1,2,4,8 ..."),
    ("load_cold_epyc_f25m17_b12_heldout_bf", "traces/load-cold-epyc-f25m17-b12",
     "the same, with that corpus's batch factors (its plan pre-registered)",
     "bench_load.py --load traces/load-cold-epyc-f25m17-b12 --calibrate-on traces/load-cold-epyc-f25m17-3 "
     "--calibrate-levels 1,2,4,8 --batch-factors ..."),
    ("load_cold_epyc_f25m17_b12_heldout_pooled", "traces/load-cold-epyc-f25m17-b12",
     "the same, from traces/load-cold-epyc-f25m17-3 and -t48 pooled, levels 1, 2, 4 and 8 (its plan pre-registered)",
     "bench_load.py --load traces/load-cold-epyc-f25m17-b12 --calibrate-on traces/load-cold-epyc-f25m17-3,"
     "traces/load-cold-epyc-f25m17-t48 --calibrate-levels 1,2,4,8 ..."),
    ("load_cold_epyc_f25m17_b12_heldout_pooled_bf", "traces/load-cold-epyc-f25m17-b12",
     "the same, with their batch factors (its plan pre-registered)",
     "bench_load.py --load traces/load-cold-epyc-f25m17-b12 --calibrate-on traces/load-cold-epyc-f25m17-3,"
     "traces/load-cold-epyc-f25m17-t48 --calibrate-levels 1,2,4,8 --batch-factors ..."),
    ("load_cold_epyc_f25m17_b12_heldout_12", "traces/load-cold-epyc-f25m17-b12",
     "the control: from traces/load-cold-epyc-f25m17-3's 1-2 only (after the runs)",
     "bench_load.py --load traces/load-cold-epyc-f25m17-b12 --calibrate-on traces/load-cold-epyc-f25m17-3 ..."),
    ("load_cold_epyc_f25m17_b12_heldout_12_bf", "traces/load-cold-epyc-f25m17-b12",
     "the control with the batch factors (after the runs)",
     "bench_load.py --load traces/load-cold-epyc-f25m17-b12 --calibrate-on traces/load-cold-epyc-f25m17-3 --batch-factors ..."),
    ("load_cold_epyc_f25m17_b16_heldout", "traces/load-cold-epyc-f25m17-b16",
     "lr at depths 1 and 3, lr+sd at depth 3, 16 in flight, twice the depth-2 1, 2, 4 and 8 it was calibrated on (its plan pre-registered)",
     "bench_load.py --load traces/load-cold-epyc-f25m17-b16 --calibrate-on traces/load-cold-epyc-f25m17-3 "
     "--calibrate-levels 1,2,4,8 ..."),
    ("load_cold_epyc_f25m17_b16_heldout_bf", "traces/load-cold-epyc-f25m17-b16",
     "the same, with that corpus's batch factors (its plan pre-registered)",
     "bench_load.py --load traces/load-cold-epyc-f25m17-b16 --calibrate-on traces/load-cold-epyc-f25m17-3 "
     "--calibrate-levels 1,2,4,8 --batch-factors ..."),
    ("load_cold_epyc_f25m17_b16_heldout_with12", "traces/load-cold-epyc-f25m17-b16",
     "the same, from traces/load-cold-epyc-f25m17-3's 1, 2, 4, 8 and -b12's 12 pooled (its plan pre-registered)",
     "bench_load.py --load traces/load-cold-epyc-f25m17-b16 --calibrate-on traces/load-cold-epyc-f25m17-3,"
     "traces/load-cold-epyc-f25m17-b12 --calibrate-levels 1,2,4,8,12 ..."),
    ("load_cold_epyc_f25m17_b16_heldout_with12_bf", "traces/load-cold-epyc-f25m17-b16",
     "the same, with their batch factors (its plan pre-registered)",
     "bench_load.py --load traces/load-cold-epyc-f25m17-b16 --calibrate-on traces/load-cold-epyc-f25m17-3,"
     "traces/load-cold-epyc-f25m17-b12 --calibrate-levels 1,2,4,8,12 --batch-factors ..."),
    ("load_cold_epyc_f25m17_b16_heldout_12", "traces/load-cold-epyc-f25m17-b16",
     "the control: from traces/load-cold-epyc-f25m17-3's 1-2 only (after the runs)",
     "bench_load.py --load traces/load-cold-epyc-f25m17-b16 --calibrate-on traces/load-cold-epyc-f25m17-3 ..."),
    ("load_cold_epyc_f25m17_b16_heldout_12_bf", "traces/load-cold-epyc-f25m17-b16",
     "the control with the batch factors (after the runs)",
     "bench_load.py --load traces/load-cold-epyc-f25m17-b16 --calibrate-on traces/load-cold-epyc-f25m17-3 --batch-factors ..."),
    ("load_cold_epyc_f25m17_b24_heldout", "traces/load-cold-epyc-f25m17-b24",
     "lr at depths 1 and 3, lr+sd at depth 3, 24 in flight, three times the depth-2 1, 2, 4 and 8 it was calibrated on (its plan pre-registered)",
     "bench_load.py --load traces/load-cold-epyc-f25m17-b24 --calibrate-on traces/load-cold-epyc-f25m17-3 "
     "--calibrate-levels 1,2,4,8 ..."),
    ("load_cold_epyc_f25m17_b24_heldout_bf", "traces/load-cold-epyc-f25m17-b24",
     "the same, with that corpus's batch factors (its plan pre-registered)",
     "bench_load.py --load traces/load-cold-epyc-f25m17-b24 --calibrate-on traces/load-cold-epyc-f25m17-3 "
     "--calibrate-levels 1,2,4,8 --batch-factors ..."),
    ("load_cold_epyc_f25m17_b24_heldout_with16", "traces/load-cold-epyc-f25m17-b24",
     "the same, from traces/load-cold-epyc-f25m17-3's 1, 2, 4, 8 and -b16's 16 pooled (its plan pre-registered)",
     "bench_load.py --load traces/load-cold-epyc-f25m17-b24 --calibrate-on traces/load-cold-epyc-f25m17-3,"
     "traces/load-cold-epyc-f25m17-b16 --calibrate-levels 1,2,4,8,16 ..."),
    ("load_cold_epyc_f25m17_b24_heldout_with16_bf", "traces/load-cold-epyc-f25m17-b24",
     "the same, with their batch factors (its plan pre-registered)",
     "bench_load.py --load traces/load-cold-epyc-f25m17-b24 --calibrate-on traces/load-cold-epyc-f25m17-3,"
     "traces/load-cold-epyc-f25m17-b16 --calibrate-levels 1,2,4,8,16 --batch-factors ..."),
    ("load_cold_epyc_f25m17_b24_heldout_12", "traces/load-cold-epyc-f25m17-b24",
     "the control: from traces/load-cold-epyc-f25m17-3's 1-2 only (after the runs)",
     "bench_load.py --load traces/load-cold-epyc-f25m17-b24 --calibrate-on traces/load-cold-epyc-f25m17-3 ..."),
    ("load_cold_epyc_f25m17_b24_heldout_12_bf", "traces/load-cold-epyc-f25m17-b24",
     "the control with the batch factors (after the runs)",
     "bench_load.py --load traces/load-cold-epyc-f25m17-b24 --calibrate-on traces/load-cold-epyc-f25m17-3 --batch-factors ..."),
    ("load_cold_epyc_f25m17_b24_heldout_cap", "traces/load-cold-epyc-f25m17-b24",
     "load_cold_epyc_f25m17_b24_heldout with each engine capped at the sequences per pass the real ones took (after the runs)",
     "bench_load.py --load traces/load-cold-epyc-f25m17-b24 --calibrate-on traces/load-cold-epyc-f25m17-3 "
     "--calibrate-levels 1,2,4,8 --max-num-seqs recorded ..."),
    ("load_cold_epyc_f25m17_b24_heldout_bf_cap", "traces/load-cold-epyc-f25m17-b24",
     "load_cold_epyc_f25m17_b24_heldout_bf with each engine capped as the real ones were (after the runs)",
     "bench_load.py --load traces/load-cold-epyc-f25m17-b24 --calibrate-on traces/load-cold-epyc-f25m17-3 "
     "--calibrate-levels 1,2,4,8 --batch-factors --max-num-seqs recorded ..."),
    ("load_cold_epyc_f25m17_b24_heldout_with16_cap", "traces/load-cold-epyc-f25m17-b24",
     "load_cold_epyc_f25m17_b24_heldout_with16 with each engine capped as the real ones were (after the runs)",
     "bench_load.py --load traces/load-cold-epyc-f25m17-b24 --calibrate-on traces/load-cold-epyc-f25m17-3,"
     "traces/load-cold-epyc-f25m17-b16 --calibrate-levels 1,2,4,8,16 --max-num-seqs recorded ..."),
    ("load_cold_epyc_f25m17_b24_heldout_with16_bf_cap", "traces/load-cold-epyc-f25m17-b24",
     "load_cold_epyc_f25m17_b24_heldout_with16_bf with each engine capped as the real ones were (after the runs)",
     "bench_load.py --load traces/load-cold-epyc-f25m17-b24 --calibrate-on traces/load-cold-epyc-f25m17-3,"
     "traces/load-cold-epyc-f25m17-b16 --calibrate-levels 1,2,4,8,16 --batch-factors --max-num-seqs recorded ..."),
    ("load_cold_epyc_f25m17_b16_heldout_cap", "traces/load-cold-epyc-f25m17-b16",
     "load_cold_epyc_f25m17_b16_heldout with each engine capped as the real ones were (after the runs)",
     "bench_load.py --load traces/load-cold-epyc-f25m17-b16 --calibrate-on traces/load-cold-epyc-f25m17-3 "
     "--calibrate-levels 1,2,4,8 --max-num-seqs recorded ..."),
    ("load_cold_epyc_f25m17_b16_heldout_bf_cap", "traces/load-cold-epyc-f25m17-b16",
     "load_cold_epyc_f25m17_b16_heldout_bf with each engine capped as the real ones were (after the runs)",
     "bench_load.py --load traces/load-cold-epyc-f25m17-b16 --calibrate-on traces/load-cold-epyc-f25m17-3 "
     "--calibrate-levels 1,2,4,8 --batch-factors --max-num-seqs recorded ..."),
    ("load_cold_epyc_f25m17_b16_heldout_with12_cap", "traces/load-cold-epyc-f25m17-b16",
     "load_cold_epyc_f25m17_b16_heldout_with12 with each engine capped as the real ones were (after the runs)",
     "bench_load.py --load traces/load-cold-epyc-f25m17-b16 --calibrate-on traces/load-cold-epyc-f25m17-3,"
     "traces/load-cold-epyc-f25m17-b12 --calibrate-levels 1,2,4,8,12 --max-num-seqs recorded ..."),
    ("load_cold_epyc_f25m17_b16_heldout_with12_bf_cap", "traces/load-cold-epyc-f25m17-b16",
     "load_cold_epyc_f25m17_b16_heldout_with12_bf with each engine capped as the real ones were (after the runs)",
     "bench_load.py --load traces/load-cold-epyc-f25m17-b16 --calibrate-on traces/load-cold-epyc-f25m17-3,"
     "traces/load-cold-epyc-f25m17-b12 --calibrate-levels 1,2,4,8,12 --batch-factors --max-num-seqs recorded ..."),
    ("load_cold_epyc_f25m17_b36_heldout_bf_own_sd", "traces/load-cold-epyc-f25m17-b36",
     "load_cold_epyc_f25m17_b36_heldout_bf with each lr+sd record replayed at its own tokens per target pass",
     "bench_load.py --load traces/load-cold-epyc-f25m17-b36 --calibrate-on traces/load-cold-epyc-f25m17-3 "
     "--calibrate-levels 1,2,4,8 --batch-factors --own-sd-rate ..."),
    ("load_cold_epyc_f25m17_t48_heldout_bf_own_sd", "traces/load-cold-epyc-f25m17-t48",
     "load_cold_epyc_f25m17_t48_heldout_bf with each lr+sd record replayed at its own tokens per target pass",
     "bench_load.py --load traces/load-cold-epyc-f25m17-t48 --calibrate-on traces/load-cold-epyc-f25m17-3 "
     "--calibrate-levels 1,2,4,8 --batch-factors --own-sd-rate ..."),
    ("load_f6m207_36_heldout_own_sd", "traces/load-f6m207-36",
     "load_f6m207_36_heldout with each lr+sd record replayed at its own tokens per target pass",
     "bench_load.py --load traces/load-f6m207-36 --calibrate-on traces/load-f6m207 --own-sd-rate ..."),
    ("load_cold_epyc_f25m17_b36_heldout_bf_sd_rounds", "traces/load-cold-epyc-f25m17-b36",
     "load_cold_epyc_f25m17_b36_heldout_bf with each committed-path lr+sd target job replayed in its recorded span's passes",
     "bench_load.py --load traces/load-cold-epyc-f25m17-b36 --calibrate-on traces/load-cold-epyc-f25m17-3 "
     "--calibrate-levels 1,2,4,8 --batch-factors --recorded-sd-rounds ..."),
    ("load_cold_epyc_f25m17_t48_heldout_bf_sd_rounds", "traces/load-cold-epyc-f25m17-t48",
     "load_cold_epyc_f25m17_t48_heldout_bf with each committed-path lr+sd target job replayed in its recorded span's passes",
     "bench_load.py --load traces/load-cold-epyc-f25m17-t48 --calibrate-on traces/load-cold-epyc-f25m17-3 "
     "--calibrate-levels 1,2,4,8 --batch-factors --recorded-sd-rounds ..."),
    ("load_cold_epyc_f25m17_b12_heldout_bf_sd_rounds", "traces/load-cold-epyc-f25m17-b12",
     "load_cold_epyc_f25m17_b12_heldout_bf with each committed-path lr+sd target job replayed in its recorded span's passes",
     "bench_load.py --load traces/load-cold-epyc-f25m17-b12 --calibrate-on traces/load-cold-epyc-f25m17-3 "
     "--calibrate-levels 1,2,4,8 --batch-factors --recorded-sd-rounds ..."),
    ("load_cold_epyc_f25m17_b16_heldout_bf_sd_rounds", "traces/load-cold-epyc-f25m17-b16",
     "load_cold_epyc_f25m17_b16_heldout_bf with each committed-path lr+sd target job replayed in its recorded span's passes",
     "bench_load.py --load traces/load-cold-epyc-f25m17-b16 --calibrate-on traces/load-cold-epyc-f25m17-3 "
     "--calibrate-levels 1,2,4,8 --batch-factors --recorded-sd-rounds ..."),
    ("load_f6m207_36_heldout_sd_rounds", "traces/load-f6m207-36",
     "load_f6m207_36_heldout with each committed-path lr+sd target job replayed in its recorded span's passes",
     "bench_load.py --load traces/load-f6m207-36 --calibrate-on traces/load-f6m207 --recorded-sd-rounds ..."),
    ("load_f6m207_36_heldout_off_path", "traces/load-f6m207-36",
     "load_f6m207_36_heldout with off-path jobs replayed at their recorded prefill",
     "bench_load.py --load traces/load-f6m207-36 --calibrate-on traces/load-f6m207 --off-path-prefill ..."),
    ("load_f6m207_36_heldout_sd_first_pass", "traces/load-f6m207-36",
     "load_f6m207_36_heldout with each new target request's first pass without an SD proposal",
     "bench_load.py --load traces/load-f6m207-36 --calibrate-on traces/load-f6m207 --sd-plain-first-pass ..."),
)
TARGET = 0.10     # the target: a predicted speedup within 10% of the measured one
BASELINES = ("ar", "ar-er")   # not speculative: ar is every speedup's denominator


def planned_errors(out: dict, key: str = "planned") -> list[tuple[str, float]]:
    """(configuration, |planned / measured - 1|) of every planned speedup over ar with a measured
    one: bench_load.plan_errors's pairs, with their configuration (`key`: planned_at_measured_
    acceptance for the plan given each level's measured step acceptance)."""
    return [(cfg, abs(p["speedup_vs_ar"] / out["levels"][n][cfg]["speedup_vs_ar"] - 1))
            for n, t in out[key].items() for cfg, p in t.items()
            if p.get("speedup_vs_ar") and out["levels"].get(n, {}).get(cfg, {}).get("speedup_vs_ar")]


def summarise(stem: str, corpus: str, asks: str, command: str) -> dict:
    from benchmarks.bench_load import plan_errors, replay_speedup_errors

    out = json.loads((RESULTS / f"{stem}.json").read_text())
    if out.get("corpus") not in (None, corpus):
        raise SystemExit(f"error: {stem}.json predicted {out['corpus']}, PREDICTIONS says {corpus}")
    cal = out["calibrated_on"]
    rep = replay_speedup_errors(out["levels"])
    plan = [e for cfg, e in planned_errors(out) if cfg not in BASELINES]
    er = [e for cfg, e in planned_errors(out) if cfg == "ar-er"]
    acc = [e for cfg, e in planned_errors(out, "planned_at_measured_acceptance") if cfg not in BASELINES]
    assert sorted(plan + er) == sorted(plan_errors(out, "planned"))   # bench_load's own pairs
    be = {k: [0, 0] for k in ("vs_ar", "vs_ar-er")}
    for cfg, b in out["break_even"].items():
        if cfg in BASELINES:
            continue
        for k in be:
            if b[f"measured_{k}"] != "-" and b[f"planned_{k}"] != "-":
                be[k][0] += b[f"measured_{k}"] == b[f"planned_{k}"]
                be[k][1] += 1
    prof = ("own" if not cal.get("held_out") else
            (f"round {', '.join(map(str, cal['rounds']))}" if cal.get("rounds") else cal["corpus"]))
    return {"result": stem, "corpus": corpus, "asks": asks, "command": command,
            "profile": prof, "held_out": bool(cal.get("held_out")), "records": out["records"],
            **({"batch_factors": True} if cal.get("batch_factors") else {}),
            **({"batch_curves": True} if cal.get("batch_curves") else {}),
            **({"batch_curves_as_measured": True} if cal.get("batch_curves_as_measured") else {}),
            **({"off_path_prefill": True} if out.get("off_path_prefill") else {}),
            **({"sd_plain_first_pass": True} if out.get("sd_plain_first_pass") else {}),
            **({"own_sd_rate": True} if out.get("own_sd_rate") else {}),
            **({"recorded_sd_rounds": out["recorded_sd_rounds"]} if out.get("recorded_sd_rounds") else {}),
            **({"max_num_seqs": out["max_num_seqs"]} if out.get("max_num_seqs") is not None else {}),
            **({"probe_decode_fallback": True} if out.get("probe_decode_fallback") else {}),
            # profiles fit on other levels than 1-2 (bench_load --calibrate-levels)
            **({"calibrate_levels": cal["levels"]} if cal.get("levels", [1, 2]) != [1, 2] else {}),
            "rounds": out.get("rounds"), "levels": sorted(map(int, out["levels"])),
            "replayed": {"within": sum(e <= TARGET for e in rep), "pairs": len(rep),
                         "largest": max(rep) if rep else None},
            "planned": {"within": sum(e <= TARGET for e in plan), "pairs": len(plan),
                        "largest": max(plan) if plan else None},
            # the plan given each level's measured step acceptance: what the plan misses besides
            # the acceptance of the profile's few calibration problems
            "planned_measured_acceptance": {"within": sum(e <= TARGET for e in acc), "pairs": len(acc),
                                            "largest": max(acc) if acc else None},
            # AR on both cores, planned from the profile's TP efficiency (none: not measured here)
            "ar_er_planned": {"within": sum(e <= TARGET for e in er), "pairs": len(er),
                              "largest": max(er) if er else None},
            "break_even": {k: {"as_measured": v[0], "configs": v[1]} for k, v in be.items()}}


# a profile whose line was shaped in the batch size, or a replay that took a diagnosis's recorded
# counts (bench_load's flags): totalled apart
SHAPES = (("batch_factors", "--batch-factors"), ("batch_curves_as_measured", "--batch-curve-as-measured"),
          ("batch_curves", "--target-batch-curve"),
          ("off_path_prefill", "--off-path-prefill"), ("sd_plain_first_pass", "--sd-plain-first-pass"),
          ("probe_decode_fallback", "--probe-decode-fallback"), ("own_sd_rate", "--own-sd-rate"),
          ("recorded_sd_rounds", "--recorded-sd-rounds"), ("max_num_seqs", "--max-num-seqs"))
# diagnoses of the replay, and the engines' cap (replays and plans), which follow the shaping
# flag they ran beside
REPLAY_DIAGNOSES = ("own_sd_rate", "recorded_sd_rounds", "max_num_seqs")


def shaped(r: dict) -> str | None:
    """The bench_load flag that shaped the result's profiles in the batch size (or its replay's
    off-path prefill), or None; profiles fit on other levels (--calibrate-levels) are totalled
    apart by that flag and their shaping flag together, and --own-sd-rate or --recorded-sd-rounds
    (diagnoses of the replay) follow the shaping flag they ran beside."""
    flag = next((flag for key, flag in SHAPES if key not in REPLAY_DIAGNOSES and r.get(key)), None)
    for key, diag in SHAPES:     # a diagnosis of the replay beside a shape: totalled apart from it
        if key in REPLAY_DIAGNOSES and r.get(key):
            # --recorded-sd-rounds first; --max-num-seqs recorded (or N)
            diag += f" {r[key]}" if r[key] == "first" or key == "max_num_seqs" else ""
            flag = f"{flag} {diag}" if flag else diag
    if r.get("calibrate_levels"):
        return f"{LEVELS_FLAG} {','.join(map(str, r['calibrate_levels']))}" + (f" {flag}" if flag else "")
    return flag


LEVELS_FLAG = "--calibrate-levels"


def render(rows: list[dict]) -> str:
    cell = lambda c: f"{c['within']} of {c['pairs']} ({c['largest']:.1%})" if c["pairs"] else "-"  # noqa: E731
    lines = ["Every prediction bench_load.py made of a real load corpus (closed loop: a block of N requests "
             f"started together). Replayed and planned: speculative (configuration, level) pairs within "
             f"{TARGET:.0%} of the measured speedup over ar, with the largest error; ar-er: AR on both "
             "cores, planned; measured acceptance: the plan given each level's measured step acceptance; "
             "break-even: speculative configurations whose planned break-even level (the first at which "
             "the speedup is <= 1) is the measured one, against ar and against ar-er.", "",
             "| result | corpus | what it asks | profile | records | replayed | planned "
             "| planned, measured acceptance | ar-er planned | break-even vs ar / ar-er |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    be = lambda b: f"{b['as_measured']}/{b['configs']}" if b["configs"] else "-"  # noqa: E731
    for r in rows:
        b = r["break_even"]
        lines.append(f"| {r['result']} | {r['corpus'].removeprefix('traces/')} | {r['asks']} | "
                     f"{' + '.join(c.removeprefix('traces/') for c in r['profile'].split(','))}"
                     f"{f' ({shaped(r)})' if shaped(r) else ''} | {r['records']} | {cell(r['replayed'])} | "
                     f"{cell(r['planned'])} | {cell(r['planned_measured_acceptance'])} | "
                     f"{cell(r['ar_er_planned'])} | {be(b['vs_ar'])} / "
                     f"{be(b['vs_ar-er'])} |")
    groups = [("In sample (a profile of the same records' levels 1-2)", None, False),
              ("Held out (a profile of other records)", None, True)]
    for flag in list(dict.fromkeys([f for _, f in SHAPES] + [
            shaped(r) for r in rows if (shaped(r) or "").startswith(LEVELS_FLAG)] + [shaped(r) for r in rows if shaped(r)])):
        groups += [(f"With {flag}, in sample (not in the totals above)", flag, False),
                   (f"With {flag}, held out (not in the totals above)", flag, True)]
    for name, flag, held in groups:
        sel = [r for r in rows if r["held_out"] == held and shaped(r) == flag]
        if not sel:
            continue
        t = {k: [sum(r[k]["within"] for r in sel), sum(r[k]["pairs"] for r in sel)]
             for k in ("replayed", "planned", "planned_measured_acceptance", "ar_er_planned")}
        be = {k: [sum(r["break_even"][k]["as_measured"] for r in sel),
                  sum(r["break_even"][k]["configs"] for r in sel)] for k in ("vs_ar", "vs_ar-er")}
        lines += ["", f"{name}: {len(sel)} result{'' if len(sel) == 1 else 's'}; speculative pairs replayed within {TARGET:.0%} at "
                  f"{t['replayed'][0]} of {t['replayed'][1]}, planned at {t['planned'][0]} of "
                  f"{t['planned'][1]} (at each level's measured acceptance {t['planned_measured_acceptance'][0]} of "
                  f"{t['planned_measured_acceptance'][1]}); ar-er planned at {t['ar_er_planned'][0]} of {t['ar_er_planned'][1]}; "
                  f"break-even as measured for {be['vs_ar'][0]} of {be['vs_ar'][1]} speculative "
                  f"configurations against ar, {be['vs_ar-er'][0]} of {be['vs_ar-er'][1]} against ar-er."]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    rows = [summarise(*p) for p in PREDICTIONS]
    (RESULTS / "load_summary.json").write_text(json.dumps({"target": TARGET, "results": rows}, indent=1) + "\n")
    md = render(rows)
    (RESULTS / "load_summary.md").write_text(md)
    print(json.dumps(rows, indent=1) if a.json else md)


if __name__ == "__main__":
    main()
