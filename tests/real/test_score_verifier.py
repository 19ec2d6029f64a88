"""The score verifier (`--verifier score[:T]`, SpecReason-style): the target model scores the
drafted step 0-9 in one greedy token; accepted iff score >= T. On stub and fake engines (no vLLM);
the real engines are in test_engine_real.py (two scores, and an lr collection scored by them)."""
from __future__ import annotations

import asyncio
import re
import string

import pytest

from harness.fake_engine import StubTokenizer
from lrcore.errors import UserError
from lrreal import collect as collect_mod
from lrreal import summary as summary_mod
from lrreal.engine import GenResult, monotonic
from lrreal.verifiers import KINDS, SCORE_PROMPT, ScoreVerifier, make_verifier
from lrreal.verifiers.judge_prompt import prompt_sha256
from lrreal.verifiers.score import DEFAULT_THRESHOLD, parse_score

TARGET = "In May she sold half as many clips: 48 / 2 = 24."
DRAFT = "Natalia sold 48/2 = 24 clips in May."


def run(coro):
    return asyncio.run(coro)


class StubEngine:
    """A target engine that answers every request with `reply` and keeps the requests."""
    name = "target"

    def __init__(self, reply: str):
        self.reply, self.requests = reply, []

    async def generate(self, req, progress=None):
        self.requests.append(req)
        t = monotonic()
        return GenResult(text=self.reply, tokens=1, finish="length", start=t, end=t)


def render(messages):
    """A chat template stand-in: every message, then the open assistant turn."""
    return "".join(f"<|{m['role']}|>\n{m['content']}\n" for m in messages) + "<|assistant|>\n"


def bound(reply: str, spec: str = "score", **kw):
    engine = StubEngine(reply)
    return make_verifier(spec, **kw).bind(engine, render), engine


# ------------------------------------------------------------------ the flag

def test_score_specs_parse_without_engines():
    assert "score" in KINDS
    v = make_verifier("score")   # no --judge-url needed: it asks the target engine
    assert isinstance(v, ScoreVerifier) and v.method == "score" and v.shortcut is True
    assert v.threshold == DEFAULT_THRESHOLD == 7
    assert v.engine is None      # parsed by CollectSpec.validate() before any engine exists
    assert make_verifier("score:5").threshold == 5
    assert make_verifier("score:0").threshold == 0 and make_verifier("score:9").threshold == 9
    assert make_verifier("score:7.0").threshold == 7
    assert make_verifier("score", shortcut=False).shortcut is False
    collect_mod.CollectSpec(mode="lr", verifier="score:5", out=None).validate()


@pytest.mark.parametrize("spec, msg", [
    ("score:10", "whole number T from 0 to 9"), ("score:-1", "whole number T from 0 to 9"),
    ("score:7.5", "whole number T from 0 to 9"), ("score:nan", "whole number T from 0 to 9"),
    ("score:inf", "whole number T from 0 to 9"), ("score:x", "'x' is not a number"),
    ("scores", "unknown verifier"),
])
def test_bad_score_specs_are_one_line_user_errors(spec, msg):
    with pytest.raises(UserError, match=re.escape(msg)) as e:
        make_verifier(spec)
    assert str(e.value).startswith(f"--verifier {spec!r}") and "\n" not in str(e.value)
    with pytest.raises(UserError, match="--verifier"):
        collect_mod.CollectSpec(mode="lr", verifier=spec, out=None).validate()


def test_the_constructor_checks_the_threshold_too():
    for bad in (10, -1, 6.5, True, "7"):
        with pytest.raises(UserError, match="score:T"):
            ScoreVerifier(bad)
    assert ScoreVerifier(3).threshold == 3


# ------------------------------------------------------------------ one comparison

@pytest.mark.parametrize("reply, accepted", [("8", True), ("3", False), ("7", True), ("6", False),
                                             ("9", True), ("0", False), (" 8", True),
                                             ("\n5 because", False)])
def test_accepted_iff_the_score_reaches_the_threshold(reply, accepted):
    v, engine = bound(reply)
    r = run(v.verify(TARGET, DRAFT))
    assert r.accepted is accepted
    assert r.method == "score" and r.shortcut is False and r.error is None
    assert r.score == float(reply.strip()[0]) and isinstance(r.score, float)
    assert r.start <= r.end and len(engine.requests) == 1


def test_the_threshold_is_the_lowest_score_accepted():
    assert run(bound("5", "score:5")[0].verify(TARGET, DRAFT)).accepted
    assert not run(bound("4", "score:5")[0].verify(TARGET, DRAFT)).accepted
    assert run(bound("0", "score:0")[0].verify(TARGET, DRAFT)).accepted
    assert not run(bound("8", "score:9")[0].verify(TARGET, DRAFT)).accepted


def test_the_request_is_one_greedy_token_about_the_drafted_step():
    v, engine = bound("8")
    run(v.verify(TARGET, "  " + DRAFT + "\n\n"))
    [req] = engine.requests
    assert req.max_tokens == 1 and req.temperature == 0.0
    assert req.seed is None and req.stop == () and req.top_k == 0 and req.top_p == 1.0
    assert DRAFT in req.prompt
    assert TARGET not in req.prompt          # the target's own step is not shown
    # the target's chat template over the messages, then the pre-fill the digit follows
    assert req.prompt == render(SCORE_PROMPT.messages(DRAFT)) + SCORE_PROMPT.prefill
    assert req.prompt.endswith("<|assistant|>\nScore: ")
    assert SCORE_PROMPT.system in req.prompt
    run(v.verify(TARGET, DRAFT + " Then 72."))
    assert len({r.request_id for r in engine.requests}) == 2   # ids are unique on one engine
    other, engine2 = bound("8")
    run(other.verify(TARGET, DRAFT))
    assert engine2.requests[0].request_id not in {r.request_id for r in engine.requests}


@pytest.mark.parametrize("reply", ["", " ", "\n", "Nine", "[aligned]", "x8", "\u0663"])
def test_a_reply_without_a_digit_is_a_rejection_with_error(reply):
    v, _ = bound(reply)
    r = run(v.verify(TARGET, DRAFT))
    assert r.accepted is False and r.score is None and r.shortcut is False
    assert r.error.startswith("unexpected reply: no 0-9 score digit in ")
    assert summary_mod.verify_cause(r.error) == "bad reply"


def test_an_engine_failure_or_a_missing_engine_is_a_rejection_not_a_crash():
    class Broken(StubEngine):
        async def generate(self, req, progress=None):
            raise RuntimeError("engine died")

    v = make_verifier("score").bind(Broken("8"), render)
    r = run(v.verify(TARGET, DRAFT))
    assert r.accepted is False and r.error == "RuntimeError: engine died"
    r = run(make_verifier("score").verify(TARGET, DRAFT))   # never bound to an engine
    assert r.accepted is False and r.score is None and "no target engine" in r.error


def test_the_exact_match_shortcut_decides_without_asking():
    v, engine = bound("0")
    r = run(v.verify("The answer is 72.", "the answer is\n72. "))
    assert r.accepted and r.shortcut and r.method == "score" and r.score is None
    assert engine.requests == []
    v, engine = bound("0", shortcut=False)
    r = run(v.verify("The answer is 72.", "The answer is 72."))
    assert not r.accepted and r.score == 0.0 and len(engine.requests) == 1


def test_parse_score_reads_the_first_non_blank_character():
    assert parse_score("8") == 8.0 and parse_score(" \n3 of 9") == 3.0 and parse_score("90") == 9.0
    assert parse_score("") is None and parse_score("a9") is None and parse_score("-1") is None


# ------------------------------------------------------------------ what the record says

def test_describe_names_the_threshold_and_the_prompt_hash():
    d = make_verifier("score:6").describe()
    assert d == {"method": "score", "shortcut": True, "threshold": 6, "asks": "target",
                 "prompt": {"name": "score", "sha256": SCORE_PROMPT.sha256}}
    assert re.fullmatch(r"[0-9a-f]{64}", SCORE_PROMPT.sha256)
    # the same canonical hash as a judge template's (lrreal/verifiers/judge_prompt.py)
    assert SCORE_PROMPT.sha256 == prompt_sha256(SCORE_PROMPT.system, SCORE_PROMPT.user,
                                                SCORE_PROMPT.prefill)
    # {draft} is the template's only placeholder; braces inside a step are never format fields
    assert [f for _, f, _, _ in string.Formatter().parse(SCORE_PROMPT.user) if f is not None] == ["draft"]
    msgs = SCORE_PROMPT.messages("x = {y} and {draft}")
    assert msgs[-1] == {"role": "user", "content": SCORE_PROMPT.user.format(draft="x = {y} and {draft}")}
    assert "x = {y} and {draft}" in msgs[-1]["content"]
    assert [m["role"] for m in msgs] == ["system", "user"]


# ------------------------------------------------------------------ inside lr collect (fake engines)

class ScoringTarget:
    """A fake target that answers score requests (prompts ending in the score pre-fill) with
    `reply` and everything else as the fake engine it wraps."""

    def __init__(self, inner, reply: str):
        self.inner, self.reply, self.scored = inner, reply, []

    def __getattr__(self, name):
        return getattr(self.inner, name)

    async def generate(self, req, progress=None):
        if req.prompt.endswith(SCORE_PROMPT.prefill):
            self.scored.append(req)
            t = monotonic()
            return GenResult(text=self.reply, tokens=1, finish="length", start=t, end=t)
        return await self.inner.generate(req, progress)


@pytest.fixture
def scoring_collect(fake_collector, monkeypatch):
    """`patch(reply)`: collect() on fake engines whose drafts differ from the target's steps from
    step 1 on (so every drafted step is scored); the target answers score requests with `reply`
    (None: the plain fake engine, whose one-token reply is a word). Returns (trace path, targets)."""
    out = fake_collector(0.002, 0.0002, wrong=lambda step, seed: step >= 1)
    fake_start = collect_mod.Collector.start   # the fixture's: fake engines, no bind
    targets = []

    def patch(reply):
        def start(self):
            fake_start(self)
            if reply is not None:
                self.engines["target"] = ScoringTarget(self.engines["target"], reply)
            targets.append(self.engines["target"])

        monkeypatch.setattr(collect_mod.Collector, "start", start)
        return out, targets
    return patch


@pytest.mark.parametrize("reply, accepted", [("8", True), ("3", False), (None, False)],
                         ids=["score-8", "score-3", "fake-word"])
def test_collect_with_the_score_verifier(scoring_collect, reply, accepted):
    from lrcore.traces import read_traces, validate_record

    out, targets = scoring_collect(reply)
    spec = collect_mod.CollectSpec(mode="lr", limit=1, depth=2, max_tokens=200, verifier="score",
                                   out=str(out), probe=False)
    s = collect_mod.collect(spec)
    assert s.written == 1 and s.failed == []
    [rec] = read_traces(out)
    validate_record(rec)
    assert rec["run"]["flags"]["verifier"] == "score"
    assert rec["run"]["verifier"] == make_verifier("score").describe()
    assert rec["run"]["judge_prompt"] == {"name": "score", "sha256": SCORE_PROMPT.sha256}
    scored = [st["verify"] for st in rec["steps"]
              if st.get("verify") and st["verify"]["method"] == "score"]
    assert scored, rec["steps"]
    for v in scored:
        assert v["shortcut"] is False and v["verdict"] is accepted
        if reply is None:  # the fake target's one-token reply is a word: a rejection with error
            assert v["score"] is None and v["error"].startswith("unexpected reply")
        else:
            assert v["score"] == float(reply) and v["error"] is None
    assert (rec["step_acceptance"]["accepted"] >= 1) is accepted
    [target] = targets
    if reply is not None:
        # bound in warm_up (this fixture's start does not bind): every score went to the target
        assert len(target.scored) >= len(scored)
        assert all(r.max_tokens == 1 and r.temperature == 0.0 for r in target.scored)
        # through the target's chat template (the stub's), about a drafted (WRONG...) step
        assert all(r.prompt.startswith("<|user|>\n") and "WRONG" in r.prompt for r in target.scored)
    else:
        one_token = [r for r in target.requests if r.max_tokens == 1]
        assert len(one_token) >= len(scored)


def test_the_collector_binds_the_verifier_to_its_target_in_any_order(fake_collector):
    fake_collector(0.001, 0.0002)
    spec = collect_mod.CollectSpec(mode="lr", limit=1, depth=2, verifier="score", out=None)
    col = collect_mod.Collector(spec)
    col.verifier = col.make_verifier()         # lr collect's order: before the engines
    assert col.verifier.engine is None
    assert col.run_info["verifier"]["threshold"] == 7
    assert col.run_info["judge_prompt"] == SCORE_PROMPT.describe()
    col.start()                                # (the fixture's start binds nothing)
    run(col.warm_up())
    assert col.verifier.engine is col.engines["target"]
    msgs = [{"role": "user", "content": "hi"}]
    assert col.verifier.render(msgs) == collect_mod.chat_prompt(StubTokenizer(), msgs)
    # made after the engines started (lrreal/corpus.py's order): bound at once
    assert col.make_verifier().engine is col.engines["target"]
    # a verifier kept across collectors asks the current target
    other = collect_mod.Collector(spec)
    other.start()
    other.verifier = col.verifier
    other.bind_verifier()
    assert col.verifier.engine is other.engines["target"] is not col.engines["target"]
    # verifiers without bind are left alone
    plain = collect_mod.Collector(collect_mod.CollectSpec(mode="lr", limit=1, out=None))
    plain.start()
    plain.verifier = plain.make_verifier()
    plain.bind_verifier()
    assert plain.verifier.method == "exact"
