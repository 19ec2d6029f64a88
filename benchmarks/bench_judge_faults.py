"""Judge faults at collection scale: `lr collect --mode lr --verifier judge` on the deterministic
fake engine against `python -m harness.fault_judge` in each fault mode (a separate process, so
`die` is a real process exit).

    .venv/bin/python benchmarks/bench_judge_faults.py [--problems 20] [--timeout 0.5] [--retries 1]

Per mode: verifications that reached the judge, how many failed (recorded as rejections) and by
cause, what the server injected (chat requests that got a fault; with retries one failed
verification can consume several), whether the run finished with every record written, wall
time, and the slowest failed verification against the bound (retries+1)*timeout + back-offs.
Writes benchmarks/results/judge_faults.json and its table judge_faults.md (quoted in
docs/reliability.md); `--render` rewrites the .md from the .json alone (no runs).
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.write import parse_or_render, write_results  # noqa: E402
from harness.fake_engine import FakeEngine, StubTokenizer, fake_model_folder  # noqa: E402
from harness.fake_engine import GSM8K_SCRIPT as SCRIPT  # noqa: E402
from lrcore.traces import read_traces  # noqa: E402
from lrreal import binding  # noqa: E402
from lrreal import collect as collect_mod  # noqa: E402
from lrreal import models  # noqa: E402
from lrreal import verifiers as verifiers_mod  # noqa: E402
from lrreal.summary import summarize  # noqa: E402

MODES = ["ok", "slow", "garbage", "http-error", "die", "mixed"]
DIE_AFTER = 10  # mode die: answers this many, then the process exits


def fake_start(self):
    """Target 4 ms/token, draft 0.2 ms/token; drafts differ at steps 1-3 (each goes to the judge)."""
    self.engines["target"] = FakeEngine("target", SCRIPT, per_token_s=0.004)
    if self.draft_path is not None:
        self.engines["draft"] = FakeEngine("draft", SCRIPT, per_token_s=0.0002,
                                           wrong=lambda step, seed: step >= 1)


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def start_judge(mode: str, seed: int, stats: Path, slow_s: float):
    cmd = [sys.executable, "-m", "harness.fault_judge", "--mode", mode, "--seed", str(seed),
           "--port", "0", "--stats-file", str(stats), "--slow-s", str(slow_s), "--trickle-s", "0.05"]
    if mode == "die":
        cmd += ["--die-after", str(DIE_AFTER)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    return proc, proc.stdout.readline().strip()


def run_mode(mode: str, args, folder: Path, index: int) -> dict:
    out, stats = folder / f"{index}-{mode}.jsonl", folder / f"{index}-{mode}.stats.json"
    proc, url = start_judge(mode, args.seed, stats, slow_s=10 * args.timeout)
    make = functools.partial(verifiers_mod.make_verifier, judge_backoff_s=args.backoff)  # no flag
    spec = collect_mod.CollectSpec(mode="lr", limit=args.problems, depth=2, max_tokens=200,
                                   verifier="judge", judge_url=url, out=str(out),
                                   judge_timeout_s=args.timeout, judge_retries=args.retries)
    finished, error = True, None
    t0 = time.monotonic()
    with mock.patch.object(models, "resolve", lambda name, cache=None: folder), \
         mock.patch.object(collect_mod, "vllm_lock", lambda: _Null()), \
         mock.patch.object(collect_mod.Collector, "start", fake_start), \
         mock.patch.object(collect_mod.Collector, "tokenizer", lambda self: StubTokenizer()), \
         mock.patch.object(verifiers_mod, "make_verifier", make):
        try:
            summary = collect_mod.collect(spec)
        except BaseException as e:  # the point of the benchmark: this must never happen
            finished, error, summary = False, f"{type(e).__name__}: {e}", None
    wall = time.monotonic() - t0
    if proc.poll() is None:
        proc.terminate()
    proc.wait(timeout=10)
    recs = read_traces(out) if out.exists() else []
    checks = [s["verify"] for r in recs for s in r["steps"]
              if s.get("verify") and s["verify"]["method"] == "judge" and not s["verify"]["shortcut"]]
    failed = [v for v in checks if v["error"]]
    row = summarize(recs)[0] if recs else {}
    served = json.loads(stats.read_text())
    r = args.retries
    return {"mode": mode, "problems": args.problems,
            "records_written": summary.written if summary else 0,
            "problems_failed": len(summary.failed) if summary else None,
            "run_finished": finished and summary is not None and summary.written == args.problems,
            "error": error,
            "verifications": row.get("verifications"), "judged": len(checks),
            "failed": row.get("verifications_failed"),
            "failed_in_trace": len(failed),
            "failed_by_cause": row.get("verification_failures_by_cause"),
            "server_chat_requests": served["chat_requests"], "server_injected": served["injected"],
            "server_served": served["served"], "server_died": served["dead"],
            "wall_time_s": round(wall, 2),
            "slowest_failed_verification_s": round(max((v["end"] - v["start"] for v in failed), default=0), 3),
            "bound_s": round((r + 1) * args.timeout + args.backoff * (2 ** r - 1), 3)}


def render(doc: dict) -> str:
    """judge_faults.json as the Markdown table docs/reliability.md quotes."""
    rows, c = doc["rows"], doc["client"]
    first = rows[0]
    retries = f"{c['retries']} retr{'y' if c['retries'] == 1 else 'ies'}"
    lines = [f"*Benchmark* `benchmarks/bench_judge_faults.py` ({doc['engine'].split(' ')[0]} engine, "
             f"{first['problems']} problems, {first['verifications']} checks reach the judge per mode; client "
             f"timeout {c['timeout_s']:g} s, {retries}, {c['backoff_s']:g} s back-off):", "",
             "| judge mode | run finished | failed / judged | by cause | injected / requests | wall |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        mode = f"die (after {DIE_AFTER})" if r["mode"] == "die" else r["mode"]
        cause = ", ".join(f"{k} {v}" for k, v in r["failed_by_cause"].items()) or "-"
        lines.append(f"| {mode} | {'yes' if r['run_finished'] else 'NO'} | {r['failed']}/{r['judged']} | "
                     f"{cause} | {r['server_injected']}/{r['server_chat_requests']} | {r['wall_time_s']:.1f} s |")
    mixed = next((r for r in rows if r["mode"] == "mixed"), None)
    if mixed:
        lines += ["", "(With retries one failed check may consume several faulty requests, and a retry that "
                  "gets an answer turns a fault into a verdict: in the mixed run "
                  f"{mixed['server_injected'] - mixed['failed']} of {mixed['server_injected']} injected "
                  "faults were recovered.)"]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--problems", type=int, default=20)
    ap.add_argument("--timeout", type=float, default=0.5, help="judge client timeout per attempt (s)")
    ap.add_argument("--retries", type=int, default=1)
    ap.add_argument("--backoff", type=float, default=0.1, help="first retry back-off (s)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--out", default=str(ROOT / "benchmarks/results/judge_faults.json"))
    args = parse_or_render(ap, render, "runs")
    if args is None:
        return
    from lrreal.datasets import load_problems
    load_problems("gsm8k", args.problems)  # first calls are slow (data set, torch import for the
    binding.hardware()                     # run record): keep them out of the first mode's time
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = fake_model_folder(Path(tmp) / "model")
        run_mode("ok", argparse.Namespace(**{**vars(args), "problems": 2}), folder, -1)  # warm-up, not reported
        for i, mode in enumerate(args.modes.split(",")):
            rows.append(run_mode(mode, args, folder, i))
            r = rows[-1]
            print(f"{mode:11} finished={'yes' if r['run_finished'] else 'NO':3} records={r['records_written']:3} "
                  f"judged={r['judged']:4} failed={r['failed']:4} by cause={r['failed_by_cause']} "
                  f"injected={r['server_injected']:4} (of {r['server_chat_requests']} requests) "
                  f"wall={r['wall_time_s']:6.1f}s slowest failed={r['slowest_failed_verification_s']:.2f}s "
                  f"(bound {r['bound_s']:.2f}s)", flush=True)
    doc = {"benchmark": "judge_faults", "client": {"timeout_s": args.timeout, "retries": args.retries,
                                                   "backoff_s": args.backoff},
           "engine": "fake (deterministic)", "cpus": os.cpu_count(), "rows": rows}
    write_results(args.out, doc, render)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
