"""Trace-driven workload: recorded steps and verdicts replayed through the simulator."""
import json

import pytest

from lrcore.errors import UserError
from lrsim.sim import scenario, traces
from lrsim.sim.runner import run
from lrsim.sim.traces import TraceWorkload


def _record(pid="gsm8k/0", verdicts=(True, False, True), lens=(20, 30, 25)):
    steps = []
    t = 0.0
    for i, (v, n) in enumerate(zip(verdicts, lens)):
        steps.append({"index": i, "source": "draft" if v else "target", "tokens": n, "depth": 1,
                      "draft": {"start": t, "end": t + 0.5, "tokens": n},
                      "target": {"start": t, "end": t + 1.0, "tokens": n},
                      "verify": {"start": t + 1.0, "end": t + 1.1, "verdict": v, "method": "judge",
                                 "score": None, "shortcut": False, "error": None},
                      "cancelled": []})
        t += 1.1
    acc = sum(verdicts)
    return {"schema_version": 1,
            "run": {"flags": {"mode": "lr"}, "seeds": {"run_seed": 0},
                    "models": {"target": {"path": "/m/t", "sha256": None}},
                    "vllm_version": None, "hardware": {"cpu": "x86_64"}},
            "mode": "lr", "problem_id": pid, "sample": 0, "wall_time_s": t,
            "output_tokens": sum(lens), "correct": True, "steps": steps,
            "engine_stats": {}, "sd": {"drafted": 40, "accepted": 10, "accepted_length_hist": [0, 10]},
            "step_acceptance": {"proposed": len(verdicts), "accepted": acc,
                                "by_depth": {"1": [len(verdicts), acc]}},
            "prompt_tokens": 120}


def _write(tmp_path, recs):
    p = tmp_path / "t.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return p


def test_trace_requests_and_replayed_verdicts(tmp_path):
    wl = TraceWorkload.from_file(_write(tmp_path, [_record(), _record("gsm8k/1", (False, False), (10, 12))]))
    reqs = wl.requests()
    assert [r.step_tokens for r in reqs] == [[20, 30, 25], [10, 12]]
    assert reqs[0].prompt_tokens == 120
    r = reqs[0]
    assert [wl.step_accept(r, i, 1) for i in range(3)] == [True, False, True]   # first judgement replays
    assert wl.token_alpha(r) == pytest.approx(0.25)


def test_bad_trace_file_is_a_one_line_error(tmp_path):
    p = _write(tmp_path, [_record()])
    assert traces._read(p)[0]["problem_id"] == "gsm8k/0"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"steps": [{"tokens": "x"}]}\n')
    with pytest.raises(UserError, match="bad.jsonl:1"):
        TraceWorkload.from_file(bad)


def test_trace_workload_runs_through_the_simulator(tmp_path):
    p = _write(tmp_path, [_record(), _record("gsm8k/1", (True, True, False), (15, 15, 40))])
    cfg = scenario.load("h100-paper")
    cfg.workload = TraceWorkload.from_file(p)
    cfg.policy = "lr-sync"
    cfg.k1 = 2
    summary, world = run(cfg)
    assert summary["steps"] == 6 and summary["output_tokens"] == 75 + 70


def test_recorded_arrivals_are_replayed_only_when_asked():
    """An open-loop run's records carry their Poisson arrivals (load.arrival_s): with arrivals=True
    the replay admits each at its own offset from the earliest, and the simulated latency counts
    from there; by default every record arrives at t = 0 (one request alone, a closed block)."""
    recs = [_record("gsm8k/0") | {"load": {"arrival_s": 12.0}},
            _record("gsm8k/1") | {"load": {"arrival_s": 4.5}},
            _record("gsm8k/2")]                       # collected alone: no load object
    assert [r.arrival for r in TraceWorkload(recs).requests()] == [0.0, 0.0, 0.0]
    wl = TraceWorkload(recs, arrivals=True)
    # in arrival order (a streamed run admits them walking the list), each keeping its record's rid
    assert [(r.rid, r.arrival) for r in wl.requests()] == [(1, 0.0), (2, 0.0), (0, 7.5)]
    cfg = scenario.load("h100-paper")
    cfg.policy, cfg.k1 = "lr-sync", 2
    cfg.workload = TraceWorkload(recs[:2], arrivals=True)
    _, world = run(cfg)
    first, second = world.records
    assert (first.arrival, second.arrival) == (7.5, 0.0)
    cfg.workload = TraceWorkload(recs[:1])
    _, alone = run(cfg)
    # 7.5 s apart on an H100, the two never share an iteration: the late one runs as if alone
    assert first.finish - first.arrival == pytest.approx(alone.records[0].finish, rel=1e-9)


def test_scenario_with_trace_workload(tmp_path):
    p = _write(tmp_path, [_record()])
    s = tmp_path / "s.toml"
    text = scenario.resolve_path("h100-paper").read_text()
    head = text.split("[workload]")[0]
    s.write_text(head + f'[workload]\nkind = "trace"\npath = "{p.name}"\n')
    cfg = scenario.load(str(s))
    assert isinstance(cfg.workload, TraceWorkload)
    assert cfg.workload.requests()[0].steps == 3


def _load(arrival_s: float) -> dict:
    """A record's load object as `lr collect --request-rate` writes it (the fields the schema requires)."""
    return {"concurrency": 2, "request_rate": 0.5, "arrival_s": arrival_s, "admitted_s": arrival_s,
            "queue_s": 0.0, "ttft_s": 0.4, "tpot_s": 0.01, "latency_s": 3.3, "in_flight_at_admission": 0}


def test_recorded_arrivals_of_several_runs_are_refused():
    """Each run's clock starts at 0: the rounds of a corpus file replayed with their arrivals
    would be stacked onto one another (six times the load), so that is a one-line error."""
    recs = [_record("gsm8k/0") | {"load": _load(3.0)}, _record("gsm8k/1") | {"load": _load(0.0)}]
    recs[1]["run"] = recs[1]["run"] | {"flags": {"mode": "lr", "load_round": 1}}
    assert [r.arrival for r in TraceWorkload(recs).requests()] == [0.0, 0.0]
    with pytest.raises(UserError, match="2 runs"):
        TraceWorkload(recs, arrivals=True).requests()


def test_scenario_trace_workload_replays_recorded_arrivals_when_asked(tmp_path):
    recs = [_record("gsm8k/0") | {"load": _load(3.0)}, _record("gsm8k/1") | {"load": _load(5.5)}]
    p = _write(tmp_path, recs)
    head = scenario.resolve_path("h100-paper").read_text().split("[workload]")[0]
    for flag, want in (("", [0.0, 0.0]), ("arrivals = true\n", [0.0, 2.5])):
        s = tmp_path / "s.toml"
        s.write_text(head + f'[workload]\nkind = "trace"\npath = "{p.name}"\n{flag}')
        assert [r.arrival for r in scenario.load(str(s)).workload.requests()] == want
    s.write_text(head + f'[workload]\nkind = "trace"\npath = "{p.name}"\narrivals = "yes"\n')
    with pytest.raises(UserError, match="arrivals"):
        scenario.load(str(s))
