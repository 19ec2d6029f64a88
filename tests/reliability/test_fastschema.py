"""The fast schema check (lrcore/fastschema.py) is at least as strict as jsonschema, so skipping
jsonschema for what it accepts changes no verdict: keyword by keyword on edge values, on the
committed traces (valid: the fast check accepts them), and on seeded mutations of real records
(whatever the fast check accepts, jsonschema accepts)."""
import copy
import json
import random
from pathlib import Path

import fastjsonschema
import jsonschema
import pytest

from lrcore import traces as tr
from lrcore.fastschema import DRAFT7_SAME, to_draft7

ROOT = Path(__file__).resolve().parents[2]
EDGE = (1, 1.0, True, False, 0, -1, 1.5, 1e300, 2 ** 70, "1", "", "abc", "ab", [1], [1.0], [True],
        [1, 2], [1, "a"], [], {"1": 1}, {"a": 1}, {"a": 1.0}, {"b": 1}, {}, None)


@pytest.mark.parametrize("schema", [
    {"type": "integer"}, {"type": "number"}, {"type": "string"}, {"type": "boolean"}, {"type": "null"},
    {"type": "array"}, {"type": "object"}, {"type": ["integer", "null"]}, {"type": "integer", "minimum": 0},
    {"maximum": 1}, {"exclusiveMinimum": 0}, {"exclusiveMaximum": 1}, {"minLength": 1}, {"maxLength": 2},
    {"pattern": "^[0-9]+$"}, {"minItems": 1}, {"maxItems": 1}, {"const": 1}, {"enum": [1, "a", None]},
    {"required": ["a"]}, {"properties": {"a": {"type": "integer"}}},
    {"properties": {"a": {"type": "integer"}}, "additionalProperties": False},
    {"propertyNames": {"pattern": "^[0-9]+$"}},
    {"type": "array", "prefixItems": [{"type": "integer"}], "maxItems": 1},
    {"type": "array", "prefixItems": [{"type": "integer"}], "items": {"type": "string"}},
    {"$defs": {"n": {"type": "integer"}}, "properties": {"a": {"$ref": "#/$defs/n"}}},
    # keywords beside a $ref apply in 2020-12 (draft 7 ignores them: the translation's allOf)
    {"$defs": {"n": {"minimum": 0}}, "properties": {"a": {"type": "integer", "$ref": "#/$defs/n"}}},
    {"$defs": {"o": {"properties": {"a": {"type": "integer"}}}}, "type": "object", "$ref": "#/$defs/o"},
])
def test_each_keyword_judges_edge_values_as_jsonschema_does(schema):
    fast = fastjsonschema.compile(to_draft7(schema), use_default=False)
    slow = jsonschema.Draft202012Validator(schema)
    for x in EDGE:
        try:
            fast(x)
            ok = True
        except fastjsonschema.JsonSchemaException:
            ok = False
        assert ok == slow.is_valid(x), (schema, x)


def test_a_keyword_without_a_checked_equivalent_is_refused():
    with pytest.raises(ValueError, match="unevaluatedProperties"):
        to_draft7({"type": "object", "unevaluatedProperties": False})
    assert "unevaluatedProperties" not in DRAFT7_SAME


def test_the_trace_schema_translates_and_its_draft_is_2020_12():
    schema = json.loads(tr.SCHEMA_PATH.read_text())
    assert schema["$schema"].endswith("2020-12/schema")
    assert "prefixItems" not in json.dumps(to_draft7(schema))


def _records():
    """One record of each committed trace file under traces/samples and traces/corpus (small,
    single-request records of every mode) and of each load corpus's levels."""
    paths = sorted((ROOT / "traces").glob("samples/*.jsonl")) + sorted((ROOT / "traces").glob("corpus/*/*.jsonl"))
    paths += sorted((ROOT / "traces").glob("load*/gsm8k/*/*.jsonl"))[::7]
    out = []
    for p in paths:
        with p.open() as f:
            out.append(json.loads(f.readline()))
    return out


def test_committed_records_pass_the_fast_check():
    recs = _records()
    assert len(recs) > 20 and len({r["mode"] for r in recs}) >= 4
    assert all(tr._passes_fast_check(r) for r in recs)


def _mutate(rec, rnd):
    """One seeded damage somewhere in the record: a wrong type, a negative or fractional number,
    a removed key, an extra key, an emptied or stretched list."""
    rec = copy.deepcopy(rec)
    nodes = [(None, None, rec)]
    i = 0
    while i < len(nodes):
        _, _, v = nodes[i]
        items = v.items() if isinstance(v, dict) else enumerate(v) if isinstance(v, list) else ()
        nodes += [(v, k, c) for k, c in items]
        i += 1
    parent, key, value = rnd.choice(nodes[1:])
    kind = rnd.randrange(7)
    if kind == 0:
        parent[key] = rnd.choice(["x", None, True, [], {}, 1.5])
    elif kind == 1 and isinstance(value, (int, float)) and not isinstance(value, bool):
        parent[key] = -1 - value
    elif kind == 2 and isinstance(value, int) and not isinstance(value, bool):
        parent[key] = value + 0.5
    elif kind == 3 and isinstance(parent, dict):
        del parent[key]
    elif kind == 4 and isinstance(value, dict):
        value["unexpected_field"] = 1
    elif kind == 5 and isinstance(value, list):
        value.clear()
    elif kind == 6 and isinstance(value, list):
        value.extend(copy.deepcopy(value[:1]) * 3 or [1, 2, 3])
    else:
        parent[key] = str(value)
    return rec


def test_what_the_fast_check_accepts_jsonschema_accepts():
    slow = tr._validator()
    rnd = random.Random(20261128)
    recs = [r for r in _records() if len(json.dumps(r)) < 60_000]   # jsonschema's walk is the cost
    refused = 0
    for n in range(600):
        bad = _mutate(rnd.choice(recs), rnd)
        if tr._passes_fast_check(bad):
            assert slow.is_valid(bad), n
        else:
            refused += 1
            assert not slow.is_valid(bad), n      # and here they agree too: no false alarm
    assert refused > 200


def test_the_read_benchmark_is_rendered_and_the_fast_check_pays():
    """benchmarks/results/trace_read.md is its JSON rendered, and what the README says of it:
    the compiled check first reads every measured file in less CPU than jsonschema alone, the
    largest records (open-loop, hundreds of forward passes each) the most."""
    from benchmarks import bench_trace_read as br

    doc = json.loads(br.OUT.read_text())
    assert br.OUT.with_suffix(".md").read_text() == br.render(doc)
    assert tuple(doc["files"]) == br.FILES
    ratio = {f: r["jsonschema"] / r["fast"] for f, r in doc["files"].items()}
    assert min(ratio.values()) > 2
    assert (round(min(ratio.values()), 1), round(max(ratio.values()), 1)) == (8.4, 9.2)   # README
