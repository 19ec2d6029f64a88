"""Does a profile from the corpus predict a run made at another time, on a machine in another
state? (profiles that travel; target: cross-run MAPE under 15% after rescaling)

    .venv/bin/python benchmarks/bench_cross_run.py [--load 0.5] [--problems 8,9]
        [--out benchmarks/results/cross_run.json]

1. calibrate a profile on the shipped corpus (traces/corpus/gsm8k, every configuration);
2. optionally start a background load (`--load F`: a process streaming memory for a fraction F of
   each 100 ms on every core, niced: another machine, or the same one busy with other work);
3. `lr calibrate probe`: today's machine speed, and the profile rescaled to it;
4. collect ar and lr-d2 on GSM8K problems the corpus does not hold (interleaved, probes on);
5. predict every new record three ways: the corpus profile as it is; the profile rescaled by the
   probe of step 3 (what a user does: probe once, then plan); the profile corrected by each
   record's own probe taken just before it. Per-record latency MAPE for each.

Also, with no engine at all (`--set-aside-only`): the corpus's set-aside records (collected while
test suites ran beside them, a machine in another state) predicted by the clean corpus's profile,
with and without their own probes. Run alone: no test suite or other engine job beside it.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

LOAD_SCRIPT = """
import time, numpy as np, sys
duty = float(sys.argv[1]); a = np.ones(8 << 20); b = np.empty_like(a)
while True:
    t0 = time.monotonic()
    while time.monotonic() - t0 < 0.1 * duty:
        np.copyto(b, a)
    time.sleep(max(0.0, 0.1 * (1 - duty)))
"""


def predict(prof, recs, probe: str) -> dict:
    from lrsim.calib.physical import config_label
    from lrsim.calib.replay import predict_record

    by: dict[str, list] = {}
    for r in recs:
        p = predict_record(prof, r, probe=probe)["latency_s"]
        by.setdefault(config_label(r), []).append(abs(p - r["wall_time_s"]) / r["wall_time_s"])
    allv = [x for v in by.values() for x in v]
    return {"mape": sum(allv) / len(allv), "by_config": {k: sum(v) / len(v) for k, v in sorted(by.items())},
            "records": len(allv)}


def set_aside_check(corpus: Path, prof) -> dict | None:
    from lrsim.calib.calibrate import read_records

    files = sorted((corpus / "gsm8k" / "set-aside").glob("*.jsonl"))
    recs = [r for f in files for r in read_records(f)]
    if not recs:
        return None
    return {"records": len(recs), "reason": recs[0].get("set_aside_reason"),
            "as_is": predict(prof, recs, "none"), "own_probe_before": predict(prof, recs, "before"),
            "own_probe_both": predict(prof, recs, "both")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", default=str(ROOT / "traces/corpus"))
    ap.add_argument("--load", type=float, default=0.0, help="background load duty cycle per core (0-1)")
    ap.add_argument("--problems", default="8,9", help="GSM8K problems to run (not in the corpus)")
    ap.add_argument("--work", default=str(ROOT / "out/cross_run"), help="where the new run's traces go")
    ap.add_argument("--out", default=str(ROOT / "benchmarks/results/cross_run.json"))
    ap.add_argument("--set-aside-only", action="store_true")
    a = ap.parse_args()

    from lrsim.calib.calibrate import calibrate, read_records
    from lrsim.calib.profile import Profile, load_profile, save_profile, validate_doc

    corpus = Path(a.corpus)
    paths = sorted(str(p) for p in (corpus / "gsm8k").glob("*.jsonl") if p.stat().st_size)
    prof = Profile(validate_doc(calibrate(paths, select_placement=False)))
    result = {"corpus_records": sum(len(read_records(p)) for p in paths),
              "set_aside": set_aside_check(corpus, prof), "load": a.load}
    if not a.set_aside_only:
        work = Path(a.work)
        work.mkdir(parents=True, exist_ok=True)
        pfile = save_profile(prof, work / "corpus-profile.json")
        loaders = []
        if a.load > 0:
            loaders = [subprocess.Popen(["nice", "-n", "5", sys.executable, "-c", LOAD_SCRIPT, str(a.load)])
                       for _ in range(os.cpu_count() or 1)]
            time.sleep(2)
        try:
            t0 = time.time()
            r = subprocess.run([sys.executable, str(ROOT / "cli.py"), "calibrate", "probe", "--profile",
                                str(pfile), "-o", str(work / "today.json"), "--json"],
                               capture_output=True, text=True, cwd=ROOT)
            if r.returncode:
                sys.exit(f"lr calibrate probe failed: {r.stderr[-1000:]}")
            result["probe"] = json.loads(r.stdout)
            result["probe_s"] = round(time.time() - t0, 1)
            from lrreal.collect import CollectSpec
            from lrreal.corpus import BY_LABEL, Job, collect_corpus

            jobs = [Job("gsm8k", int(i), BY_LABEL[c], 384) for i in a.problems.split(",")
                    for c in ("ar", "lr-d2")]
            collect_corpus(jobs, work, CollectSpec(target_cores="0", draft_cores="1"))
        finally:
            for p in loaders:
                p.terminate()
        today = load_profile(work / "today.json")
        recs = [r for f in sorted((work / "gsm8k").glob("*.jsonl")) for r in read_records(f)]
        result["new_run"] = {"records": len(recs), "problems": a.problems,
                             "corpus_profile_as_is": predict(prof, recs, "none"),
                             "rescaled_by_lr_calibrate_probe": predict(today, recs, "none"),
                             "corrected_by_each_records_probe": predict(prof, recs, "before"),
                             "other_cpu_s_per_s": [round(r["probe"]["during"]["other_cpu_s"] / r["probe"]["during"]["wall_s"], 3)
                                                   for r in recs if (r.get("probe") or {}).get("during")]}
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
