"""The replay's prefill from the records' own prefix-cache counts: the drafter's first request
prefills what the drafter's cache left of the prompt (not the target's), and each job on the
committed path prefills what the real engine computed for it (traces.spec_prefill)."""
from pathlib import Path

import pytest

from lrcore.traces import read_traces
from lrsim.calib.overheads import step_lengths
from lrsim.sim import scenario
from lrsim.sim.runner import run
from lrsim.sim.traces import TraceWorkload, draft_prompt_cached, span_cache
from lrsim.sim.workload import RequestSpec, Synthetic
from tests.sim.engine_log import submitted

ROOT = Path(__file__).resolve().parents[2]
V2 = ROOT / "traces" / "load-open-v2" / "gsm8k" / "rate0.025-n8" / "lr-d2-emb.jsonl"


def _span(prompt, cached, tokens=10):
    return {"start": 0.0, "end": 1.0, "tokens": tokens, "prompt_tokens": prompt, "cached_tokens": cached}


def _record():
    """Four steps: a target step after the prompt, an accepted draft, a rejected one (committed:
    the target's step), an accepted one."""
    def verify(v):
        return {"start": 1.0, "end": 1.1, "verdict": v}
    steps = [
        {"index": 0, "source": "target", "tokens": 20, "depth": 0, "draft": None,
         "target": _span(100, 96, 20), "verify": None, "cancelled": [],
         "discarded": [{"kind": "draft", **_span(100, 64, 1), "depth": 0}]},
        {"index": 1, "source": "draft", "tokens": 30, "depth": 1, "draft": _span(120, 64, 30),
         "target": _span(120, 96, 28), "verify": verify(True), "cancelled": []},
        {"index": 2, "source": "target", "tokens": 25, "depth": 1, "draft": _span(150, 128, 22),
         "target": {"start": 0.0, "end": 1.0, "tokens": 25}, "verify": verify(False), "cancelled": []},
        {"index": 3, "source": "draft", "tokens": 15, "depth": 1, "draft": _span(175, 160, 15),
         "target": _span(175, 128, 15), "verify": verify(True), "cancelled": []},
    ]
    return {"schema_version": 1, "run": {"flags": {"mode": "lr"}}, "mode": "lr",
            "problem_id": "gsm8k/0", "sample": 0, "steps": steps, "prompt_tokens": 100,
            "step_acceptance": {"by_depth": {"1": [3, 2]}}, "sd": {}}


def test_the_drafters_prompt_hit_is_read_from_its_first_request():
    rec = _record()
    assert draft_prompt_cached(rec) == 64
    req = TraceWorkload([rec]).requests()[0]
    assert (req.prompt_cached, req.draft_cached) == (96, 64)
    assert (req.prompt_uncached, req.draft_prompt_uncached) == (4, 36)
    # no draft span on the prompt (older records, AR): the drafter is taken to hold what the target does
    rec["steps"][0]["discarded"] = []
    rec["steps"][0]["draft"] = None
    assert draft_prompt_cached(rec) is None
    assert TraceWorkload([rec]).requests()[0].draft_cached == 96
    assert RequestSpec(0, 100, [10], prompt_cached=32).draft_prompt_uncached == 68


def test_spec_prefill_is_the_recorded_count_on_the_committed_path_only():
    wl = TraceWorkload([_record()])
    req = wl.requests()[0]
    # (kind, step, the root's position when the job starts, its context ends in a draft)
    assert wl.spec_prefill(req, "target", 0, 0, False) == 4        # the prompt
    assert wl.spec_prefill(req, "target", 1, 1, False) == 24       # after the target's step 0
    assert wl.spec_prefill(req, "draft", 1, 1, False) == 56
    assert wl.spec_prefill(req, "draft", 2, 1, True) == 22         # after the accepted draft 1
    assert wl.spec_prefill(req, "target", 1, 1, True) is None      # a context the record's job had not
    assert wl.spec_prefill(req, "draft", 2, 1, False) is None
    assert wl.spec_prefill(req, "target", 2, 1, True) is None      # the span counts nothing
    assert wl.spec_prefill(req, "draft", 3, 3, False) == 15        # the root after the rejection
    assert wl.spec_prefill(req, "draft", 3, 2, False) is None      # below the rejected position 2
    assert wl.spec_prefill(req, "target", 4, 4, False) is None     # past the record


def test_the_open_loop_drafter_prefills_prompts_the_target_had_cached():
    recs = read_traces(V2)
    drafter = [draft_prompt_cached(r) for r in recs]
    target = [span_cache(r["steps"][0]["target"])[1] for r in recs]
    assert drafter == [0] * len(recs)          # AR never uses the drafter: it saw no prompt before
    # the target's cache held the prompt exactly in the rounds where AR ran the problems first
    def start(r):
        return r["run"]["probe_at_start"]["t"]
    ar_at = {r["run"]["flags"]["load_round"]: start(r) for r in read_traces(V2.with_name("ar.jsonl"))}
    ar_first = [ar_at[r["run"]["flags"]["load_round"]] < start(r) for r in recs]
    assert [t > 0 for t in target] == ar_first and 0 < sum(ar_first) < len(recs)
    lens = step_lengths(recs)
    assert lens["draft_prompt_cached_tokens"] == 0.0
    assert lens["prompt_cached_tokens"] > 0.0
    wl = Synthetic(n_requests=2, steps=3, prompt_tokens=100, prompt_cached=64, draft_prompt_cached=0)
    assert [(r.prompt_uncached, r.draft_prompt_uncached) for r in wl.requests()] == [(36, 100)] * 2
    assert [r.draft_cached for r in wl.iter_requests()] == [0, 0]


def test_a_replayed_record_prefills_what_its_engines_computed():
    """One open-loop record replayed alone on the paper's hardware (a draft much faster than the
    target, so the replay's tree follows the record's): the drafter's prompt-only request and
    every job of the record's committed path prefill what the real engines computed."""
    rec = read_traces(V2)[0]
    cfg = scenario.load("h100-paper")
    cfg.policy, cfg.depth, cfg.width = "lr-async", 2, 1
    cfg.workload = TraceWorkload([rec])
    with submitted() as log:
        _, world = run(cfg)
    drafts = [(job, p) for e, job, p in log if e is world.draft]
    targets = [(job, p) for e, job, p in log if e is world.target]
    prompt_only = [p for job, p in drafts if getattr(job.tag, "position", None) is None]
    assert prompt_only == [rec["prompt_tokens"] - draft_prompt_cached(rec)] == [86]
    # step i's draft is written by a node at position i + 1, its target step by one at i
    replayed = {("draft", job.tag.position - 1): p for job, p in drafts if job.tag is not None}
    replayed |= {("target", job.tag.position): p for job, p in targets}
    steps = [s for s in rec["steps"] if s["tokens"] > 0]
    recorded = {(kind, i): c[0] - c[1] for i, s in enumerate(steps) for kind in ("draft", "target")
                if (c := span_cache(s.get(kind))) is not None}
    assert len(recorded) == 8
    assert {k: replayed.get(k) for k in recorded} == recorded


def test_off_path_jobs_take_their_recorded_prefill_when_asked():
    """TraceWorkload.off_path_prefill: a job after the rejected draft of step 2 (its context the
    draft's) is priced by the count of the discarded or cancelled job of that depth recorded at the
    rejection; off (the default), by the prefix cache's blocks (None here); a depth the record did
    not count stays None."""
    rec = _record()
    rec["steps"][2]["discarded"] = [{"kind": "target", **_span(172, 168, 13), "depth": 1},
                                    {"kind": "draft", **_span(180, 160, 9), "depth": 2}]
    # two jobs under one key: the length and the prefill are the longer one's, not one of each
    rec["steps"][2]["cancelled"] = [{"kind": "draft", **_span(172, 172, 4), "depth": 2},
                                    {"kind": "target", **_span(172, 100, 0), "depth": 1}]
    off, on = TraceWorkload([rec]), TraceWorkload([rec], off_path_prefill=True)
    r_off, r_on = off.requests()[0], on.requests()[0]
    assert off.spec_prefill(r_off, "target", 3, 1, True) is None
    assert on.spec_prefill(r_on, "target", 3, 1, True) == 4            # 172 - 168, depth 1 past step 2
    assert on.spec_prefill(r_on, "target", 3, 1, False) is None        # not the discarded job's context
    assert on.spec_tokens(r_on, "draft", 3, 1) == 9
    assert on.spec_prefill(r_on, "draft", 3, 1, True) == 20            # the discarded draft's: 9 tokens
    assert on.spec_prefill(r_on, "draft", 3, 1, False) is None         # not a context the record's job had
    assert on.spec_tokens(r_on, "target", 3, 1) == 13                  # the empty cancelled job is no length
    assert on.spec_prefill(r_on, "target", 4, 1, True) is None         # depth 2: not recorded
    # on the committed path both read the committed spans
    assert on.spec_prefill(r_on, "draft", 2, 1, True) == off.spec_prefill(r_off, "draft", 2, 1, True) == 22
