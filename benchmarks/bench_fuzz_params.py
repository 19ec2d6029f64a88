"""Long fuzzing run of the theory/simulator parameter validation: the properties of
tests/reliability/test_fuzz_params.py with a large budget (the CI run uses a fixed seed and
~1.6k inputs; this one ~40k inputs with a recorded random seed, a few minutes on 2 cores).

    .venv/bin/python benchmarks/bench_fuzz_params.py [--scale 25] [--seed N] [--only NAME]

Prints inputs tried, failures found and time per property; writes
benchmarks/results/fuzz_params.json and its table fuzz_params.md (quoted in docs/reliability.md;
`--render` rewrites the .md from the .json alone). Exit code 1 when any property failed.
"""
from __future__ import annotations

import argparse
import importlib
import platform
import random
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.write import parse_or_render, write_results  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "fuzz_params.json"
# Examples per property = CI examples x scale x this weight (the CLI properties cost 10-500 ms
# per input, the library ones well under 1 ms).
WEIGHT = {"theory.speedup_point": 1.0, "theory.optimize": 1.0, "cli.theory-speedup": 0.2,
          "cli.theory-optimize": 0.4, "sim.build": 1.5, "cli.simulate": 0.2}


def render(doc: dict) -> str:
    """fuzz_params.json as the Markdown table docs/reliability.md quotes."""
    lines = [f"`benchmarks/bench_fuzz_params.py` (seed {doc['seed']}, {doc['scale']:g}x the CI example counts, "
             f"{doc['when'][:10]}):", "", "| property | inputs | failures | seconds |", "|---|---|---|---|"]
    for r in [*doc["properties"], {"property": "total", **doc["total"]}]:
        lines.append(f"| {r['property']} | {r['inputs_tried']:,} | {r['failures']} | {r['seconds']:.1f} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=25.0, help="multiplier of the CI example counts")
    ap.add_argument("--seed", type=int, default=None, help="hypothesis seed (default: random, recorded)")
    ap.add_argument("--only", action="append", help="run only this property (repeatable)")
    ap.add_argument("--out", type=Path, default=OUT)
    args = parse_or_render(ap, render, "fuzzing")
    if args is None:
        return 0
    sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "reliability")]
    from hypothesis import seed as hseed

    fz = importlib.import_module("test_fuzz_params")
    run_seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    rows, t_all = [], time.perf_counter()
    for name, (_, _, ci_examples) in fz.PROPERTIES.items():
        if args.only and name not in args.only:
            continue
        n = max(1, int(ci_examples * args.scale * WEIGHT.get(name, 1.0)))
        test = hseed(run_seed)(fz.hypothesis_test(name, n, derandomize=False))
        before, t0 = fz.TRIED[name], time.perf_counter()
        failure = None
        try:
            test()
        except Exception as e:  # a property failed: hypothesis has shrunk it to a minimal example
            failure = "".join(traceback.format_exception_only(type(e), e)).strip()
            notes = getattr(e, "__notes__", [])
            failure += ("\n" + "\n".join(notes)) if notes else ""
        rows.append({"property": name, "max_examples": n, "inputs_tried": fz.TRIED[name] - before,
                     "failures": int(failure is not None), "failure": failure,
                     "seconds": round(time.perf_counter() - t0, 2)})
        r = rows[-1]
        print(f"{name:22s} {r['inputs_tried']:>7d} inputs {r['failures']:>2d} failures "
              f"{r['seconds']:>8.1f} s" + (f"\n    {failure}" if failure else ""), flush=True)
    total = {"inputs_tried": sum(r["inputs_tried"] for r in rows),
             "failures": sum(r["failures"] for r in rows),
             "seconds": round(time.perf_counter() - t_all, 1)}
    print(f"{'total':22s} {total['inputs_tried']:>7d} inputs {total['failures']:>2d} failures "
          f"{total['seconds']:>8.1f} s")
    doc = {"benchmark": "bench_fuzz_params", "seed": run_seed, "scale": args.scale,
           "python": platform.python_version(), "machine": platform.machine(),
           "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "properties": rows, "total": total}
    write_results(args.out, doc, render)
    print(f"wrote {args.out}")
    return 1 if total["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
