"""The real-engine part of `make test` (pytest -m "slow or real": vLLM engines, the packaged
models, the reliability suite's kill and fault runs), timed test by test on this machine.

    .venv/bin/python benchmarks/bench_real_tests.py [--out benchmarks/results/real_tests.json]
    .venv/bin/python benchmarks/bench_real_tests.py --render

CI runs the whole suite in 90 minutes on 2 cores; on a slow machine these ~30 tests are most of
it (each engine start reads and loads the float32 weights: 1-3 minutes), so this is the part to
watch. Runs pytest on this checkout's tests with --durations=0 and records each test's seconds
(setup + call + teardown), the total, pytest's counts and the tests that did not pass (their
tracebacks in --log), the commit (and whether the tree had uncommitted changes), the CPU (model,
family/model/stepping) and the load before. The packaged
models must already be prepared (`lr models prepare`); run it alone, nothing else on the cores.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_make_test import COUNTS, parse_summary  # noqa: E402
from benchmarks.write import parse_or_render, write_results  # noqa: E402
from lrreal.binding import hardware  # noqa: E402

DURATION = re.compile(r"^([\d.]+)s (setup|call|teardown)\s+(\S.*?)\s*$", re.M)   # pytest --durations=0
FAILED = re.compile(r"^(?:FAILED|ERROR) (.+?)(?: - .*)?$", re.M)                # pytest -rfE
SHOWN = 8     # the slowest tests the rendered summary names


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(ROOT / "benchmarks/results/real_tests.json"))
    ap.add_argument("--log", type=Path, default=Path("/tmp/bench_real_tests.log"),
                    help="pytest's whole output (its failures' tracebacks), kept outside the checkout")
    a = parse_or_render(ap, render, "pytest run")
    if a is None:
        return
    git = lambda *args: subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True,  # noqa: E731
                                       check=True).stdout.strip()
    load_before = [round(x, 2) for x in os.getloadavg()]
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rfE", "-m", "slow or real",
                        "--durations=0", "--durations-min=0", "-p", "no:cacheprovider"], cwd=ROOT,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wall = time.perf_counter() - t0
    a.log.write_text(p.stdout)
    per_test = per_test_seconds(p.stdout)
    hw = hardware()
    doc = {"benchmark": "real_tests", "commit": git("rev-parse", "HEAD"),
           "tree_clean": git("status", "--porcelain", "--untracked-files=no") == "",
           "date": time.strftime("%Y-%m-%d", time.gmtime()), "cpu_model": hw.get("cpu_model"),
           "cpu_id": hw.get("cpu_id"), "cores": os.cpu_count(), "load_before": load_before,
           "rc": p.returncode, "wall_s": round(wall, 1), "pytest": parse_summary(p.stdout),
           "not_passed": FAILED.findall(p.stdout),
           "tests_s": {t: round(s, 1) for t, s in sorted(per_test.items(), key=lambda kv: -kv[1])}}
    write_results(a.out, doc, render)
    print(render(doc), end="")


def per_test_seconds(text: str) -> dict[str, float]:
    """Each test's setup + call + teardown seconds from pytest's --durations lines."""
    per_test: dict[str, float] = defaultdict(float)
    for seconds, _, test in DURATION.findall(text):
        per_test[test] += float(seconds)
    return dict(per_test)


def render(d: dict) -> str:
    p = d["pytest"]
    counts = ", ".join(f"{p[k]:,} {k}" for k in COUNTS if p.get(k))
    slow = list(d["tests_s"].items())[:SHOWN]
    lines = [f"The real-engine tests (`pytest -m \"slow or real\"`) at {d['commit'][:7]} ({d['date']}, "
             f"{d['cpu_model']} {d['cpu_id']}, {d['cores']} cores; `benchmarks/bench_real_tests.py`): "
             f"{p['pytest_s'] / 60:.1f} minutes for {counts} (exit {d['rc']})"
             + (f"; not passed: {', '.join(f'`{t}`' for t in d['not_passed'])}."
                if d.get("not_passed") else "."), "",
             "| slowest tests | seconds |", "|---|---|"]
    lines += [f"| `{t.split('/')[-1]}` | {s:.0f} |" for t, s in slow]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
