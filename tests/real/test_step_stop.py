"""Step segmentation options (`lr collect --step-stop STR`, repeatable, and --max-step-tokens):
escape decoding, checks, the scheduler's requests, boundary rule and AR segmentation under another
stop string, and run.flags.step_stop recorded and compared on --resume. Fake engines, no models."""
from __future__ import annotations

import asyncio
import json

import pytest

from harness.fake_engine import MARKER, ExactVerifier, FakeEngine
from lrreal import collect as collect_mod
from lrreal.engine import Progress
from lrreal.scheduler import Problem, SchedulerConfig, run_problem
from lrreal.scheduler.steps import (DEFAULT_STEP_STOP, MAX_STEP_STOP_CHARS, MAX_STEP_STOPS,
                                    StreamSegmenter, check_step_stops, decode_escapes,
                                    ends_on_boundary, find_stop)
from lrcore.errors import UserError

SCRIPT = [f"Step {i}: compute part {i} of the answer." for i in range(6)] + ["The answer is \\boxed{42}."]
PROMPT = "Question: what is six times seven?\n" + MARKER
FULL = "\n\n".join(SCRIPT)


# ------------------------------------------------------------------ decoding and checks

@pytest.mark.parametrize("typed,value", [
    ("\\n\\n", "\n\n"), ("\\n", "\n"), ("\\t|", "\t|"), ("\\r\\n\\r\\n", "\r\n\r\n"),
    ("a\\\\b", "a\\b"), ("\\'\\\"", "'\""), ("\\x0a\\x0A", "\n\n"), ("\\u00e9", "\u00e9"),
    ("\\U0001F600", "\U0001F600"), ("Step", "Step"), ("\n\n", "\n\n"),   # a real newline is kept
    ("__import__('os').system('true')", "__import__('os').system('true')"),  # text, never code
    ("{0}%s", "{0}%s"),
])
def test_escapes_are_decoded_without_eval(typed, value):
    assert decode_escapes(typed) == value


@pytest.mark.parametrize("typed,expect", [
    ("\\q", "unknown escape \\q"), ("end\\", "lone backslash"), ("\\x4", "needs 2 hex digits"),
    ("\\xZZ", "needs 2 hex digits"), ("\\u12", "needs 4 hex digits"), ("\\x+1", "needs 2 hex digits"),
    ("\\ud800", "not a Unicode character"), ("\\U00110000", "not a Unicode character"),
    ("\\N{BULLET}", "unknown escape \\N"), ("\\0", "unknown escape \\0"),
])
def test_bad_escapes_are_one_line_errors_naming_the_flag(typed, expect):
    with pytest.raises(UserError) as e:
        decode_escapes(typed)
    msg = str(e.value)
    assert msg.startswith("--step-stop ") and expect in msg and "\n" not in msg, msg


def test_stop_strings_are_checked():
    assert check_step_stops("\n\n") == ("\n\n",) and check_step_stops(["a", "b"]) == ("a", "b")
    for bad, expect in [((), "at least one"), (("",), "must not be empty"), (("x", "x"), "given twice"),
                        (("y" * (MAX_STEP_STOP_CHARS + 1),), "over the cap"),
                        (tuple(str(i) for i in range(MAX_STEP_STOPS + 1)), "over the cap"),
                        ((3,), "text"), (("\ud800",), "not valid Unicode")]:
        with pytest.raises(UserError, match="--step-stop") as e:
            check_step_stops(bad)
        assert expect in str(e.value)
    assert SchedulerConfig().step_stop == DEFAULT_STEP_STOP == ("\n\n",)
    assert SchedulerConfig(step_stop=["\n"]).step_stop == ("\n",)
    with pytest.raises(UserError, match="--step-stop"):
        SchedulerConfig(step_stop=())


def test_boundaries_and_the_earliest_stop():
    assert ends_on_boundary("a.\n\n") and not ends_on_boundary("a.\n")
    assert ends_on_boundary("a.\n", ("\n",)) and ends_on_boundary("x:", ("\n\n", ":"))
    assert find_stop("ab:cd\n\n", 0, ("\n\n", ":")) == (2, 1)
    assert find_stop("ab\n\ncd", 0, ("\n", "\n\n")) == (2, 2)   # same start: the longest
    assert find_stop("ab\n\ncd", 4, ("\n",)) is None


def test_stream_segmenter_cuts_at_every_stop_string():
    seg = StreamSegmenter(start=0.0, stops=("\n\n", "\n"))
    p = Progress()
    for i, (text, tokens) in enumerate([("a\n", 1), ("a\nb\n\n", 2), ("a\nb\n\nc", 3)]):
        p.text, p.tokens = text, tokens
        seg.on_update(p, float(i + 1))
    cuts = seg.finish("a\nb\n\nc", 4, 5.0)
    assert [c["text"] for c in cuts] == ["a\n", "b\n\n", "c"]
    assert [c["tokens"] for c in cuts] == [1, 1, 2] and sum(c["tokens"] for c in cuts) == 4
    default = StreamSegmenter(start=0.0)
    p.text, p.tokens = "a\nb\n\nc", 3
    default.on_update(p, 1.0)
    assert [c["text"] for c in default.cuts] == ["a\nb\n\n"]


# ------------------------------------------------------------------ the scheduler

def run(cfg, target, draft=None):
    return asyncio.run(run_problem(cfg, Problem("p1", 0, PROMPT), target, draft, ExactVerifier()))


def test_ar_cuts_its_stream_at_the_configured_stop():
    target = FakeEngine("target", SCRIPT, per_token_s=0.0005)
    res = run(SchedulerConfig(mode="ar", max_tokens=500, step_stop=(":",)), target)
    texts = [s["text"] for s in res.steps]
    assert "".join(texts) == res.text == FULL and res.finish_reason == "eos"
    assert all(t.endswith(":") for t in texts[:-1]) and len(texts) == len(SCRIPT)
    assert sum(s["tokens"] for s in res.steps) == res.output_tokens
    assert target.requests[0].stop == ()   # one request for the whole answer


@pytest.mark.parametrize("mode", ["lr", "lr-sync"])
def test_lr_asks_for_steps_ending_at_the_stop_and_drafts_after_it(mode):
    target = FakeEngine("target", SCRIPT, per_token_s=0.002)
    draft = FakeEngine("draft", SCRIPT, per_token_s=0.0005)
    res = run(SchedulerConfig(mode=mode, depth=2, max_tokens=500, step_stop=(":",)), target, draft)
    assert res.text == FULL and res.finish_reason == "eos"
    steps = [r for r in target.requests + draft.requests if r.max_tokens > 1]
    assert steps and all(r.stop == (":",) for r in steps)
    texts = [s["text"] for s in res.steps]
    assert all(t.endswith(":") for t in texts[:-1])
    # the prompt does not end in ":" (no draft for step 0); every later context does, so drafts
    # are judged and accepted (the draft writes the target's text)
    assert res.steps[0]["verify"] is None and any(s["source"] == "draft" for s in res.steps)


def test_the_boundary_rule_uses_the_stop_strings():
    """Drafts start only after a context that ends in the configured stop string (":" here; once
    steps are cut at ":", no context of this script ends in a blank line)."""
    target = FakeEngine("target", SCRIPT, per_token_s=0.002)
    draft = FakeEngine("draft", SCRIPT, per_token_s=0.0005)
    res = run(SchedulerConfig(mode="lr", depth=2, max_tokens=500, step_stop=(":",)), target, draft)
    assert any(s["verify"] is not None for s in res.steps)
    for ctx_end in (r.prompt for r in draft.requests if r.max_tokens > 1):
        assert ctx_end.endswith(":")


# ------------------------------------------------------------------ lr collect: flags and resume

def spec(out, **kw):
    return collect_mod.CollectSpec(**(dict(mode="ar", limit=1, depth=2, max_tokens=200, out=str(out),
                                           probe=False) | kw))


@pytest.mark.parametrize("mode", ["ar", "lr"])
def test_step_stop_is_recorded_and_resume_refuses_another(fast_collect, mode):
    from lrcore.traces import read_traces

    out = fast_collect
    s = collect_mod.collect(spec(out, mode=mode, step_stop=(".", "\n\n")))
    assert s.written == 1 and s.failed == []
    [rec] = read_traces(out)
    assert rec["run"]["flags"]["step_stop"] == [".", "\n\n"]
    assert rec["run"]["flags"]["max_step_tokens"] == 100
    texts = [st["text"] for st in rec["steps"]]
    assert "".join(texts) == rec["output_text"]
    assert all(t.endswith((".", "\n\n")) for t in texts[:-1])
    before = out.read_bytes()
    with pytest.raises(UserError, match=r"made with --step-stop \['\.', '\\n\\n'\]; this run has "
                                        r"--step-stop \['\\n\\n'\]"):
        collect_mod.collect(spec(out, mode=mode, limit=2, resume=True))
    with pytest.raises(UserError, match="--max-step-tokens"):
        collect_mod.collect(spec(out, mode=mode, limit=2, resume=True, step_stop=(".", "\n\n"),
                                 max_step_tokens=50))
    assert out.read_bytes() == before
    # the same stop strings resume
    s = collect_mod.collect(spec(out, mode=mode, limit=2, resume=True, step_stop=(".", "\n\n")))
    assert s.written == 1 and s.skipped == 1


def test_records_without_step_stop_were_cut_at_a_blank_line(fast_collect):
    out = fast_collect
    collect_mod.collect(spec(out))
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    for r in recs:  # as an older toolkit wrote them
        del r["run"]["flags"]["step_stop"]
    out.write_text("".join(json.dumps(r) + "\n" for r in recs))
    with pytest.raises(UserError, match="--step-stop"):
        collect_mod.collect(spec(out, limit=2, resume=True, step_stop=("\n",)))
    assert collect_mod.collect(spec(out, limit=2, resume=True)).written == 1


def test_cli_decodes_and_records_step_stop(fast_collect, run_lr):
    from lrcore.traces import read_traces

    out = fast_collect
    code, stdout, err = run_lr("collect", "--mode", "ar", "--limit", "1", "--max-tokens", "200",
                               "--step-stop", "\\n\\n", "--step-stop", ".", "--no-probe",
                               "--out", out, "--json")
    assert code == 0, err
    assert json.loads(stdout)["written"] == 1
    assert read_traces(out)[0]["run"]["flags"]["step_stop"] == ["\n\n", "."]
    code, _, err = run_lr("collect", "--mode", "ar", "--limit", "2", "--max-tokens", "200",
                          "--no-probe", "--out", out, "--resume", "--json")
    assert code == 2 and err.startswith("lr: error: --resume") and "--step-stop" in err, err
    code, _, err = run_lr("collect", "--mode", "ar", "--limit", "1", "--step-stop", "\\q",
                          "--out", out.with_name("other.jsonl"))
    assert code == 2 and "unknown escape" in err and "--step-stop" in err, err
