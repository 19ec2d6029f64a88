"""Judge prompt templates: what the LLM judge is asked (`--judge-prompt NAME|FILE`).

A template is a small JSON object (UTF-8, at most MAX_JUDGE_PROMPT_BYTES, lrcore/limits.py):

    {"system":  "...",                        the system message, sent as it is ("": none)
     "user":    "... {target} ... {draft} ...", the user turn; str.format fills {target} (s1, the
                                              target's step) and {draft} (s2, the draft's step),
                                              each exactly once; other braces are written doubled
                                              ({{ and }}); nothing else is a placeholder
     "prefill": "[",                          the open assistant turn the judge continues
     "_about":  "..."}                        optional: what the template is and where it is from

No other keys (a misspelt key is an error, not a silently missing part). The two steps are
stripped of surrounding whitespace before they are filled in; the judge sees only them.

Shipped templates (package data, lrreal/data/judge_prompts/NAME.json):
  default   the toolkit's wording of the reference protocol since its first release (the default:
            records made without --judge-prompt were judged with it)
  paper     the paper's protocol with the steps between explicit markers, <s1>...</s1> for the
            target's step and <s2>...</s2> for the draft's, the question after them
`--judge-prompt` takes one of these names or a path to a template file (a file that happens to be
named like a shipped template is reached as ./default).

The verdict rule does not depend on the template: the reply must name [aligned] or [unaligned]
(accepted iff it contains "ali" and not "un"), and judge-logprob reads the first token's
alternatives, so a template must make the first generated token the verdict (a prefill ending
in "[", as both shipped ones do).

Identity: `sha256` is the SHA-256 of the canonical JSON of {"prefill", "system", "user"} (sorted
keys, no spaces, UTF-8), so `_about`, key order and formatting do not change it: it names exactly
what the judge was asked. `lr collect` records {name, sha256} in run.judge_prompt of every record
judged by an LLM, and `--resume` refuses a file whose records were judged with another template.
"""
from __future__ import annotations

import hashlib
import json
import os
import string
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from lrcore.errors import UserError

FLAG = "--judge-prompt"
DATA_DIR = Path(__file__).resolve().parent.parent / "data" / "judge_prompts"
DEFAULT = "default"
SHIPPED = ("default", "paper")
KEYS = ("system", "user", "prefill")
OPTIONAL_KEYS = ("_about",)
PLACEHOLDERS = ("target", "draft")
_SHAPE = "a template is a JSON object with string keys system, user, prefill and an optional _about"


def prompt_sha256(system: str, user: str, prefill: str) -> str:
    canon = json.dumps({"prefill": prefill, "system": system, "user": user}, sort_keys=True,
                       ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canon.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class JudgePrompt:
    name: str              # a shipped name, or the path as it was given
    system: str
    user: str
    prefill: str
    about: str | None = None

    @cached_property
    def sha256(self) -> str:
        return prompt_sha256(self.system, self.user, self.prefill)

    def messages(self, target_step: str, draft_step: str) -> list[dict]:
        """The chat messages of one comparison: system (if any), user, the open assistant turn."""
        user = self.user.format(target=target_step.strip(), draft=draft_step.strip())
        return ([{"role": "system", "content": self.system}] if self.system else []) + \
            [{"role": "user", "content": user}, {"role": "assistant", "content": self.prefill}]

    def describe(self) -> dict:
        """What a trace records (run.judge_prompt)."""
        return {"name": self.name, "sha256": self.sha256}


def load_judge_prompt(spec: "str | JudgePrompt | None" = None, flag: str = FLAG) -> JudgePrompt:
    """A shipped template by name, or a template file by path; a bad one is one UserError line
    naming `flag`. A JudgePrompt is returned as it is; None means the default."""
    if isinstance(spec, JudgePrompt):
        return spec
    spec = DEFAULT if spec is None else os.fspath(spec) if isinstance(spec, os.PathLike) else spec
    if not isinstance(spec, str) or not spec.strip():
        raise UserError(f"{flag} {spec!r}: give a template name ({', '.join(SHIPPED)}) or the path "
                        "of a JSON template file")
    shown = f"{flag} {spec!r}"
    path = DATA_DIR / f"{spec}.json" if spec in SHIPPED else Path(spec)
    if spec not in SHIPPED and not path.exists():
        raise UserError(f"{shown}: no such template or file; use {' or '.join(SHIPPED)}, or the path "
                        f"of a JSON template ({_SHAPE})")
    from lrcore.limits import MAX_JUDGE_PROMPT_BYTES, read_capped

    try:
        raw = read_capped(path, MAX_JUDGE_PROMPT_BYTES, "judge prompt")
    except UserError as e:
        raise UserError(f"{flag}: {e}") from None
    except (OSError, ValueError) as e:
        reason = getattr(e, "strerror", None) or str(e)
        raise UserError(f"{shown}: cannot read the template ({reason})") from None
    return parse_judge_prompt(raw, spec, where=shown)


def default_prompt() -> JudgePrompt:
    return load_judge_prompt(DEFAULT)


def parse_judge_prompt(raw: bytes, name: str, where: str = FLAG) -> JudgePrompt:
    """Check a template's bytes (UTF-8 JSON of the shape above) and build it."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise UserError(f"{where}: not UTF-8 text (bad byte at offset {e.start})") from None
    try:
        doc = json.loads(text)
    except RecursionError:
        raise UserError(f"{where}: not a template (JSON nested too deeply); {_SHAPE}") from None
    except ValueError as e:
        raise UserError(f"{where}: not JSON ({e}); {_SHAPE}") from None
    if not isinstance(doc, dict):
        raise UserError(f"{where}: expected a JSON object, got {_json_type(doc)}; {_SHAPE}")
    missing = [k for k in KEYS if k not in doc]
    if missing:
        raise UserError(f"{where}: missing key{'s' if len(missing) > 1 else ''} "
                        f"{', '.join(missing)}; {_SHAPE}")
    unknown = sorted(k for k in doc if k not in KEYS + OPTIONAL_KEYS)
    if unknown:
        shown = ", ".join(repr(k[:40]) for k in unknown[:5]) + (", ..." if len(unknown) > 5 else "")
        raise UserError(f"{where}: unknown key{'s' if len(unknown) > 1 else ''} {shown}; {_SHAPE}")
    for k in KEYS + OPTIONAL_KEYS:
        if k not in doc:
            continue
        if not isinstance(doc[k], str):
            raise UserError(f"{where}: {k!r} must be a string, got {_json_type(doc[k])}")
        try:
            doc[k].encode("utf-8")
        except UnicodeEncodeError:
            raise UserError(f"{where}: {k!r} holds an unpaired surrogate (a \\ud800-style escape); "
                            "it cannot be sent to the judge") from None
    check_user_template(doc["user"], where)
    return JudgePrompt(name=name, system=doc["system"], user=doc["user"], prefill=doc["prefill"],
                       about=doc.get("_about"))


def check_user_template(user: str, where: str = FLAG) -> None:
    """{target} and {draft} exactly once each, no other field, conversion or format spec."""
    try:
        fields = [(f, spec, conv) for _, f, spec, conv in string.Formatter().parse(user) if f is not None]
    except ValueError as e:
        raise UserError(f"{where}: \"user\" is not a valid template ({e}); it needs {{target}} and "
                        "{draft}, and literal braces are written doubled ({{ and }})") from None
    for f, spec, conv in fields:
        if f not in PLACEHOLDERS or spec or conv:
            field = "{" + f + (f"!{conv}" if conv else "") + (f":{spec}" if spec else "") + "}"
            raise UserError(f"{where}: \"user\" has the placeholder {field[:60]!r}; the only "
                            "placeholders are {target} and {draft} (write literal braces doubled, "
                            "{{ and }})")
    for p in PLACEHOLDERS:
        n = sum(f == p for f, _, _ in fields)
        if n != 1:
            raise UserError(f"{where}: \"user\" must contain {{{p}}} exactly once (found {n}); "
                            "{target} is the target's step (s1), {draft} the draft's (s2)")


def _json_type(v) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
            type(None): "null", int: "a number", float: "a number"}.get(type(v), type(v).__name__)
