"""`lr collect --concurrency / --request-rate / --equal-resources` (lrreal/load.py) on fake
engines: requests really overlap, every record says the load it met, resume and the one-line
errors hold with several requests in flight. The real-engine run is
test_engine_real.py::test_two_requests_in_flight_share_the_real_engines."""
import json

import pytest

from lrcore.errors import UserError
from lrcore.traces import read_traces
from lrreal import binding as binding_mod
from lrreal import collect as collect_mod
from lrreal.load import arrival_offsets


def spec(out, **kw):
    return collect_mod.CollectSpec(**(dict(mode="ar", limit=5, depth=2, max_tokens=120,
                                           out=str(out), probe=False) | kw))


def overlap(recs) -> int:
    """The most records running at one moment (admitted .. admitted + latency - queue)."""
    ev = sorted([(r["load"]["admitted_s"], 1) for r in recs]
                + [(r["load"]["arrival_s"] + r["load"]["latency_s"], -1) for r in recs])
    best = cur = 0
    for _, d in ev:
        cur += d
        best = max(best, cur)
    return best


@pytest.mark.parametrize("mode", ["ar", "lr"])
def test_closed_loop_keeps_n_in_flight_and_records_the_load(fast_collect, mode):
    out = fast_collect
    s = collect_mod.collect(spec(out, mode=mode, concurrency=3))
    assert s.written == 5 and s.failed == []
    recs = read_traces(out)
    assert sorted(r["problem_id"] for r in recs) == sorted({r["problem_id"] for r in recs})
    loads = [r["load"] for r in recs]
    assert all(ld["concurrency"] == 3 and ld["request_rate"] is None for ld in loads)
    assert all(ld["arrival_s"] == 0.0 for ld in loads)            # closed loop: all at the start
    assert max(ld["in_flight_at_admission"] for ld in loads) == 2  # never more than 3 at once
    admitted = sorted(ld["admitted_s"] for ld in loads)
    ends = sorted(ld["arrival_s"] + ld["latency_s"] for ld in loads)
    assert admitted[3] >= ends[0] - 0.005 and admitted[4] >= ends[1] - 0.005  # waited for a slot
    assert admitted[2] < ends[0]                                   # the first three ran together
    assert overlap(recs) == 3
    for r in recs:
        ld = r["load"]
        assert 0 < ld["ttft_s"] <= ld["latency_s"]
        assert ld["latency_s"] == pytest.approx(ld["queue_s"] + r["wall_time_s"], abs=0.05)
        assert ld["tpot_s"] > 0
        assert r.get("probe") is None and r["run"]["flags"]["concurrency"] == 3


def test_one_at_a_time_is_unchanged(fast_collect):
    out = fast_collect
    collect_mod.collect(spec(out, limit=2))
    recs = read_traces(out)
    assert all("load" not in r for r in recs)  # the records of a plain run have no load object
    assert overlap([{"load": {"admitted_s": 0, "arrival_s": 0, "latency_s": 1}}]) == 1


def test_poisson_arrivals_are_seeded_and_recorded(fast_collect):
    out = fast_collect
    s = collect_mod.collect(spec(out, concurrency=8, request_rate=20.0, seed=3))
    assert s.written == 5
    arrivals = sorted(r["load"]["arrival_s"] for r in read_traces(out))
    assert arrivals == pytest.approx(arrival_offsets(5, 20.0, 3))
    assert all(r["load"]["request_rate"] == 20.0 for r in read_traces(out))
    assert arrival_offsets(5, 20.0, 3) == arrival_offsets(5, 20.0, 3) != arrival_offsets(5, 20.0, 4)


def test_arrival_offsets_have_the_requested_rate():
    t = arrival_offsets(4001, 2.0, 0)
    assert t[0] == 0.0 and all(b >= a for a, b in zip(t, t[1:]))
    assert 4000 / t[-1] == pytest.approx(2.0, rel=0.05)
    assert arrival_offsets(3, None, 0) == [0.0, 0.0, 0.0]


def test_resume_under_load_adds_only_the_missing_and_refuses_another_load(fast_collect):
    out = fast_collect
    assert collect_mod.collect(spec(out, limit=3, concurrency=2)).written == 3
    s = collect_mod.collect(spec(out, limit=5, concurrency=2, resume=True))
    assert (s.written, s.skipped) == (2, 3)
    keys = [(r["problem_id"], r["sample"]) for r in read_traces(out)]
    assert len(keys) == len(set(keys)) == 5
    before = out.read_bytes()
    with pytest.raises(UserError, match="made with --concurrency 2; this run has --concurrency 4"):
        collect_mod.collect(spec(out, limit=6, concurrency=4, resume=True))
    assert out.read_bytes() == before


def test_a_failing_request_does_not_stop_the_others(fast_collect, monkeypatch):
    out = fast_collect
    real = collect_mod.Collector.run_one

    async def run_one(self, prob, sample, admission=None):
        if prob.id == read_ids[1]:
            raise RuntimeError("engine hiccup")
        return await real(self, prob, sample, admission)

    from lrreal.datasets import load_problems
    read_ids = [p.id for p in load_problems("gsm8k", 5, 0)]
    monkeypatch.setattr(collect_mod.Collector, "run_one", run_one)
    s = collect_mod.collect(spec(out, concurrency=3))
    assert s.written == 4 and [f["problem_id"] for f in s.failed] == [read_ids[1]]
    assert "engine hiccup" in s.failed[0]["error"]


def test_equal_resources_gives_the_target_the_drafts_cores():
    er = binding_mod.equal_resources_cores
    assert er("auto", "auto", 2) == "0-1"
    assert er("0", "3", 4) == "0,3"
    assert er("0-1", "2-3") == "0-3"
    c = collect_mod.Collector.__new__(collect_mod.Collector)
    c.spec, c.target_path, c.draft_path = spec(None, equal_resources=True, target_cores="0",
                                               draft_cores="1"), "t", None
    assert c.engine_args()["target"].omp_threads_bind == "0-1"
    c.spec = spec(None, target_cores="0", draft_cores="1")
    assert c.engine_args()["target"].omp_threads_bind == "0"


@pytest.mark.parametrize("kw, msg", [
    (dict(concurrency=0), "--concurrency 0: use 1 to 256"),
    (dict(request_rate=-1.0), "--request-rate -1.0"),
    (dict(request_rate=float("nan")), "--request-rate nan"),
    (dict(mode="lr", equal_resources=True), "--equal-resources: for ar and sd"),
])
def test_bad_load_flags_are_refused_before_anything_slow(kw, msg, tmp_path):
    with pytest.raises(UserError, match=msg.replace("(", r"\(")):
        spec(tmp_path / "t.jsonl", **kw).validate()


def test_cli_takes_the_load_flags(fast_collect, run_lr):
    out = fast_collect
    code, stdout, err = run_lr("collect", "--mode", "ar", "--limit", "3", "--max-tokens", "120",
                               "--concurrency", "2", "--rate", "50", "--no-probe", "--out", out,
                               "--json")
    assert code == 0, err
    res = json.loads(stdout)
    assert res["written"] == 3
    assert {r["load"]["request_rate"] for r in read_traces(out)} == {50.0}
    ld = res["summary"][0]["load"]
    assert ld["records"] == 3 and ld["concurrency"] == [2] and ld["request_rate"] == [50.0]
    ttfts = sorted(r["load"]["ttft_s"] for r in read_traces(out))
    assert ld["ttft_p50_s"] == pytest.approx(ttfts[1])
    code, stdout, err = run_lr("collect", "--mode", "ar", "--limit", "4", "--max-tokens", "120",
                               "--concurrency", "2", "--rate", "50", "--no-probe", "--out", out,
                               "--resume")
    assert code == 0, err
    assert "ar under load (concurrency 2, 50 req/s): p50 TTFT" in " ".join(stdout.split())
    code, _, err = run_lr("collect", "--concurrency", "0", "--out", out)
    assert code == 2 and "--concurrency" in err and "Traceback" not in err
