"""Long fuzzing run of the file readers (trace JSONL, scenario TOML, profile JSON, data sets).

The same inputs and properties as tests/reliability/test_fuzz_files.py, with a large budget and
a chosen seed. Unlike the test, a failing input does not stop the run: every input whose reader
raised anything but `UserError` naming the file is counted, and failures are grouped by
(exception type, innermost toolkit frame) so one bug counts once however often it is hit.

    python benchmarks/bench_fuzz_files.py                   # 6000 inputs per reader, seed 0
    python benchmarks/bench_fuzz_files.py --examples 500 --seed 3

Prints a table and writes benchmarks/results/fuzz_files.json and its table fuzz_files.md (quoted
in docs/reliability.md); `--render` rewrites the .md from the .json alone.
"""
from __future__ import annotations

import argparse
import platform
import sys
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests" / "reliability")]

import hypothesis  # noqa: E402
from hypothesis import HealthCheck, given, seed, settings  # noqa: E402

import test_fuzz_files as fuzz  # noqa: E402  (the strategies and checks of the CI test)
from benchmarks.write import parse_or_render, write_results  # noqa: E402

RESULTS = REPO / "benchmarks" / "results" / "fuzz_files.json"


def _signature(exc: BaseException) -> str:
    """Exception type + the innermost frame inside the toolkit (not the test, not a library)."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if str(REPO) in f.filename and "/tests/" not in f.filename and "/.venv/" not in f.filename]
    where = f"{Path(frames[-1].filename).relative_to(REPO)}:{frames[-1].lineno}" if frames else "?"
    return f"{type(exc).__name__} at {where}"


def fuzz_one(kind: str, strategy, examples: int, run_seed: int) -> dict:
    check = fuzz.CHECKS[kind]
    stats = {"inputs": 0, "ok": 0, "user_errors": 0, "failing_inputs": 0}
    failures: dict[str, dict] = {}

    @seed(run_seed)
    @settings(max_examples=examples, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def prop(data):
        stats["inputs"] += 1
        try:
            outcome = check(data)
        except Exception as e:  # noqa: BLE001 - counting them is the point
            stats["failing_inputs"] += 1
            sig = _signature(e)
            f = failures.setdefault(sig, {"count": 0, "message": str(e)[:300],
                                          "example": data[:300].decode("utf-8", "replace")})
            f["count"] += 1
            return
        stats["ok" if outcome == "ok" else "user_errors"] += 1

    t0 = time.perf_counter()
    prop()
    stats["seconds"] = round(time.perf_counter() - t0, 1)
    stats["distinct_failures"] = len(failures)
    stats["failures"] = failures
    return stats


def render(result: dict) -> str:
    """fuzz_files.json as the Markdown table docs/reliability.md quotes."""
    lines = [f"`benchmarks/bench_fuzz_files.py` (seed {result['seed']}, {result['examples_per_reader']:,} inputs "
             f"per reader, hypothesis {result['hypothesis']}, {result['date'][:10]}):", "",
             "| reader | inputs | loaded | one-line error | failing inputs | seconds |", "|---|---|---|---|---|---|"]
    for kind, r in [*result["per_reader"].items(), ("total", result["total"])]:
        lines.append(f"| {kind} | {r['inputs']:,} | {r['ok']:,} | {r['user_errors']:,} | {r['failing_inputs']} "
                     f"({r['distinct_failures']} distinct) | {r['seconds']:.1f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", type=int, default=6000, help="inputs per reader")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--kinds", default="trace,scenario,profile,dataset")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = parse_or_render(ap, render, "fuzzing")
    if args is None:
        return

    strategies = fuzz.strategies(fuzz._profile_base())
    per_kind = {}
    for kind in args.kinds.split(","):
        per_kind[kind] = r = fuzz_one(kind, strategies[kind], args.examples, args.seed)
        print(f"{kind:9s} {r['inputs']:7d} inputs  {r['ok']:6d} loaded  {r['user_errors']:6d} "
              f"UserError  {r['failing_inputs']:5d} failing ({r['distinct_failures']} distinct)  "
              f"{r['seconds']:7.1f} s", flush=True)
        for sig, f in r["failures"].items():
            print(f"    {f['count']:5d} x {sig}: {f['message'][:160]}")
    total = {k: sum(r[k] for r in per_kind.values())
             for k in ("inputs", "ok", "user_errors", "failing_inputs", "distinct_failures", "seconds")}
    print(f"{'total':9s} {total['inputs']:7d} inputs  {total['ok']:6d} loaded  {total['user_errors']:6d} "
          f"UserError  {total['failing_inputs']:5d} failing ({total['distinct_failures']} distinct)  "
          f"{total['seconds']:7.1f} s")
    result = {"benchmark": "fuzz_files", "seed": args.seed, "examples_per_reader": args.examples,
              "hypothesis": hypothesis.__version__, "python": platform.python_version(),
              "machine": platform.machine(), "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "total": total, "per_reader": per_kind}
    write_results(args.out, result, render)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
