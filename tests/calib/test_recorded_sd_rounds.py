"""TraceWorkload(recorded_sd_rounds="committed"): a committed-path target job of an SD record runs the
passes its recorded span ran in (lrsim.sim.traces.committed_span_passes, spec_rounds), not SD
rounds drawn at the record's one rate; off the committed path, and with the option off, the rounds
are drawn as before; "first" gives the first step's job its recorded passes only."""
import json
from pathlib import Path

import pytest

from lrcore.errors import UserError
from lrsim.calib.profile import Profile, validate_doc
from lrsim.calib.replay import ReplayWorkload
from lrsim.sim.runner import run
from lrsim.sim.traces import TraceWorkload, committed_span_passes

ROOT = Path(__file__).resolve().parents[2]
GAMMA = 6                                   # num_speculative_tokens: k2 = 7


def _pass(start, dur, prefill=0, decode=1):
    return {"start": start, "duration_s": dur, "prefill_requests": prefill, "prefill_tokens": 100 * prefill,
            "decode_requests": decode}


def _record(spans: list[tuple[float, float, int, int, str, bool | None]], text_end: str = ".") -> dict:
    """One lr+sd request alone: per step (start, duration of each of its passes, passes with its
    prefill, tokens, source, verdict), one target span running exactly its passes, one after
    another."""
    passes, steps, t = [], [], 0.0
    for i, (gap, dur, n_pass, tokens, source, verdict) in enumerate(spans):
        t += gap
        start = t
        for k in range(n_pass):
            passes.append(_pass(t, dur, prefill=int(k == 0), decode=int(k > 0)))
            t += dur
        step = {"index": i, "source": source, "tokens": tokens, "text": "x" * tokens + text_end,
                "target": {"start": start - 0.001, "end": t + 0.0005, "tokens": tokens}, "draft": None,
                "verify": None if verdict is None else {"verdict": verdict}}
        if source == "draft":
            step["draft"] = {"tokens": tokens}
        steps.append(step)
    return {"mode": "lr+sd", "problem_id": "gsm8k/0", "sample": 0, "prompt_tokens": 100,
            "run": {"flags": {"num_speculative_tokens": GAMMA, "depth": 2, "width": 1}},
            "wall_time_s": t, "output_tokens": sum(s["tokens"] for s in steps),
            "sd": {"num_drafts": 10, "drafted": 10 * GAMMA, "accepted": 20,
                   "accepted_length_hist": [2, 2, 2, 2, 0, 0, 2]},
            "engine_stats": {"target": {"forward_passes": passes[::-1]}},   # any order
            "steps": steps}


def test_a_spans_passes_count_its_prefilling_pass():
    """committed_span_passes: per kept step, the span's tokens and every pass it ran in, its
    prefill's included (the sum of a request's passes is what the replay's job runs); None for a
    step without a timed span; steps of 0 tokens are not kept."""
    rec = _record([(0.1, 0.2, 5, 8, "target", None), (0.1, 0.2, 3, 6, "draft", True),
                   (0.1, 0.2, 4, 9, "target", False)])
    assert committed_span_passes(rec) == [(8, 5), (6, 3), (9, 4)]
    rec["steps"][1]["target"] = {"tokens": 6}                           # untimed
    rec["steps"].insert(0, {"index": -1, "source": "target", "tokens": 0})
    assert committed_span_passes(rec) == [(8, 5), None, (9, 4)]
    assert committed_span_passes({**rec, "engine_stats": {}}) == [None, None, None]


def test_spec_rounds_gives_the_recorded_passes_on_the_committed_path_only():
    """Step 1 was a draft accepted (its target span ran to compare), step 2 the target's after a
    rejected draft. From a root at 1 the job for 2 is the recorded one; from a root at 0 it lies
    past step 0 (no draft verdict there: the job was speculative) and draws. Another length scales
    the passes; another SD length, the option off or a record without SD draws everywhere."""
    rec = _record([(0.1, 0.2, 5, 8, "target", None), (0.1, 0.2, 3, 6, "draft", True),
                   (0.1, 0.2, 4, 9, "target", False)])
    k2 = GAMMA + 1
    on = TraceWorkload([rec], recorded_sd_rounds="committed")
    (q,) = on.requests()
    rounds = lambda wl, req, p, root, n: wl.spec_rounds(req, p, root, n, k2)  # noqa: E731
    assert [rounds(on, q, p, p, n) for p, n in ((0, 8), (1, 6), (2, 9))] == [5, 3, 4]
    assert rounds(on, q, 2, 1, 9) == 4                   # the accepted draft of 1 leads to it
    assert on.spec_rounds(q, 2, 0, 9, k2) is None         # past the unjudged step 0
    assert on.spec_rounds(q, 3, 3, 5, k2) is None         # no such step
    assert on.spec_rounds(q, 0, 0, 8, k2 + 1) is None     # not the record's SD length
    assert rounds(on, q, 0, 0, 16) == 10 and rounds(on, q, 0, 0, 1) == 1
    off = TraceWorkload([rec])
    (q_off,) = off.requests()
    assert off.spec_rounds(q_off, 0, 0, 8, k2) is None
    no_sd = TraceWorkload([{**rec, "sd": None}], recorded_sd_rounds="committed")
    assert no_sd.spec_rounds(no_sd.requests()[0], 0, 0, 8, k2) is None
    first = TraceWorkload([rec], recorded_sd_rounds="first")
    (q_first,) = first.requests()
    assert [rounds(first, q_first, p, p, n) for p, n in ((0, 8), (1, 6), (2, 9))] == [5, None, None]
    with pytest.raises(UserError, match="recorded_sd_rounds must be one of"):
        TraceWorkload([rec], recorded_sd_rounds="all")


def test_given_rounds_verify_the_given_positions():
    """World.target_job with rounds and positions (recorded rounds): the job runs the rounds, each
    verifying positions / rounds and emitting tokens / rounds; without positions at a proposal
    rate below 1, the stream's last draw's, as lr_sync's shared rounds have."""
    import random
    import types

    import simpy

    from lrsim.sim.tokensd import SDStream
    from lrsim.sim.world import World

    world = World(simpy.Environment(), types.SimpleNamespace(sd_plain_first_pass=True), None, None, None, None, None)
    req = types.SimpleNamespace(rid=0, rng=random.Random(7))
    stream = SDStream(GAMMA + 1, 0.5, hit=0.6)
    job = world.target_job(req, 40, 0, prefill=12, stream=stream, rounds=10, positions=10 + 4 * GAMMA)
    assert (job.total, job.tokens_per_iter, job.emit_per_iter) == (10, pytest.approx(3.4), pytest.approx(4.0))
    drawn = stream.rounds_for(40, req.rng)
    shared = world.target_job(req, 40, 0, stream=stream, rounds=drawn)
    assert shared.tokens_per_iter == pytest.approx(stream.last_positions / drawn)


def _replayed_passes(rec: dict, recorded: bool, seed: int = 0) -> int:
    prof = Profile(validate_doc(json.loads((ROOT / "tests/data/calib/cpu-gsm8k-profile.json").read_text())))
    wl = ReplayWorkload([rec], seed=seed, recorded_sd_rounds="committed" if recorded else "")
    cfg = prof.to_config("lr+sd", workload=wl, depth=2, width=1, k2=GAMMA + 1)
    return run(cfg)[1].target.iterations


def test_a_lone_request_replays_its_recorded_passes():
    """No step ends on a boundary, so nothing is drafted past the prompt and every target job is
    on the committed path: with the option the replay's target passes are the recorded 5 + 7 + 4,
    whatever the seed; drawn at the record's rate the 23 + 29 + 11 tokens take another count."""
    rec = _record([(0.1, 0.2, 5, 23, "target", None), (0.1, 0.2, 7, 29, "target", None),
                   (0.1, 0.2, 4, 11, "target", None)])
    assert [_replayed_passes(rec, True, seed) for seed in (0, 1)] == [16, 16]
    assert _replayed_passes(rec, False) >= 19          # about 2.85 tokens a drawn round: ~22


def test_the_renders_name_the_option():
    """benchmarks/load_replay.sd_rounds_note (bench_load's and bench_replay_passes' renders); the
    loader's use of RECORDED_SD_ROUNDS is tested beside --own-sd-rate's (test_own_sd_rate.py)."""
    import benchmarks.load_replay as lr

    assert lr.sd_rounds_note("") == ""
    assert "(--recorded-sd-rounds first)" in lr.sd_rounds_note("first")
    assert lr.sd_rounds_note("committed").startswith(" Each committed-path target job")


def test_the_summary_totals_the_diagnosis_apart_beside_its_shape():
    """benchmarks/load_summary.shaped: --recorded-sd-rounds (and its first-step variant) follow
    the shaping flag they ran beside, as --own-sd-rate does."""
    from benchmarks.load_summary import shaped

    assert shaped({"batch_factors": True, "recorded_sd_rounds": "committed"}) == "--batch-factors --recorded-sd-rounds"
    assert shaped({"recorded_sd_rounds": "first"}) == "--recorded-sd-rounds first"
    assert shaped({"calibrate_levels": [1, 2, 4, 8], "batch_factors": True, "recorded_sd_rounds": "committed"}) == \
        "--calibrate-levels 1,2,4,8 --batch-factors --recorded-sd-rounds"
    assert shaped({"batch_factors": True, "own_sd_rate": True}) == "--batch-factors --own-sd-rate"
