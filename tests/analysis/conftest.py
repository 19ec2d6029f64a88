"""Real trace files for the plot tests, recorded through the real LR scheduler on the deterministic
fake engine (harness.fake_engine: scripted steps, known speeds, no models), in ar / lr / lr-sync."""
from __future__ import annotations

import asyncio

import pytest

from harness.fake_engine import MARKER, ExactVerifier, FakeEngine
from lrcore.traces import TraceWriter
from lrreal.scheduler import Problem, SchedulerConfig, run_problem

TARGET_S_PER_TOKEN = 0.003
DRAFT_S_PER_TOKEN = 0.001


def _script(p: int) -> list[str]:
    return [" ".join(f"p{p}s{i}w{j}" for j in range(4 + (i + p) % 4)) + "." for i in range(6)] \
        + ["The answer is \\boxed{7}."]


def _record(mode: str, p: int, depth: int = 2) -> dict:
    sc = _script(p)
    target = FakeEngine("target", sc, per_token_s=TARGET_S_PER_TOKEN)
    draft = FakeEngine("draft", sc, per_token_s=DRAFT_S_PER_TOKEN, wrong=lambda step, seed, p=p: (step + p) % 3 == 0)
    spec = mode != "ar"
    res = asyncio.run(run_problem(SchedulerConfig(mode=mode, depth=depth, max_tokens=400),
                                  Problem(f"fake/{p}", 0, "Question?\n" + MARKER), target,
                                  draft if spec else None, ExactVerifier() if spec else None))
    return {"schema_version": 1,
            "run": {"flags": {"mode": mode, "depth": depth, "width": 1}, "models": {"target": {"path": "fake", "sha256": None}},
                    "vllm_version": None, "hardware": {"cpu_model": "fake"}, "seeds": {}},
            "mode": mode, "problem_id": f"fake/{p}", "sample": 0, "wall_time_s": res.wall_time_s,
            "output_tokens": res.output_tokens, "correct": None, "steps": res.steps, "engine_stats": {},
            "sd": None, "step_acceptance": res.step_acceptance, "prompt_tokens": 3}


@pytest.fixture(scope="session")
def fake_traces(tmp_path_factory):
    path = tmp_path_factory.mktemp("traces") / "fake.jsonl"
    with TraceWriter(str(path), resume=False) as w:
        for mode in ("ar", "lr", "lr-sync"):
            for p in range(3):
                w.write(_record(mode, p))
    return path
