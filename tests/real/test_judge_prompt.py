"""Judge prompt templates (`--judge-prompt NAME|FILE`, lrreal/verifiers/judge_prompt.py): the
shipped ones, file validation, the request the judge receives (the fault judge records it), what
`lr collect` records and what `--resume` refuses. No models: fake engines and a loopback judge."""
from __future__ import annotations

import asyncio
import json

import pytest

from harness.fault_judge import FaultConfig, FaultJudge
from lrreal import collect as collect_mod
from lrreal.verifiers import JudgeConfig, JudgeVerifier, load_judge_prompt, make_verifier
from lrreal.verifiers.judge import judge_messages
from lrreal.verifiers.judge_prompt import (DATA_DIR, SHIPPED, JudgePrompt, parse_judge_prompt,
                                           prompt_sha256)
from lrcore.errors import UserError

# The judge prompt as it was before templates were files (lrreal/verifiers/judge.py constants):
# the shipped `default` must be exactly this, so records made without --judge-prompt mean the same.
OLD_SYSTEM = "You are a meticulous judge who compares two steps of mathematical reasoning."
OLD_USER = ("Do step s1 and step s2 below convey the same meaning? They do if they share the same "
            "main ideas, the same logic and the same calculation results; wording may differ.\n"
            "Answer with exactly one tag: [aligned] if they convey the same meaning, [unaligned] if "
            "they do not. If it is too hard to decide, answer [unaligned].\n\n"
            "s1: {target}\n\ns2: {draft}")
OLD_PREFILL = "["

S1 = "She sells 16 - 3 - 4 = 9 eggs."
S2 = "After 16 - 3 - 4 = 9, nine eggs are left."  # the same numbers: the toy judge says aligned


def run(coro):
    return asyncio.run(coro)


async def verify_once(v, a, b):
    try:
        return await v.verify(a, b)
    finally:
        await v.aclose()


def template(tmp_path, name="t.json", **doc):
    base = {"system": OLD_SYSTEM, "user": OLD_USER, "prefill": OLD_PREFILL}
    path = tmp_path / name
    path.write_text(json.dumps({k: v for k, v in (base | doc).items() if v is not None}))
    return path


# ------------------------------------------------------------------ the shipped templates

def test_default_template_is_the_old_prompt_exactly():
    p = load_judge_prompt("default")
    assert (p.system, p.user, p.prefill) == (OLD_SYSTEM, OLD_USER, OLD_PREFILL)
    assert p.name == "default" and p.about
    assert load_judge_prompt(None) == p and load_judge_prompt() == p
    assert p.messages(f"  {S1}\n\n", S2) == [
        {"role": "system", "content": OLD_SYSTEM},
        {"role": "user", "content": OLD_USER.format(target=S1, draft=S2)},
        {"role": "assistant", "content": "["}]
    assert judge_messages(S1, S2) == p.messages(S1, S2)  # the module function keeps the default
    assert p.sha256 == prompt_sha256(OLD_SYSTEM, OLD_USER, OLD_PREFILL) and len(p.sha256) == 64
    assert p.describe() == {"name": "default", "sha256": p.sha256}


def test_paper_template_follows_the_papers_protocol():
    p = load_judge_prompt("paper")
    assert p.prefill == "[" and p.system and p.sha256 != load_judge_prompt("default").sha256
    assert "<s1>\n{target}\n</s1>" in p.user and "<s2>\n{draft}\n</s2>" in p.user
    assert p.user.index("{target}") < p.user.index("{draft}")         # s1 = target, s2 = draft
    for words in ("same meaning", "main ideas", "logic", "calculation results", "[aligned]",
                  "[unaligned]", "too hard to decide"):
        assert words in p.user, words
    assert "<s1>" in p.about and "</s2>" in p.about                    # the markers are documented
    user = p.messages(S1, S2)[1]["content"]
    assert f"<s1>\n{S1}\n</s1>" in user and f"<s2>\n{S2}\n</s2>" in user


def test_shipped_templates_are_package_data():
    assert sorted(p.stem for p in DATA_DIR.glob("*.json")) == sorted(SHIPPED)
    for name in SHIPPED:
        doc = json.loads((DATA_DIR / f"{name}.json").read_text())
        assert set(doc) == {"_about", "system", "user", "prefill"}
    import tomllib
    from pathlib import Path

    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    assert "data/judge_prompts/*.json" in pyproject["tool"]["setuptools"]["package-data"]["lrreal"]


# ------------------------------------------------------------------ files and their checks

def test_a_file_template_is_named_by_its_path_and_hashed_by_content(tmp_path):
    path = template(tmp_path, _about="my copy")
    p = load_judge_prompt(str(path))
    assert p.name == str(path) and p.about == "my copy"
    assert p.sha256 == load_judge_prompt("default").sha256  # _about does not count
    # key order, indentation and a BOM do not change the hash either
    other = tmp_path / "other.json"
    other.write_bytes(b"\xef\xbb\xbf" + json.dumps({"prefill": OLD_PREFILL, "user": OLD_USER,
                                                    "system": OLD_SYSTEM}, indent=3).encode())
    assert load_judge_prompt(str(other)).sha256 == p.sha256
    changed = load_judge_prompt(str(template(tmp_path, "c.json", system="Be brief.")))
    assert changed.sha256 != p.sha256


def test_literal_braces_and_step_text_are_never_format_fields(tmp_path):
    path = template(tmp_path, user="Sets like {{1, 2}}.\ns1: {target}\ns2: {draft}")
    p = load_judge_prompt(str(path))
    user = p.messages("x = {draft} {0} {target.__class__}", "y = {}")[1]["content"]
    assert user == "Sets like {1, 2}.\ns1: x = {draft} {0} {target.__class__}\ns2: y = {}"


def test_an_empty_system_prompt_sends_no_system_message(tmp_path):
    p = load_judge_prompt(str(template(tmp_path, system="")))
    assert [m["role"] for m in p.messages(S1, S2)] == ["user", "assistant"]


BAD = [
    ("not-json", b"{", "not JSON"),
    ("jsonl", b'{"system": "a"}\n{"user": "b"}\n', "not JSON"),
    ("not-utf8", b'{"system": "\xff"}', "not UTF-8"),
    ("array", b"[]", "expected a JSON object, got an array"),
    ("empty", b"", "not JSON"),
    ("deep", b"[" * 60000, "not"),
    ("missing-prefill", {"system": "s", "user": "{target} {draft}"}, "missing key prefill"),
    ("missing-two", {"user": "{target} {draft}"}, "missing keys system, prefill"),
    ("misspelt-key", {"system": "s", "user": "{target} {draft}", "prefill": "[", "prefil": "["},
     "unknown key 'prefil'"),
    ("number", {"system": 3, "user": "{target} {draft}", "prefill": "["}, "'system' must be a string"),
    ("about-list", {"system": "", "user": "{target} {draft}", "prefill": "[", "_about": []},
     "'_about' must be a string"),
    ("no-draft", {"system": "", "user": "s1: {target}", "prefill": "["}, "{draft} exactly once (found 0)"),
    ("target-twice", {"system": "", "user": "{target} {draft} {target}", "prefill": "["},
     "{target} exactly once (found 2)"),
    ("other-field", {"system": "", "user": "{target} {draft} {question}", "prefill": "["},
     "placeholder '{question}'"),
    ("positional", {"system": "", "user": "{target} {draft} {}", "prefill": "["}, "placeholder '{}'"),
    ("conversion", {"system": "", "user": "{target!r} {draft}", "prefill": "["}, "placeholder '{target!r}'"),
    ("format-spec", {"system": "", "user": "{target:>9} {draft}", "prefill": "["}, "placeholder"),
    ("attribute", {"system": "", "user": "{target.upper} {draft}", "prefill": "["}, "placeholder"),
    ("single-brace", {"system": "", "user": "{target} {draft} }", "prefill": "["}, "not a valid template"),
    ("open-brace", {"system": "", "user": "{target} {draft} {", "prefill": "["}, "not a valid template"),
    ("surrogate", b'{"system": "\\ud800", "user": "{target} {draft}", "prefill": "["}',
     "unpaired surrogate"),
    ("huge", b'{"system": "' + b"x" * (70 << 10) + b'", "user": "{target} {draft}", "prefill": "["}',
     "over the 64 KiB cap"),
]


@pytest.mark.parametrize("content,expect", [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_bad_template_files_are_one_line_errors_naming_the_flag(tmp_path, content, expect):
    path = tmp_path / "bad.json"
    path.write_bytes(content if isinstance(content, bytes) else json.dumps(content).encode())
    with pytest.raises(UserError) as e:
        load_judge_prompt(str(path))
    msg = str(e.value)
    assert msg.startswith("--judge-prompt") and "\n" not in msg, msg
    assert expect in msg, msg


@pytest.mark.parametrize("spec,expect", [
    ("nope", "no such template or file"), ("no/such/file.json", "no such template or file"),
    (".", "cannot read"), ("", "give a template name"), ("a\0b", "no such template or file"),
])
def test_unknown_names_and_unreadable_paths(tmp_path, monkeypatch, spec, expect):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UserError, match="--judge-prompt") as e:
        load_judge_prompt(spec)
    assert expect in str(e.value) and "\n" not in str(e.value)


def test_a_file_named_like_a_shipped_template_is_reached_with_a_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    template(tmp_path, "paper", system="mine")
    assert load_judge_prompt("paper").system != "mine"        # the shipped one
    assert load_judge_prompt("./paper").system == "mine"


def test_parse_checks_bytes_without_a_file():
    p = parse_judge_prompt(json.dumps({"system": "", "user": "{draft} vs {target}",
                                       "prefill": "["}).encode(), "inline")
    assert isinstance(p, JudgePrompt) and p.name == "inline"
    assert p.messages("T", "D")[0]["content"] == "D vs T"


# ------------------------------------------------------------------ the verifier and the judge

def test_make_verifier_takes_the_template_only_for_llm_judges(tmp_path):
    assert make_verifier("exact", judge_prompt="paper").method == "exact"
    j = make_verifier("judge", judge_url="http://127.0.0.1:9", judge_prompt="paper")
    assert j.prompt == load_judge_prompt("paper")
    assert make_verifier("judge", judge_url="http://127.0.0.1:9").prompt.name == "default"
    with pytest.raises(UserError, match="--judge-prompt"):
        make_verifier("judge-logprob:0.5", judge_url="http://127.0.0.1:9",
                      judge_prompt=str(tmp_path / "missing.json"))
    with pytest.raises(UserError, match="--judge-prompt"):  # refused when built, before a call
        JudgeVerifier(JudgeConfig("http://127.0.0.1:9", prompt="nope"))


@pytest.mark.parametrize("name", SHIPPED)
@pytest.mark.parametrize("logprob", [None, 0.5], ids=["judge", "judge-logprob"])
def test_the_request_body_carries_the_template(name, logprob):
    prompt = load_judge_prompt(name)
    spec = "judge" if logprob is None else f"judge-logprob:{logprob}"
    with FaultJudge(FaultConfig(mode="ok")) as fj:
        v = make_verifier(spec, judge_url=fj.url, judge_timeout_s=5.0, judge_retries=0,
                          judge_prompt=name)
        r = run(verify_once(v, S1, S2))
        body = fj.last_request
    assert body["messages"] == prompt.messages(S1, S2)
    assert body["messages"][0] == {"role": "system", "content": prompt.system}
    assert body["messages"][-1] == {"role": "assistant", "content": prompt.prefill}
    assert body["continue_final_message"] is True and body["add_generation_prompt"] is False
    assert body["max_tokens"] == 1 and body["temperature"] == 0
    # the toy judge reads both templates' steps (s1:/s2: lines, <s1>/<s2> markers)
    assert r.accepted and r.error is None and not r.shortcut


def test_a_file_template_reaches_the_judge(tmp_path):
    path = template(tmp_path, system="Judge.", user="A: {target}\nB: {draft}\nSame? [aligned]/[unaligned]",
                    prefill="[")
    with FaultJudge(FaultConfig(mode="ok")) as fj:
        run(verify_once(make_verifier("judge", judge_url=fj.url, judge_retries=0,
                                      judge_prompt=str(path)), S1, S2))
        body = fj.last_request
    assert body["messages"] == [{"role": "system", "content": "Judge."},
                                {"role": "user", "content": f"A: {S1}\nB: {S2}\nSame? [aligned]/[unaligned]"},
                                {"role": "assistant", "content": "["}]


def test_lr_judge_ask_sends_the_chosen_template(run_lr):
    paper = load_judge_prompt("paper")
    with FaultJudge(FaultConfig(mode="ok")) as fj:
        code, out, err = run_lr("judge", "ask", "--target", S1, "--draft", S2, "--judge-url", fj.url,
                                "--judge-prompt", "paper", "--judge-retries", "0", "--json")
        body = fj.last_request
    assert code == 0, err
    r = json.loads(out)
    assert r["accepted"] is True and r["judge_prompt"] == {"name": "paper", "sha256": paper.sha256}
    assert body["messages"] == paper.messages(S1, S2)


# ------------------------------------------------------------------ lr collect and --resume

@pytest.fixture
def fake_collect(fake_collector):
    """`collect()` on fake engines whose drafts differ from the target from step 1 on, so every
    drafted step goes to the judge."""
    return fake_collector(0.002, 0.0002, wrong=lambda step, seed: step >= 1)


def judge_spec(out, url, **kw):
    return collect_mod.CollectSpec(**(dict(mode="lr", limit=1, depth=2, max_tokens=200,
                                           verifier="judge", judge_url=url, judge_timeout_s=5.0,
                                           judge_retries=0, out=str(out), probe=False) | kw))


def judged(recs):
    return [s["verify"] for r in recs for s in r["steps"]
            if s.get("verify") and s["verify"]["method"] == "judge" and not s["verify"]["shortcut"]]


def test_collect_records_the_template_and_resume_refuses_another(fake_collect, tmp_path):
    from lrcore.traces import read_traces

    out = fake_collect
    paper = load_judge_prompt("paper")
    copy = tmp_path / "my-paper.json"   # the same template under another path and layout
    copy.write_text(json.dumps({"user": paper.user, "prefill": paper.prefill, "system": paper.system},
                               indent=4))
    with FaultJudge(FaultConfig(mode="ok")) as fj:
        s = collect_mod.collect(judge_spec(out, fj.url, judge_prompt="paper"))
        assert s.written == 1 and s.failed == []
        body, asked = fj.last_request, fj.chat_requests
        assert asked > 0 and body["messages"][0] == {"role": "system", "content": paper.system}
        assert "<s1>" in body["messages"][1]["content"]
        [rec] = read_traces(out)
        assert judged([rec]) and all(v["error"] is None for v in judged([rec]))
        assert rec["run"]["flags"]["judge_prompt"] == "paper"
        assert rec["run"]["judge_prompt"] == {"name": "paper", "sha256": paper.sha256}
        before = out.read_bytes()
        with pytest.raises(UserError, match=r"--resume: .*judged with --judge-prompt 'paper' "
                                            r".*this run has --judge-prompt 'default'"):
            collect_mod.collect(judge_spec(out, fj.url, limit=2, resume=True))
        assert out.read_bytes() == before and fj.chat_requests == asked  # refused before any work
        s = collect_mod.collect(judge_spec(out, fj.url, judge_prompt=str(copy), limit=2, resume=True))
        assert s.written == 1 and s.skipped == 1
    recs = read_traces(out)
    assert recs[1]["run"]["judge_prompt"] == {"name": str(copy), "sha256": paper.sha256}


def test_records_without_a_template_were_judged_with_the_default(fake_collect):
    """Judge records written before templates were files carry no run.judge_prompt: they were
    judged with the default wording, the only one there was."""
    out = fake_collect
    default = load_judge_prompt("default")
    with FaultJudge(FaultConfig(mode="ok")) as fj:
        collect_mod.collect(judge_spec(out, fj.url))
        recs = [json.loads(line) for line in out.read_text().splitlines()]
        assert recs[0]["run"]["judge_prompt"] == {"name": "default", "sha256": default.sha256}
        for r in recs:  # as an older toolkit wrote them
            del r["run"]["judge_prompt"], r["run"]["flags"]["judge_prompt"], r["run"]["flags"]["step_stop"]
        out.write_text("".join(json.dumps(r) + "\n" for r in recs))
        with pytest.raises(UserError, match="judged with --judge-prompt 'default'"):
            collect_mod.collect(judge_spec(out, fj.url, judge_prompt="paper", limit=2, resume=True))
        s = collect_mod.collect(judge_spec(out, fj.url, limit=2, resume=True))
    assert s.written == 1 and s.skipped == 1


def test_without_an_llm_judge_the_template_is_not_part_of_the_records(fake_collect, monkeypatch, tmp_path):
    from lrcore.traces import read_traces

    out = fake_collect
    spec = lambda **kw: collect_mod.CollectSpec(**(dict(mode="lr", limit=1, depth=2, max_tokens=200,  # noqa: E731
                                                        out=str(out), probe=False) | kw))
    collect_mod.collect(spec())
    [rec] = read_traces(out)
    assert "judge_prompt" not in rec["run"] and rec["run"]["flags"]["judge_prompt"] == "default"
    assert collect_mod.collect(spec(judge_prompt="paper", limit=2, resume=True)).written == 1
    # a bad template is refused whatever the verifier and mode, before anything runs
    monkeypatch.chdir(tmp_path)
    for mode in ("ar", "lr"):
        with pytest.raises(UserError, match="--judge-prompt 'nope.json': no such template"):
            collect_mod.CollectSpec(mode=mode, judge_prompt="nope.json", out=str(out)).validate()
