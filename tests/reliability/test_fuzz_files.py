"""Property-based fuzzing (hypothesis) of the file readers: trace JSONL, scenario TOML,
calibration profile JSON, custom data sets.

The property for every reader: whatever the bytes, it returns parsed content or raises
`UserError` whose message names the file; never any other exception (that would reach the user
as a traceback). Inputs: arbitrary bytes, arbitrary text lines, arbitrary JSON values, and
mutations of a valid file (drop a field, replace a value by any JSON value or an extreme number,
add an unknown key, cut the file at a random byte). Content that loads is also handed to its
first consumer (trace -> TraceWorkload, scenario -> Config.validate, profile -> to_config for
every mode + summary), which must likewise succeed or raise UserError.

Fixed seed (`derandomize=True`) and modest budgets here (CI); benchmarks/bench_fuzz_files.py
runs the same properties with a large budget and counts inputs and failures.
"""
from __future__ import annotations

import copy
import json
import math
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

from lrcore.errors import UserError

tomli_w = pytest.importorskip("tomli_w")

REPO = Path(__file__).resolve().parents[2]
SAMPLE_TRACE = REPO / "traces" / "samples" / "gsm8k-cpu.jsonl"
SCENARIO = REPO / "lrsim" / "scenarios" / "cpu-2core.toml"
WORK = Path(tempfile.mkdtemp(prefix="lr-fuzz-files-"))
COUNTS: dict[str, int] = {}       # inputs tried per property (reported by the last test)
EXAMPLES = 500                    # per property here; the benchmark runs thousands

# ------------------------------------------------------------------------------ valid bases


def _small_record(line: int) -> dict:
    """A valid trace record from the shipped sample, its bulky lists shortened (still valid)."""
    rec = json.loads(SAMPLE_TRACE.read_text().splitlines()[line - 1])
    for eng in rec["engine_stats"].values():
        if isinstance(eng.get("forward_passes"), list):
            eng["forward_passes"] = eng["forward_passes"][:3]
    rec["run"]["flags"] = {k: rec["run"]["flags"][k] for k in ("mode", "depth", "seed")}
    rec.pop("output_text", None)
    for s in rec["steps"]:
        s.pop("text", None)
    return rec


TRACE_BASE = [_small_record(1), _small_record(3), _small_record(7)]   # ar, lr, lr+sd
SCENARIO_BASE = tomllib.loads(SCENARIO.read_text())
DATASET_BASE = [{"id": "a", "question": "What is 2 + 3?", "answer": "5"},
                {"id": "b", "question": "What is 7 * 6?", "answer": 42}]


def _profile_base() -> dict:
    from lrsim.calib.calibrate import calibrate

    return calibrate([SAMPLE_TRACE], select_placement=False)


# ------------------------------------------------------------------------------ strategies

EXTREMES = [0, -1, 1, 2, 2**31, 2**63, -2**63, 10**30, 10**400, 1e308, -1e308, 5e-324, 0.5, -0.0,
            1.5, float("inf"), float("-inf"), float("nan"), True, False, None, "", "0", "1e3",
            " ", "\x00", "é", [], {}, [0], {"": 0}]
JSON_LEAF = (st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12)
             | st.sampled_from(EXTREMES))
JSON_VALUE = st.recursive(JSON_LEAF, lambda c: st.lists(c, max_size=3)
                          | st.dictionaries(st.text(max_size=8), c, max_size=3), max_leaves=8)
TOML_LEAF = (st.booleans() | st.integers() | st.floats() | st.text(max_size=12)   # no null in TOML
             | st.sampled_from([v for v in EXTREMES if v is not None]))
TOML_VALUE = st.recursive(TOML_LEAF, lambda c: st.lists(c, max_size=3)
                          | st.dictionaries(st.text(min_size=1, max_size=8), c, max_size=3),
                          max_leaves=8)


def _paths(obj, prefix=()):
    if prefix:
        yield prefix
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list) else ()
    for k, v in items:
        yield from _paths(v, prefix + (k,))


def _get(obj, path):
    for p in path:
        obj = obj[p]
    return obj


@st.composite
def mutated(draw, base, values, keys=st.text(max_size=10)):
    """`base` with 1-3 random edits: drop, replace (any value / an extreme), add an unknown key."""
    doc = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, 3))):
        paths = list(_paths(doc))
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent, key = _get(doc, path[:-1]), path[-1]
        op = draw(st.sampled_from(["drop", "replace", "extreme", "add"]))
        if op == "drop":
            del parent[key]
        elif op == "replace":
            parent[key] = copy.deepcopy(draw(values))  # copies: EXTREMES holds mutable values
        elif op == "extreme":
            parent[key] = copy.deepcopy(draw(st.sampled_from(EXTREMES).filter(
                lambda v: values is JSON_VALUE or v is not None)))
        else:
            target = parent[key] if isinstance(parent[key], dict) else parent
            if isinstance(target, dict):
                k = draw(keys)
                target[k] = copy.deepcopy(draw(values))
            else:
                target.append(copy.deepcopy(draw(values)))
    return doc


def _cut(draw, data: bytes) -> bytes:
    """Sometimes truncate at a random byte (a crash mid-write, a partial copy)."""
    if data and draw(st.integers(0, 3)) == 0:
        return data[: draw(st.integers(0, len(data) - 1))]
    return data


@st.composite
def trace_files(draw):
    kind = draw(st.sampled_from(["bytes", "lines", "json", "mutated", "mutated", "mutated"]))
    if kind == "bytes":
        return draw(st.binary(max_size=400))
    if kind == "lines":
        return "\n".join(draw(st.lists(st.text(max_size=40), max_size=5))).encode("utf-8", "surrogatepass")
    if kind == "json":
        return b"\n".join(json.dumps(v).encode() for v in draw(st.lists(JSON_VALUE, min_size=1, max_size=3)))
    recs = [copy.deepcopy(r) for r in TRACE_BASE]
    i = draw(st.integers(0, len(recs) - 1))
    recs[i] = draw(mutated(TRACE_BASE[i], JSON_VALUE))
    data = b"".join(json.dumps(r).encode() + b"\n" for r in recs)
    return _cut(draw, data)


@st.composite
def scenario_files(draw):
    kind = draw(st.sampled_from(["bytes", "text", "mutated", "mutated", "mutated", "mutated"]))
    if kind == "bytes":
        return draw(st.binary(max_size=300))
    if kind == "text":
        return draw(st.text(max_size=200)).encode("utf-8", "surrogatepass")
    doc = draw(mutated(SCENARIO_BASE, TOML_VALUE, keys=st.text(min_size=1, max_size=10)))
    return _cut(draw, tomli_w.dumps(doc).encode())


@st.composite
def profile_files(draw, base):
    kind = draw(st.sampled_from(["bytes", "json", "mutated", "mutated", "mutated", "mutated"]))
    if kind == "bytes":
        return draw(st.binary(max_size=300))
    if kind == "json":
        return json.dumps(draw(JSON_VALUE)).encode()
    doc = draw(mutated(base, JSON_VALUE))
    return _cut(draw, json.dumps(doc, indent=1).encode())


@st.composite
def dataset_files(draw):
    kind = draw(st.sampled_from(["bytes", "lines", "mutated", "mutated"]))
    if kind == "bytes":
        return draw(st.binary(max_size=300))
    if kind == "lines":
        return "\n".join(draw(st.lists(st.text(max_size=40), max_size=5))).encode("utf-8", "surrogatepass")
    rows = draw(mutated(DATASET_BASE, JSON_VALUE))
    rows = rows if isinstance(rows, list) else [rows]
    return _cut(draw, b"".join(json.dumps(r).encode() + b"\n" for r in rows))


# ------------------------------------------------------------------------------ properties
# Each check takes one input, returns "ok" or "error" (a UserError naming the file), and lets
# any other exception escape: that is the failure hypothesis then shrinks.

def _named(e: UserError, path: Path) -> str:
    assert str(path) in str(e), f"the error does not name the file: {e}"
    return "error"


def check_trace(data: bytes) -> str:
    from lrcore.traces import read_traces
    from lrsim.sim.traces import TraceWorkload

    path = WORK / "fuzz-trace.jsonl"
    path.write_bytes(data)
    try:
        recs = read_traces(path, strict=True)
        TraceWorkload.from_file(path)
    except UserError as e:
        return _named(e, path)
    assert all(isinstance(r, dict) for r in recs)
    return "ok"


def check_scenario(data: bytes) -> str:
    from lrsim.sim import scenario

    path = WORK / "fuzz-scenario.toml"
    path.write_bytes(data)
    try:
        cfg = scenario.load(str(path))
    except UserError as e:
        return _named(e, path)
    try:
        cfg.validate()
        cfg.c1  # the latency models answer the per-token question every policy asks
    except UserError:
        return "error"
    return "ok"


def check_profile(data: bytes) -> str:
    from lrsim.calib.profile import load_profile

    path = WORK / "fuzz-profile.json"
    path.write_bytes(data)
    try:
        prof = load_profile(path)
    except UserError as e:
        return _named(e, path)
    try:
        prof.summary()
        for mode in ("ar", "sd", "lr", "lr+sd", "lr-sync", "lr-stage"):
            cfg = prof.to_config(mode)
            cfg.c1
    except UserError:
        return "error"
    return "ok"


def check_dataset(data: bytes) -> str:
    from lrreal.datasets import load_problems

    path = WORK / "fuzz-dataset.jsonl"
    path.write_bytes(data)
    try:
        probs = load_problems(str(path))
    except UserError as e:
        return _named(e, path)
    assert probs and all(p.question.strip() and p.answer for p in probs)
    return "ok"


CHECKS = {"trace": check_trace, "scenario": check_scenario, "profile": check_profile,
          "dataset": check_dataset}


def strategies(profile_base: dict) -> dict:
    return {"trace": trace_files(), "scenario": scenario_files(),
            "profile": profile_files(profile_base), "dataset": dataset_files()}


DEEP = 50_000  # nesting that blows Python's recursion limit in a recursive parser
FUZZ = settings(derandomize=True, deadline=None, max_examples=EXAMPLES, database=None,
                suppress_health_check=list(HealthCheck))


def _count(name):
    COUNTS[name] = COUNTS.get(name, 0) + 1


@pytest.fixture(scope="module")
def profile_base():
    return _profile_base()


def test_fuzz_trace_reader():
    @FUZZ
    @given(trace_files())
    @example(b"[" * DEEP + b"]" * DEEP + b"\n")
    @example(json.dumps(TRACE_BASE[1]).encode()[:-5])      # torn last line
    @example(b"\xef\xbb\xbf" + json.dumps(TRACE_BASE[0]).encode() + b"\r\n")
    def prop(data):
        _count("trace")
        check_trace(data)
    prop()


def test_fuzz_scenario_parser():
    @FUZZ
    @given(scenario_files())
    @example(b"a = " + b"[" * DEEP + b"]" * DEEP + b"\n")
    @example(b"a = " + b"{b = " * 5000 + b"1" + b"}" * 5000 + b"\n")
    @example(tomli_w.dumps({**SCENARIO_BASE, "workload": {"kind": "trace", "path": str(WORK)}}).encode())
    @example(tomli_w.dumps({**SCENARIO_BASE, "models": {**SCENARIO_BASE["models"], "target": {
        "devices": ["cpu0"], "latency": {"kind": "table", "decode": [[1, 0]]}}}}).encode())  # c1 = x / 0
    def prop(data):
        _count("scenario")
        check_scenario(data)
    prop()


def test_fuzz_profile_parser(profile_base):
    @FUZZ
    @given(profile_files(profile_base))
    @example(b"[" * DEEP + b"]" * DEEP)
    @example(json.dumps(profile_base).encode())
    @example(json.dumps({**profile_base, "latency": {**profile_base["latency"], "target": {
        "kind": "table", "decode": [[1, 0, 0]]}}}).encode())  # c1 = x / 0
    def prop(data):
        _count("profile")
        check_profile(data)
    prop()


def test_fuzz_dataset_reader():
    @FUZZ
    @given(dataset_files())
    @example(b'{"question": ' + b"[" * DEEP + b"]" * DEEP + b"}\n")
    def prop(data):
        _count("dataset")
        check_dataset(data)
    prop()


def test_fuzz_counts():
    """Inputs tried per reader (printed with `pytest -s`; docs/reliability.md quotes them)."""
    print(f"\nfile fuzzing: {sum(COUNTS.values())} inputs, failures 0: {COUNTS}")
    assert all(n >= EXAMPLES for n in COUNTS.values())
