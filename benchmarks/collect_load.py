"""(Re)collect the load corpus in traces/load/ (resumable; hours of engine time).

    .venv/bin/python benchmarks/collect_load.py                   # everything still missing
    .venv/bin/python benchmarks/collect_load.py --stop-after 50m  # a session's share, then stop
    .venv/bin/python benchmarks/collect_load.py --dry-run         # the plan and what is left
    .venv/bin/python benchmarks/collect_load.py --set adaptive    # lr-adaptive vs ar and lr-d2
    .venv/bin/python benchmarks/collect_load.py --set transfer    # depths the load corpus lacks
    .venv/bin/python benchmarks/collect_load.py --set open        # Poisson arrivals, ar and lr-d2-emb

lrreal/load_corpus.py's configurations (ar on the target's core, ar on both cores, sd, lr depth 2
with exact matching and with the embedding verifier, lr+sd depth 2 with the embedding verifier)
at 1, 2, 4 and 8 GSM8K test problems in flight, round by round: round r of level N
is problems r*N .. r*N+N-1. Run it alone: no test suite or other engine job beside it. Kill it
whenever; rerunning continues where it stopped (each record is fsynced as it finishes). A line
per block goes to stdout and to <out>/collection.log.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.collect_corpus import chosen_configs, duration, run_logged  # noqa: E402

# ~1.5-3 min a block on one core (a round: four levels x six configurations, ~55 min); at 96 tokens
# (traces/load-pilot-96/) no configuration beat AR even alone: too few steps to speculate on
MAX_TOKENS = 192
# --set: (configurations in lrreal/load_corpus.py, default trace folder, default levels)
SETS = {"load": ("CONFIGS", "traces/load", "1,2,4,8"),
        "adaptive": ("ADAPTIVE_CONFIGS", "traces/load-adaptive", "1,2,4"),
        "transfer": ("TRANSFER_CONFIGS", "traces/load-transfer", "1,3,6"),
        "open": ("OPEN_CONFIGS", "traces/load-open", "8")}
# --set open: blocks of 8 arriving at 1/40 s, about 3 in flight on average where AR takes ~110 s a
# request (this machine's slower days, traces/load-transfer rounds 5-8), near 1 on a faster one
OPEN_RATE = 0.025


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", choices=tuple(SETS), default="load",
                    help="load: the load corpus (traces/load); adaptive: lr-adaptive beside ar and "
                         "lr-d2 at 1-4 in flight (traces/load-adaptive, benchmarks/bench_adaptive_real.py); "
                         "transfer: lr at depths 1 and 3 and lr+sd at depth 3 beside ar "
                         "(traces/load-transfer, benchmarks/bench_load.py --load); "
                         "open: ar and lr-d2-emb, a block of N arriving by a seeded Poisson process "
                         "(traces/load-open, benchmarks/bench_open_loop.py)")
    ap.add_argument("--out", default=None, help="default traces/load, traces/load-adaptive, "
                                                "traces/load-transfer or traces/load-open (--set)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--levels", default=None,
                    help="requests in flight, comma-separated (default 1,2,4,8; --set adaptive: 1,2,4; "
                         "transfer: 1,3,6; open: 8, the requests of a block)")
    ap.add_argument("--configs", default=None, help="comma-separated labels (default: all)")
    ap.add_argument("--request-rate", type=float, default=None,
                    help=f"--set open: requests/s of each block's Poisson arrivals (default {OPEN_RATE})")
    ap.add_argument("--max-tokens", type=int, default=MAX_TOKENS)
    ap.add_argument("--first-problem", type=int, default=0,
                    help="the GSM8K row of round 0 (a held-out corpus: past the rows another used)")
    ap.add_argument("--stop-after", type=duration, default=None,
                    help="stop starting blocks after this long (but a round's other "
                         "configurations at the same level still run: they are compared)")
    ap.add_argument("--neutral-prior", action="store_true",
                    help="--set adaptive: start lr-adaptive from the neutral prior, not the "
                         "estimates of the corpus's last lr-adaptive record")
    ap.add_argument("--cold-cache", action="store_true",
                    help="empty the engines' prefix caches before each block, so no block finds "
                         "the contexts an earlier configuration left for the same problem "
                         "(recorded as run.flags.cold_cache; resume a corpus the way it began)")
    ap.add_argument("--max-num-seqs", type=int, default=32,
                    help="each engine's sequences per pass (lr collect --max-num-seqs; recorded in "
                         "run.flags, and a resume keeps the value a corpus began with)")
    ap.add_argument("--dry-run", action="store_true")
    a = ap.parse_args()

    from lrreal.collect import CollectSpec
    from lrreal import load_corpus
    from lrreal.load_corpus import collect_load, load_plan, pending

    adaptive = a.set == "adaptive"
    configs_name, default_out, default_levels = SETS[a.set]
    configs = getattr(load_corpus, configs_name)
    a.out = a.out or default_out
    a.levels = a.levels or default_levels
    try:
        levels = tuple(int(x) for x in a.levels.split(","))
        if not levels or min(levels) < 1 or a.rounds < 1 or a.max_tokens < 1 or a.first_problem < 0:
            raise ValueError
    except ValueError:
        sys.exit("collect_load: --levels, --rounds and --max-tokens take positive integers, "
                 "--first-problem a non-negative one")
    if a.request_rate is not None and a.set != "open":
        sys.exit("collect_load: --request-rate is for --set open")
    rate = (OPEN_RATE if a.request_rate is None else a.request_rate) if a.set == "open" else None
    if rate is not None and not 0 < rate < 1e6:
        sys.exit(f"collect_load: --request-rate {rate}: use a positive number of requests/s")
    jobs = load_plan(levels, a.rounds, chosen_configs("collect_load", a.configs, configs),
                     first=a.first_problem, rate=rate)
    out = Path(a.out)
    if a.dry_run:
        from lrcore.errors import UserError
        seen: dict = {}
        try:
            lefts = [len(pending(j, out, seen)) for j in jobs]
        except UserError as e:   # the exit code run_logged gives the same error in a real run
            print(f"collect_load: error: {e}", file=sys.stderr)
            sys.exit(getattr(e, "exit_code", 2))
        for j, left in zip(jobs, lefts):
            print(f"{'todo' if left else 'done'} {j.path(out).parent.name} r{j.round} {j.config.label} "
                  f"({j.concurrency - left}/{j.concurrency})")
        return
    # --set adaptive: lr-adaptive starts from the estimates its last record ended with
    # (lrreal/scheduler/adaptive_prior.py), as a serving process would keep them
    prior = None if not adaptive or a.neutral_prior else str(out)
    base = CollectSpec(max_tokens=a.max_tokens, target_cores="0", draft_cores="1",
                       adaptive_prior=prior, max_num_seqs=a.max_num_seqs)
    run_logged("collect_load", out,
               lambda log: collect_load(jobs, out, base, log=log, stop_after_s=a.stop_after,
                                        cold_cache=a.cold_cache))

if __name__ == "__main__":
    main()
