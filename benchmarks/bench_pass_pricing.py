"""What a replay's profile charges for the passes the engines really ran, level by level.

    .venv/bin/python benchmarks/bench_pass_pricing.py [--corpus traces/load-f6m207 ...] [--json]
        [--out benchmarks/results/pass_pricing.json]
        [--target-batch-curve PATH [--draft-batch-curve PATH]]   # also the line so shaped
        [--probe-decode-fallback]     # physical.PROBE_DECODE_FALLBACK in the fits and the prices

bench_load.py replays a load corpus with a profile calibrated on its levels 1-2 (lrsim/calib: one
physical latency model per engine, lrsim/calib/physical.py). A replayed makespan can miss for two
reasons: the simulated requests run other passes than the real ones did (other batches, other
contexts), or the model prices the same pass at another cost. This sets the second apart: every
forward pass the engines recorded, with its own sequences, decode and prefill positions, context
(vLLM's kv_tokens), the share of it the other engine was busy and its block's probe, priced by
that profile (physical.price, the model the replay uses) and summed against the measured seconds:

  by configuration   priced / measured seconds of all of a configuration's target (and draft)
                     passes at each level; 1.00: the model's passes cost what the real ones did
  by batch           the target's plain decode passes (one position per sequence, no prefill:
                     the batch-latency curve itself) of every configuration, by sequences in the
                     pass: priced / measured, and the measured seconds over the block's probe (the
                     curve's shape on this machine, median over passes)

With --target-batch-curve (a measured curve, `lr calibrate measure`, of the corpus's machine)
each cell also gives the same profile with its line shaped in the batch size by the curve (`lr
calibrate --target-batch-curve`): line / shaped.

At N in flight every record of a block holds the engine's passes over its own window, so a pass
is counted once (by its start on the block's clock). Levels 1-2 are the profile's own passes (in
sample); higher levels are priced out of sample. Reads the traces only; a few seconds per corpus.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.load_replay import PROFILE_CONFIGS, blocks, calib_paths, load_corpus, pass_key  # noqa: E402
from benchmarks.write import batch_curves, table_head, write_results  # noqa: E402

# a --target-batch-curve is one machine's: its corpora only
CORPORA = ("traces/load-f6m207", "traces/load-f6m207-36", "traces/load-f6m207-transfer-36")
# a corpus without levels 1-2 of its own, priced by another's profile (held out)
CALIBRATE_ON = {"traces/load-f6m207-36": "traces/load-f6m207",
                "traces/load-f6m207-transfer-36": "traces/load-f6m207"}
ENGINES = ("target", "draft")
# sequences in a plain decode pass, grouped (lo, hi): where the CPU's curve is read
BATCHES = ((1, 1), (2, 2), (3, 4), (5, 8), (9, 16), (17, 64))
MIN_PASSES = 20         # passes a cell needs before it is shown


def block_passes(block: list[dict], engine: str, ref: dict | None):
    """The block's passes of `engine` (physical.PassData, the replay's features), each once
    (load_replay.pass_key)."""
    from lrsim.calib.physical import pass_data

    keep_recs, keys = [], []
    for r in block:
        fp = ((r.get("engine_stats") or {}).get(engine) or {}).get("forward_passes")
        if fp:
            keep_recs.append(r)
            keys += [pass_key(r, p) for p in fp]
    if not keep_recs:
        return None
    d = pass_data(keep_recs, engine, ref, probes=False)    # the same passes, in the same order
    seen, mask = set(), np.zeros(len(keys), bool)
    for i, k in enumerate(keys):
        if k not in seen:
            seen.add(k)
            mask[i] = True
    return d.select(mask)


def profiles(root: Path, curves: dict) -> tuple[dict, dict]:
    """The reference probe of the level 1-2 records of the corpus at `root` and bench_load's
    replay profile of them, {"line": ..., "curve": ... (with `curves`)}."""
    from lrsim.calib.calibrate import calibrate, read_records
    from lrsim.calib.physical import reference_probe
    from lrsim.calib.profile import validate_doc

    paths = calib_paths(root)
    ref = reference_probe([r for p in paths for r in read_records(p)])
    docs = {"line": validate_doc(calibrate(paths, configs=set(PROFILE_CONFIGS), select_placement=False))}
    if curves:
        docs["curve"] = validate_doc(calibrate(paths, configs=set(PROFILE_CONFIGS), select_placement=False,
                                               batch_curves={r: str(ROOT / c) for r, c in curves.items()}))
    return ref, docs


def _ratio(pr: np.ndarray, t: np.ndarray) -> float:
    return float(pr.sum() / t.sum())


def corpus_doc(root: Path, curves: dict, cal_root: Path | None = None) -> dict:
    """The corpus at `root` priced by the profile of `cal_root`'s levels 1-2 (default: its own)."""
    from lrsim.calib.physical import price

    cal_root = cal_root or root
    ref, docs = profiles(cal_root, curves)
    out: dict = {"calibration_corpus": str(cal_root.relative_to(ROOT)),
                 "calibrated_on": [str(Path(p).relative_to(ROOT)) for p in calib_paths(cal_root)],
                 "by_config": {}, "by_batch": {}}
    for n, level in sorted(load_corpus(root).items()):
        plain: dict = {"t": [], "B": [], "rel": [], **{k: [] for k in docs}}
        for cfg, recs in sorted(level.items()):
            for eng in ENGINES:
                if any(eng not in d["latency"] or d["latency"][eng].get("kind") == "table"
                       for d in docs.values()):
                    continue
                tot = {"t": 0.0, "passes": 0, **{k: 0.0 for k in docs}}
                for blk in blocks(recs).values():
                    d = block_passes(blk, eng, ref)
                    if d is None or not len(d):
                        continue
                    m = (d.q == d.B) & (d.P == 0)
                    tot["t"] += float(d.t.sum())
                    tot["passes"] += len(d)
                    for k, doc in docs.items():
                        pr = price(doc["latency"][eng], d)
                        tot[k] += float(pr.sum())
                        if eng == "target":
                            plain[k] += list(pr[m])
                    if eng == "target":
                        plain["t"] += list(d.t[m])
                        plain["B"] += list(d.B[m])
                        plain["rel"] += list(d.t[m] / d.f_dec[m])   # at the reference speed
                if tot["passes"]:
                    out["by_config"].setdefault(cfg, {}).setdefault(eng, {})[str(n)] = {
                        "passes": tot["passes"], "measured_s": tot["t"],
                        **{f"ratio_{k}": tot[k] / tot["t"] for k in docs}}
        B, t, rel = (np.asarray(plain[k], float) for k in ("B", "t", "rel"))
        rows = {}
        for lo, hi in BATCHES:
            m = (B >= lo) & (B <= hi)
            if m.sum():
                rows[f"{lo}-{hi}" if hi > lo else str(lo)] = {
                    "passes": int(m.sum()), "measured_ref_s_median": float(np.median(rel[m])),
                    "mean_seqs": float(B[m].mean()),
                    **{f"ratio_{k}": _ratio(np.asarray(plain[k], float)[m], t[m]) for k in docs}}
        out["by_batch"][str(n)] = rows
    for k, doc in docs.items():
        lat = doc["latency"]["target"]
        out[f"target_{k}"] = {**{p: lat.get(p) for p in ("base_s", "per_token_s", "per_seq_s",
                                                          "per_ctx_token_s", "contention")},
                              "batch_factors": lat.get("batch_factors")}
    out["batch_curves"] = curves or None
    return out


def _cell(v: dict, min_passes: int) -> str:
    if v.get("passes", 0) < min_passes:
        return "-"
    return " / ".join(f"{v[k]:.2f}" for k in ("ratio_line", "ratio_curve") if k in v)


def render(doc: dict) -> str:
    lines = []
    for name, c in doc["corpora"].items():
        levels = sorted({int(n) for e in c["by_config"].values() for v in e.values() for n in v})
        shaped = bool(c.get("batch_curves"))
        what = ("line / line shaped by the measured curve" if shaped else "the line")
        cal = c.get("calibration_corpus", name)
        whose = ("levels 1-2 (bench_load's; levels 1-2 in sample)" if cal == name
                 else f"{cal}'s levels 1-2 (bench_load's; held out: every level)")
        lines += table_head(f"{name}: priced / measured seconds of every recorded forward pass, the "
                            f"profile of {whose} applied to the passes as they ran "
                            f"({what}; a cell needs {doc['min_passes']} passes).",
                            "config", "engine", *[f"{n} in flight" for n in levels])
        for cfg, by_eng in c["by_config"].items():
            for eng, v in by_eng.items():
                cells = [_cell(v[str(n)], doc["min_passes"]) if str(n) in v else "-" for n in levels]
                lines.append(f"| {cfg} | {eng} | " + " | ".join(cells) + " |")
        lines.append("")
        batches = [f"{lo}-{hi}" if hi > lo else str(lo) for lo, hi in BATCHES]
        lines += table_head(f"{name}: the target's plain decode passes (one position per sequence, no "
                            f"prefill) of every configuration, by sequences in the pass: priced / measured "
                            f"({what}), and the median measured pass in seconds at the profile's "
                            "reference speed.", "in flight", *[f"{b} seqs" for b in batches])
        for n, rows in c["by_batch"].items():
            cells = [_cell(rows[b], doc["min_passes"]) + f" ({rows[b]['measured_ref_s_median']:.3f})"
                     if b in rows and rows[b]["passes"] >= doc["min_passes"] else "-" for b in batches]
            lines.append(f"| {n} | " + " | ".join(cells) + " |")
        t = c["target_line"]
        lines += ["", f"The profile's target line: {t['base_s']:.3f} s a pass, "
                  f"{t['per_token_s'] + t['per_seq_s']:.4f} s per further sequence "
                  f"(a decode position {t['per_token_s']:.4f} + a sequence {t['per_seq_s']:.4f}), "
                  f"{t['per_ctx_token_s']:.2e} s per context token, contention {t['contention']:.3f}."]
        if shaped:
            bk = c["target_curve"]["batch_factors"] or []
            lines[-1] += (" Shaped by " + ", ".join(f"{r} {Path(p).name}" for r, p in c["batch_curves"].items())
                          + (": target batch factors " + ", ".join(f"{b:g}: {f:.3f}" for b, f in bk) if bk else "")
                          + ".")
        if doc.get("probe_decode_fallback"):
            lines[-1] += (" A probe that timed no plain decode pass is read from its side-by-side pass, "
                          "else its prefill (--probe-decode-fallback).")
        lines.append("")
    return "\n".join(lines)


def bench(names, curves: dict, calibrate_on: str | None = None) -> dict:
    """Every corpus of `names` priced by the profile of `calibrate_on`'s levels 1-2 (default: its
    own, or CALIBRATE_ON's)."""
    from lrsim.calib import physical

    doc = {"min_passes": MIN_PASSES, "corpora": {},
           **({"probe_decode_fallback": True} if physical.PROBE_DECODE_FALLBACK else {})}
    for name in names:
        if not load_corpus(ROOT / name):
            sys.exit(f"bench_pass_pricing: no load traces under {name}")
        cal = calibrate_on or CALIBRATE_ON.get(name)
        if cal and not calib_paths(ROOT / cal):
            sys.exit(f"bench_pass_pricing: no level 1-2 traces under {cal} to calibrate on")
        doc["corpora"][name] = corpus_doc(ROOT / name, curves, ROOT / cal if cal else None)
    return doc


def main() -> None:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", action="append",
                    help=f"a load corpus folder (repeatable; default: {', '.join(CORPORA)})")
    ap.add_argument("--calibrate-on", metavar="CORPUS", help="price every --corpus by this corpus's "
                    "levels 1-2 (held out; default: its own, or CALIBRATE_ON's)")
    ap.add_argument("--out", default="benchmarks/results/pass_pricing.json")
    ap.add_argument("--json", action="store_true", help="print the results as JSON, not Markdown")
    ap.add_argument("--target-batch-curve", metavar="PATH", help="also price with the line shaped by "
                    "this measured curve (lr calibrate --target-batch-curve)")
    ap.add_argument("--draft-batch-curve", metavar="PATH", help="the same for the draft")
    ap.add_argument("--probe-decode-fallback", action="store_true", help="read a probe that timed no "
                    "plain decode pass from its side-by-side pass, else its prefill (bench_load.py's flag)")
    a = ap.parse_args()
    if a.probe_decode_fallback and a.out == ap.get_default("out"):
        sys.exit("bench_pass_pricing: --probe-decode-fallback prices other passes than the committed "
                 f"{a.out}: give it another --out")
    from lrsim.calib import physical
    physical.PROBE_DECODE_FALLBACK = a.probe_decode_fallback
    curves = batch_curves(a, ROOT, "bench_pass_pricing")
    doc = bench(a.corpus or CORPORA, curves, a.calibrate_on)
    path = write_results(ROOT / a.out, doc, render)
    print(json.dumps(doc, indent=1) if a.json else path.with_suffix(".md").read_text())


if __name__ == "__main__":
    main()
