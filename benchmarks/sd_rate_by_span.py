"""Token-level SD's tokens per target pass by kind of span, measured in lr+sd's real records: where
the replay, which gives every target job of a record one rate (its window's), puts the fast
rate on the wrong spans.

    .venv/bin/python benchmarks/sd_rate_by_span.py [--corpus traces/load-cold-epyc-f25m17-b36,...]
        [--out benchmarks/results/sd_rate_by_span.json]

Each target span of a record is one engine request (lrreal's LR scheduler); its decode passes are
the engine's passes from its prefilling one to its end (lrsim/sim/traces.span_decodes, the rule
of own_tokens_per_pass), and its rate is its tokens over them, the prefilling pass and the one
token it samples left out. Kinds: `first` (the committed target step right after the prompt),
`committed` (the other steps the target wrote: the committed path where a draft was rejected),
`verified` (the target's span of a step whose draft was judged), `off the path` (cancelled or
discarded spans). `all`: every span, about the rate the replay gives every job. Reads the
traces only; seconds.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.write import write_results  # noqa: E402
from lrsim.calib.calibrate import read_records  # noqa: E402
from lrsim.sim.traces import span_decodes  # noqa: E402

KINDS = ("first", "committed", "verified", "off the path")
CORPORA = ("traces/load-cold-epyc-f25m17-3", "traces/load-cold-epyc-f25m17-t48",      # an AMD EPYC
           "traces/load-cold-epyc-f25m17-b36", "traces/load-cold-epyc-f25m17-b12",
           "traces/load-f6m207", "traces/load-f6m207-36")                                  # an Intel Xeon


def rates(records: list[dict]) -> dict:
    """{kind: {spans, tokens, passes, rate}} over the records' spans of more than one pass."""
    out = {k: [0, 0, 0] for k in (*KINDS, "all")}
    for rec in records:
        for kind, n, m in span_decodes(rec):
            if m:
                for k in (kind, "all"):
                    out[k][0] += 1
                    out[k][1] += n
                    out[k][2] += m
    return {k: {"spans": c, "tokens": t, "passes": p, "rate": t / p if p else None} for k, (c, t, p) in out.items()}


def bench(corpora: list[str]) -> dict:
    doc = {"corpora": {}}
    for corpus in corpora:
        by = {}
        for f in sorted((ROOT / corpus / "gsm8k").glob("c*/lr+sd*.jsonl"), key=lambda f: int(f.parent.name[1:])):
            recs = [r for r in read_records(f) if r.get("sd")]
            if recs:
                by.setdefault(f.parent.name[1:], {})[f.stem] = rates(recs)
        if not by:
            sys.exit(f"sd_rate_by_span: no lr+sd records with SD counters under {corpus}")
        doc["corpora"][corpus] = by
    return doc


def render(doc: dict) -> str:
    f = lambda c: "-" if c["rate"] is None else f"{c['rate']:.2f} ({c['spans']})"  # noqa: E731
    lines = ["lr+sd's real target spans: tokens per decode pass by kind of span (spans of more than one "
             "pass, in brackets), per corpus, level in flight and configuration. first: the committed "
             "step after the prompt; committed: the other steps the target wrote; verified: its span of "
             "a judged draft's step; off the path: cancelled and discarded spans; all: every span (about "
             "the one rate the replay gives each record's jobs).", "",
             "| corpus | in flight | config | first | committed | verified | off the path | all |",
             "|---|---|---|---|---|---|---|---|"]
    for corpus, by in doc["corpora"].items():
        for n, cfgs in by.items():
            for cfg, r in cfgs.items():
                lines.append(f"| {corpus.removeprefix('traces/')} | {n} | {cfg} | "
                             + " | ".join(f(r[k]) for k in (*KINDS, "all")) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default=",".join(CORPORA), help="comma-separated load corpora")
    ap.add_argument("--out", default="benchmarks/results/sd_rate_by_span.json")
    a = ap.parse_args()
    corpora = [c.strip() for c in a.corpus.split(",") if c.strip()]
    if missing := [c for c in corpora if not (ROOT / c).is_dir()]:
        sys.exit(f"sd_rate_by_span: no such corpus: {', '.join(missing)}")
    doc = bench(corpora)
    write_results(ROOT / a.out, doc, render)
    print(render(doc), end="")


if __name__ == "__main__":
    main()
