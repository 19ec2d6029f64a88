"""`lr plan`: ranking, the equal-resources baseline, SLO goodput, JSON interface, one-line errors."""
from __future__ import annotations

import json

import pytest

from lrcore.errors import UserError
from lrsim.plan import hardware as hw
from lrsim.plan import planner
from lrsim.plan.planner import Candidate, Hardware, Load
from lrsim.plan.presets import PRESETS
from lrsim.plan.sources import PresetSource

SRC = PresetSource("r1-gsm8k")
SMALL = Load(concurrency=1, steps=12, samples=1)     # 12 steps of the GSM8K preset: fast, seeded


@pytest.fixture(scope="module")
def small_plan():
    cands = planner.candidates(["sd", "lr"], [1, 4], [2], [9], [1], ["dedicated"], None)
    return planner.plan(SRC, cands, Hardware(), SMALL, jobs=1)


def test_grid_always_contains_reference_and_equal_resources():
    cands = planner.candidates(["lr"], [1, 2], [2], [3], [1], ["dedicated"], budget=1)
    roles = {(c.mode, c.role) for c in cands}
    assert ("ar", "reference") in roles and ("ar", "equal-resources") in roles
    # the budget removes every speculative candidate (depth 1 needs 2 target positions) but no baseline
    assert all(c.role for c in cands)


def test_budget_filters_by_parallel_dimension():
    cands = planner.candidates(["lr", "lr+sd"], [1, 2, 3], [2], [3], [1, 2], ["dedicated"], budget=6)
    assert all(c.parallel <= 6 for c in cands if not c.role)
    assert Candidate("lr", k1=3, depth=2, width=2) not in cands       # 1 + 2 + 4 = 7 > 6
    assert Candidate("lr+sd", k1=2, depth=1, k2=3) in cands            # (1 + 1) x 3 = 6


def test_ranks_by_speedup_on_a_small_deterministic_case(small_plan):
    rows = small_plan.rows
    assert [r["rank"] for r in rows] == list(range(1, len(rows) + 1))
    speedups = [r["speedup"] for r in rows]
    assert speedups == sorted(speedups, reverse=True)
    by = {r["label"]: r for r in rows}
    assert by["ar"]["speedup"] == pytest.approx(1.0)
    # alpha1 = 0.63, c1 ~ 0.21: deeper lookahead wins, and both beat AR on the same GPUs
    assert by["lr depth=4"]["speedup"] > by["lr depth=1"]["speedup"] > 1.1
    # the plan is reproducible (seeded workload, deterministic simulator)
    again = planner.plan(SRC, [Candidate("ar", role="reference"), Candidate("lr", k1=5, depth=4)],
                         Hardware(), SMALL, jobs=1)
    assert {r["label"]: r["mean_latency_s"] for r in again.rows}["lr depth=4"] == \
        pytest.approx(by["lr depth=4"]["mean_latency_s"])


def test_equal_resources_baseline_gets_the_draft_and_judge_devices(small_plan):
    eq = small_plan.meta["equal_resources_baseline"]
    ref = small_plan.meta["reference"]
    assert eq["tp"] == 4 and eq["devices_per_replica"] == 4 and eq["replicas"] == 1
    assert ref["tp"] == 2 and ref["replicas"] == 2           # 4 GPUs hold two TP=2 targets
    # bandwidth roofline: TP 4 reads half the weights per GPU, all-reduce and engine overhead stay
    preset = PRESETS["r1-gsm8k"]
    ratio = preset.target_latency(2).per_token() / preset.target_latency(4).per_token()
    assert eq["speedup"] == pytest.approx(ratio, rel=0.05)
    assert eq["speedup_vs_equal"] == pytest.approx(1.0)
    lr = next(r for r in small_plan.rows if r["label"] == "lr depth=4")
    assert lr["speedup_vs_equal"] == pytest.approx(lr["speedup"] / eq["speedup"])


def test_equal_resources_config_is_ar_on_all_devices():
    cfg = SRC.to_config("lr-async")
    eq = hw.equal_resources(cfg, SRC.target_latency)
    assert eq.policy == "ar" and eq.draft is None and eq.judge is None
    assert sorted(eq.target.devices) == sorted(cfg.devices) and eq.target.tp == 4


def test_shared_placement_time_shares_and_pays_for_the_judge():
    dedicated = SRC.to_config("lr-async")
    cfg = hw.share(dedicated)
    assert cfg.draft.devices == cfg.target.devices == cfg.judge.devices
    assert hw.replica_devices(cfg) == cfg.target.devices
    # the constant judgement (the paper's 13 ms on H200, 16.1 ms priced on H100) becomes device
    # time on the shared GPUs, same single-judgement cost
    assert cfg.verifier.kind == "llm"
    one = cfg.judge.latency.forward(1, cfg.verifier.template_tokens + 90, 1, 0.0)
    assert one == pytest.approx(dedicated.verifier.seconds, rel=1e-6)
    assert dedicated.verifier.seconds == pytest.approx(0.0161, abs=5e-4)


def test_device_kind_rescales_by_bandwidth():
    cfg = SRC.to_config("ar")
    h200 = hw.rescale(cfg, "H200")
    assert h200.target.latency.per_token() == pytest.approx(cfg.target.latency.per_token() * 3.35 / 4.8)
    with pytest.raises(UserError, match="--device-kind"):
        hw.rescale(cfg, "Z80")


def test_slo_goodput_counts_only_requests_meeting_the_slo():
    cands = [Candidate("ar", role="reference"), Candidate("ar", placement="equal-resources", role="equal-resources")]
    base = planner.plan(SRC, cands, Hardware(), Load(concurrency=2, steps=12, samples=1), jobs=1)
    by = {r["role"]: r for r in base.rows}
    ref_ms, eq_ms = by["reference"]["ms_per_token"]["p90"], by["equal-resources"]["ms_per_token"]["p90"]
    assert eq_ms < ref_ms
    slo = (ref_ms + eq_ms) / 2            # TP=4 meets it, TP=2 does not
    res = planner.plan(SRC, cands, Hardware(), Load(concurrency=2, steps=12, samples=1, slo_ms=slo), jobs=1)
    assert res.meta["objective"] == "goodput"
    first, second = res.rows
    assert first["role"] == "equal-resources" and first["slo_attainment"] == 1.0
    assert first["goodput_tokens_per_s"] == pytest.approx(first["tokens_per_s"], rel=0.02)
    assert second["slo_attainment"] == 0.0 and second["goodput_tokens_per_s"] == 0.0
    # an SLO on whole-request latency, loose enough for everything
    loose = planner.plan(SRC, cands, Hardware(), Load(concurrency=2, steps=12, samples=1, slo_ms=1e9,
                                                      slo_metric="latency"), jobs=1)
    assert all(r["slo_attainment"] == 1.0 for r in loose.rows)


def test_too_few_devices_are_reported_not_simulated():
    cands = planner.candidates(["lr"], [2], [2], [3], [1], ["dedicated", "shared"], None)
    res = planner.plan(SRC, cands, Hardware(devices=2), SMALL, jobs=1)
    skipped = {r["label"] for r in res.meta["skipped"]}
    assert "lr depth=2" in skipped and "ar equal-resources" in skipped
    assert any(r["label"] == "lr depth=2 shared" for r in res.rows)
    assert "need more devices" in res.meta["recommendation"]


def test_rate_load_splits_arrivals_over_replicas():
    res = planner.plan(SRC, [Candidate("ar", role="reference")], Hardware(devices=8),
                       Load(rate=0.5, requests=8, steps=8, samples=1), jobs=1)
    r = res.rows[0]
    assert r["replicas"] == 4 and r["requests_per_replica"] == 2


def test_cli_json_keys(run_lr):
    code, out, _ = run_lr("plan", "--preset", "qwen3-gsm8k", "--steps", "10", "--samples", "1",
                          "--depth", "2", "--k2", "5", "--modes", "sd,lr,lr+sd", "--placement", "dedicated",
                          "--jobs", "1", "--json")
    assert code == 0
    res = json.loads(out)
    for key in ("candidates", "best", "reference", "equal_resources_baseline", "recommendation",
                "hardware", "load", "objective", "skipped", "elapsed_s", "backend"):
        assert key in res, key
    for key in ("rank", "label", "mode", "depth", "k2", "width", "placement", "speedup",
                "speedup_vs_equal", "tokens_per_s", "goodput_tokens_per_s", "slo_attainment",
                "latency_s", "ms_per_token", "devices_per_replica", "replicas", "role"):
        assert key in res["candidates"][0], key
    assert res["hardware"] == {"devices": 4, "kind": "H100",
                               "tp_efficiency": {"value": 0.9, "source": "default"}}
    assert res["best"]["rank"] == 1 and res["recommendation"].startswith("On 4x H100")


def test_cli_table_and_recommendation(run_lr):
    code, out, _ = run_lr("plan", "--steps", "8", "--samples", "1", "--depth", "1", "--k2", "3",
                          "--modes", "lr", "--placement", "dedicated", "--jobs", "1")
    assert code == 0
    text = " ".join(out.split())        # rich wraps to the terminal width
    assert "equal-resources" in text and "reference" in text and "the best configuration is" in text


@pytest.mark.parametrize("args, flag", [
    (["--devices", "0"], "--devices"),
    (["--modes", "foo"], "--modes"),
    (["--preset", "nope"], "--preset"),
    (["--concurrency", "2", "--rate", "1"], "--concurrency"),
    (["--profile", "/nonexistent/profile.json"], "--profile"),
    (["--slo-ms", "-5"], "--slo-ms"),
    (["--device-kind", "Z80"], "--device-kind"),
    (["--objective", "goodput"], "--objective"),
    (["--placement", "floating"], "--placement"),
    (["--depth", "0-2"], "--depth"),
    (["--preset", "r1-gsm8k", "--scenario", "h100-paper"], "exclusive"),
    # closed ranges checked by Typer (min=/max=), still one line
    (["--alpha1", "1.5"], "--alpha1"),
    (["--target-tp", "0"], "--target-tp"),
    (["--tp-efficiency", "2"], "--tp-efficiency"),
    (["--verifier-seconds", "-1"], "--verifier-seconds"),
    (["--budget", "0"], "--budget"),
    (["--ci-target", "-0.5"], "--ci-target"),
])
def test_bad_input_is_one_line_exit_2(run_lr, args, flag):
    code, out, err = run_lr("plan", "--steps", "4", "--samples", "1", "--jobs", "1", *args)
    assert code == 2
    assert err.startswith("lr: error:") and flag in err and err.count("\n") == 1
    assert "Traceback" not in err


def test_scenario_source_plans_too():
    from lrsim.plan.sources import ScenarioSource

    cands = planner.candidates(["lr"], [2], [2], [3], [1], ["dedicated"], None)
    res = planner.plan(ScenarioSource("h100-paper"), cands, Hardware(), Load(steps=8, samples=1), jobs=1)
    assert res.meta["hardware"]["devices"] == 4 and res.meta["reference"]["speedup"] == pytest.approx(1.0)


def test_tp_efficiency_is_the_fairness_what_if():
    cands = [Candidate("ar", role="reference"), Candidate("ar", placement="equal-resources", role="equal-resources")]
    speed = {}
    for eff in (0.9, 0.6):
        res = planner.plan(SRC, cands, Hardware(tp_efficiency=eff), SMALL, jobs=1)
        speed[eff] = res.meta["equal_resources_baseline"]["speedup"]
    assert speed[0.9] > speed[0.6] > 1.0
    with pytest.raises(UserError, match="--tp-efficiency"):
        planner.plan(SRC, cands, Hardware(tp_efficiency=1.5), SMALL, jobs=1)


def test_shared_device_source_has_no_duplicate_placements_and_can_say_serve_ar():
    from lrsim.plan.sources import ScenarioSource

    cands = planner.candidates(["lr"], [1], [2], [3], [1], ["dedicated", "shared"], None)
    res = planner.plan(ScenarioSource("cpu-2core"), cands, Hardware(), Load(steps=3, samples=1), jobs=1)
    labels = [r["label"] for r in res.rows]
    assert "lr depth=1" in labels and "lr depth=1 shared" not in labels
    # one 2-core CPU shared by draft and target: LR loses to the target alone (cpu-2core's measured costs)
    assert res.rows[0]["mode"] == "ar"
    assert "serve AR" in res.meta["recommendation"]


def test_rows_carry_the_throughput_speedup_beside_the_latency_one(small_plan):
    """throughput_speedup: tokens/s over the reference's (one seed block here, so exactly the
    ratio of tokens_per_s); `speedup` stays the ratio of mean latencies; they differ for LR."""
    ref = small_plan.meta["reference"]
    eq = small_plan.meta["equal_resources_baseline"]
    assert ref["throughput_speedup"] == pytest.approx(1.0)
    for r in small_plan.rows:
        assert r["throughput_speedup"] == pytest.approx(r["tokens_per_s"] / ref["tokens_per_s"])
        assert r["throughput_speedup_vs_equal"] == pytest.approx(r["tokens_per_s"] / eq["tokens_per_s"])


def _profile_without(tmp_path, **missing):
    """The shipped CPU test profile with an SD acceptance (alpha2 0.4) and its step acceptance, or
    either unset, as a profile calibrated on traces that ran no SD, or judged no step, has it."""
    from pathlib import Path

    doc = json.loads((Path(__file__).resolve().parents[1] / "data" / "calib" / "cpu-gsm8k-profile.json").read_text())
    doc["sd"]["alpha2"] = None if missing.get("sd") else 0.4     # (the shipped one ran no SD)
    if missing.get("steps"):
        doc["step_acceptance"]["rate"] = None
    path = tmp_path / "profile.json"
    path.write_text(json.dumps(doc))
    return str(path)


def test_a_profile_without_sd_says_its_sd_candidates_are_priced_at_no_acceptance(tmp_path):
    """A profile whose traces ran no SD prices SD at alpha2 0 (every drafted token rejected), one
    that judged no step prices LR at alpha1 0.5: the plan names each, unless a what-if gives the
    value or no candidate uses it."""
    from lrsim.plan.sources import ProfileSource
    from lrsim.plan.whatif import WhatIf

    both = _profile_without(tmp_path, sd=True, steps=True)
    notes = ProfileSource(both).unmeasured({"ar", "sd", "lr", "lr+sd"})
    assert len(notes) == 2 and "no SD acceptance" in notes[0] and "alpha2 0" in notes[0]
    assert "no step acceptance" in notes[1] and "alpha1 0.5" in notes[1]
    assert ProfileSource(both).unmeasured({"ar", "lr"}) == notes[1:]
    assert ProfileSource(both).unmeasured({"ar", "sd"}) == notes[:1]
    assert ProfileSource(both, whatif=WhatIf(alpha2=0.3, alpha1=0.6)).unmeasured({"sd", "lr+sd"}) == []
    # --accept-by-width sets the step acceptance only with a width-1 entry
    assert ProfileSource(both, whatif=WhatIf(accept_by_width=((1, 0.6), (2, 0.7)))).unmeasured({"lr"}) == []
    assert ProfileSource(both, whatif=WhatIf(accept_by_width=((2, 0.7),))).unmeasured({"lr"}) == notes[1:]
    assert ProfileSource(_profile_without(tmp_path)).unmeasured({"sd", "lr", "lr+sd"}) == []


def test_cli_plan_of_a_profile_without_sd_notes_it(run_lr, tmp_path):
    path = _profile_without(tmp_path, sd=True)
    args = ("plan", "--profile", path, "--steps", "6", "--samples", "1", "--k2", "3", "--modes", "sd",
            "--placement", "dedicated", "--jobs", "1")
    code, out, _ = run_lr(*args, "--json")
    assert code == 0
    [note] = json.loads(out)["notes"]
    assert note.startswith(f"{path} measured no SD acceptance")
    code, out, _ = run_lr(*args)
    assert code == 0 and "not measured: " in out and "no SD acceptance" in " ".join(out.split())
    code, out, _ = run_lr(*args, "--alpha2", "0.4", "--json")
    assert code == 0 and "notes" not in json.loads(out)


def test_cli_break_even_of_a_profile_without_sd_notes_it(run_lr, tmp_path):
    path = _profile_without(tmp_path, sd=True)
    args = ("plan", "--profile", path, "--find-break-even", "--concurrency", "2", "--steps", "6",
            "--samples", "1", "--k2", "3", "--modes", "sd", "--placement", "dedicated", "--jobs", "1")
    code, out, _ = run_lr(*args, "--json")
    assert code == 0
    [note] = json.loads(out)["notes"]
    assert note.startswith(f"{path} measured no SD acceptance")
    code, out, _ = run_lr(*args)
    assert code == 0 and "not measured: " in out


def _profile_holding(tmp_path, sequences, factors=None):
    """The shipped CPU test profile (alpha2 0.4, so no acceptance note) as if its traces' passes
    held `sequences` [fewest, most] per pass in every target and draft entry (`fit.ranges`, which
    `lr calibrate` records), with `factors` as the target's batch factors; None: no range, a
    profile written before the range was recorded."""
    from pathlib import Path

    doc = json.loads((Path(__file__).resolve().parents[1] / "data" / "calib" / "cpu-gsm8k-profile.json").read_text())
    doc["sd"]["alpha2"] = 0.4
    for key, entry in doc["latency"].items():
        if sequences is not None:
            entry["fit"]["ranges"] = {"sequences": list(sequences)}
        if factors and key.startswith("target"):
            entry["batch_factors"] = factors
    path = tmp_path / f"profile-{len(list(tmp_path.iterdir()))}.json"
    path.write_text(json.dumps(doc))
    return str(path)


def test_a_plan_past_the_batches_its_profile_traces_held_says_so(run_lr, tmp_path):
    """At 4 requests in flight AR's replicas share 4 sequences, and LR's target passes hold at
    least those: a profile whose traces held at most 2 prices them by the fitted line's
    extrapolation, and the plan says so for each engine it outgrew (naming the largest pass and
    the configurations), in its table's text, its JSON and a break-even search's. Traces (or batch
    factors) that reached the largest simulated pass, or a profile without the range, give no
    note; one sequence fewer does. Each row is held to the latency entry it runs with."""
    from pathlib import Path

    args = ("--concurrency", "4", "--steps", "6", "--samples", "1", "--modes", "lr", "--depth", "2",
            "--placement", "dedicated", "--jobs", "1", "--json")
    code, out, _ = run_lr("plan", "--profile", _profile_holding(tmp_path, [1, 2]), *args)
    assert code == 0
    doc = json.loads(out)
    rows = {r["label"]: r for r in doc["candidates"]}
    # a closed batch of 4, all at once, shared by the replicas
    assert rows["ar"]["max_batch"] == {"target": 4 // rows["ar"]["replicas"]}
    lr = next(r for r in doc["candidates"] if r["mode"] == "lr")
    assert set(lr["max_batch"]) == {"target", "draft"} and lr["max_batch"]["target"] >= 4
    most = max(r["max_batch"]["target"] for r in doc["candidates"])
    target = [n for n in doc["notes"] if "measured target passes" in n]
    assert len(target) == 1 and "measured target passes of at most 2 sequences" in target[0]
    assert f"passes of up to {most} (" in target[0]
    assert len([n for n in doc["notes"] if "measured draft passes of at most 2 sequences" in n]) == 1

    def target_notes(profile, *more):
        code, out, err = run_lr("plan", "--profile", profile, *args, *more)
        assert code == 0, err
        return [n for n in json.loads(out).get("notes", []) if "measured target passes" in n]
    # at the edge: traces that held exactly the plan's largest pass, or one fewer
    assert target_notes(_profile_holding(tmp_path, [1, most])) == []
    assert len(target_notes(_profile_holding(tmp_path, [1, most - 1]))) == 1
    for wide in (_profile_holding(tmp_path, [1, 64]), _profile_holding(tmp_path, None),
                 _profile_holding(tmp_path, [1, 2], factors=[[1.0, 1.0], [2.0, 1.1], [64.0, 1.3]])):
        assert target_notes(wide) == [], wide
    # each row is held to the entry it runs with: a narrow target@lr names the LR rows alone
    narrow = json.loads(Path(_profile_holding(tmp_path, [1, 64])).read_text())
    narrow["latency"]["target@lr"]["fit"]["ranges"]["sequences"] = [1, 2]
    (tmp_path / "narrow.json").write_text(json.dumps(narrow))
    [note] = target_notes(str(tmp_path / "narrow.json"))
    named = note[note.index("(") + 1:note.index(")")].split(", ")
    assert named and all(n.startswith("lr") for n in named), named
    # the break-even search gives the notes of its largest load
    code, out, err = run_lr("plan", "--profile", _profile_holding(tmp_path, [1, 2]), "--find-break-even",
                            *args)
    assert code == 0, err
    assert [n for n in json.loads(out)["notes"] if "measured target passes" in n]
    code, out, _ = run_lr("plan", "--profile", _profile_holding(tmp_path, [1, 2]), *args[:-1])
    assert code == 0 and "not measured: " in out and "measured target passes" in " ".join(out.split())


def test_a_profile_of_a_real_load_sweep_warns_only_past_the_loads_it_ran(run_lr, tmp_path):
    """On a real load corpus (traces/load-cold-epyc-f25m17-3: depth-2 LR, AR and lr+sd at 1, 2, 4
    and 8 in flight, vLLM on an AMD EPYC): a profile of its levels 1-2 held at most a few sequences
    a pass, so a plan at 8 in flight says both engines' passes are priced past them; the profile of
    every level it ran held 8 or more in each, and the same plan has no note."""
    from pathlib import Path

    corpus = Path(__file__).resolve().parents[2] / "traces" / "load-cold-epyc-f25m17-3" / "gsm8k"
    plan = ("--concurrency", "8", "--modes", "lr", "--depth", "2", "--samples", "1", "--steps", "6",
            "--placement", "dedicated", "--jobs", "1", "--json")
    got = {}
    for name, levels in (("low", (1, 2)), ("swept", (1, 2, 4, 8))):
        traces = [str(p) for n in levels for p in sorted((corpus / f"c{n}").glob("*.jsonl"))]
        code, _, err = run_lr("calibrate", *traces, "-o", tmp_path / f"{name}.json")
        assert code == 0, err
        held = {r: json.loads((tmp_path / f"{name}.json").read_text())["latency"][r]["fit"]["ranges"]["sequences"]
                for r in ("target", "draft")}
        code, out, err = run_lr("plan", "--profile", tmp_path / f"{name}.json", *plan)
        assert code == 0, err
        got[name] = held, json.loads(out)
    (held, low), (wide, swept) = got["low"], got["swept"]
    assert held["target"][1] < 8 and held["draft"][1] < 8 and wide["target"][1] >= 8 and wide["draft"][1] >= 8
    notes = low["notes"]
    assert [n for n in notes if f"measured target passes of at most {held['target'][1]:g} sequences" in n]
    assert [n for n in notes if f"measured draft passes of at most {held['draft'][1]:g} sequences" in n]
    ar = next(r for r in low["candidates"] if r["label"] == "ar")
    assert ar["max_batch"] == {"target": 8 // ar["replicas"]}      # 8 in flight, shared by its replicas
    assert "notes" not in swept
    # the engines ran on separate cores (0 and 1): the profile keeps two devices, whatever the
    # in-sample replay of records that ran side by side would choose
    for name in ("low", "swept"):
        placement = json.loads((tmp_path / f"{name}.json").read_text())["placement"]
        assert placement["shared"] is False and placement["selected_by"] == {"cores_shared_in_traces": False}
    assert {r["devices_per_replica"] for r in swept["candidates"] if r["mode"] == "lr"} == {2}
