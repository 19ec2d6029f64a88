"""The engines' sequence cap, vLLM's --max-num-seqs: recorded by `lr collect` (run.flags), kept
by `lr calibrate` in the profile (placement.max_num_seqs, lrsim/calib/seqs.py), and simulated
on request (`lr plan --max-num-seqs N|recorded`, `lr simulate --max-num-seqs N`, bench_load.py
--max-num-seqs): an engine whose cap is full makes further jobs wait for a slot."""
import copy
import json
from pathlib import Path

import pytest

from lrcore.errors import UserError
from lrsim.calib.calibrate import calibrate, read_records
from lrsim.calib.profile import Profile, load_profile, save_profile, validate_doc
from lrsim.calib.seqs import UNRECORDED_MAX_NUM_SEQS, engine_max_seqs

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "traces" / "corpus" / "gsm8k"
B16 = ROOT / "traces" / "load-cold-epyc-f25m17-b16"


def _rec(models=("target", "draft"), cap=None):
    flags = {"max_num_seqs": cap} if cap is not None else {}
    return {"run": {"flags": flags, "models": {m: {"name": m} for m in models}}}


def test_records_without_the_flag_ran_at_the_engine_default_and_the_smallest_cap_is_kept():
    assert UNRECORDED_MAX_NUM_SEQS == 32
    from lrreal.engine import EngineArgs

    assert EngineArgs(model="-").max_num_seqs == UNRECORDED_MAX_NUM_SEQS   # what they ran at
    assert engine_max_seqs([_rec(), _rec(("target",))]) == ({"target": 32, "draft": 32}, [])
    caps, warnings = engine_max_seqs([_rec(cap=64), _rec(("target",), cap=8)])
    assert caps == {"target": 8, "draft": 64}
    assert warnings == ["target engine's --max-num-seqs differed between the runs (8, 64): the profile keeps 8"]
    assert engine_max_seqs([{"run": {}}]) == ({}, [])


def test_the_real_engines_cap_held_in_the_recorded_passes():
    """traces/load-cold-epyc-f25m17-b16 (16 in flight, engines at vLLM's max_num_seqs 32): depth 3's
    target passes reached 32 sequences and none held more, though more jobs were in flight."""
    sizes = {}
    for f in sorted(B16.rglob("lr*-d3-emb.jsonl")):
        for r in read_records(f):
            assert "max_num_seqs" not in r["run"]["flags"]     # recorded before the flag was
            sizes.setdefault(f.stem, []).extend(p["batch_size"] for p in r["engine_stats"]["target"]["forward_passes"])
    assert set(sizes) == {"lr-d3-emb", "lr+sd-d3-emb"}
    assert all(max(s) == 32 for s in sizes.values()), {k: max(s) for k, s in sizes.items()}


def test_calibrate_keeps_the_cap_and_to_config_takes_it_on_request():
    doc = calibrate([CORPUS / "ar.jsonl", CORPUS / "lr-d2.jsonl"])
    assert doc["placement"]["max_num_seqs"] == {"draft": 32, "target": 32}
    prof = Profile(validate_doc(doc))
    assert prof.max_num_seqs("target") == 32
    plain = prof.to_config("lr", depth=2)
    assert (plain.target.max_seqs, plain.draft.max_seqs) == (256, 256)    # off by default
    rec = prof.to_config("lr", depth=2, max_seqs="recorded")
    assert (rec.target.max_seqs, rec.draft.max_seqs) == (32, 32)
    assert prof.to_config("lr", depth=2, max_seqs=8).draft.max_seqs == 8
    old = copy.deepcopy(doc)
    del old["placement"]["max_num_seqs"]                   # a profile calibrated before it was kept
    assert Profile(validate_doc(old)).to_config("ar").target.max_seqs == 256
    with pytest.raises(UserError, match="field placement.max_num_seqs.target: missing"):
        Profile(validate_doc(old), "p.json").to_config("ar", max_seqs="recorded")


@pytest.mark.parametrize("bad, msg", [({"judge": 4}, "max_num_seqs: 'judge' is not one of"),
                                      ({"target": 0}, "max_num_seqs.target: 0 is less than"),
                                      ({"target": 5000}, "max_num_seqs.target: 5000 is greater than")])
def test_the_schema_refuses_a_cap_of_another_engine_or_out_of_range(bad, msg):
    doc = calibrate([CORPUS / "ar.jsonl"])
    doc["placement"]["max_num_seqs"] = bad
    with pytest.raises(UserError, match=f"field placement.{msg}"):
        validate_doc(doc)


def test_a_capped_engine_never_runs_more_sequences_than_its_cap():
    """24 requests at depth 3 on a profile: uncapped, the target's passes hold more than 8
    sequences; capped at 8 (a number or the profile's own cap), none does, and the run is slower."""
    from lrsim.sim.runner import run

    prof = Profile(validate_doc(calibrate([CORPUS / "ar.jsonl", CORPUS / "lr-d2.jsonl"])))
    prof.doc["placement"]["max_num_seqs"] = {"target": 8, "draft": 8}
    worlds = {cap: run(prof.to_config("lr", depth=3, requests=24, steps=6, max_seqs=cap))[1]
              for cap in (None, 8, "recorded")}
    assert max(worlds[None].target.batch_hist) > 8
    for cap in (8, "recorded"):
        w = worlds[cap]
        assert max(w.target.batch_hist) <= 8 and max(w.draft.batch_hist) <= 8
        assert max(r.finish for r in w.records) > max(r.finish for r in worlds[None].records)


@pytest.fixture(scope="module")
def profile_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("cap") / "p.json"
    save_profile(Profile(validate_doc(calibrate([CORPUS / "ar.jsonl", CORPUS / "lr-d2.jsonl"]))), path)
    return path


def test_lr_plan_caps_every_engine_and_says_so(profile_file, run_lr):
    args = ("plan", "--profile", str(profile_file), "--concurrency", "24", "--modes", "lr", "--depth", "3",
            "--placement", "dedicated", "--samples", "1", "--jobs", "1", "--json")
    code, out, err = run_lr(*args)
    assert code == 0, err
    free = json.loads(out)
    code, out, err = run_lr(*args, "--max-num-seqs", "recorded")
    assert code == 0, err
    capped = json.loads(out)
    assert capped["overrides"] == {"max_num_seqs": "recorded"} and "overrides" not in free
    lr = lambda doc: next(r for r in doc["candidates"] if r["label"].startswith("lr "))  # noqa: E731
    assert max(lr(free)["max_batch"].values()) > 32
    assert max(lr(capped)["max_batch"].values()) <= 32
    code, out, err = run_lr(*args, "--max-num-seqs", "4")
    assert code == 0 and max(lr(json.loads(out))["max_batch"].values()) <= 4


@pytest.mark.parametrize("args, msg", [
    (("--preset", "r1-gsm8k", "--max-num-seqs", "recorded"), "--max-num-seqs recorded: the caps a profile's"),
    (("--preset", "r1-gsm8k", "--max-num-seqs", "0"), "--max-num-seqs must be a number in [1, 4096]"),
    (("--preset", "r1-gsm8k", "--max-num-seqs", "many"), "--max-num-seqs must be a number in [1, 4096]"),
])
def test_lr_plan_refuses_a_bad_cap_in_one_line(args, msg, run_lr):
    code, _, err = run_lr("plan", *args)
    assert code != 0 and msg in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_lr_plan_of_an_old_profile_asks_for_a_recalibration(profile_file, tmp_path, run_lr):
    doc = json.loads(profile_file.read_text())
    del doc["placement"]["max_num_seqs"]
    old = tmp_path / "old.json"
    old.write_text(json.dumps(doc))
    code, _, err = run_lr("plan", "--profile", str(old), "--max-num-seqs", "recorded", "--samples", "1")
    assert code != 0 and "field placement.max_num_seqs.target: missing" in err and "Traceback" not in err


def test_lr_simulate_caps_the_scenarios_engines(run_lr):
    args = ("simulate", "--scenario", "cpu-2core", "--requests", "12", "--steps", "4", "--json")
    code, out, err = run_lr(*args)
    assert code == 0, err
    code, out2, err = run_lr(*args, "--max-num-seqs", "2")
    assert code == 0, err
    free, capped = json.loads(out), json.loads(out2)
    assert capped["tokens_per_s"] < free["tokens_per_s"]
    code, _, err = run_lr(*args, "--max-num-seqs", "0")
    assert code == 2 and "--max-num-seqs" in err and "Traceback" not in err
    code, _, err = run_lr("simulate", "--ideal", "--alpha1", "0.6", "--c1", "0.1", "--max-num-seqs", "4")
    assert code != 0 and "--max-num-seqs does not apply to --ideal" in err


def test_whatif_takes_a_number_or_recorded_only():
    from lrsim.plan.whatif import WhatIf

    assert WhatIf.from_flags(max_num_seqs="16").max_num_seqs == 16
    assert WhatIf.from_flags(max_num_seqs="recorded").max_num_seqs == "recorded"
    for bad in ("0", "4097", "lots", "²", 2.5):
        with pytest.raises(UserError, match="--max-num-seqs must be"):
            WhatIf.from_flags(max_num_seqs=bad)


def test_collect_records_the_cap_and_gives_it_to_both_engines():
    from dataclasses import asdict

    from lrreal.collect import CollectSpec, Collector

    spec = CollectSpec(mode="lr", max_num_seqs=8, out=None)
    assert asdict(spec)["max_num_seqs"] == 8                 # run.flags is asdict(spec)
    args = Collector.__new__(Collector)
    args.spec, args.target_path, args.draft_path = spec, Path("t"), Path("d")
    assert {r: a.max_num_seqs for r, a in args.engine_args().items()} == {"target": 8, "draft": 8}
    assert {r: a.vllm_kwargs()["max_num_seqs"] for r, a in args.engine_args().items()} == {"target": 8, "draft": 8}
    with pytest.raises(UserError, match=r"--max-num-seqs must be in \[1, 4096\]"):
        CollectSpec(mode="ar", max_num_seqs=0, out=None).validate()


def test_the_benchmarks_pass_the_cap_to_lr_plan_and_total_it_apart(monkeypatch, tmp_path):
    import subprocess

    from benchmarks import load_plan, load_replay, load_summary

    assert load_replay.max_num_seqs_arg("recorded") == "recorded" and load_replay.max_num_seqs_arg("32") == 32
    for bad in ("0", "²", "4097", "x"):
        with pytest.raises(SystemExit, match="bench_load: --max-num-seqs must be"):
            load_replay.max_num_seqs_arg(bad)
    seen = []
    monkeypatch.setattr(subprocess, "run", lambda cmd, **kw: seen.append(cmd) or
                        type("P", (), {"returncode": 0, "stdout": "{}", "stderr": ""})())
    monkeypatch.setattr(load_replay, "MAX_NUM_SEQS", "recorded")
    load_plan.lr_plan(tmp_path / "p.json", "--concurrency", "4")
    assert seen[-1][-2:] == ["--max-num-seqs", "recorded"]
    monkeypatch.setattr(load_replay, "MAX_NUM_SEQS", None)
    load_plan.lr_plan(tmp_path / "p.json", "--concurrency", "4")
    assert "--max-num-seqs" not in seen[-1]
    assert load_summary.shaped({"max_num_seqs": "recorded", "batch_factors": True}) == \
        "--batch-factors --max-num-seqs recorded"
    assert load_summary.shaped({"max_num_seqs": "recorded"}) == "--max-num-seqs recorded"
    assert load_replay.max_num_seqs_note("recorded").startswith(
        " Each engine's sequences per pass capped as the real engines had it (a replay at its block's run's, "
        "a plan at its calibration traces') in the replays and the plans (--max-num-seqs recorded)")
    assert load_replay.max_num_seqs_note(None) == ""


def test_a_replay_with_the_recorded_cap_takes_its_blocks_own_run(monkeypatch):
    """bench_load.py --max-num-seqs recorded: a replayed block's engines take the cap its run had
    (run.flags.max_num_seqs, else 32), whatever the profile's; the plans take the profile's."""
    from benchmarks import load_replay

    prof = Profile(validate_doc(calibrate([CORPUS / "ar.jsonl", CORPUS / "lr-d2.jsonl"])))
    prof.doc["placement"]["max_num_seqs"] = {"target": 4, "draft": 4}
    block = [r for r in read_records(B16 / "gsm8k" / "c16" / "ar.jsonl") if r["run"]["flags"]["load_round"] == 0]
    assert len(block) == 16
    monkeypatch.setattr(load_replay, "MAX_NUM_SEQS", "recorded")
    (w,), _ = load_replay.replay_worlds(prof, block)
    assert w.target.max_seqs == 32
    for r in (block := copy.deepcopy(block)):
        r["run"]["flags"]["max_num_seqs"] = 8
    (w,), _ = load_replay.replay_worlds(prof, block)
    assert w.target.max_seqs == 8 and max(w.target.batch_hist) == 8
    monkeypatch.setattr(load_replay, "MAX_NUM_SEQS", None)
    (w,), _ = load_replay.replay_worlds(prof, block)
    assert w.target.max_seqs == 256 and max(w.target.batch_hist) == 16
