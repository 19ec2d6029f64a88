"""Small trace files recorded through the real LR scheduler on the deterministic fake engine
(known speeds: target 10 ms/token, draft 2.5 ms/token, no batching cost, separate "devices")."""
from __future__ import annotations

import asyncio

from harness.fake_engine import MARKER, ExactVerifier, FakeEngine
from lrcore.traces import TraceWriter
from lrreal.scheduler import Problem, SchedulerConfig, run_problem

TARGET_S_PER_TOKEN = 0.01
DRAFT_S_PER_TOKEN = 0.0025


def script(p: int) -> list[str]:
    words = 4 + 3 * (p % 3)
    return [" ".join([f"s{i}w{j}" for j in range(words + i % 4)]) + "." for i in range(5 + p % 3)] \
        + ["The answer is \\boxed{7}."]


def record(mode: str, p: int, depth: int = 2) -> dict:
    sc = script(p)
    target = FakeEngine("target", sc, per_token_s=TARGET_S_PER_TOKEN)
    draft = FakeEngine("draft", sc, per_token_s=DRAFT_S_PER_TOKEN,
                       wrong=lambda step, seed, p=p: (step + p) % 3 == 0)
    cfg = SchedulerConfig(mode=mode, depth=depth, max_tokens=400)
    res = asyncio.run(run_problem(cfg, Problem(f"fake/{p}", 0, "Question?\n" + MARKER), target,
                                  draft if mode != "ar" else None,
                                  ExactVerifier() if mode != "ar" else None))
    return {"schema_version": 1,
            "run": {"flags": {"mode": mode, "depth": depth, "width": 1, "target_cores": "0",
                              "draft_cores": "1"},
                    "models": {"target": {"path": "fake", "sha256": None}}, "vllm_version": None,
                    "hardware": {"cpu_model": "fake"}, "seeds": {}},
            "mode": mode, "problem_id": f"fake/{p}", "sample": 0, "wall_time_s": res.wall_time_s,
            "output_tokens": res.output_tokens, "correct": None, "steps": res.steps,
            "engine_stats": {}, "sd": None, "step_acceptance": res.step_acceptance,
            "prompt_tokens": 3}


def write_fake_traces(path, problems: int = 4, modes=("ar", "lr")) -> str:
    with TraceWriter(str(path), resume=False) as w:
        for mode in modes:
            for p in range(problems):
                w.write(record(mode, p))
    return str(path)


FIXTURE = "tests/data/calib/fake-scheduler.jsonl"   # recorded once with this module (deterministic tests)

if __name__ == "__main__":   # regenerate: .venv/bin/python tests/calib/faketraces.py
    import os

    if os.path.exists(FIXTURE):
        os.remove(FIXTURE)
    print(write_fake_traces(FIXTURE, problems=6))
