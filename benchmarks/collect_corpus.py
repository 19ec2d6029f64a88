"""(Re)collect the real trace corpus in traces/corpus/ (resumable; hours of engine time).

    .venv/bin/python benchmarks/collect_corpus.py                  # everything still missing
    .venv/bin/python benchmarks/collect_corpus.py --stop-after 3h  # a session's share, then stop
    .venv/bin/python benchmarks/collect_corpus.py --dry-run        # the plan and what is left

Every configuration of lrreal/corpus.py (ar, sd, lr depth 1/2/3, lr depth 2 width 2, lr-sync,
lr+sd, and lr / lr+sd with the embedding verifier) on GSM8K test problems 0-7 and AIME 2025
problems 0-3 (budgets 384 and 256 tokens), one record per (problem, configuration), interleaved problem by
problem, with a machine-speed probe around every record. Run it alone: no test suite or other
engine job beside it (the probe shows when something else ran). Kill it whenever; rerunning
continues where it stopped (each record is fsynced before the next starts). A line per record
goes to stdout and to <out>/collection.log.
"""
from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# name:problems:max_tokens. GSM8K answers of the 1.5B target run to ~270 tokens (problem 0 needs
# 265), so 384 lets them finish and accuracy means something; AIME answers never finish in a
# CPU-affordable budget, and are there for their lower step acceptance.
DATASETS = "gsm8k:8:384,aime2025:4:256"


def duration(text: str) -> float:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([smh]?)", text.strip())
    if not m:
        raise argparse.ArgumentTypeError(f"{text!r}: use seconds or a number with s/m/h (e.g. 3h)")
    return float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[m.group(2)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="traces/corpus")
    ap.add_argument("--datasets", default=DATASETS,
                    help="name:count[:max_tokens],... (problems 0..count-1)")
    ap.add_argument("--configs", default=None, help="comma-separated labels (default: all)")
    ap.add_argument("--max-tokens", type=int, default=256, help="budget where --datasets names none")
    ap.add_argument("--stop-after", type=duration, default=None, help="stop starting records after this long")
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--set-aside-disturbed", type=float, metavar="FRACTION", default=None,
                    help="first move records during which other processes used more than this "
                         "fraction of a core (probe.during) to <dataset>/set-aside/, to be recollected")
    ap.add_argument("--set-aside-before", metavar="UNIX_TIME", type=float, default=None,
                    help="first move records whose first probe is older than this (with --reason)")
    ap.add_argument("--reason", default="", help="why records are set aside (kept in each record)")
    a = ap.parse_args()

    from lrreal.collect import CollectSpec
    from lrreal.corpus import CONFIGS, collect_corpus, corpus_plan, pending

    try:
        datasets = [(f[0], *map(int, f[1:])) for f in (x.split(":") for x in a.datasets.split(","))]
        if any(len(d) not in (2, 3) or min(d[1:]) < 1 for d in datasets):
            raise ValueError
    except ValueError:
        sys.exit(f"collect_corpus: --datasets {a.datasets!r}: use name:count[:max_tokens],...")
    jobs = corpus_plan(datasets, chosen_configs("collect_corpus", a.configs, CONFIGS))
    out = Path(a.out)
    if a.set_aside_disturbed is not None or a.set_aside_before is not None:
        from lrreal.corpus import disturbed, set_aside

        def pick(r):
            if a.set_aside_disturbed is not None and disturbed(r, a.set_aside_disturbed):
                return True
            t = ((r.get("probe") or {}).get("before") or {}).get("t")
            return a.set_aside_before is not None and t is not None and t < a.set_aside_before
        why = a.reason or (f"other processes used more than {a.set_aside_disturbed:.0%} of a core"
                           if a.set_aside_disturbed is not None else "set aside by time")
        if a.dry_run:
            from lrcore.traces import read_traces
            n = sum(pick(r) for f in out.glob("*/*.jsonl") for r in read_traces(f))
            print(f"would set aside {n} record(s): {why}")
        else:
            print(f"set aside {set_aside(out, pick, why)} record(s): {why}")
    if a.dry_run:
        left = pending(jobs, out)
        for j in jobs:
            print(f"{'todo' if j in left else 'done'} {j.dataset}/{j.index} {j.config.label}")
        print(f"{len(jobs) - len(left)} of {len(jobs)} recorded")
        return
    # judge_timing: the corpus began before eager judging existed; its files keep one setting
    base = CollectSpec(max_tokens=a.max_tokens, target_cores="0", draft_cores="1",
                       judge_timing="deferred")
    run_logged("collect_corpus", out,
               lambda log: collect_corpus(jobs, out, base, log=log, stop_after_s=a.stop_after))


def chosen_configs(name: str, labels: str | None, configs: tuple) -> tuple:
    """--configs: the configurations its comma-separated labels name, in that order, or all of
    `configs` without it; an unknown label ends the script with one line."""
    if not labels:
        return configs
    by_label = {c.label: c for c in configs}
    bad = [c for c in labels.split(",") if c not in by_label]
    if bad:
        sys.exit(f"{name}: unknown config(s) {bad}; known: {', '.join(by_label)}")
    return tuple(by_label[c] for c in labels.split(","))


def run_logged(name: str, out: Path, collect) -> None:
    """Run `collect(log)` (returns records written) with every line to stdout and to
    <out>/collection.log; a UserError or an interrupt ends as one logged line and its exit code."""
    from lrcore.errors import UserError

    out.mkdir(parents=True, exist_ok=True)
    with open(out / "collection.log", "a", buffering=1) as logf:
        def log(msg: str) -> None:
            print(msg, flush=True)
            logf.write(msg + "\n")

        log(f"# {time.strftime('%Y-%m-%d %H:%M:%S')} {name} {' '.join(sys.argv[1:])}")
        try:
            n = collect(log)
        except UserError as e:
            log(f"{name}: error: {e}")
            sys.exit(getattr(e, "exit_code", 2))
        except KeyboardInterrupt as e:
            log(f"{name}: interrupted ({e!r}); records so far are kept; rerun to continue")
            sys.exit(130)
        log(f"# {time.strftime('%Y-%m-%d %H:%M:%S')} wrote {n} record(s)")

if __name__ == "__main__":
    main()
