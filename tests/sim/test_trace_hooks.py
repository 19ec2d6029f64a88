"""What a recorded run tells the LR policies beyond step lengths and verdicts (lrsim/sim/traces.py):
the boundary rule (drafting only after a context that ends on a step boundary: a blank line, or
run.flags.step_stop) and how long each speculative job really ran."""
from __future__ import annotations

from lrsim.calib.replay import ReplayWorkload


def step(i, source, tokens, text, draft=None, target=None, verdict=None, cancelled=(), discarded=()):
    return {"index": i, "source": source, "tokens": tokens, "text": text,
            "draft": None if draft is None else {"start": 0.0, "end": 1.0, "tokens": draft},
            "target": {"start": 0.0, "end": 1.0, "tokens": target or tokens},
            "verify": None if verdict is None else {"verdict": verdict},
            "cancelled": [dict(e, start=0.0, end=1.0) for e in cancelled],
            "discarded": [dict(e, start=0.0, end=1.0) for e in discarded]}


def record(steps, mode="lr", boundary_rule=True):
    return {"mode": mode, "problem_id": "p/0", "sample": 0, "prompt_tokens": 100,
            "run": {"flags": {"boundary_rule": boundary_rule, "depth": 2}},
            "step_acceptance": {"proposed": 0, "accepted": 0, "by_depth": {}},
            "steps": steps, "output_tokens": sum(s["tokens"] for s in steps)}


STEPS = [step(0, "target", 20, "Plan:\n\n"),
         step(1, "target", 60, "First.\n\n", draft=90, verdict=False,
              discarded=[{"kind": "target", "tokens": 9, "depth": 1},
                         {"kind": "draft", "tokens": 8, "depth": 2},
                         {"kind": "target", "tokens": 13, "depth": 2}]),
         step(2, "target", 100, "a long step cut at the token cap", draft=100, verdict=False),
         step(3, "draft", 30, "Then.\n\n", draft=30, target=35, verdict=True),
         step(4, "target", 25, "Done.", draft=20, verdict=False)]


def test_boundary_rule_from_step_texts():
    wl = ReplayWorkload([record(STEPS)])
    req = wl.requests()[0]
    # never after the chat prompt; after step 0 and 1 (blank line); not after the capped step 2
    assert [wl.can_draft(req, i) for i in range(5)] == [False, True, True, False, True]
    off = ReplayWorkload([record(STEPS, boundary_rule=False)])
    assert all(off.can_draft(off.requests()[0], i) for i in range(5))


def test_speculative_lengths_from_the_recorded_jobs():
    wl = ReplayWorkload([record(STEPS)])
    req = wl.requests()[0]
    # on the committed path: the judged draft's and the target step's own lengths
    assert wl.spec_tokens(req, "draft", 1, 1) == 90
    assert wl.spec_tokens(req, "target", 1, 1) == 60
    assert wl.spec_tokens(req, "target", 3, 3) == 35       # the reference target of an accepted step
    # below the rejected position 1: what the discarded jobs recorded at that decision were
    assert wl.spec_tokens(req, "target", 2, 1) == 9        # depth 1
    assert wl.spec_tokens(req, "draft", 2, 1) == 8         # depth 2
    assert wl.spec_tokens(req, "target", 3, 1) == 13       # depth 2
    # nothing recorded: unknown (the policy falls back to the committed step)
    assert wl.spec_tokens(req, "target", 4, 2) is None


def test_lr_sync_records_depth_zero_in_order():
    steps = [step(0, "target", 20, "Plan:\n\n"),
             step(1, "target", 60, "First.\n\n", draft=90, verdict=False,
                  discarded=[{"kind": "draft", "tokens": 8, "depth": 0},
                             {"kind": "target", "tokens": 9, "depth": 0},
                             {"kind": "target", "tokens": 13, "depth": 0}]),
             step(2, "target", 40, "Next.\n\n"), step(3, "target", 40, "End.")]
    wl = ReplayWorkload([record(steps, mode="lr-sync")])
    req = wl.requests()[0]
    assert wl.spec_tokens(req, "target", 2, 1) == 9 and wl.spec_tokens(req, "target", 3, 1) == 13
    assert wl.spec_tokens(req, "draft", 2, 1) == 8


def _sim(rec, mode="lr"):
    from lrsim.calib.models import FittedRoofline
    from lrsim.sim.config import Config, Placement
    from lrsim.sim.runner import run

    lat_t = FittedRoofline(base_s=0.4, prefill_per_token_s=0.03)
    lat_d = FittedRoofline(base_s=0.1, prefill_per_token_s=0.01)
    cfg = Config(policy="lr-async" if mode == "lr" else "lr-sync", depth=2, k1=3,
                 devices={"dev0": "cpu", "dev1": "cpu"},
                 target=Placement("target", lat_t, ["dev0"]), draft=Placement("draft", lat_d, ["dev1"]),
                 workload=ReplayWorkload([rec]))
    return run(cfg)


def test_no_drafting_off_boundaries_only_the_prompt_prefill():
    """A record whose steps never end on a blank line: the real scheduler never drafts; the
    drafter only prefills the prompt (one 1-token request) while the target writes everything."""
    steps = [step(i, "target", 100, f"step {i} cut at the cap") for i in range(4)]
    summary, world = _sim(record(steps))
    assert world.draft.iterations == 1 and world.draft.batch_hist == {1: 1}
    assert world.target.iterations == 400
    summary, world = _sim(record(steps, mode="lr-sync"), "lr-sync")
    assert world.draft.iterations == 0 and world.target.iterations == 400


def test_boundary_rule_follows_the_recorded_step_stop():
    """run.flags.step_stop (lr collect --step-stop) says where steps were cut; records without it
    were cut at a blank line. The chat prompt is on a boundary only when step 0 was drafted."""
    def with_stop(stop, steps=STEPS):
        rec = record(steps)
        if stop is not None:
            rec["run"]["flags"]["step_stop"] = stop
        wl = ReplayWorkload([rec])
        req = wl.requests()[0]
        return [wl.can_draft(req, i) for i in range(5)]

    assert with_stop(None) == with_stop(["\n\n"]) == [False, True, True, False, True]
    # "Plan:\n\n", "First.\n\n", "a long step ...", "Then.\n\n", "Done."
    assert with_stop(["."]) == [False, False, False, False, False]
    assert with_stop([":\n\n"]) == [False, True, False, False, False]
    assert with_stop(["cap", ".\n\n"]) == [False, False, True, True, True]
    drafted = [step(0, "draft", 20, "Plan:\n\n", draft=20, verdict=True)] + STEPS[1:]
    assert with_stop(["\n"], drafted) == [True, True, True, False, True]
