"""--adaptive-prior: where a real lr-adaptive run's Estimator starts (lrreal/scheduler/
adaptive_prior.py): a JSON file of estimates, the last matching record of a trace file, or of the
newest file of a trace directory; the run uses it once, as measured (not rescaled), and records
where it came from and what it ended with."""
from __future__ import annotations

import json
import os
from dataclasses import asdict, replace

import pytest

from lrcore.adaptive import AdaptiveConfig, Estimates
from lrcore.errors import UserError
from lrreal.scheduler import SchedulerConfig
from lrreal.scheduler.adaptive_prior import NEUTRAL, load_prior
from lrreal.scheduler.lr_adaptive import adaptive_config

from test_scheduler_adaptive import LONG, SCRIPT, FakeEngine, engines, record, run_adaptive

ACFG = adaptive_config(SchedulerConfig(mode="lr-adaptive", depth=2), 1)
MODELS = {"target": "t-1.5b", "draft": "d-0.5b"}
LEARNED = Estimates(alpha_by_depth=(0.05, 0.04), target_step_s=15.0, target_slope_s=2.5,
                    draft_step_s=5.0, verify_s=0.07, step_tokens=28.0, launch_s=0.5)


def rec(est: Estimates | None, mode="lr-adaptive", acfg=ACFG, models=MODELS, last=None) -> dict:
    """A trace record's fields load_prior reads: mode, models, adaptive.config and .final (or,
    as older records, only decisions)."""
    ad = {"config": json.loads(json.dumps(asdict(acfg))), "decisions": []}
    if est is not None:
        ad["final"] = est.to_dict()
    if last is not None:
        ad["decisions"] = [{"depth": 1, "estimates": last.to_dict()}]
    return {"mode": mode, "adaptive": ad,
            "run": {"models": {role: {"name": n} for role, n in models.items()}}}


def write(path, *recs, mtime=None):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


def test_a_trace_file_gives_its_last_matching_record(tmp_path):
    other = Estimates(alpha_by_depth=(0.9, 0.9))
    f = write(tmp_path / "a.jsonl", rec(other), rec(LEARNED), rec(other, mode="lr"),
              rec(other, acfg=adaptive_config(SchedulerConfig(mode="lr-adaptive", depth=3), 1)),
              rec(other, models={"target": "t-1.5b", "draft": "another"}))
    prior, src = load_prior(f, ACFG, MODELS)
    assert prior == LEARNED and src == f"{f}:2"
    # a record without `final` (older toolkit): its last decision's estimates
    g = write(tmp_path / "old.jsonl", rec(None, last=LEARNED))
    assert load_prior(g, ACFG, MODELS)[0] == LEARNED


def test_a_record_older_than_a_knob_matches_at_the_knobs_default(tmp_path):
    # records collected before the batch reach (traces/load-adaptive-f23m1's) hold no
    # batch_reach / batch_floor: they match a run at the defaults, not one that changed them
    old = rec(LEARNED)
    for knob in ("batch_reach", "batch_floor"):
        del old["adaptive"]["config"][knob]
    f = write(tmp_path / "old.jsonl", old)
    assert load_prior(f, ACFG, MODELS)[0] == LEARNED
    with pytest.raises(UserError, match="no lr-adaptive record"):
        load_prior(f, replace(ACFG, batch_reach=3.0), MODELS)


def test_a_directory_gives_the_newest_file_and_an_empty_one_the_neutral_prior(tmp_path):
    assert load_prior(tmp_path, ACFG, MODELS) == (None, NEUTRAL)
    old = Estimates(alpha_by_depth=(0.7, 0.6))
    write(tmp_path / "gsm8k" / "c1" / "x.jsonl", rec(old), mtime=1_000_000)
    write(tmp_path / "gsm8k" / "c4" / "x.jsonl", rec(LEARNED), mtime=2_000_000)
    write(tmp_path / "gsm8k" / "c2" / "ar.jsonl", rec(None, mode="ar"), mtime=3_000_000)
    prior, src = load_prior(tmp_path, ACFG, MODELS)
    assert prior == LEARNED and src.endswith("c4/x.jsonl:1")


def test_a_json_file_of_estimates_is_taken_as_given(tmp_path):
    f = tmp_path / "prior.json"
    f.write_text(json.dumps(LEARNED.to_dict()))
    assert load_prior(f, ACFG) == (LEARNED, str(f))


@pytest.mark.parametrize("content, says", [
    ("{not json", "not JSON"),
    ("[1, 2]", "expected a JSON object"),
    ('{"alpha_by_depth": [2.0]}', "not a set of adaptive estimates"),
    ('{"alpha": 0.5}', "not a set of adaptive estimates"),
])
def test_a_bad_prior_file_is_one_line(tmp_path, content, says):
    f = tmp_path / "prior.json"
    f.write_text(content)
    with pytest.raises(UserError, match=says):
        load_prior(f, ACFG)


def test_a_trace_file_without_a_match_or_a_missing_path_is_refused(tmp_path):
    f = write(tmp_path / "a.jsonl", rec(LEARNED, mode="lr"))
    with pytest.raises(UserError, match="no lr-adaptive record with these bounds"):
        load_prior(f, ACFG, MODELS)
    with pytest.raises(UserError, match="no such file"):
        load_prior(tmp_path / "missing.jsonl", ACFG)


def test_the_run_starts_from_the_carried_prior_and_records_it():
    """Carried estimates (acceptance ~0: learned on engines where speculation lost) are used as
    they are: the first decision already sees them (no rescaling to the first step) and chooses
    depth 0, where the neutral prior speculates first; the record says where the prior came from
    and what the run ended believing."""
    cfg = SchedulerConfig(mode="lr-adaptive", depth=2, max_tokens=2000,
                          adaptive_prior=LEARNED.to_dict(), adaptive_prior_from="corpus/c4.jsonl:3")
    res, lr = run_adaptive(cfg, *engines(LONG))
    assert res.text == "\n\n".join(LONG)
    first = lr.decisions[0]
    assert first["estimates"]["alpha_by_depth"] == [0.05, 0.04]
    assert first["estimates"]["target_step_s"] == 15.0 and first["depth"] == 0
    ad = record(res, "lr-adaptive")["adaptive"]
    assert ad["prior_from"] == "corpus/c4.jsonl:3" and ad["prior"] == LEARNED.to_dict()
    assert ad["final"] == lr.est.snapshot().to_dict() != LEARNED.to_dict()
    # the neutral start, for contrast: speculates first, records "neutral"
    res0, lr0 = run_adaptive(SchedulerConfig(mode="lr-adaptive", depth=2, max_tokens=2000),
                             *engines(LONG))
    assert lr0.decisions[0]["depth"] > 0 and record(res0, "lr-adaptive")["adaptive"]["prior_from"] == NEUTRAL


def test_the_prior_is_used_once_per_run_not_per_problem():
    """A later problem on the same engines keeps what the run learned: its own prior argument
    (another block's resolution) does not reset the shared Estimator."""
    target, draft = FakeEngine("target", SCRIPT), FakeEngine("draft", SCRIPT)
    cfg = SchedulerConfig(mode="lr-adaptive", depth=2, adaptive_prior=LEARNED.to_dict(),
                          adaptive_prior_from="a.jsonl:1")
    _, lr1 = run_adaptive(cfg, target, draft)
    other = SchedulerConfig(mode="lr-adaptive", depth=2,
                            adaptive_prior=Estimates(alpha_by_depth=(0.9,)).to_dict(),
                            adaptive_prior_from="b.jsonl:1")
    _, lr2 = run_adaptive(other, target, draft)
    assert lr2.est is lr1.est and lr2.shared.prior_from == "a.jsonl:1"


def test_collect_spec_refuses_the_prior_outside_adaptive_modes_and_a_missing_path(tmp_path):
    from lrreal.collect import CollectSpec

    with pytest.raises(UserError, match="applies to lr-adaptive and lr\\+sd-adaptive"):
        CollectSpec(mode="lr", adaptive_prior=str(tmp_path)).validate()
    with pytest.raises(UserError, match="no such file"):
        CollectSpec(mode="lr-adaptive", adaptive_prior=str(tmp_path / "nope")).validate()
    CollectSpec(mode="lr-adaptive", adaptive_prior=str(tmp_path)).validate()


def test_the_load_corpus_carries_the_prior_to_adaptive_blocks_only(tmp_path):
    from lrreal.collect import CollectSpec
    from lrreal.load_corpus import ADAPTIVE_CONFIGS, LoadJob, spec_for

    base = CollectSpec(adaptive_prior=str(tmp_path))
    got = {c.label: spec_for(LoadJob("gsm8k", 2, 0, c), tmp_path, base).adaptive_prior
           for c in ADAPTIVE_CONFIGS}
    assert got == {"ar": None, "lr-d2": None, "lr-adaptive-d2": str(tmp_path)}
