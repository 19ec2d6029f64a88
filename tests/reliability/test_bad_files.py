"""Bad input matrix for the files users hand to `lr`: trace JSONL, scenario TOML, calibration
profile JSON and custom data sets.

Every case starts from a valid file (a shipped sample trace, a shipped scenario, a profile that
`lr calibrate fit` wrote from that trace, a small custom data set) and breaks it one way. Each
broken file goes through every `lr` command that reads that kind of file, and must end as ONE
line `lr: error: ...` on stderr, exit code 2, no traceback, naming the file and, where the
format has them, the line and the field at fault. Files a user could reasonably produce (CRLF
line endings, a UTF-8 BOM, a trailing blank line) must be accepted instead.

`lr collect` is run with its engine start replaced by a sentinel error: a bad file must be
refused before anything slow starts, and a good one reaches the sentinel.
"""
from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

tomli_w = pytest.importorskip("tomli_w")

REPO = Path(__file__).resolve().parents[2]
SAMPLE_TRACE = REPO / "traces" / "samples" / "gsm8k-cpu.jsonl"
SCENARIO = REPO / "lrsim" / "scenarios" / "cpu-2core.toml"
DATASET_ROWS = [{"id": "a", "question": "What is 2 + 3?", "answer": "5"},
                {"id": "b", "question": "What is 7 * 6?", "answer": 42}]
SENTINEL = "SENTINEL: engines would start here"
BAD_LINE = 3           # the trace line the record mutations edit (an lr record with draft steps)

# ----------------------------------------------------------------------------------------------
# Helpers that edit a parsed document at a dotted path ("steps[1].draft.end", "models.target")


def _walk(doc, path: str):
    parts = []
    for chunk in path.split("."):
        while "[" in chunk:
            head, rest = chunk.split("[", 1)
            if head:
                parts.append(head)
            idx, chunk = rest.split("]", 1)
            parts.append(int(idx))
        if chunk:
            parts.append(chunk)
    *parents, last = parts
    obj = doc
    for p in parents:
        obj = obj[p]
    return obj, last


def set_(path, value):
    def f(doc):
        obj, last = _walk(doc, path)
        obj[last] = value
        return doc
    return f


def del_(path):
    def f(doc):
        obj, last = _walk(doc, path)
        del obj[last]
        return doc
    return f


# ----------------------------------------------------------------------------------------------
# Cases

MISSING, DIRECTORY, UNREADABLE = "<missing>", "<directory>", "<unreadable>"


@dataclass(frozen=True)
class Case:
    kind: str                       # trace | scenario | profile | dataset
    name: str
    make: Callable                  # valid content -> bad content (bytes), or a MISSING/... marker
    expect: tuple = ()              # substrings of the error line besides the path ({path} ok)
    ok: bool = False                # a file that must be accepted
    family: str = ""
    commands: tuple = ()            # default: every command that reads this kind

    @property
    def id(self) -> str:
        return f"{self.kind}-{self.name}".replace(" ", "").replace("'", "")


def trace_record(mutate, line=BAD_LINE):
    """Mutate the JSON record on `line` (1-based) of the trace."""
    def f(lines: list[bytes]) -> bytes:
        out = list(lines)
        rec = json.loads(out[line - 1])
        rec = mutate(rec)
        out[line - 1] = json.dumps(rec).encode() + b"\n"
        return b"".join(out)
    return f


def trace_raw(fn):
    return lambda lines: fn(list(lines))


def doc_json(mutate):
    return lambda doc: json.dumps(mutate(copy.deepcopy(doc)), indent=2).encode()


def doc_toml(mutate):
    return lambda doc: tomli_w.dumps(mutate(copy.deepcopy(doc))).encode()


def raw(fn):
    """A change to the file's bytes (for encodings and syntax)."""
    return ("raw", fn)


TRACE_REQUIRED = ["schema_version", "run", "mode", "problem_id", "sample", "wall_time_s",
                  "output_tokens", "correct", "steps", "engine_stats", "sd", "step_acceptance"]
STEP_REQUIRED = ["index", "source", "tokens", "depth", "draft", "target", "verify", "cancelled"]
L = f":{BAD_LINE}:"

TRACE_CASES = [
    # --- file-level ---
    Case("trace", "missing-file", MISSING, (), family="file"),
    Case("trace", "directory", DIRECTORY, (), family="file"),
    Case("trace", "unreadable", UNREADABLE, (), family="file"),
    Case("trace", "empty", raw(lambda b: b""), ("no",), family="file"),
    Case("trace", "blank-lines-only", raw(lambda b: b"\n\n  \n"), ("no",), family="file"),
    Case("trace", "binary-garbage", raw(lambda b: bytes(range(256)) * 4 + b"\n"), (":1:",), family="syntax"),
    Case("trace", "not-json", trace_raw(lambda ls: b"".join(ls[:2] + [b"hello world\n"] + ls[3:])),
         (L, "not valid JSON"), family="syntax"),
    Case("trace", "truncated-middle-line", trace_raw(lambda ls: b"".join(ls[:2] + [ls[2][:len(ls[2]) // 2] + b"\n"] + ls[3:])),
         (L, "not valid JSON"), family="truncated"),
    Case("trace", "truncated-last-line", trace_raw(lambda ls: b"".join(ls[:-1] + [ls[-1][:len(ls[-1]) // 2]])),
         (":8:", "truncated"), family="truncated"),
    Case("trace", "json-array-line", trace_raw(lambda ls: b"".join(ls[:2] + [b"[1, 2]\n"] + ls[3:])),
         (L, "JSON object"), family="types"),
    Case("trace", "duplicate-record", trace_raw(lambda ls: b"".join(ls + [ls[2]])),
         ("twice",), family="hand-edited"),
    Case("trace", "duplicate-key", trace_raw(lambda ls: b"".join(
        ls[:2] + [ls[2].replace(b'"mode":"lr"', b'"mode":"lr","mode":"ar"', 1)] + ls[3:])),
         (L, "mode", "twice"), family="hand-edited"),
    Case("trace", "nan-literal", trace_raw(lambda ls: b"".join(
        ls[:2] + [ls[2].replace(b'"wall_time_s":', b'"wall_time_s":NaN,"x":', 1)] + ls[3:])),
         (L, "wall_time_s"), family="numbers"),
    # --- version ---
    *[Case("trace", f"schema-version-{name}", trace_record(set_("schema_version", v)),
           (L, "schema_version"), family="version")
      for name, v in (("0", 0), ("2", 2), ("string", "1"), ("null", None), ("float", 1.5))],
    Case("trace", "schema-version-missing", trace_record(del_("schema_version")), (L, "schema_version"),
         family="version"),
    # --- required fields, one at a time ---
    *[Case("trace", f"missing-{k}", trace_record(del_(k)), (L, k), family="missing field")
      for k in TRACE_REQUIRED if k != "schema_version"],
    *[Case("trace", f"missing-steps-{k}", trace_record(del_(f"steps[1].{k}")), (L, f"steps[1].{k}"),
           family="missing field") for k in STEP_REQUIRED],
    Case("trace", "missing-target-end", trace_record(del_("steps[1].target.end")),
         (L, "steps[1].target.end"), family="missing field"),
    Case("trace", "missing-verify-verdict", trace_record(del_("steps[1].verify.verdict")),
         (L, "steps[1].verify.verdict"), family="missing field"),
    # --- types / hand edits ---
    Case("trace", "tokens-as-string", trace_record(set_("output_tokens", "96")), (L, "output_tokens"),
         family="types"),
    Case("trace", "sample-as-float", trace_record(set_("sample", 0.5)), (L, "sample"), family="types"),
    Case("trace", "steps-as-object", trace_record(set_("steps", {})), (L, "steps"), family="types"),
    Case("trace", "step-tokens-bool", trace_record(set_("steps[0].tokens", True)), (L, "steps[0].tokens"),
         family="types"),
    Case("trace", "unknown-mode", trace_record(set_("mode", "lr-fast")), (L, "mode"), family="types"),
    Case("trace", "unknown-source", trace_record(set_("steps[1].source", "oracle")), (L, "steps[1].source"),
         family="types"),
    Case("trace", "correct-as-string", trace_record(set_("correct", "yes")), (L, "correct"), family="types"),
    Case("trace", "run-as-list", trace_record(set_("run", [])), (L, "run"), family="types"),
    # --- numbers ---
    Case("trace", "negative-wall-time", trace_record(set_("wall_time_s", -1.0)), (L, "wall_time_s"),
         family="numbers"),
    Case("trace", "negative-tokens", trace_record(set_("steps[0].tokens", -5)), (L, "steps[0].tokens"),
         family="numbers"),
    Case("trace", "inf-time", trace_record(set_("steps[1].target.end", 1e999)), (L, "steps[1].target.end"),
         family="numbers"),
    Case("trace", "huge-exponent", trace_raw(lambda ls: b"".join(
        ls[:2] + [ls[2].replace(b'"wall_time_s":', b'"wall_time_s":1e400,"y":', 1)] + ls[3:])),
         (L, "wall_time_s"), family="numbers"),
    Case("trace", "end-before-start", trace_record(set_("steps[1].target.end", 1.0)),
         (L, "steps[1].target"), family="numbers"),
    Case("trace", "accepted-over-proposed", trace_record(set_("step_acceptance.accepted", 9)),
         (L, "step_acceptance.accepted"), family="numbers"),
    Case("trace", "token-sum-mismatch", trace_record(set_("output_tokens", 1000)), (L, "output_tokens"),
         family="hand-edited"),
    Case("trace", "step-index-gap", trace_record(set_("steps[2].index", 7)), (L, "steps[2].index"),
         family="hand-edited"),
    # --- absurd but well-formed values: free-form run.flags, caps, tiny times ---
    *[Case("trace", f"flags-{k}-{name}", trace_record(set_(f"run.flags.{k}", v)), (L, f"run.flags.{k}"),
           family="absurd values")
      for k, name, v in (("depth", "string", "two"), ("depth", "null", None), ("depth", "list", [2]),
                         ("depth", "zero", 0), ("width", "float", 1.5), ("verifier", "number", 3),
                         ("num_speculative_tokens", "1e9", 10**9), ("max_tokens", "1e12", 10**12),
                         ("temperature", "string", "hot"), ("boundary_rule", "string", "yes"),
                         ("seed", "float", 0.5), ("mode", "unknown", "fast"),
                         ("step_stop", "empty", []), ("step_stop", "string", "\n\n"),
                         ("step_stop", "empty-string", [""]), ("judge_prompt", "number", 3))],
    *[Case("trace", f"judge-prompt-{name}", trace_record(set_("run.judge_prompt", v)),
           (L, "run.judge_prompt.sha256"), family="absurd values")
      for name, v in (("short-sha256", {"name": "default", "sha256": "abc"}),
                      ("no-sha256", {"name": "default"}))],
    Case("trace", "flags-null", trace_record(set_("run.flags", None)), (L, "run.flags"), family="absurd values"),
    Case("trace", "wall-time-denormal", trace_record(set_("wall_time_s", 5e-324)), (L, "wall_time_s"),
         family="absurd values"),
    Case("trace", "wall-time-zero", trace_record(set_("wall_time_s", 0.0)), (L, "wall_time_s"),
         family="absurd values"),
    Case("trace", "step-tokens-1e9", trace_record(set_("steps[0].tokens", 10**9)), (L, "steps[0].tokens"),
         family="absurd values"),
    Case("trace", "prefill-tokens-string",
         trace_record(set_("engine_stats.target.forward_passes[0].prefill_tokens", "many")),
         (L, "prefill_tokens"), family="absurd values"),
    *[Case("trace", f"pass-duration-{name}",
           trace_record(set_("engine_stats.target.forward_passes[0].duration_s", v)),
           (L, "forward_passes[0].duration_s"), family="absurd values")
      for name, v in (("zero", 0.0), ("denormal", 5e-324))],
    Case("trace", "int-over-4300-digits", trace_raw(lambda ls: b"".join(
        ls[:2] + [ls[2].replace(b'"sample":0', b'"sample":1' + b"0" * 5000, 1)] + ls[3:])),
         (L, "4300 digits"), family="absurd values"),
    Case("trace", "70k-steps", trace_record(lambda r: dict(r, steps=[
        {"index": i, "source": "target", "tokens": 1, "depth": 0, "draft": None, "target": None,
         "verify": None, "cancelled": []} for i in range(70_000)])), (L, "MAX_RECORD_STEPS"),
         family="absurd values"),
    # --- accepted ---
    Case("trace", "problem-id-markup-and-escapes", trace_record(set_("problem_id", "p[/]x[bold]\x1b[2J")),
         ok=True, family="accepted"),
    Case("trace", "crlf", trace_raw(lambda ls: b"".join(l.replace(b"\n", b"\r\n") for l in ls)), ok=True,
         family="accepted"),
    Case("trace", "bom", trace_raw(lambda ls: b"\xef\xbb\xbf" + b"".join(ls)), ok=True, family="accepted"),
    Case("trace", "trailing-blank-lines", trace_raw(lambda ls: b"".join(ls) + b"\n\n"), ok=True,
         family="accepted"),
    Case("trace", "no-final-newline", trace_raw(lambda ls: b"".join(ls).rstrip(b"\n")), ok=True,
         family="accepted"),
]

# ------------------------------------------------------------------------------ scenario TOML
SCENARIO_CASES = [
    Case("scenario", "missing-file", MISSING, (), family="file"),
    Case("scenario", "directory", DIRECTORY, (), family="file"),
    Case("scenario", "unreadable", UNREADABLE, (), family="file"),
    Case("scenario", "empty", raw(lambda b: b""), ("devices",), family="file"),
    Case("scenario", "binary-garbage", raw(lambda b: bytes(range(256)) * 4), (), family="syntax"),
    Case("scenario", "syntax-error", raw(lambda b: b.replace(b"[verifier]", b"[verifier", 1)),
         ("line",), family="syntax"),
    Case("scenario", "truncated", raw(lambda b: b[: len(b) // 3]), (), family="truncated"),
    Case("scenario", "duplicate-key", raw(lambda b: b.replace(b"seconds = 0.03", b"seconds = 0.03\nseconds = 1", 1)),
         ("line",), family="syntax"),
    *[Case("scenario", f"missing-{p}", doc_toml(del_(p)), (p.split(".")[-1],), family="missing field")
      for p in ("devices", "models", "models.target", "models.target.devices", "models.target.latency",
                "models.target.latency.kind", "models.target.latency.decode", "models.draft")],
    *[Case("scenario", f"unknown-{p}", doc_toml(set_(p, 1)), (p,), family="extra field")
      for p in ("polcy", "policy.dept", "workload.alpah1", "models.target.tpp", "verifier.second",
                "sd.k", "models.target.latency.overhead_mss", "models.drafts")],
    *[Case("scenario", f"range-{p}={v}", doc_toml(set_(p, v)), (p,), family="out of range")
      for p, v in (("workload.rate", -1.0), ("workload.alpha1", 1.5), ("workload.alpha2", -0.1),
                   ("workload.requests", 0), ("workload.steps", 0), ("workload.step_mean", 0.0),
                   ("policy.depth", 0), ("policy.width", 0), ("policy.k1", 0), ("policy.k2", 0),
                   ("sd.k2", 0), ("verifier.seconds", -1.0), ("models.target.tp", 0),
                   ("models.target.max_seqs", 0), ("workload.alpha_by_depth", [0.5, 2.0]),
                   ("workload.alpha1", float("nan")), ("workload.step_mean", float("inf")),
                   ("verifier.seconds", float("nan")))],
    Case("scenario", "zero-devices", doc_toml(set_("devices", {})), ("devices",), family="out of range"),
    Case("scenario", "negative-decode-ms", doc_toml(set_("models.target.latency.decode", [[1, -388]])),
         ("models.target.latency.decode",), family="out of range"),
    Case("scenario", "empty-decode", doc_toml(set_("models.target.latency.decode", [])),
         ("models.target.latency.decode",), family="out of range"),
    Case("scenario", "zero-time-target", doc_toml(set_("models.target.latency", {"kind": "ideal", "unit_ms": 0})),
         ("models.target.latency", "positive"), family="out of range"),
    Case("scenario", "zero-ms-decode-table", doc_toml(set_("models.target.latency.decode", [[1, 0], [2, 0]])),
         ("models.target.latency", "positive"), family="out of range"),
    *[Case("scenario", f"type-{p}", doc_toml(set_(p, v)), (p,), family="types")
      for p, v in (("policy.depth", "4"), ("workload.alpha1", "0.5"), ("models.target.devices", "cpu0"),
                   ("verifier.kind", 3), ("policy.equal_resources", "yes"), ("devices.cpu0", 1),
                   ("models.target", "big"), ("models.target.latency.decode", "fast"),
                   ("models.target.latency.decode", [["a", "b"]]), ("workload.alpha_by_depth", [True]),
                   ("name", 5), ("policy.depth", 2.5), ("models.target.latency", [1]))],
    *[Case("scenario", f"value-{p}", doc_toml(set_(p, v)), (p,), family="hand-edited")
      for p, v in (("policy.name", "lr-fast"), ("verifier.kind", "oracle"), ("sd.drafter", "eagle"),
                   ("policy.judge_timing", "soon"),
                   ("workload.kind", "replay"), ("models.target.latency.kind", "magic"),
                   ("models.target.devices", ["gpu9"]))],
    Case("scenario", "workload-trace-missing", doc_toml(set_("workload", {"kind": "trace", "path": "nope.jsonl"})),
         ("nope.jsonl",), family="hand-edited"),
    *[Case("scenario", f"absurd-{p}", doc_toml(set_(p, v)), (p,), family="absurd values")
      for p, v in (("workload.requests", 10**9), ("workload.steps", 10**7), ("workload.seed", -1),
                   ("policy.depth", 10**6), ("policy.width", 10**4), ("sd.k2", 10**4),
                   ("models.target.max_seqs", 10**12), ("models.target.tp", 10**5),
                   ("workload.prompt_tokens", 10**12), ("verifier.seconds", 1e12))],
    Case("scenario", "absurd-params_b-0", doc_toml(set_("models.target.latency", {"kind": "roofline", "params_b": 0})),
         ("models.target.latency.params_b",), family="absurd values"),
    Case("scenario", "absurd-int-over-4300-digits", raw(lambda b: b.replace(b"steps = 6", b"steps = 1" + b"0" * 5000, 1)),
         ("4300 digits",), family="absurd values"),
    Case("scenario", "crlf", raw(lambda b: b.replace(b"\n", b"\r\n")), ok=True, family="accepted"),
    Case("scenario", "bom", raw(lambda b: b"\xef\xbb\xbf" + b), ok=True, family="accepted"),
]

# ------------------------------------------------------------------------------- profile JSON
PROFILE_REQUIRED = ["source", "latency", "verifier", "steps", "step_acceptance", "sd", "overheads",
                    "placement"]
PROFILE_NESTED = ["latency.target", "latency.target.kind", "latency.target.base_s", "verifier.kind",
                  "verifier.seconds", "steps.mean_tokens", "steps.lognormal_sigma",
                  "steps.steps_per_request", "steps.prompt_tokens", "step_acceptance.rate",
                  "step_acceptance.by_depth", "sd.alpha2", "sd.k2", "placement.shared",
                  "source.traces", "source.hardware"]
PROFILE_CASES = [
    Case("profile", "missing-file", MISSING, (), family="file"),
    Case("profile", "directory", DIRECTORY, (), family="file"),
    Case("profile", "unreadable", UNREADABLE, (), family="file"),
    Case("profile", "empty", raw(lambda b: b""), (), family="file"),
    Case("profile", "binary-garbage", raw(lambda b: bytes(range(256)) * 4), (), family="syntax"),
    Case("profile", "not-json", raw(lambda b: b"profile_version = 1\n"), (":1",), family="syntax"),
    Case("profile", "truncated", raw(lambda b: b[: len(b) // 2]), ("not JSON",), family="truncated"),
    Case("profile", "json-list", raw(lambda b: b"[1, 2, 3]"), ("object",), family="types"),
    Case("profile", "nan-literal", raw(lambda b: b.replace(b'"seconds": ', b'"seconds": NaN, "x": ', 1)),
         ("NaN",), family="numbers"),
    Case("profile", "huge-exponent", raw(lambda b: re.sub(rb'"mean_tokens": [-+.0-9eE]+', b'"mean_tokens": 1e400', b, count=1)),
         ("steps.mean_tokens",), family="numbers"),
    Case("profile", "duplicate-key", raw(lambda b: b.replace(b'"shared": ', b'"shared": true, "shared": ', 1)),
         ("shared", "twice"), family="hand-edited"),
    *[Case("profile", f"version-{name}", doc_json(set_("profile_version", v)), ("profile_version",),
           family="version") for name, v in (("0", 0), ("2", 2), ("string", "1"), ("null", None))],
    Case("profile", "version-missing", doc_json(del_("profile_version")), ("profile_version",), family="version"),
    *[Case("profile", f"missing-{p}", doc_json(del_(p)), (p,), family="missing field")
      for p in PROFILE_REQUIRED + PROFILE_NESTED],
    *[Case("profile", f"unknown-{p}", doc_json(set_(p, 1)), (p,), family="extra field")
      for p in ("stepz", "steps.mean_tokenz", "sd.alpha_2", "verifier.second", "latency.target.base_ss",
                "placement.sharde", "step_acceptance.rates")],
    *[Case("profile", f"range-{p}={v}", doc_json(set_(p, v)), (p,), family="out of range")
      for p, v in (("steps.mean_tokens", -1), ("steps.mean_tokens", 0), ("step_acceptance.rate", 1.5),
                   ("sd.alpha2", -0.1), ("sd.k2", 0), ("verifier.seconds", -0.5),
                   ("latency.target.base_s", 0), ("latency.target.per_token_s", -1e-3),
                   ("steps.steps_per_request", 0), ("step_acceptance.by_depth", {"1": [3, 9]}),
                   ("step_acceptance.by_depth", {"0": [3, 1]}), ("overheads.per_step_s", -1.0))],
    *[Case("profile", f"type-{p}", doc_json(set_(p, v)), (p,), family="types")
      for p, v in (("steps.mean_tokens", "37"), ("placement.shared", "yes"), ("sd.k2", 1.5),
                   ("latency", []), ("latency.target", "roofline"), ("latency.target.kind", "magic"),
                   ("step_acceptance.by_depth", {"1": [3]}), ("step_acceptance.by_depth", {"x": [3, 1]}),
                   ("verifier.kind", "oracle"), ("placement.defaults", {"depth": "two"}))],
    Case("profile", "zero-ms-decode-table", doc_json(set_("latency.draft", {"kind": "table", "decode": [[1, 0, 0]]})),
         ("latency.draft", "positive"), family="out of range"),
    Case("profile", "table-row-short", doc_json(set_("latency.target", {"kind": "table", "decode": [[1, 2]]})),
         ("latency.target.decode",), family="types"),
    Case("profile", "absurd-depth-1e9", doc_json(set_("step_acceptance.by_depth", {"1": [2, 1], "1000000000": [1, 1]})),
         ("step_acceptance.by_depth.1000000000", "MAX_PROFILE_DEPTH"), family="absurd values"),
    *[Case("profile", f"absurd-{p}", doc_json(set_(p, v)), (p,), family="absurd values")
      for p, v in (("steps.steps_per_request", 1e9), ("sd.k2", 10**9), ("steps.prompt_tokens", 1e12),
                   ("placement.defaults", {"depth": 10**6}), ("latency.target.base_s", 5e-324),
                   ("probe", {"target": {"decode_s": 5e-324}}))],
    Case("profile", "absurd-int-over-4300-digits", raw(lambda b: re.sub(rb'"k2": [0-9]+', b'"k2": 1' + b"0" * 5000, b, count=1)),
         ("4300 digits",), family="absurd values"),
    Case("profile", "crlf", raw(lambda b: b.replace(b"\n", b"\r\n")), ok=True, family="accepted"),
    Case("profile", "bom", raw(lambda b: b"\xef\xbb\xbf" + b), ok=True, family="accepted"),
]

# -------------------------------------------------------------------------------- data sets
def rows_jsonl(rows):
    return b"".join(json.dumps(r).encode() + b"\n" for r in rows)


DATASET_CASES = [
    Case("dataset", "missing-file", MISSING, (), family="file"),
    Case("dataset", "directory", DIRECTORY, (), family="file"),
    Case("dataset", "unreadable", UNREADABLE, (), family="file"),
    Case("dataset", "empty", raw(lambda b: b""), ("no problems",), family="empty"),
    Case("dataset", "blank-lines-only", raw(lambda b: b"\n \n\t\n"), ("no problems",), family="empty"),
    Case("dataset", "binary-garbage", raw(lambda b: bytes(range(256)) * 4), (), family="syntax"),
    Case("dataset", "not-json", raw(lambda b: b + b"question: 1+1?\n"), (":3:", "JSON"), family="syntax"),
    Case("dataset", "truncated-line", raw(lambda b: b[:-10]), (":2:",), family="truncated"),
    Case("dataset", "array-line", raw(lambda b: b + b"[1, 2]\n"), (":3:", "object"), family="types"),
    *[Case("dataset", f"missing-{k}", raw(lambda b, k=k: rows_jsonl(
        [DATASET_ROWS[0], {kk: vv for kk, vv in DATASET_ROWS[1].items() if kk != k}])), (":2:", k),
           family="missing field") for k in ("question", "answer")],
    *[Case("dataset", f"bad-{k}-{name}", raw(lambda b, k=k, v=v: rows_jsonl(
        [DATASET_ROWS[0], {**DATASET_ROWS[1], k: v}])), (":2:", k), family="types")
      for k, name, v in (("question", "null", None), ("question", "list", ["a"]), ("question", "empty", "  "),
                         ("answer", "null", None), ("answer", "bool", True), ("answer", "dict", {"x": 1}),
                         ("id", "list", [1]), ("id", "null", None))],
    Case("dataset", "duplicate-id", raw(lambda b: rows_jsonl([DATASET_ROWS[0], {**DATASET_ROWS[1], "id": "a"}])),
         (":2:", "'a'", "twice"), family="hand-edited"),
    Case("dataset", "int-over-4300-digits", raw(lambda b: rows_jsonl([DATASET_ROWS[0]]) +
         b'{"id": "b", "question": "q", "answer": 1' + b"0" * 5000 + b"}\n"), (":2:", "4300 digits"),
         family="absurd values"),
    Case("dataset", "crlf", raw(lambda b: b.replace(b"\n", b"\r\n")), ok=True, family="accepted"),
    Case("dataset", "bom", raw(lambda b: b"\xef\xbb\xbf" + b), ok=True, family="accepted"),
    Case("dataset", "extra-fields", raw(lambda b: rows_jsonl([{**r, "source": "me"} for r in DATASET_ROWS])),
         ok=True, family="accepted"),
]

ALL_CASES = TRACE_CASES + SCENARIO_CASES + PROFILE_CASES + DATASET_CASES


# ----------------------------------------------------------------------------------------------
# Valid files and the commands that read each kind

@pytest.fixture(scope="session")
def valid_profile(tmp_path_factory) -> Path:
    import cli

    out = tmp_path_factory.mktemp("profile") / "profile.json"
    with pytest.raises(SystemExit) as exc:
        cli.main(["calibrate", "fit", str(SAMPLE_TRACE), "-o", str(out), "--json"])
    assert exc.value.code == 0 and out.is_file()
    return out


def valid_bytes(kind: str, valid_profile: Path | None) -> bytes:
    if kind == "trace":
        return SAMPLE_TRACE.read_bytes()
    if kind == "scenario":
        return SCENARIO.read_bytes()
    if kind == "profile":
        return valid_profile.read_bytes()
    return rows_jsonl(DATASET_ROWS)


SUFFIX = {"trace": ".jsonl", "scenario": ".toml", "profile": ".json", "dataset": ".jsonl"}


def build(case: Case, tmp: Path, base: bytes) -> Path:
    path = tmp / f"bad-{case.kind}{SUFFIX[case.kind]}"
    if case.make == MISSING:
        return path
    if case.make == DIRECTORY:
        path.mkdir()
        return path
    if case.make == UNREADABLE:
        if os.geteuid() == 0:
            pytest.skip("root reads files whatever their mode")
        path.write_bytes(base)
        path.chmod(0)
        return path
    if isinstance(case.make, tuple):  # raw bytes edit
        data = case.make[1](base)
    elif case.kind == "trace":
        data = case.make(base.splitlines(keepends=True))
    elif case.kind == "scenario":
        data = case.make(tomllib.loads(base.decode()))
    else:
        data = case.make(json.loads(base))
    path.write_bytes(data)
    return path


def commands(kind: str, path: Path, tmp: Path, profile: Path | None = None) -> dict[str, list]:
    """Every command that reads a file of this kind, by name (`profile`: a valid one, for replay)."""
    ds = tmp / "ok-dataset.jsonl"
    ds.write_bytes(rows_jsonl(DATASET_ROWS))
    if kind == "trace":
        scen = tomllib.loads(SCENARIO.read_text())
        scen["workload"] = {"kind": "trace", "path": str(path)}
        scen_path = tmp / "trace-scenario.toml"
        scen_path.write_text(tomli_w.dumps(scen))
        return {"calibrate": ["calibrate", "fit", path, "-o", tmp / "p.json"],
                "replay": ["replay", path, "--profile", profile, "--json"],
                "plot": ["plot", "--traces", path, "--out", tmp / "plot", "--quick", "--jobs", "1"],
                # the sample trace's own settings (gsm8k, depth 2, 96 tokens, judged deferred as
                # every record was before --judge-timing): --resume refuses a file of records
                # made with other settings; problem 5 is not recorded yet
                "collect-resume": ["collect", "--mode", "lr", "--dataset", "gsm8k", "--offset", "5",
                                   "--limit", "1", "--depth", "2", "--max-tokens", "96",
                                   "--judge-timing", "deferred", "--out", path, "--resume"],
                "simulate-scenario": ["simulate", "--scenario", scen_path, "--json"]}
    if kind == "scenario":
        return {"simulate": ["simulate", "--scenario", path, "--json"],
                "sweep": ["sweep", "--scenario", path, "--json"],
                "plan": ["plan", "--scenario", path, "--jobs", "1", "--json"],
                "plot": ["plot", "--scenario", path, "--out", tmp / "plot", "--quick", "--jobs", "1"]}
    if kind == "profile":
        return {"replay": ["replay", SAMPLE_TRACE, "--profile", path, "--json"],
                "plan": ["plan", "--profile", path, "--jobs", "1", "--json"],
                "plot": ["plot", "--profile", path, "--out", tmp / "plot", "--quick", "--jobs", "1"]}
    return {"collect": ["collect", "--mode", "lr", "--dataset", path, "--limit", "2",
                        "--out", tmp / "out.jsonl"]}


# Which commands an accepted case runs (the cheap ones: acceptance is the same reader).
OK_COMMANDS = {"trace": ("calibrate", "collect-resume"), "scenario": ("simulate",),
               "profile": ("replay",), "dataset": ("collect",)}
# `lr collect --resume` legitimately accepts a truncated last line (--resume exists to repair
# it) and a missing or empty trace file (nothing recorded yet: it starts one).
TOLERATES = {("trace", "truncated-last-line"): {"collect-resume"},
             ("trace", "missing-file"): {"collect-resume"},
             ("trace", "empty"): {"collect-resume"},
             ("trace", "blank-lines-only"): {"collect-resume"}}

MATRIX = []
for _c in ALL_CASES:
    names = ["calibrate", "replay", "plot", "collect-resume", "simulate-scenario"] if _c.kind == "trace" else \
        ["simulate", "sweep", "plan", "plot"] if _c.kind == "scenario" else \
        ["replay", "plan", "plot"] if _c.kind == "profile" else ["collect"]
    for _cmd in names:
        if _c.ok and _cmd not in OK_COMMANDS[_c.kind]:
            continue
        MATRIX.append(pytest.param(_c, _cmd, id=f"{_c.id}-{_cmd}"))
N_CASES = len(ALL_CASES)          # distinct bad/odd files
N_RUNS = len(MATRIX)              # (file, command) pairs run by test_bad_file


@pytest.fixture
def no_engines(monkeypatch):
    """`lr collect` stops with a sentinel UserError where it would start engines."""
    from lrcore.errors import UserError
    import lrreal.collect as collect_mod

    class NoEngines:
        def __init__(self, *a, **k):
            raise UserError(SENTINEL)

    monkeypatch.setattr(collect_mod, "Collector", NoEngines)


def assert_one_line_error(code, err: str, path: Path, expect=()):
    lines = err.strip().splitlines()
    assert "Traceback" not in err, err
    assert code == 2, (code, err)
    assert len(lines) == 1, err
    assert lines[0].startswith("lr: error: "), err
    assert SENTINEL not in lines[0], "the bad file was not refused before the engines start"
    assert path.name in lines[0], f"the message does not name the file: {lines[0]}"
    for s in expect:
        s = s.format(path=path)
        assert s in lines[0], f"{s!r} missing from: {lines[0]}"


@pytest.mark.parametrize("case,command", MATRIX)
def test_bad_file(case: Case, command: str, run_lr, tmp_path, no_engines, request, monkeypatch):
    monkeypatch.chdir(tmp_path)
    prof = request.getfixturevalue("valid_profile") if case.kind in ("profile", "trace") else None
    path = build(case, tmp_path, valid_bytes(case.kind, prof))
    argv = commands(case.kind, path, tmp_path, prof)[command]
    code, out, err = run_lr(*argv)
    if case.ok or command in TOLERATES.get((case.kind, case.name), ()):
        if command.startswith("collect"):  # reached the engine start: the file was accepted
            assert code == 2 and SENTINEL in err and err.count("\n") == 1, err
        else:
            assert code == 0, err
            assert "Traceback" not in err and "warning" not in err.lower(), err
        return
    assert_one_line_error(code, err, path, case.expect)


# docs/reliability.md's family table: its rows (by their first words) and the Case families each
# row counts.
DOC_ROWS = {"file:": ("file", "empty"), "syntax:": ("syntax",), "truncated": ("truncated",),
            "wrong version": ("version",), "required field": ("missing field",),
            "unknown / extra": ("extra field",), "out of range": ("out of range", "numbers"),
            "wrong type": ("types",), "hand-edited": ("hand-edited",), "absurd": ("absurd values",),
            "accepted": ("accepted",), "**files**": None}
KINDS = ("trace", "scenario", "profile", "dataset")


def doc_table(text: str) -> dict[str, list[int]]:
    """{row prefix: [trace, scenario, profile, data set]} as docs/reliability.md prints it."""
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        for prefix in DOC_ROWS:
            if cells[0].startswith(prefix) and len(cells) == 5:
                rows[prefix] = [0 if c == "-" else int(c.strip("*")) for c in cells[1:]]
    return rows


def test_the_docs_quote_the_matrix():
    """docs/reliability.md and the README quote this matrix's size and its family table as the
    cases above build it: adding or removing a case without updating them fails here."""
    counts = {(c.kind, c.family): 0 for c in ALL_CASES}
    for c in ALL_CASES:
        counts[(c.kind, c.family)] += 1
    families = {f for _, f in counts}
    assert families == {f for fs in DOC_ROWS.values() if fs for f in fs}, "a family the table lacks"
    want = {prefix: [sum(counts.get((k, f), 0) for f in fs) if fs else
                     sum(1 for c in ALL_CASES if c.kind == k) for k in KINDS]
            for prefix, fs in DOC_ROWS.items()}
    doc = (REPO / "docs" / "reliability.md").read_text()
    assert doc_table(doc) == want
    absurd = sum(want["absurd"])
    unreadable = sum(1 for p in MATRIX if p.values[0].name == "unreadable")
    row = f"{N_CASES} files x their commands = {N_RUNS:,} runs ({absurd} absurd-but-valid files among them)"
    assert row in doc
    assert f"builds {N_CASES} files" in doc and f"**{N_RUNS:,} runs**, {len(SUBPROCESS)} also" in doc
    assert f"({unreadable} \"permission denied\" runs" in doc
    readme = (REPO / "README.md").read_text()
    assert f"{N_CASES} bad trace/scenario/profile/data-set files x their commands = {N_RUNS:,} runs" in readme


# A few cases through a real subprocess: nothing but the one line reaches stderr.
SUBPROCESS = [("trace", "not-json", "replay"), ("trace", "missing-steps-tokens", "calibrate"),
              ("trace", "truncated-last-line", "calibrate"), ("scenario", "syntax-error", "simulate"),
              ("scenario", "range-workload.alpha1=1.5", "plan"), ("scenario", "binary-garbage", "simulate"),
              ("profile", "missing-sd.k2", "plan"), ("profile", "binary-garbage", "replay"),
              ("dataset", "missing-answer", "collect"), ("dataset", "binary-garbage", "collect")]


@pytest.mark.parametrize("kind,name,command", SUBPROCESS, ids=["-".join(s) for s in SUBPROCESS])
def test_bad_file_subprocess(kind, name, command, tmp_path, request):
    case = next(c for c in ALL_CASES if c.kind == kind and c.name == name)
    prof = request.getfixturevalue("valid_profile") if kind in ("profile", "trace") else None
    path = build(case, tmp_path, valid_bytes(kind, prof))
    argv = [str(a) for a in commands(kind, path, tmp_path, prof)[command]]
    proc = subprocess.run([sys.executable, "-m", "cli", *argv], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert_one_line_error(proc.returncode, proc.stderr, path, case.expect)
