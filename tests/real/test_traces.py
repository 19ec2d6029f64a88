"""Trace contract: schema round trip, crash-safe append, resume, duplicates, precise errors."""
from __future__ import annotations

import copy
import json
import warnings

import pytest

from lrcore import traces
from lrcore.errors import UserError
from lrcore.traces import TraceError, TraceWriter, TruncatedTraceWarning, read_traces, validate_record


def make_record(problem_id="gsm8k/0", sample=0, mode="lr") -> dict:
    """A small but complete LR record: one accepted draft step, one rejected (target) step."""
    return {
        "schema_version": 1,
        "run": {"flags": {"mode": mode, "depth": 2, "width": 1}, "seeds": {"run_seed": 0},
                "models": {"target": {"path": "/m/t", "sha256": "ab" * 32},
                           "draft": {"path": "/m/d", "sha256": None}},
                "vllm_version": "0.32.0", "hardware": {"cpu": "x86_64", "cores": 2}},
        "mode": mode, "problem_id": problem_id, "sample": sample,
        "wall_time_s": 3.5, "output_tokens": 50, "correct": True,
        "steps": [
            {"index": 0, "source": "draft", "tokens": 20, "depth": 1,
             "draft": {"start": 0.0, "end": 1.0, "tokens": 20},
             "target": {"start": 0.1, "end": 1.5, "tokens": 22},
             "verify": {"start": 1.5, "end": 1.6, "verdict": True, "method": "judge",
                        "score": None, "shortcut": False, "error": None},
             "cancelled": []},
            {"index": 1, "source": "target", "tokens": 30, "depth": 1,
             "draft": {"start": 1.0, "end": 2.0, "tokens": 25},
             "target": {"start": 1.6, "end": 3.0, "tokens": 30},
             "verify": {"start": 3.0, "end": 3.1, "verdict": False, "method": "judge",
                        "score": 0.1, "shortcut": False, "error": None},
             "cancelled": [{"kind": "draft", "start": 2.0, "end": 3.1, "tokens": 12, "depth": 2}]},
        ],
        "engine_stats": {"target": {"forward_passes": [{"batch_size": 2, "tokens_scheduled": 2,
                                                        "duration_s": 0.4}], "aggregate": None},
                         "draft": {"forward_passes": None, "aggregate": {"generation_tokens": 57}}},
        "sd": None,
        "step_acceptance": {"proposed": 2, "accepted": 1, "by_depth": {"1": [2, 1]}},
    }


def test_valid_record_round_trip(tmp_path):
    path = tmp_path / "t.jsonl"
    recs = [make_record(sample=s) for s in range(3)] + [make_record(mode="ar") | {"sd": None}]
    with TraceWriter(path, resume=False) as w:
        for r in recs:
            w.write(r)
        assert w.completed_keys() == {("gsm8k/0", s, "lr") for s in range(3)} | {("gsm8k/0", 0, "ar")}
    assert read_traces(path) == recs
    assert path.read_bytes().count(b"\n") == 4


def test_schema_file_is_a_valid_draft_2020_12_schema():
    from jsonschema import Draft202012Validator

    Draft202012Validator.check_schema(json.loads(traces.SCHEMA_PATH.read_text()))


def test_spans_may_say_their_prompt_and_prefix_cache_hit():
    rec = make_record()
    rec["steps"][0]["target"] |= {"prompt_tokens": 120, "cached_tokens": 96}
    rec["steps"][1]["cancelled"][0] |= {"prompt_tokens": 140, "cached_tokens": 128}
    validate_record(rec)          # optional and additive: older records without them stay valid
    validate_record(make_record())


def test_spans_may_say_why_their_engine_request_ended():
    """`finish` on a span or a discarded (finished, unused) job: stop, eos or length; never on a
    cancelled job (it did not end by itself), never another word."""
    rec = make_record()
    rec["steps"][0]["target"]["finish"] = "stop"
    rec["steps"][1]["target"]["finish"] = "eos"
    rec["steps"][1]["discarded"] = [{"kind": "target", "start": 1.0, "end": 2.0, "tokens": 9,
                                     "depth": 2, "prompt_tokens": 140, "cached_tokens": 128,
                                     "finish": "length"}]
    validate_record(rec)
    for pick, value in ((lambda r: r["steps"][0]["draft"], "abort"),
                        (lambda r: r["steps"][1]["cancelled"][0], "stop"),
                        (lambda r: r["steps"][1]["discarded"][0], "error")):
        bad = copy.deepcopy(rec)
        pick(bad)["finish"] = value
        with pytest.raises(TraceError, match="finish"):
            validate_record(bad)


def test_sd_record_with_histogram_validates():
    rec = make_record(mode="sd")
    rec["sd"] = {"drafted": 16, "accepted": 5, "accepted_length_hist": [1, 1, 2, 0, 0]}
    validate_record(rec)  # 4 verification passes: 0*1 + 1*1 + 2*2 = 5 accepted draft tokens
    bad = copy.deepcopy(rec)
    bad["sd"]["accepted_length_hist"] = [0, 0, 0, 0, 1]  # one pass accepting 4 != 5
    with pytest.raises(TraceError, match=r"field sd\.accepted_length_hist"):
        validate_record(bad)


@pytest.mark.parametrize("mutate, field", [
    (lambda r: r.pop("wall_time_s"), "wall_time_s"),
    (lambda r: r.update(mode="fast"), "mode"),
    (lambda r: r.update(sample=-1), "sample"),
    (lambda r: r.update(correct="yes"), "correct"),
    (lambda r: r["steps"][1]["verify"].update(verdict="no"), "steps[1].verify.verdict"),
    (lambda r: r["steps"][0].update(source="judge"), "steps[0].source"),
    (lambda r: r["steps"][0]["draft"].pop("tokens"), "steps[0].draft.tokens"),
    (lambda r: r["steps"][1]["cancelled"][0].update(kind="x"), "steps[1].cancelled[0].kind"),
    (lambda r: r["engine_stats"]["target"]["forward_passes"][0].update(batch_size=1.5),
     "engine_stats.target.forward_passes[0].batch_size"),
    (lambda r: r["run"].pop("seeds"), "run.seeds"),
    (lambda r: r["run"]["models"]["draft"].pop("sha256"), "run.models.draft.sha256"),
    (lambda r: r["step_acceptance"]["by_depth"].update({"x": [1, 1]}), "step_acceptance.by_depth"),
    # cross-field rules
    (lambda r: r["steps"][0]["draft"].update(end=-0.5, start=0.5) or r["steps"][0]["draft"].update(end=0.2),
     "steps[0].draft"),
    (lambda r: r["steps"][1].update(index=5), "steps[1].index"),
    (lambda r: r.update(output_tokens=49), "output_tokens"),
    (lambda r: r["steps"][1]["verify"].update(verdict=True), "steps[1].source"),
    (lambda r: r["steps"][0]["verify"].update(verdict=False), "steps[0].source"),
    (lambda r: r["step_acceptance"].update(accepted=3), "step_acceptance.accepted"),
    (lambda r: r["step_acceptance"].update(proposed=3), "step_acceptance.by_depth"),
    (lambda r: r.update(wall_time_s=float("nan")), "wall_time_s"),
    (lambda r: r["steps"][0]["target"].update(prompt_tokens=-1, cached_tokens=0),
     "steps[0].target.prompt_tokens"),
    (lambda r: r["steps"][0]["target"].update(prompt_tokens=64, cached_tokens=96),
     "steps[0].target.cached_tokens"),
])
def test_schema_violations_name_the_field(mutate, field):
    rec = make_record()
    mutate(rec)
    with pytest.raises(TraceError) as ei:
        validate_record(rec)
    assert ei.value.field == field, str(ei.value)
    assert f"field {field}" in str(ei.value)
    assert isinstance(ei.value, UserError)


def test_read_names_file_line_and_field(tmp_path):
    path = tmp_path / "t.jsonl"
    bad = make_record(sample=1)
    bad["steps"][0]["tokens"] = "20"
    path.write_text(json.dumps(make_record()) + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(UserError, match=rf"^{path}:2: field steps\[0\]\.tokens: '20' is not of type 'integer'"):
        read_traces(path)


def test_wrong_version_is_rejected_with_a_hint(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(make_record() | {"schema_version": 2}) + "\n")
    with pytest.raises(UserError, match=rf"{path}:1: field schema_version: is 2; .*newer"):
        read_traces(path)
    path.write_text(json.dumps({k: v for k, v in make_record().items() if k != "schema_version"}) + "\n")
    with pytest.raises(UserError, match=rf"{path}:1: field schema_version: is None"):
        read_traces(path)


def test_corrupt_middle_line_is_an_error_not_a_truncation(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(make_record()) + "\n{\"schema_ver\n" + json.dumps(make_record(sample=2)) + "\n")
    with pytest.raises(UserError, match=rf"{path}:2: field <line>: not valid JSON"):
        read_traces(path)
    with pytest.raises(UserError, match=rf"{path}:2"):
        TraceWriter(path, resume=True)
    assert path.read_text().count("\n") == 3  # untouched


def _crashed_file(tmp_path, n=2):
    path = tmp_path / "t.jsonl"
    with TraceWriter(path, resume=False) as w:
        for s in range(n):
            w.write(make_record(sample=s))
    complete = path.read_bytes()
    line = json.dumps(make_record(sample=n)).encode()
    with open(path, "ab") as f:
        f.write(line[: len(line) // 2])  # the crash: half a line, no newline
    return path, complete


def test_truncated_last_line_is_reported(tmp_path):
    path, _ = _crashed_file(tmp_path)
    with pytest.warns(TruncatedTraceWarning, match=rf"{path}:3: truncated last line"):
        recs = read_traces(path)
    assert [r["sample"] for r in recs] == [0, 1]
    with pytest.raises(UserError, match="truncated last line"):
        read_traces(path, strict=True)
    tf = traces.load_traces(path)
    assert tf.truncated is not None and tf.truncated.line == 3


def test_resume_drops_only_the_truncated_tail(tmp_path):
    path, complete = _crashed_file(tmp_path)
    with pytest.warns(TruncatedTraceWarning, match="dropped; fragment saved"):
        w = TraceWriter(path, resume=True)
    with w:
        assert path.read_bytes() == complete  # complete records untouched, byte for byte
        assert w.completed_keys() == {("gsm8k/0", 0, "lr"), ("gsm8k/0", 1, "lr")}
        w.write(make_record(sample=2))
    assert [r["sample"] for r in read_traces(path)] == [0, 1, 2]
    saved = list(tmp_path.glob("t.jsonl.truncated-*"))
    assert len(saved) == 1 and saved[0].read_bytes().startswith(b'{"schema_version"')


def test_complete_record_missing_only_its_newline_is_kept(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(make_record()) + "\n" + json.dumps(make_record(sample=1)))
    assert len(read_traces(path)) == 2
    with TraceWriter(path, resume=True) as w:
        assert len(w.completed_keys()) == 2
        w.write(make_record(sample=2))
    assert [r["sample"] for r in read_traces(path)] == [0, 1, 2]
    # complete JSON without newline that breaks the contract is an error, not a "truncation"
    path.write_text(json.dumps(make_record()) + "\n" + json.dumps(make_record(sample=1) | {"mode": "x"}))
    with pytest.raises(UserError, match=rf"{path}:2: field mode"):
        TraceWriter(path, resume=True)


def test_duplicates_are_refused(tmp_path):
    path = tmp_path / "t.jsonl"
    with TraceWriter(path, resume=False) as w:
        w.write(make_record())
        with pytest.raises(UserError, match="already in the file"):
            w.write(make_record())
        w.write(make_record(mode="lr+sd"))  # another mode is another key
    with TraceWriter(path, resume=True) as w:
        with pytest.raises(UserError, match="duplicate"):
            w.write(make_record())
    assert len(read_traces(path)) == 2
    path.write_text(path.read_text() + json.dumps(make_record()) + "\n")
    with pytest.raises(UserError, match="recorded twice"):
        read_traces(path)


def test_existing_file_needs_resume_and_writers_are_exclusive(tmp_path):
    path = tmp_path / "sub" / "t.jsonl"
    with TraceWriter(path, resume=False) as w:
        w.write(make_record())
        with pytest.raises(UserError, match="another process is writing"):
            TraceWriter(path, resume=True)
    with pytest.raises(UserError, match="--resume"):
        TraceWriter(path, resume=False)
    TraceWriter(tmp_path / "empty.jsonl", resume=False).close()
    TraceWriter(tmp_path / "empty.jsonl", resume=False).close()  # empty file: nothing to lose


def test_invalid_record_is_not_written(tmp_path):
    path = tmp_path / "t.jsonl"
    with TraceWriter(path, resume=False) as w:
        with pytest.raises(TraceError, match=r"record problem_id='gsm8k/0', sample=0, mode='lr': field run\.flags: 'x' is not of type 'object'"):
            rec = make_record()
            rec["run"]["flags"] = "x"
            w.write(rec)
    assert path.read_bytes() == b""


def test_missing_file_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="not found"):
        read_traces(tmp_path / "nope.jsonl")


def test_a_crash_at_any_byte_loses_only_the_record_being_written(tmp_path):
    """Cut a 3-record file at every byte offset (stride 5): resume keeps exactly the records whose
    JSON was complete (a record missing only its newline is kept and the newline added), byte
    for byte, and the next write makes a valid file again."""
    src = tmp_path / "full.jsonl"
    with TraceWriter(src, resume=False) as w:
        for s in range(3):
            w.write(make_record(sample=s))
    data = src.read_bytes()
    ends = [i + 1 for i, b in enumerate(data) if b == ord("\n")]
    path = tmp_path / "cut.jsonl"
    for cut in range(0, len(data) + 1, 5):
        path.write_bytes(data[:cut])
        complete = sum(e - 1 <= cut for e in ends)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TruncatedTraceWarning)
            with TraceWriter(path, resume=True) as w:
                assert path.read_bytes() == (data[:ends[complete - 1]] if complete else b"")
                assert w.completed_keys() == {("gsm8k/0", s, "lr") for s in range(complete)}
                w.write(make_record(sample=9))
        assert [r["sample"] for r in read_traces(path)] == list(range(complete)) + [9]
        for f in tmp_path.glob("cut.jsonl.truncated-*"):
            f.unlink()


def test_shipped_real_traces_satisfy_the_contract():
    """The traces recorded on real engines under traces/ validate (the contract in practice)."""
    from pathlib import Path

    files = sorted((Path(__file__).parents[2] / "traces").rglob("*.jsonl"))
    if not files:
        pytest.skip("no recorded traces under traces/ in this checkout")
    modes = set()
    for f in files:
        tf = traces.load_traces(f)  # raises on any contract violation
        modes |= {r["mode"] for r in tf.records}
        for r in tf.records:
            assert r["run"]["vllm_version"] and r["steps"], f"{f}: {record_key(r)} has no steps"
    assert modes, "recorded traces hold no records"


from lrcore.traces import record_key  # noqa: E402  (used above)
