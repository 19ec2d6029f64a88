"""A deterministic in-process engine for unit tests of the scheduler (no models, no vLLM).

The fake "model" writes a scripted solution, one step per script entry, each step ending in
"\n\n" and the last one followed by EOS. Where it is in the script is read from the prompt: the
number of "\n\n" in the generated part (after `MARKER`) is the index of the next step, so a
target continuing a draft's context continues with the *next* scripted step, like a real model.

A draft engine is the same script with some steps replaced by a wrong version: `wrong(step,
seed)` decides which (e.g. a fixed set of step indices, or a seeded coin), so acceptance paths
are fully controlled. Tokens are words with their trailing whitespace ("one.\n\n" is one token,
like the real tokenizer's fused ".\n\n"). Time: `per_token_s` of asyncio.sleep per token, so
draft/target speed ratios (and "draft not ready" races) are set by the test.
"""
from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from lrreal.engine import GenRequest, GenResult, Progress, StatsWindow, monotonic
from lrreal.verifiers.exact import ExactVerifier as RealExactVerifier

MARKER = "<|assistant|>\n"
_TOKEN = re.compile(r"\S+\s*|\s+")


def tokenize(text: str) -> list[str]:
    return _TOKEN.findall(text)


@dataclass
class FakeEngine:
    name: str
    script: list[str]                      # steps, without the trailing "\n\n"
    per_token_s: float = 0.001
    wrong: Callable[[int, int | None], bool] = lambda step, seed: False
    prefill_s: float = 0.0
    requests: list[GenRequest] = field(default_factory=list)
    aborted: list[str] = field(default_factory=list)
    active: int = 0
    max_active: int = 0

    def continuation(self, generated: str, seed: int | None) -> str:
        """The text this model writes after `generated` (until EOS)."""
        k = generated.count("\n\n")
        partial = generated.rsplit("\n\n", 1)[-1]  # a step cut at max_step_tokens continues
        parts = []
        for i in range(k, len(self.script)):
            step = self.script[i]
            if self.wrong(i, seed):
                step = f"WRONG{i} " + step
            step += "\n\n" if i < len(self.script) - 1 else ""
            if i == k and partial:
                step = step[len(partial):] if step.startswith(partial) else step
            parts.append(step)
        return "".join(parts)

    async def generate(self, req: GenRequest, progress: Progress | None = None) -> GenResult:
        progress = progress or Progress()
        progress.start = monotonic()
        self.requests.append(req)
        self.active += 1
        self.max_active = max(self.max_active, self.active)
        try:
            generated = req.prompt.split(MARKER, 1)[1] if MARKER in req.prompt else ""
            toks = tokenize(self.continuation(generated, req.seed))
            if self.prefill_s:
                await asyncio.sleep(self.prefill_s)
            text, n, finish = "", 0, "eos"
            for tok in toks:
                if n >= req.max_tokens:
                    finish = "length"
                    break
                await asyncio.sleep(self.per_token_s)
                text += tok
                n += 1
                hit = next((s for s in req.stop if s in text), None)
                if hit is not None:
                    text = text[:text.index(hit) + len(hit)]
                    finish = "stop"
                    progress.update(text, n)
                    break
                progress.update(text, n)
            else:
                # the EOS token itself counts as a generated token, as in vLLM, and takes its
                # decode pass like any other (without it a step ending the answer ran faster per
                # token than every other step: lr-adaptive's Estimator read that as a cost)
                if n < req.max_tokens:
                    await asyncio.sleep(self.per_token_s)
                n += 1
                if n > req.max_tokens:
                    n, finish = req.max_tokens, "length"
                progress.update(text, n)
            end = monotonic()
            progress.end = end
            return GenResult(text=text, tokens=n, finish=finish, start=progress.start, end=end,
                             first=progress.first)
        except asyncio.CancelledError:
            self.aborted.append(req.request_id)
            progress.end = monotonic()
            raise
        finally:
            self.active -= 1

    # stats interface shared with VllmEngine
    num_spec_tokens = 0

    async def reset_prefix_cache(self) -> None:
        """Nothing to empty: the fake holds no prefix cache."""

    def stats_mark(self):
        return len(self.requests)

    def stats_since(self, mark, t0: float) -> dict:
        return {"forward_passes": None, "aggregate": {"requests": len(self.requests) - mark}}

    def sd_since(self, mark):
        return None

    def stats_window(self) -> StatsWindow:
        return StatsWindow()

    async def probe(self, salt: int, prompt_tokens: int = 32, decode_tokens: int = 4) -> dict:
        """The machine-speed probe's shape (lrreal/probe.py), timed on the fake clock."""
        t0 = monotonic()
        await asyncio.sleep(self.prefill_s + decode_tokens * self.per_token_s)
        # a fake engine without a latency times nothing: None, as a real probe without that pass
        return {"prefill_tokens": prompt_tokens, "prefill_s": self.prefill_s or None,
                "decode_s": self.per_token_s or None, "decode_passes": decode_tokens,
                "wall_s": monotonic() - t0}

    def shutdown(self) -> None:
        pass


class ExactVerifier(RealExactVerifier):
    """The real exact-match verifier (same comparison, same Verdict) plus what scheduler tests
    need: a settable judging time (`latency_s`, slept on the fake clock) and a call count."""

    def __init__(self, latency_s: float = 0.0):
        self.latency_s = latency_s
        self.calls = 0

    async def _compare(self, target_step: str, draft_step: str):
        self.calls += 1
        if self.latency_s:
            await asyncio.sleep(self.latency_s)
        return await super()._compare(target_step, draft_step)


def fake_model_folder(folder) -> Path:
    """A model folder that passes the cheap start-up checks (lrreal.engine_checks) but holds no
    real weights: what `models.resolve` returns in fake-engine tests."""
    import json
    import struct

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps({"model_type": "fake",
                                                    "architectures": ["FakeForCausalLM"]}))
    header = b"{}"  # safetensors: u64 header length, JSON header, no tensors
    (folder / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header)
    (folder / "tokenizer.json").write_text("{}")
    return folder


# A four-step GSM8K-style answer the fake engines "generate" in collect-level tests/benchmarks.
GSM8K_SCRIPT = ["Janet's ducks lay 16 eggs.", "She uses 3 + 4 = 7 of them.",
                "She sells 9 eggs at $2: 9 * 2 = 18.", "The answer is \\boxed{18}."]


class StubTokenizer:
    """Stands in for the target's tokenizer: a chat prompt ending in MARKER, words as tokens."""

    def apply_chat_template(self, messages, tokenize=False, add_generation_prompt=True):
        return "<|user|>\n" + messages[-1]["content"] + "\n" + MARKER

    def __call__(self, text):
        return {"input_ids": text.split()}


def run_virtual(coro, keep_clock: bool = False):
    """Run `coro` on an event loop with a virtual clock (looptime): each `asyncio.sleep` takes
    exactly its seconds on the loop's clock, which the scheduler reads (lrreal.engine.monotonic),
    and the code between sleeps takes none. A test whose scheduler learns from step times (the
    adaptive Estimator) then sees the fake engines' costs and not the machine's load: one
    preempted step on a busy CI machine once made a learned batch cost look free. Build the
    scheduler inside `coro`, on that clock.

    The clock starts at VIRTUAL_EPOCH, so a test runs the same whatever ran before it: events at
    the same virtual instant are ordered by float rounding, which depends on the clock's
    magnitude (a run that learns from them can take another path at another epoch).
    `keep_clock`: go on from where the last run_virtual left the clock instead, as the
    machine's clock does between asyncio.run calls: for engines used by more than one run
    (they keep what they counted over time, engine_load.BusyMeter)."""
    import looptime

    global _virtual_now
    start = _virtual_now if keep_clock else VIRTUAL_EPOCH
    loop = looptime.new_event_loop(start=start)     # (asyncio.Runner is 3.11+; we support 3.10)
    try:
        asyncio.set_event_loop(loop)
        return loop.run_until_complete(coro)
    finally:
        _virtual_now = loop.time()
        try:                                        # as asyncio.run ends: nothing left running
            pending = asyncio.all_tasks(loop)
            for task in pending:
                task.cancel()
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            asyncio.set_event_loop(None)
            loop.close()


VIRTUAL_EPOCH = 1000.0   # s: where each run_virtual's clock starts (keep_clock: the last's end)
_virtual_now = VIRTUAL_EPOCH
