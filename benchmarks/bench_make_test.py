"""`make test` on a fresh clone, as CI runs it: how long the install and the suite take, and what
the suite counted.

    .venv/bin/python benchmarks/bench_make_test.py [--clone ../clone-check]
        [--out benchmarks/results/make_test.json]
    .venv/bin/python benchmarks/bench_make_test.py --render     # make_test.md from the .json alone

Clones this repository's HEAD into --clone (a sibling of the checkout by default, so that
../shared lies beside it as it does in CI; an existing folder there is replaced), then runs, in the
clone, `make venv` (the install: a new .venv) and `make test` (the suite: pytest over that .venv),
each timed as a whole process, their output kept in --clone/make_test.log. Records the commit, the
two wall times, pytest's own summary (passed, failed, skipped, xfailed, errors and its duration),
the CPU model, the cores and the load average before the run. The packaged models must already be
prepared (`lr models prepare`: the shared cache under ~/.cache/lr-toolkit, which the clone reuses);
run it alone, nothing else on the cores.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.write import parse_or_render, write_results  # noqa: E402
from lrreal.binding import hardware  # noqa: E402  (what trace records carry as run.hardware)

# pytest -q's last line, e.g. "1 failed, 4963 passed, 14 skipped, 1 xfailed in 2582.25s (0:43:02)"
SUMMARY = re.compile(r"^=*\s*((?:\d+ \w+(?:, )?)+) in ([\d.]+)s", re.M)
COUNTS = ("passed", "failed", "errors", "skipped", "xfailed", "xpassed")


def timed(cmd: list[str], cwd: Path, log) -> tuple[int, float]:
    log.write(f"$ {' '.join(cmd)}\n")
    log.flush()
    t0 = time.perf_counter()
    rc = subprocess.run(cmd, cwd=cwd, stdout=log, stderr=subprocess.STDOUT).returncode
    return rc, time.perf_counter() - t0


def parse_summary(text: str) -> dict:
    """pytest's counts and seconds from its last summary line (an error if it printed none)."""
    found = SUMMARY.findall(text)
    if not found:
        raise SystemExit("bench_make_test: no pytest summary line in the log")
    parts, seconds = found[-1]
    counts = {k: 0 for k in COUNTS}
    for n, word in (p.split(" ", 1) for p in parts.split(", ")):
        counts["errors" if word == "error" else word] = int(n)
    return {**counts, "pytest_s": float(seconds)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clone", type=Path, default=ROOT.parent / "clone-check")
    ap.add_argument("--out", default=str(ROOT / "benchmarks/results/make_test.json"))
    a = parse_or_render(ap, render, "runs")
    if a is None:
        return
    clone = a.clone.resolve()
    if clone == ROOT or ROOT in clone.parents:
        raise SystemExit(f"bench_make_test: --clone {clone} is this checkout or inside it")
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                            check=True).stdout.strip()
    if clone.exists():
        shutil.rmtree(clone)
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    load_before = [round(x, 2) for x in os.getloadavg()]
    with open(clone / "make_test.log", "w") as log:
        rc_venv, venv_s = timed(["make", "venv"], clone, log)
        rc_test, test_s = (timed(["make", "test"], clone, log) if rc_venv == 0 else (None, 0.0))
    text = (clone / "make_test.log").read_text()
    doc = {"benchmark": "make_test", "commit": commit, "date": time.strftime("%Y-%m-%d", time.gmtime()),
           "cpu_model": hardware().get("cpu_model", "unknown"), "cpu_id": hardware().get("cpu_id"),
           "cores": os.cpu_count(), "load_before": load_before,
           "venv_rc": rc_venv, "venv_s": round(venv_s, 1), "test_rc": rc_test, "test_s": round(test_s, 1),
           "pytest": parse_summary(text) if rc_venv == 0 else None}
    write_results(a.out, doc, render)
    print(render(doc), end="")


def render(d: dict) -> str:
    p = d["pytest"] or {}
    ran = sum(p.get(k, 0) for k in COUNTS)
    counts = ", ".join(f"{p[k]:,} {k}" for k in COUNTS if p.get(k))
    cpu = d["cpu_model"] + (f" {d['cpu_id']}" if d.get("cpu_id") else "")   # cpu_id: since 2026-12-05
    return (f"`make test` on a fresh clone of {d['commit'][:7]} ({d['date']}, {cpu}, "
            f"{d['cores']} cores; `benchmarks/bench_make_test.py`): the install (`make venv`, a new "
            f".venv) took {d['venv_s'] / 60:.1f} minutes, the suite {d['test_s'] / 60:.1f} minutes for "
            f"{ran:,} tests ({counts}; exit {d['test_rc']}), {(d['venv_s'] + d['test_s']) / 60:.0f} "
            f"minutes in all against CI's 90.\n")


if __name__ == "__main__":
    main()
