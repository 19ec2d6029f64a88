"""End to end on the real engines: `lr collect --mode lr --verifier score` (the SpecReason-style
baseline: the target scores each drafted step 0-9 in one greedy token) on one GSM8K problem.

The CLI runs in a subprocess, as a user runs it: it starts both engines (~1-2 min on 2 cores)
under the machine-wide vLLM lock, which this test process does not hold. Tiny budget; the
boundary rule is off so that steps are drafted and scored from the first one on.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.real, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
MAX_TOKENS = 64


def test_lr_collect_with_the_score_verifier(prepared_cache, tmp_path):
    from lrcore.traces import read_traces, validate_record
    from lrreal.engine import gpu_count
    from lrreal.verifiers import SCORE_PROMPT

    out = tmp_path / "score.jsonl"
    cmd = [sys.executable, str(ROOT / "cli.py"), "collect", "--mode", "lr", "--verifier", "score",
           "--dataset", "gsm8k", "--limit", "1", "--depth", "2", "--max-tokens", str(MAX_TOKENS),
           "--max-step-tokens", "16", "--no-boundary-rule", "--no-probe",
           "--cache-dir", str(prepared_cache), "--out", str(out), "--json"]
    if gpu_count():  # on a GPU machine both engines share GPU 0: give each a share
        cmd += ["--gpu-memory-utilization", "0.5", "--draft-gpu-memory-utilization", "0.3"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=1500, cwd=ROOT,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert p.returncode == 0, p.stderr[-4000:]   # 1 would mean a failed problem
    [rec] = read_traces(out)                      # validated on read
    validate_record(rec)
    assert rec["mode"] == "lr" and 0 < rec["output_tokens"] <= MAX_TOKENS
    assert rec["run"]["flags"]["verifier"] == "score"
    assert rec["run"]["verifier"]["method"] == "score" and rec["run"]["verifier"]["threshold"] == 7
    assert rec["run"]["verifier"]["prompt"] == {"name": "score", "sha256": SCORE_PROMPT.sha256}
    assert rec["run"]["judge_prompt"] == {"name": "score", "sha256": SCORE_PROMPT.sha256}
    checks = [s["verify"] for s in rec["steps"] if s.get("verify")]
    checks += [v for s in rec["steps"] for v in s.get("judged") or []]
    assert checks, "no drafted step was decided"
    for v in checks:
        # "not-ready": the target's step finished first and the draft was cancelled unjudged
        assert v["method"] in ("score", "not-ready"), v
        if v["method"] != "score":
            continue
        if v["shortcut"]:  # the exact-match shortcut decided: no score asked
            assert v["verdict"] is True and v["score"] is None
        else:  # the real target answered a digit (a reply without one would be an error)
            assert v["error"] is None, v
            assert v["score"] in [float(d) for d in range(10)], v
            assert v["verdict"] is (v["score"] >= 7), v
