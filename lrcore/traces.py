"""Trace files: the contract between the real backend (writes) and the simulator (reads).

A trace file is JSONL, one record per (problem_id, sample, mode), validated against
`trace_schema.json` plus a few cross-field rules JSON Schema cannot express (intervals with
start <= end, consecutive step indices, token sums, acceptance counts). traces/README.md
documents every field.

Durability: `TraceWriter` appends each record as one `write()` of a complete line, then flushes
and fsyncs, so a crash can only leave a partial *last* line. `read_traces` reports such a tail;
`TraceWriter(path, resume=True)` cuts it away (saving the fragment beside the file), never
touching a complete record, and refuses to write a (problem_id, sample, mode) twice.

Versions: `schema_version` is an integer. Additive, optional fields keep the version; removing
or renaming a field, changing a type or a meaning bumps it. Readers accept exactly
`SUPPORTED_VERSIONS` and name the version they found otherwise.

Part of lrcore: the real backend (lrreal) writes traces with it, the simulator (lrsim) and
`analysis` read them with it; it imports neither lrsim nor lrreal.
"""
from __future__ import annotations

import fcntl
import json
import math
import os
import time
import warnings
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable

from .errors import UserError
from .limits import MAX_RECORD_STEPS

SCHEMA_VERSION = 1
SUPPORTED_VERSIONS = frozenset({1})
SCHEMA_PATH = Path(__file__).with_name("trace_schema.json")
TIME_TOLERANCE_S = 1e-6  # clock reads of the same instant may differ by float rounding

Key = tuple[str, int, str]  # (problem_id, sample, mode)


class TraceError(UserError):
    """A record that breaks the contract; `where` is "file:line" (or a record description)."""

    def __init__(self, where: str, field_path: str, message: str):
        self.where, self.field, self.detail = where, field_path, message
        super().__init__(f"{where}: field {field_path}: {message}")


class TruncatedTraceWarning(UserWarning):
    """The last line of a trace file is incomplete (a crash mid-write)."""


@dataclass(frozen=True)
class TruncatedTail:
    """An incomplete last line: where it starts (byte offset, 1-based line) and what it holds."""
    path: Path
    line: int
    offset: int
    fragment: bytes

    def describe(self) -> str:
        return (f"{self.path}:{self.line}: truncated last line ({len(self.fragment)} bytes, no "
                f"newline): a crash mid-write; `lr collect --resume` drops it and redoes that record")


@dataclass
class TraceFile:
    path: Path
    records: list[dict] = field(default_factory=list)
    truncated: TruncatedTail | None = None
    end_offset: int = 0  # byte offset just after the last complete line
    missing_newline: bool = False  # the last record is complete but lacks its "\n"


@lru_cache(maxsize=1)
def _validator():
    from jsonschema import Draft202012Validator

    schema = json.loads(SCHEMA_PATH.read_text())
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


@lru_cache(maxsize=1)
def _fast_check():
    from .fastschema import compiled

    return compiled(json.loads(SCHEMA_PATH.read_text()))


def _passes_fast_check(rec: dict) -> bool:
    """The schema compiled to Python (lrcore/fastschema.py): as strict as jsonschema, many times
    faster; a record it refuses goes to jsonschema, which decides and words the error."""
    from fastjsonschema import JsonSchemaException

    try:
        _fast_check()(rec)
    except JsonSchemaException:
        return False
    return True


def record_key(rec: dict) -> Key:
    return (rec["problem_id"], rec["sample"], rec["mode"])


def in_flight(rec: dict) -> int:
    """Requests the record's run kept in flight, itself included: its `load.concurrency`, else
    its run's `--concurrency` flag, else 1 (a record collected alone). The one reader of it for
    the simulator's replays and the analysis."""
    flags = (rec.get("run") or {}).get("flags") or {}
    return int((rec.get("load") or {}).get("concurrency") or flags.get("concurrency") or 1)


def _path_str(parts: Iterable[Any]) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "<record>"


MAX_NUMBER = 1e300  # beyond any time or count; larger integers do not even convert to float


def _non_finite(obj: Any, path: tuple = ()) -> tuple | None:
    if isinstance(obj, float) and not math.isfinite(obj):
        return path
    if isinstance(obj, int) and not isinstance(obj, bool) and abs(obj) > MAX_NUMBER:
        return path
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list) else ()
    for k, v in items:
        bad = _non_finite(v, path + (k,))
        if bad is not None:
            return bad
    return None


def _semantic_errors(rec: dict):
    """Cross-field rules; yields (field path, message)."""

    def interval(obj, where):
        if obj is not None and obj["end"] < obj["start"] - TIME_TOLERANCE_S:
            yield where, f"end {obj['end']} is before start {obj['start']}"
        if obj is not None and obj.get("cached_tokens", 0) > obj.get("prompt_tokens", math.inf):
            yield f"{where}.cached_tokens", (f"{obj['cached_tokens']} > prompt_tokens "
                                             f"{obj['prompt_tokens']} (the cache holds part of the prompt)")

    steps = rec["steps"]
    for i, s in enumerate(steps):
        at = f"steps[{i}]"
        if s["index"] != i:
            yield f"{at}.index", f"is {s['index']}, expected {i} (steps are listed in output order)"
        for part in ("draft", "target", "verify"):
            yield from interval(s[part], f"{at}.{part}")
        for j, c in enumerate(s["cancelled"]):
            yield from interval(c, f"{at}.cancelled[{j}]")
            if "finish" in c:
                yield f"{at}.cancelled[{j}].finish", "a cancelled job did not end by itself: no finish"
        verdict = s["verify"]["verdict"] if s["verify"] else None
        if s["source"] == "draft" and (s["draft"] is None or verdict is not True):
            yield f"{at}.source", "a committed draft step needs a draft span and verify.verdict true"
        # the acceptance protocol (mode "accept") commits the target's step whatever the verdict
        if s["source"] == "target" and verdict is True and rec["mode"] != "accept":
            yield f"{at}.source", "verify.verdict is true, so the committed step must be the draft"
    if steps and sum(s["tokens"] for s in steps) != rec["output_tokens"]:
        yield "output_tokens", (f"is {rec['output_tokens']} but the steps hold "
                                f"{sum(s['tokens'] for s in steps)} tokens")
    acc = rec["step_acceptance"]
    if acc["accepted"] > acc["proposed"]:
        yield "step_acceptance.accepted", f"{acc['accepted']} > proposed {acc['proposed']}"
    if acc["by_depth"]:
        for d, (p, a) in acc["by_depth"].items():
            if a > p:
                yield f"step_acceptance.by_depth.{d}", f"accepted {a} > proposed {p}"
        sums = [sum(v[i] for v in acc["by_depth"].values()) for i in (0, 1)]
        if sums != [acc["proposed"], acc["accepted"]]:
            yield "step_acceptance.by_depth", (f"sums {sums} differ from [proposed, accepted] "
                                               f"{[acc['proposed'], acc['accepted']]}")
    yield from _adaptive_errors(rec)
    sd = rec["sd"]
    if sd is not None:
        if sd["accepted"] > sd["drafted"]:
            yield "sd.accepted", f"{sd['accepted']} > drafted {sd['drafted']}"
        hist = sd["accepted_length_hist"]
        if hist and sum(k * n for k, n in enumerate(hist)) != sd["accepted"]:
            yield "sd.accepted_length_hist", ("sum(k * hist[k]) must equal sd.accepted "
                                              "(hist[k] = verification passes accepting k tokens)")


def _adaptive_errors(rec: dict):
    """The `adaptive` object (modes lr-adaptive, lr+sd-adaptive): decisions numbered 0, 1, ...
    at non-decreasing root positions inside the answer, each choice within the config's bounds."""
    from .modes import ADAPTIVE_MODES

    ad = rec.get("adaptive")
    if ad is None:
        return
    if rec["mode"] not in ADAPTIVE_MODES:
        yield "adaptive", (f"only records of {', '.join(ADAPTIVE_MODES)} carry adaptive decisions; "
                           f"this one is mode {rec['mode']}")
        return
    cfg, n_steps, last = ad["config"], len(rec["steps"]), 0
    for i, d in enumerate(ad["decisions"]):
        at = f"adaptive.decisions[{i}]"
        if d["index"] != i:
            yield f"{at}.index", f"is {d['index']}, expected {i} (decisions are listed in order)"
        if d["position"] < last:
            yield f"{at}.position", f"{d['position']} is before the previous decision's {last}"
        if d["position"] > n_steps:
            yield f"{at}.position", f"{d['position']} is past the answer's {n_steps} steps"
        last = d["position"]
        if d["depth"] > cfg["max_depth"]:
            yield f"{at}.depth", f"{d['depth']} is over config.max_depth {cfg['max_depth']}"
        for key, allowed in (("width", cfg["widths"]), ("k2", cfg["k2s"])):
            if d[key] not in allowed:
                yield f"{at}.{key}", f"{d[key]} is not one of config.{key}s {allowed}"


def validate_record(rec: Any, where: str | None = None) -> dict:
    """Check one record against the schema and the cross-field rules; raise TraceError."""
    if not isinstance(rec, dict):
        raise TraceError(where or "record", "<record>", f"expected a JSON object, got {type(rec).__name__}")
    if where is None:
        where = "record " + ", ".join(f"{k}={rec.get(k)!r}" for k in ("problem_id", "sample", "mode"))
    version = rec.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool) or version not in SUPPORTED_VERSIONS:
        hint = ("it is newer than this toolkit: upgrade it" if isinstance(version, int)
                and version > max(SUPPORTED_VERSIONS) else "not a trace of a supported version")
        raise TraceError(where, "schema_version",
                         f"is {version!r}; this toolkit reads {sorted(SUPPORTED_VERSIONS)} ({hint})")
    steps = rec.get("steps")
    if isinstance(steps, list) and len(steps) > MAX_RECORD_STEPS:  # before the (slow) schema walk
        raise TraceError(where, "steps", f"{len(steps):,} steps in one record is over the cap of "
                                         f"{MAX_RECORD_STEPS:,} (MAX_RECORD_STEPS in lrcore/limits.py)")
    bad = _non_finite(rec)
    if bad is not None:
        raise TraceError(where, _path_str(bad), "is NaN, infinite or beyond 1e300 (numbers must be "
                                                "finite and in range)")
    errors = [] if _passes_fast_check(rec) else list(_validator().iter_errors(rec))
    if errors:
        from jsonschema.exceptions import best_match

        e = best_match(errors)
        path, message = list(e.absolute_path), e.message
        if e.validator == "required" and isinstance(e.instance, dict):
            missing = [k for k in e.validator_value if k not in e.instance]
            path, message = path + missing[:1], "is required but missing"
        raise TraceError(where, _path_str(path), message)
    for path, message in _semantic_errors(rec):
        raise TraceError(where, path, message)
    return rec


class _DuplicateKey(ValueError):
    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def _unique_keys(pairs: list) -> dict:
    """json object_pairs_hook: a key given twice (a hand edit) is an error, not "last one wins"."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set = set()
        raise _DuplicateKey(next(k for k, _ in pairs if k in seen or seen.add(k)))
    return obj


def _parse_line(raw: bytes, where: str):
    try:
        return json.loads(raw, object_pairs_hook=_unique_keys)
    except _DuplicateKey as e:
        raise TraceError(where, e.key, "appears twice in one JSON object (a hand edit?); keep "
                                       "one") from None
    except RecursionError:
        raise TraceError(where, "<line>", "JSON nested too deeply to be a trace record") from None
    except ValueError as e:
        if isinstance(e, json.JSONDecodeError) or "digits" not in str(e):
            raise
        # Python refuses to convert an integer of more than 4300 digits (sys.int_info)
        raise TraceError(where, "<line>", "holds an integer of more than 4300 digits; numbers "
                                          "must be finite and in range") from None


def _read_bytes(path: Path) -> bytes:
    from .limits import MAX_TRACE_BYTES, read_capped

    if path.is_dir():
        raise UserError(f"{path}: is a directory, not a trace file (JSONL)")
    try:
        return read_capped(path, MAX_TRACE_BYTES, "trace file")  # /dev/zero: an error, not OOM
    except OSError as e:
        raise UserError(f"{path}: cannot read trace file ({e.strerror or e})") from None


def _scan(path: Path) -> TraceFile:
    """Parse and validate every complete line; detect an incomplete last line."""
    tf = TraceFile(path=path)
    data = _read_bytes(path)
    offset, line_no = 0, 0
    while offset < len(data):
        line_no += 1
        nl = data.find(b"\n", offset)
        if nl < 0:  # no newline: the writer crashed mid-line (it always writes line + "\n")
            try:
                rec = _parse_line(data[offset:], f"{path}:{line_no}")
            except TraceError:
                raise
            except ValueError:  # a strict prefix of a JSON object never parses
                tf.truncated = TruncatedTail(path, line_no, offset, data[offset:])
                break
            # A whole JSON line that only lacks its "\n" (edited by hand): keep it if valid.
            tf.records.append(validate_record(rec, f"{path}:{line_no}"))
            tf.missing_newline = True
            tf.end_offset = len(data)
            break
        raw = data[offset:nl]
        where = f"{path}:{line_no}"
        if raw.strip():
            try:
                rec = _parse_line(raw, where)
            except (json.JSONDecodeError, UnicodeDecodeError) as e:
                raise TraceError(where, "<line>", f"not valid JSON ({e}); the file is corrupt, not "
                                                  "merely truncated: fix or remove this line") from None
            tf.records.append(validate_record(rec, where))
        offset = nl + 1
        tf.end_offset = offset
    seen: dict[Key, int] = {}
    for i, rec in enumerate(tf.records):
        k = record_key(rec)
        if k in seen:
            raise TraceError(f"{path}", "problem_id/sample/mode",
                             f"{k} is recorded twice (records {seen[k] + 1} and {i + 1})")
        seen[k] = i
    return tf


def load_traces(path: str | os.PathLike) -> TraceFile:
    """All valid records plus a description of a truncated tail (if any)."""
    p = Path(path)
    if not p.exists():
        raise UserError(f"{p}: trace file not found")
    return _scan(p)


def read_traces(path: str | os.PathLike, strict: bool = False) -> list[dict]:
    """Validated records of a trace file. A truncated last line is reported with a
    TruncatedTraceWarning (strict=True: a UserError) and skipped; any other bad line raises
    a UserError naming file:line:field."""
    tf = load_traces(path)
    if tf.truncated is not None:
        if strict:
            raise UserError(tf.truncated.describe())
        warnings.warn(tf.truncated.describe(), TruncatedTraceWarning, stacklevel=2)
    return tf.records


class TraceWriter:
    """Append-only, crash-safe writer of one trace file (exclusive while open).

    resume=False refuses an existing non-empty file; resume=True validates it, keeps every
    complete record, cuts a truncated tail (saved to `<file>.truncated-<unix time>`), and
    `completed_keys()` tells the collector what to skip.
    """

    def __init__(self, path: str | os.PathLike, resume: bool):
        self.path = Path(path)
        self._keys: set[Key] = set()
        self.existing_flags: list[tuple[str, dict]] = []
        self.existing_runs: list[tuple[str, dict]] = []
        self.dropped_tail: TruncatedTail | None = None
        if self.path.is_dir():
            raise UserError(f"{self.path}: is a directory; --out needs a trace file (JSONL)")
        if self.path.exists() and self.path.stat().st_size > 0 and not resume:
            raise UserError(f"{self.path}: trace file already exists; pass --resume to continue "
                            "it or choose another output file")
        created = not self.path.exists()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        except OSError as e:
            raise UserError(f"{self.path}: cannot open trace file for writing ({e.strerror or e})") from None
        if created:  # make the new directory entry durable too
            dir_fd = os.open(self.path.parent, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._fd)
            raise UserError(f"{self.path}: another process is writing this trace file") from None
        try:
            tf = _scan(self.path)
            self._keys = {record_key(r) for r in tf.records}
            # (mode, run) of every record already in the file: `lr collect --resume` refuses to
            # append records made with other settings (lrreal/resume.py: run.flags, and
            # run.judge_prompt for the LLM judge's template); existing_flags: (mode, run.flags)
            self.existing_runs = [(r["mode"], r.get("run") or {}) for r in tf.records]
            self.existing_flags = [(m, run.get("flags") or {}) for m, run in self.existing_runs]
            if tf.truncated is not None:
                self._drop_tail(tf.truncated, tf.end_offset)
            elif tf.missing_newline:
                os.write(self._fd, b"\n")
                os.fsync(self._fd)
        except BaseException:
            self.close()
            raise

    def _drop_tail(self, tail: TruncatedTail, end_offset: int) -> None:
        assert tail.offset == end_offset  # only bytes after the last complete line go
        saved = self.path.with_name(f"{self.path.name}.truncated-{int(time.time())}")
        saved.write_bytes(tail.fragment)
        os.ftruncate(self._fd, end_offset)
        os.fsync(self._fd)
        self.dropped_tail = tail
        warnings.warn(f"{tail.describe()} (dropped; fragment saved to {saved})",
                      TruncatedTraceWarning, stacklevel=3)

    def completed_keys(self) -> set[Key]:
        return set(self._keys)

    def write(self, rec: dict) -> None:
        if self._fd < 0:
            raise ValueError("TraceWriter is closed")
        validate_record(rec)
        key = record_key(rec)
        if key in self._keys:
            raise UserError(f"{self.path}: record {key} (problem_id, sample, mode) is already in "
                            "the file; refusing to write a duplicate")
        line = (json.dumps(rec, ensure_ascii=False, allow_nan=False, separators=(",", ":")) + "\n").encode()
        view = memoryview(line)
        start = os.lseek(self._fd, 0, os.SEEK_END)
        try:
            while view:  # os.write may write less than asked (signals, pipes); finish the line
                view = view[os.write(self._fd, view):]
            os.fsync(self._fd)
        except OSError as e:  # a full disk, a quota, an I/O error: keep every complete record
            try:
                os.ftruncate(self._fd, start)  # drop the partial line (else --resume drops it)
            except OSError:
                pass
            raise UserError(f"{self.path}: cannot write a trace record ({e.strerror or e}); the "
                            f"{len(self._keys)} record(s) already in the file are kept: free space "
                            "and run again with --resume") from None
        self._keys.add(key)

    def close(self) -> None:
        if self._fd >= 0:
            fd, self._fd = self._fd, -1
            os.close(fd)  # also releases the flock

    def __enter__(self) -> "TraceWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
