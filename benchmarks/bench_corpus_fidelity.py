"""Does the simulator, calibrated on some configurations, predict the ones it has not seen?

    .venv/bin/python benchmarks/bench_corpus_fidelity.py [--corpus traces/corpus] [--json]
        [--out benchmarks/results/corpus_fidelity.json]

On the real trace corpus (benchmarks/collect_corpus.py), per data set:

  in-sample        calibrate on every configuration, replay every configuration (how well one
                   physical latency model per engine can explain all of them at once);
  leave-out        calibrate on ar plus ONE lr configuration, predict every other configuration
                   (per-record latency MAPE, and the speedup over ar measured in the same run vs
                   predicted), for each choice of that lr configuration; the headline is
                   ar + lr-d2, the configuration a user would measure first;
  probe ablation   the headline leave-out without the per-record probe correction (what the
                   probe buys), and with the probe before each record only (what is known before
                   the run; the default corrects by the mean of the probes before and after);
  repeatability    how far the target's probe moved across a record (the noise floor of any
                   per-record prediction on this machine);
  cross time       calibrate on the ar + lr-d2 records of the first half of the corpus's time,
                   predict every record of the second half (other sessions, hours apart, the
                   machine in another state): the profile travels in time by the probes alone
                   (per-record probes, before-only probes, none);
  cross data set   calibrate on GSM8K (ar + lr-d2), predict AIME 2025: latency transfers across
                   data sets, acceptance and step lengths come from the replayed records.

Targets: latency MAPE under 10% for every configuration, speedup error within 0.05.
Only the records' own workload (steps, lengths, verdicts) is replayed: the timing, batching,
prefill and contention are the simulator's.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.write import write_results  # noqa: E402

from lrcore.errors import UserError  # noqa: E402
from lrsim.calib.calibrate import calibrate, read_records  # noqa: E402
from lrsim.calib.physical import config_label  # noqa: E402
from lrsim.calib.profile import Profile, validate_doc  # noqa: E402
from lrsim.calib.replay import replay  # noqa: E402

HEADLINE = ("ar", "lr-d2")
MAPE_TARGET, SPEEDUP_TARGET = 0.10, 0.05


def files(corpus: Path, dataset: str) -> list[str]:
    return sorted(str(p) for p in (corpus / dataset).glob("*.jsonl") if p.stat().st_size)


def rows(out: dict) -> dict:
    res = {}
    for cfg, e in out["configs"].items():
        sp = e["speedup"] or {}
        res[cfg] = {"records": e["records"], "mape": e["mape"], "pearson_r": e["pearson_r"],
                    "tps_meas": e["tokens_per_s"]["measured"], "tps_pred": e["tokens_per_s"]["predicted"],
                    "speedup_meas": sp.get("measured"), "speedup_pred": sp.get("predicted"),
                    "speedup_err": (sp["predicted"] - sp["measured"]) if sp else None}
    return res


def leave_out(paths, records, calib: tuple, probe: str = "both") -> dict:
    prof = Profile(validate_doc(calibrate(paths, configs=set(calib), select_placement=False)))
    rest = [r for r in records if config_label(r) not in calib]
    out = replay(prof, rest, probe=probe, baseline=[r for r in records if config_label(r) == "ar"])
    return {"calibrated_on": list(calib), "configs": rows(out), "mape_all": out["mape"],
            "fits": {k: {p: v.get(p) for p in ("base_s", "per_token_s", "prefill_per_token_s",
                                                "contention")} | {"stderr": v["fit"].get("stderr"),
                                                                  "fixed": v["fit"].get("fixed")}
                     for k, v in prof.doc["latency"].items()}}


def verdict(r: dict) -> dict:
    cfgs = r["configs"]
    mapes = [e["mape"] for e in cfgs.values()]
    errs = [abs(e["speedup_err"]) for e in cfgs.values() if e["speedup_err"] is not None]
    return {"max_mape": max(mapes) if mapes else None, "max_speedup_err": max(errs) if errs else None,
            "configs_within_mape_target": sum(m < MAPE_TARGET for m in mapes),
            "configs_within_speedup_target": sum(e <= SPEEDUP_TARGET for e in errs),
            "configs": len(cfgs)}


def probe_repeatability(records) -> dict:
    """How much the machine's speed moved across one record: |after - before| / mean of the
    target's decode probe. Per-record latency cannot be predicted better than this noise."""
    import numpy as np

    v = []
    for r in records:
        p = r.get("probe") or {}
        b = ((p.get("before") or {}).get("engines") or {}).get("target", {}).get("decode_s")
        a = ((p.get("after") or {}).get("engines") or {}).get("target", {}).get("decode_s")
        if a and b:
            v.append(abs(a - b) / ((a + b) / 2))
    return {"records": len(v), "median": float(np.median(v)) if v else None,
            "p90": float(np.percentile(v, 90)) if v else None}


def evaluate(corpus: Path, dataset: str) -> dict | None:
    paths = files(corpus, dataset)
    if not paths:
        return None
    records = [r for p in paths for r in read_records(p)]
    labels = sorted({config_label(r) for r in records})
    res = {"dataset": dataset, "records": len(records),
           "configs": {c: sum(config_label(r) == c for r in records) for c in labels},
           "problems": sorted({r["problem_id"] for r in records})}
    res["measured"] = measured(records)
    prof = Profile(validate_doc(calibrate(paths, select_placement=False)))
    res["in_sample"] = {"configs": rows(replay(prof, records)), "warnings": prof.doc.get("warnings")}
    res["leave_out"] = {}
    lr_labels = sorted({config_label(r) for r in records if r["mode"] in ("lr", "lr+sd", "lr-sync")})
    for lr in lr_labels:   # ar + one configuration with a draft engine (the draft must be fitted)
        if "ar" in labels:
            try:
                r = leave_out(paths, records, ("ar", lr))
            except UserError as e:  # e.g. no step was ever drafted there: nothing to fit the draft on
                res["leave_out"][f"ar+{lr}"] = {"calibrated_on": ["ar", lr], "skipped": str(e)}
                continue
            r["verdict"] = verdict(r)
            res["leave_out"][f"ar+{lr}"] = r
    if all(c in labels for c in HEADLINE):
        r = leave_out(paths, records, HEADLINE, probe="none")
        res["headline_without_probe"] = r | {"verdict": verdict(r)}
        r = leave_out(paths, records, HEADLINE, probe="before")
        res["headline_probe_before_only"] = r | {"verdict": verdict(r)}
    res["probe_repeatability"] = probe_repeatability(records)
    if "ar" in labels and "lr-d2" in labels:
        res["cross_time"] = cross_time(paths, records)
    return res


def _started(r: dict) -> float:
    return ((r.get("probe") or {}).get("before") or {}).get("t") or 0.0


def cross_time(paths, records) -> dict | None:
    """Calibrate on the ar + lr-d2 records collected in the first half of the corpus's time,
    predict every record collected in the second half (cross-run: same machine, other hours and
    sessions; each record is replayed with its own workload, so the problems may repeat)."""
    starts = sorted(_started(r) for r in records)
    if len(starts) < 4:
        return None
    cut = starts[len(starts) // 2]
    early = [r for r in records if _started(r) < cut]
    calib = [r for r in early if config_label(r) in HEADLINE]
    rest = [r for r in records if _started(r) >= cut]
    if not calib or not rest:
        return None
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:   # calibrate() reads files: write the selection
        f = Path(tmp) / "early.jsonl"
        f.write_text("".join(json.dumps(r) + "\n" for r in calib))
        prof = Profile(validate_doc(calibrate([str(f)], select_placement=False)))
    last = max(_started(r) for r in calib)
    gaps = [(_started(r) - last) / 3600 for r in rest]
    res = {"calibrated_on": len(calib), "predicted_records": len(rest),
           "hours_after_calibration": [round(min(gaps), 2), round(max(gaps), 2)]}
    for probe in ("both", "before", "none"):
        out = replay(prof, rest, probe=probe)
        res[probe] = {"configs": rows(out), "mape_all": out["mape"]}
        res[probe]["verdict"] = verdict(res[probe])
    return res


def measured(records) -> dict:
    """What the corpus measured per configuration: tokens/s, accuracy, acceptance, and the
    speedup over ar on the same problems (latency ratio per problem, then the mean)."""
    import numpy as np

    ar = {r["problem_id"]: r["wall_time_s"] for r in records if config_label(r) == "ar"}
    out: dict[str, dict] = {}
    for c in sorted({config_label(r) for r in records}):
        rs = [r for r in records if config_label(r) == c]
        sa = [r["step_acceptance"] for r in rs if r.get("step_acceptance")]
        sd = [r["sd"] for r in rs if r.get("sd") and r["sd"].get("drafted")]
        sp = [ar[r["problem_id"]] / r["wall_time_s"] for r in rs if r["problem_id"] in ar]
        out[c] = {"records": len(rs), "tokens_per_s": float(np.mean([r["tokens_per_s"] for r in rs])),
                  "output_tokens": float(np.mean([r["output_tokens"] for r in rs])),
                  "correct": sum(bool(r.get("correct")) for r in rs),
                  "finished": sum(r.get("finish_reason") == "eos" for r in rs),
                  "step_acceptance": (sum(a["accepted"] for a in sa) / sum(a["proposed"] for a in sa)
                                      if sa and sum(a["proposed"] for a in sa) else None),
                  "sd_acceptance": (sum(d["accepted"] for d in sd) / sum(d["drafted"] for d in sd)
                                    if sd else None),
                  "speedup_vs_ar": float(np.mean(sp)) if sp else None}
    return out


def cross_dataset(corpus: Path, src: str, dst: str) -> dict | None:
    sp, dp = files(corpus, src), files(corpus, dst)
    if not sp or not dp:
        return None
    prof = Profile(validate_doc(calibrate(sp, configs=set(HEADLINE), select_placement=False)))
    recs = [r for p in dp for r in read_records(p)]
    out = replay(prof, recs)
    return {"calibrated_on": f"{src} {'+'.join(HEADLINE)}", "predicted": dst, "configs": rows(out),
            "mape_all": out["mape"]}


def show(title: str, cfgs: dict) -> None:
    print(f"  {title}")
    print(f"    {'config':14s}{'n':>3s}{'MAPE':>7s}{'tok/s':>7s}{'pred':>7s}{'x AR':>7s}{'pred':>7s}{'err':>7s}")
    for c, e in cfgs.items():
        f = lambda x, s="{:7.2f}": s.format(x) if x is not None else "      -"  # noqa: E731
        print(f"    {c:14s}{e['records']:3d}{100 * e['mape']:6.1f}%{e['tps_meas']:7.2f}{e['tps_pred']:7.2f}"
              f"{f(e['speedup_meas'])}{f(e['speedup_pred'])}{f(e['speedup_err'], '{:+7.3f}')}")


def markdown(result: dict) -> str:
    """The tables the README quotes (benchmarks/quote.py): per data set what was measured, and
    what ar + lr-d2 predicts for the configurations it never saw; then the other checks."""
    pct = lambda x: "-" if x is None else f"{100 * x:.1f}%"  # noqa: E731
    num = lambda x, f="{:.2f}": "-" if x is None else f.format(x)  # noqa: E731
    out = []
    for ds, r in result["datasets"].items():
        out += [f"**{ds}**: {r['records']} records, {len(r['problems'])} problems", "",
                "| config | n | tok/s | x AR | right | step acceptance | SD token acceptance |",
                "|---|---|---|---|---|---|---|"]
        for c, m in r["measured"].items():
            out.append(f"| {c} | {m['records']} | {m['tokens_per_s']:.2f} | {num(m['speedup_vs_ar'])} | "
                       f"{m['correct']}/{m['records']} | {num(m['step_acceptance'])} | {num(m['sd_acceptance'])} |")
        lo = r["leave_out"].get("ar+lr-d2")
        if lo and "configs" in lo:
            v = lo["verdict"]
            out += ["", f"Calibrated on ar + lr-d2 only ({ds}): max MAPE {pct(v['max_mape'])}, "
                    f"{v['configs_within_mape_target']} of {v['configs']} configurations under "
                    f"{pct(result['targets']['mape'])}, speedup within {result['targets']['speedup_abs']} "
                    f"for {v['configs_within_speedup_target']} of {v['configs']}", "",
                    "| predicted | n | latency MAPE | speedup over AR, measured / predicted |", "|---|---|---|---|"]
            for c, e in lo["configs"].items():
                out.append(f"| {c} | {e['records']} | {pct(e['mape'])} | "
                           f"{num(e['speedup_meas'])} / {num(e['speedup_pred'])} |")
        others = [(k, x["verdict"]["max_mape"]) for k, x in r["leave_out"].items()
                  if "verdict" in x and k != "ar+lr-d2" and x["verdict"]["max_mape"] is not None]
        lines = []
        if others:
            lines.append(f"other ar + one configuration choices: max MAPE "
                         f"{pct(min(m for _, m in others))}-{pct(max(m for _, m in others))}")
        for key, what in (("headline_probe_before_only", "probe before each record only"),
                          ("headline_without_probe", "no probe correction")):
            if key in r:
                lines.append(f"ar + lr-d2, {what}: max MAPE {pct(r[key]['verdict']['max_mape'])}")
        ct = r.get("cross_time")
        if ct:
            lines.append(f"cross time: {ct['calibrated_on']} ar + lr-d2 records of the first half -> "
                         f"{ct['predicted_records']} later records: MAPE {pct(ct['both']['mape_all'])} "
                         f"(probe before only {pct(ct['before']['mape_all'])}, none "
                         f"{pct(ct['none']['mape_all'])}); worst configuration {pct(ct['both']['verdict']['max_mape'])}")
        pr = r["probe_repeatability"]
        if pr["median"] is not None:
            lines.append(f"target probe moved across a record: median {pct(pr['median'])}, P90 {pct(pr['p90'])}")
        out += [""] + [f"- {x}" for x in lines] + [""]
    c = result.get("cross_dataset")
    if c:
        v = verdict(c) if "configs" in c else None
        out += [f"Cross data set ({c['calibrated_on']} -> {c['predicted']}): all records "
                f"{pct(c.get('mape_all'))}, worst configuration {pct(v['max_mape']) if v else '-'}", ""]
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", default=str(ROOT / "traces/corpus"))
    ap.add_argument("--datasets", default="gsm8k,aime2025")
    ap.add_argument("--out", default=str(ROOT / "benchmarks/results/corpus_fidelity.json"))
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    t0 = time.perf_counter()
    corpus = Path(a.corpus)
    result = {"corpus": a.corpus, "targets": {"mape": MAPE_TARGET, "speedup_abs": SPEEDUP_TARGET},
              "datasets": {}}
    for ds in a.datasets.split(","):
        r = evaluate(corpus, ds)
        if r is not None:
            result["datasets"][ds] = r
    sets = list(result["datasets"])
    if len(sets) > 1:
        result["cross_dataset"] = cross_dataset(corpus, sets[0], sets[1])
    result["seconds"] = round(time.perf_counter() - t0, 1)
    if a.out:
        write_results(a.out, result, markdown)
    if a.json:
        print(json.dumps(result))
        return
    for ds, r in result["datasets"].items():
        print(f"{ds}: {r['records']} records, {len(r['problems'])} problems, configs {r['configs']}")
        print(f"    {'config':14s}{'n':>3s}{'tok/s':>7s}{'x AR':>7s}{'right':>7s}{'eos':>5s}{'step a':>8s}{'SD a':>6s}")
        for c, m in r["measured"].items():
            f = lambda x, s="{:7.2f}": s.format(x) if x is not None else "      -"  # noqa: E731
            print(f"    {c:14s}{m['records']:3d}{m['tokens_per_s']:7.2f}{f(m['speedup_vs_ar'])}"
                  f"{m['correct']:4d}/{m['records']:<2d}{m['finished']:5d}{f(m['step_acceptance'], '{:8.2f}')}"
                  f"{f(m['sd_acceptance'], '{:6.2f}')}")
        show("in-sample (calibrated on every configuration)", r["in_sample"]["configs"])
        for key, lo in r["leave_out"].items():
            if "skipped" in lo:
                print(f"  calibrated on {key} only: skipped ({lo['skipped']})")
                continue
            v = lo["verdict"]
            show(f"calibrated on {key} only: max MAPE {100 * (v['max_mape'] or 0):.1f}%, "
                 f"max |speedup err| {v['max_speedup_err'] or 0:.3f}", lo["configs"])
        pr = r["probe_repeatability"]
        if pr["median"] is not None:
            print(f"  machine speed moved across a record: median {100 * pr['median']:.1f}%, "
                  f"P90 {100 * pr['p90']:.1f}% (target probe before vs after)")
        if "headline_probe_before_only" in r:
            v = r["headline_probe_before_only"]["verdict"]
            show(f"calibrated on ar+lr-d2, probe before only: max MAPE {100 * (v['max_mape'] or 0):.1f}%",
                 r["headline_probe_before_only"]["configs"])
        if "headline_without_probe" in r:
            v = r["headline_without_probe"]["verdict"]
            show(f"calibrated on ar+lr-d2, no probe correction: max MAPE {100 * (v['max_mape'] or 0):.1f}%",
                 r["headline_without_probe"]["configs"])
        ct = r.get("cross_time")
        if ct:
            for probe in ("both", "before", "none"):
                v = ct[probe]["verdict"]
                show(f"cross time: {ct['calibrated_on']} ar+lr-d2 records of the first half -> "
                     f"{ct['predicted_records']} later ({ct['hours_after_calibration'][0]:+.1f} to "
                     f"{ct['hours_after_calibration'][1]:+.1f} h), probe {probe}: "
                     f"all {100 * ct[probe]['mape_all']:.1f}%, max {100 * (v['max_mape'] or 0):.1f}%",
                     ct[probe]["configs"])
    if result.get("cross_dataset"):
        c = result["cross_dataset"]
        show(f"cross data set: {c['calibrated_on']} -> {c['predicted']}", c["configs"])
    print(f"({result['seconds']} s; written to {a.out})")


if __name__ == "__main__":
    main()
