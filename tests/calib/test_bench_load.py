"""benchmarks/bench_load.py's bookkeeping: block makespans, the blocks every configuration of a
level finished, speedups over ar and ar-er, and break-even levels."""
import json
from pathlib import Path

import pytest

from benchmarks import bench_load as bl

ROOT = Path(__file__).resolve().parents[2]


def rec(cfg, pid, rnd, arrival, latency, wall, tokens=10, mode="ar"):
    return {"mode": mode, "problem_id": pid, "sample": 0, "output_tokens": tokens,
            "wall_time_s": wall, "correct": True,
            "step_acceptance": {"accepted": 1, "proposed": 2},
            "run": {"flags": {"load_config": cfg, "load_round": rnd}},
            "load": {"arrival_s": arrival, "latency_s": latency, "ttft_s": 1.0, "tpot_s": 0.1}}


def test_makespan_runs_from_the_first_start_to_the_last_end():
    # a: starts at 0.5 (0.5 s of probe/tokenizing before its 9.5 s), ends 10; b: 1 to 13
    block = [rec("ar", "a", 0, 0.0, 10.0, 9.5), rec("ar", "b", 0, 0.0, 13.0, 12.0)]
    assert bl.makespan(block) == pytest.approx(13.0 - 0.5)


def test_level_table_uses_full_common_blocks_and_pairs_speedups():
    level = {
        "ar": [rec("ar", "p0", 0, 0, 10, 10), rec("ar", "p1", 0, 0, 10, 10),
               rec("ar", "p2", 1, 0, 10, 10), rec("ar", "p3", 1, 0, 10, 10)],
        "ar-er": [rec("ar-er", "p0", 0, 0, 5, 5), rec("ar-er", "p1", 0, 0, 5, 5),
                  rec("ar-er", "p2", 1, 0, 5, 5)],                 # block 1 unfinished
        "lr-d2": [rec("lr-d2", "p0", 0, 0, 8, 8, mode="lr"), rec("lr-d2", "p1", 0, 0, 8, 8, mode="lr"),
                  rec("lr-d2", "p2", 1, 0, 1, 1, mode="lr"), rec("lr-d2", "p3", 1, 0, 1, 1, mode="lr")],
    }
    t = bl.level_table(level, None)
    assert {r["blocks"] for r in t.values()} == {1}                # only block 0 is full everywhere
    assert t["lr-d2"]["tokens_per_s"] == pytest.approx(20 / 8)
    assert t["lr-d2"]["speedup_vs_ar"] == pytest.approx(10 / 8)
    assert t["lr-d2"]["latency_speedup_vs_ar"] == pytest.approx(10 / 8)   # mean latencies 10, 8
    assert t["lr-d2"]["speedup_vs_ar-er"] == pytest.approx(5 / 8)
    assert t["ar-er"]["speedup_vs_ar"] == pytest.approx(2.0)
    assert "predicted_tokens_per_s" not in t["lr-d2"]              # no profile: measured only


def test_break_even_is_the_first_level_at_or_below_one():
    levels = {1: {"lr": {"s": 1.3}}, 2: {"lr": {"s": 1.05}}, 4: {"lr": {"s": 0.9}}, 8: {"lr": {"s": 1.01}}}
    assert bl.break_even(levels, "s", "lr") == "4"
    assert bl.break_even({1: {"lr": {"s": 0.9}}}, "s", "lr") == "1"
    assert bl.break_even({1: {"lr": {"s": 1.2}}, 2: {"lr": {"s": 1.1}}}, "s", "lr") == ">2"
    assert bl.break_even({1: {"sd": {"s": 1.2}}}, "s", "lr") == "-"


def test_the_plan_at_the_levels_acceptance_replaces_the_profiles(tmp_path):
    """bench_load's "planned at the level's acceptance": the plan profile with the step acceptance
    the level's records of its configurations measured, by depth (ar's zeros add nothing)."""
    import json
    import shutil
    from pathlib import Path

    from lrsim.calib.profile import load_profile

    src = Path(__file__).resolve().parents[1] / "data" / "calib" / "cpu-gsm8k-profile.json"
    path = tmp_path / "p.json"
    shutil.copy(src, path)
    lr = lambda by: {"step_acceptance": {"by_depth": by}}  # noqa: E731
    level = {"lr-d2-emb": [lr({"1": [4, 3], "2": [2, 1]}), lr({"1": [6, 2]})],
             "ar": [lr({})], "lr-d2": [lr({"1": [100, 0]})]}      # lr-d2: the exact profile's
    [(name, out)] = bl.measured_acceptance({"emb": path}, level, tmp_path, 3).items()
    acc = load_profile(str(out)).doc["step_acceptance"]
    assert name == "emb" and acc["by_depth"] == {"1": [10, 5], "2": [2, 1]}
    assert acc["rate"] == pytest.approx(6 / 12) and (acc["proposed"], acc["accepted"]) == (12, 6)
    assert json.loads(src.read_text())["step_acceptance"]["rate"] == pytest.approx(2 / 7)   # untouched
    assert bl.measured_acceptance({"emb": path}, {"ar": [lr({})]}, tmp_path, 3) == {}


def test_the_plan_leaves_out_configurations_whose_acceptance_the_profile_never_measured(tmp_path):
    """A profile of ar and lr-d2 alone has no SD acceptance (alpha2 None, which `lr plan` prices as
    0): bench_load plans its lr-d2 but not sd; without judged steps it plans no LR configuration."""
    import json
    from pathlib import Path

    from benchmarks.load_plan import PLAN_PROFILES, measured_labels

    doc = json.loads((Path(__file__).resolve().parents[1] / "data" / "calib" / "cpu-gsm8k-profile.json").read_text())
    path = tmp_path / "p.json"

    def labels(name, alpha2, rate):
        d = json.loads(json.dumps(doc))
        d["sd"]["alpha2"], d["step_acceptance"]["rate"] = alpha2, rate
        path.write_text(json.dumps(d))
        return measured_labels(name, path)

    assert labels("exact", 0.4, 0.5) == PLAN_PROFILES["exact"][1]
    assert labels("exact", None, 0.5) == {"lr-d2": "lr depth=2"}
    assert labels("emb", None, 0.5) == {c: lab for c, lab in PLAN_PROFILES["emb"][1].items() if c.startswith("lr-")}
    assert labels("exact", 0.4, None) == {"sd": "sd k2=7"}
    assert labels("emb", None, None) == {}


def test_a_block_whose_requests_end_apart_has_a_higher_latency_speedup():
    """Tokens over makespans against the ratio of mean latencies: an LR block where one request
    finishes at 4 s and the other at 12 s has AR's makespan-based speedup 10/12 but its mean
    latency, 8, gives 10/8 (lr plan's own speedup is that ratio; bench_load compares like with like)."""
    level = {"ar": [rec("ar", "p0", 0, 0, 10, 10), rec("ar", "p1", 0, 0, 10, 10)],
             "lr-d2": [rec("lr-d2", "p0", 0, 0, 4, 4, mode="lr"), rec("lr-d2", "p1", 0, 0, 12, 12, mode="lr")]}
    t = bl.level_table(level, None)
    assert t["lr-d2"]["speedup_vs_ar"] == pytest.approx(10 / 12)
    assert t["lr-d2"]["latency_speedup_vs_ar"] == pytest.approx(10 / 8)


def test_the_measured_speedups_interval_pairs_blocks_and_narrows_with_agreement():
    """speedup_interval: a 90% bootstrap interval over blocks, resampled in pairs with ar's;
    it holds the point speedup, is a point when every block agrees, and is absent below 3 blocks."""
    ar = [[rec("ar", f"p{k}", k, 0, 10, 10)] for k in range(5)]
    same = [[rec("lr", f"p{k}", k, 0, 8, 8, mode="lr")] for k in range(5)]
    lo, hi = bl.speedup_interval(same, ar)
    assert lo == pytest.approx(10 / 8) and hi == pytest.approx(10 / 8)
    spread = [[rec("lr", f"p{k}", k, 0, s, s, mode="lr")] for k, s in enumerate((6, 7, 8, 9, 14))]
    lo, hi = bl.speedup_interval(spread, ar)
    point = 50 / 44          # tokens over summed makespans, as the table's speedup
    assert lo < point < hi and hi - lo > 0.1
    assert bl.speedup_interval(spread, ar) == [lo, hi]             # seeded
    assert bl.speedup_interval(spread[:2], ar[:2]) is None
    # paired: a block slow in both configurations moves neither side of the ratio alone
    ar_slow = [[rec("ar", f"p{k}", k, 0, s, s)] for k, s in enumerate((10, 10, 10, 10, 40))]
    lr_slow = [[rec("lr", f"p{k}", k, 0, s, s, mode="lr")] for k, s in enumerate((8, 8, 8, 8, 32))]
    lo, hi = bl.speedup_interval(lr_slow, ar_slow)
    assert lo == pytest.approx(10 / 8) and hi == pytest.approx(10 / 8)


def test_plan_misses_inside_the_measured_interval_are_counted_apart():
    out = {"target": {"speedup_rel_error": 0.10},
           "levels": {"1": {"a": {"speedup_vs_ar": 1.0, "speedup_vs_ar_ci90": [0.8, 1.2]},
                            "b": {"speedup_vs_ar": 1.0, "speedup_vs_ar_ci90": [0.95, 1.05]},
                            "c": {"speedup_vs_ar": 1.0, "speedup_vs_ar_ci90": None},
                            "d": {"speedup_vs_ar": 1.0, "speedup_vs_ar_ci90": [0.5, 1.5]}}},
           "planned": {"1": {"a": {"speedup_vs_ar": 1.15}, "b": {"speedup_vs_ar": 1.15},
                             "c": {"speedup_vs_ar": 0.8}, "d": {"speedup_vs_ar": 1.05}}}}
    # a: off by 15%, inside [0.8, 1.2]; b: off, outside; c: off, no interval; d: a hit
    assert bl.misses_inside_interval(out, "planned") == (1, 3)


def test_only_rounds_keeps_the_rounds_one_sitting_ran():
    corpus = {1: {"ar": [rec("ar", "p0", 0, 0, 10, 10), rec("ar", "p1", 1, 0, 10, 10)],
                  "sd": [rec("sd", "p0", 0, 0, 5, 5, mode="sd")]},
              2: {"ar": [rec("ar", "p2", 0, 0, 10, 10)]}}
    one = bl.only_rounds(corpus, {1})
    assert one == {1: {"ar": [corpus[1]["ar"][1]]}}            # empty configurations and levels go
    assert bl.only_rounds(corpus, None) is corpus
    assert bl.only_rounds(corpus, {0}, {"ar"}) == {1: {"ar": [corpus[1]["ar"][0]]}, 2: corpus[2]}
    assert bl.only_rounds(corpus, None, {"sd"}) == {1: {"sd": corpus[1]["sd"]}}
    assert bl.parse_rounds("0,1") == {0, 1} and bl.parse_rounds(None) is None
    for bad in ("x", "-1"):
        with pytest.raises(SystemExit, match="--rounds"):
            bl.parse_rounds(bad)


def test_calibrate_rounds_keeps_those_rounds_records_of_levels_1_and_2(tmp_path):
    import json
    corpus = tmp_path / "corpus"
    for n, label, rounds in ((1, "ar", (0, 1)), (2, "ar", (0, 1)), (2, "lr-d2", (1,)), (4, "ar", (0, 1))):
        f = corpus / "gsm8k" / f"c{n}" / f"{label}.jsonl"
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text("".join(json.dumps(rec(label, f"p{n}-{r}", r, 0, 10, 10)) + "\n" for r in rounds))
    every = bl.calib_paths(corpus)
    assert [p.split("gsm8k/")[1] for p in every] == ["c1/ar.jsonl", "c2/ar.jsonl", "c2/lr-d2.jsonl"]
    got = bl.calib_paths(corpus, {0}, tmp_path / "scratch")
    # lr-d2 ran round 1 only: no file; level 4 is never calibration data
    assert [p.split("scratch/")[1] for p in got] == ["c1/ar.jsonl", "c2/ar.jsonl"]
    kept = [json.loads(line) for p in got for line in open(p)]
    assert [r["problem_id"] for r in kept] == ["p1-0", "p2-0"]
    assert (corpus / "gsm8k" / "c1" / "ar.jsonl").read_text().count("\n") == 2   # the corpus untouched
    with pytest.raises(SystemExit, match="--calibrate-rounds 'x'"):
        bl.parse_rounds("x", "--calibrate-rounds")


def test_calibrate_rounds_of_the_predicted_corpus_must_be_other_rounds(monkeypatch, capsys):
    for rounds in ([], ["--rounds", "0,1"]):
        monkeypatch.setattr("sys.argv", ["bench_load", "--load", "traces/load", "--calibrate-rounds", "0", *rounds])
        with pytest.raises(SystemExit, match="--rounds must name other rounds .* or the same ones"):
            bl.main()


def test_the_corpus_probe_leaves_the_equal_resources_blocks_out():
    # ar-er's target runs on both cores: its probe's decode pass is ~0.6x the one-core target's,
    # so counting it would make a held-out corpus look faster than its own blocks ran
    def probed(cfg, target_s, er=False):
        r = rec(cfg, "p", 0, 0, 10, 10)
        r["run"]["flags"]["equal_resources"] = er
        r["run"]["probe_at_start"] = {"t": target_s, "engines": {"target": {"decode_s": target_s},
                                                                 "draft": {"decode_s": 0.1}}}
        return r
    corpus = {1: {"ar": [probed("ar", 0.30)], "lr-d2": [probed("lr-d2", 0.32)],
                  "ar-er": [probed("ar-er", 0.10, er=True), probed("ar-er", 0.11, er=True)]}}
    assert bl.corpus_probe(corpus)["target"]["decode_s"] == pytest.approx(0.31)


def test_the_render_states_the_speedup_error_at_each_blocks_own_probe():
    out = {"calibrated_on": {"corpus": "c", "levels": [1, 2], "held_out": True, "same_corpus": False},
           "levels": {"1": {"ar": {"tokens_per_s": 1.0, "ttft_p50_s": 1, "tpot_p50_s": 1, "blocks": 1}}},
           "planned": {}, "break_even": {}, "records": 1, "max_tokens": 8, "replay_speedup_error_max": None,
           "target": {"speedup_rel_error": 0.10},
           "replay_speedup_error_own_probe": {"lr@1": 0.05, "lr@2": -0.156, "lr+sd@2": 0.10}}
    md = bl.render(out)
    assert "Each block at its own probe" in md and "within 10% at 2 of 3 pairs, largest error 15.6%" in md
    out["calibrated_on"] |= {"rounds": [0], "same_corpus": True}
    assert "calibrated on round 0 of c's levels 1, 2 (other rounds of the same corpus" in bl.render(out)


def test_the_render_says_whether_the_profile_crossed_machines():
    epyc, xeon = "AMD EPYC (family 25 model 1 stepping 1)", "Intel(R) Xeon(R) Processor (family 6 model 207 stepping 2)"
    out = {"calibrated_on": {"corpus": "a", "same_corpus": False, "shared_problems": 0},
           "machines": {"corpus": {epyc: 60}, "calibrated_on": {epyc: 120}}}
    assert bl.provenance(out) == f"another run on other problems, the same CPU: {epyc}"
    out["machines"]["corpus"] = {xeon: 120}
    assert bl.provenance(out) == f"another run on other problems, another CPU: {epyc}, predicting {xeon}"
    out["calibrated_on"] |= {"corpus": "a,b", "shared_problems": 12}
    assert bl.provenance(out) == f"other runs sharing 12 problems, another CPU: {epyc}, predicting {xeon}"
    out["machines"]["calibrated_on"] = {epyc: 60, xeon: 60}          # mixed: named, not judged
    assert bl.provenance(out) == f"other runs sharing 12 problems; CPUs: {epyc}, {xeon}, predicting {xeon}"
    out["machines"]["corpus"] = {xeon: 100, "unnamed": 20}           # partly unknown: no claim
    assert bl.provenance(out) == "other runs sharing 12 problems"
    bare = "AMD EPYC (family and model not recorded)"                # a name alone: not one model
    out["machines"] = {"corpus": {bare: 300}, "calibrated_on": {bare: 540}}
    assert bl.provenance(out) == f"other runs sharing 12 problems, the same CPU name: {bare}"
    out["machines"]["corpus"] = {epyc: 60}                            # may be the same model
    assert bl.provenance(out) == f"other runs sharing 12 problems; CPUs: {bare}, predicting {epyc}"
    out["machines"]["corpus"] = {xeon: 60}                            # another name: another CPU
    assert bl.provenance(out) == f"other runs sharing 12 problems, another CPU: {bare}, predicting {xeon}"
    del out["machines"], out["calibrated_on"]["shared_problems"]     # written before: no claim
    assert bl.provenance(out) == "other runs"
    out["calibrated_on"]["same_corpus"] = True
    assert bl.provenance(out) == "other rounds of the same corpus"


def test_cpus_names_the_cpu_by_model_and_family():
    rec = lambda **hw: {"run": {"hardware": hw}}  # noqa: E731
    got = bl.cpus([rec(cpu_model="AMD EPYC", cpu_id="family 25 model 1 stepping 1"), rec(cpu_model="AMD EPYC"),
                   rec(), rec(cpu_model="x", gpu="NVIDIA H200", cpu_id="family 6")])
    assert got == {"AMD EPYC (family and model not recorded)": 1, "AMD EPYC (family 25 model 1 stepping 1)": 1,
                   "NVIDIA H200": 1, "unnamed": 1}


def test_boots_names_the_levels_whose_blocks_ran_on_more_than_one_machine():
    r = lambda boot=None, rnd=0: {"run": {"hardware": {"boot_id": boot} if boot else {},  # noqa: E731
                                          "flags": {"load_round": rnd}}}
    corpus = {1: {"ar": [r("a"), r("b", 1)], "lr": [r("a"), r("b", 1)]},   # each round in one boot
              2: {"ar": [r("a"), r("a")], "ar-er": [r("b"), r("b")]},     # ar-er resumed elsewhere
              4: {"ar": [r()], "lr": [r()]}}                              # records before the boot id
    b = bl.boots(corpus)
    assert b == {"boots": 2, "unrecorded": 2, "levels_across": [2]}
    note = bl.boots_note(b)
    assert "2 machine boots" in note and "at 2 in flight" in note and "2 records name none" in note
    assert bl.boots_note(bl.boots({1: {"ar": [r("a")]}})) == " Its records ran in 1 machine boot."
    assert bl.boots_note(bl.boots({1: {"ar": [r()]}})) == "" and bl.boots_note(None) == ""


def test_every_bench_load_result_is_its_json_rendered():
    """Each committed bench_load result's .md is what --render writes from its .json today."""
    from benchmarks.load_summary import PREDICTIONS

    for stem, *_ in PREDICTIONS:
        path = ROOT / "benchmarks" / "results" / f"{stem}.json"
        assert path.with_suffix(".md").read_text() == bl.render(json.loads(path.read_text())), stem


def test_calibrate_rounds_reach_the_profile_the_replay_and_the_plan_use(monkeypatch):
    import json

    seen = {}

    class Stop(Exception):
        pass

    def measure(root, corpus, speed, paths, carry, batch_factors=False):
        assert carry is False                     # the default: no contention carried
        seen["predicted"] = {r["run"]["flags"]["load_round"] for lv in corpus.values() for rs in lv.values() for r in rs}
        seen["calibrated"] = {json.loads(line)["run"]["flags"]["load_round"] for p in paths for line in open(p)}
        raise Stop

    monkeypatch.setattr(bl, "measure", measure)
    monkeypatch.setattr("sys.argv", ["bench_load", "--load", "traces/load-cold-epyc-side",
                                     "--calibrate-rounds", "0", "--rounds", "1"])
    with pytest.raises(Stop):
        bl.main()
    assert seen["predicted"] == {1} and seen["calibrated"] == {0}


REF = {"target": {"decode_s": 0.3, "contended_decode_s": 0.33, "contention": 0.1}, "draft": {"decode_s": 0.1}}
TODAY = {"target": {"decode_s": 0.4, "contended_decode_s": 0.48}}   # c 0.2 against the reference's 0.1


class Stop(Exception):
    pass


@pytest.mark.parametrize("speed, carry, carried", [(TODAY, False, False), (TODAY, True, True),
                                                   (None, True, False), (None, False, False)])
def test_a_replay_carries_the_contention_only_when_asked_and_at_an_aggregate_probe(monkeypatch, speed, carry, carried):
    # the default leaves the profile's fitted contention as it is; one block's own probe never carries
    import benchmarks.load_replay as lr

    seen = []

    def scaled(prof, rec, which, contention):
        seen.append(contention)
        raise Stop

    monkeypatch.setattr(lr, "probe_scaled", scaled)
    monkeypatch.setattr(lr, "block_probe", lambda block: {"before": {"engines": TODAY}})
    with pytest.raises(Stop):
        lr.replay_worlds(object(), [{"problem_id": 1, "mode": "lr"}], speed, carry=carry)
    assert seen == [carried]
    seen.clear()
    monkeypatch.setattr(lr, "calibrate", lambda paths, **k: {"probe": REF})
    monkeypatch.setattr(lr, "validate_doc", lambda d: d)
    with pytest.raises(Stop):                                     # through level_table and measure
        lr.measure(Path("x"), {1: {"lr-d2": [rec("lr-d2", "p0", 0, 0, 8, 8, mode="lr")]}}, speed, ["p"], carry)
    assert seen == [carried]


def test_the_plan_profile_carries_the_contention_only_when_asked(monkeypatch):
    import benchmarks.load_plan as lp

    used = []

    class P:
        def __init__(self, doc):
            self.doc = doc

        def rescaled(self, factors, why, contention):
            used.append(contention)
            return self

    monkeypatch.setattr(lp, "calibrate", lambda paths, **k: {"probe": REF})
    monkeypatch.setattr(lp, "Profile", P)
    monkeypatch.setattr(lp, "validate_doc", lambda d: d)
    for carry, scales in ((False, {}), (True, {"target": pytest.approx(2.0)})):
        used.clear()
        lp.plan_profile(["p"], {"ar"}, TODAY, carry)
        assert used == [scales]


@pytest.mark.parametrize("carry", [False, True])
def test_a_held_out_result_reports_the_carry_and_the_replay_the_other_way(monkeypatch, carry):
    calls = []

    class P:
        doc = {"probe": REF}

    def errors(prof, corpus, speed, carry):
        calls.append(carry)
        return {"lr@2": 0.3}

    monkeypatch.setattr(bl, "speedup_errors", errors)
    out = bl.carry_fields(P(), {2: {}}, TODAY, carry)
    assert calls == [not carry]
    assert out["contention_scales"] == {"target": pytest.approx(2.0)} and out["contention_carried"] is carry
    assert out["replay_speedup_error_with_carry"] == (None if carry else {"lr@2": 0.3})
    assert out["replay_speedup_error_no_carry"] == ({"lr@2": 0.3} if carry else None)
    P.doc = {"probe": {"target": {"decode_s": 0.3}}}             # a reference without side-by-side c
    calls.clear()
    out = bl.carry_fields(P(), {2: {}}, TODAY, carry)
    assert calls == [] and out == {"contention_scales": {}, "contention_carried": False,
                                   "replay_speedup_error_with_carry": None, "replay_speedup_error_no_carry": None}
    out = bl.carry_fields(P(), {2: {}}, None, carry)                # in sample: nothing to carry
    assert calls == [] and out["contention_scales"] is None and out["contention_carried"] is False


def test_the_contention_whatif_replaces_the_fit_and_carries_nothing(monkeypatch):
    import benchmarks.load_replay as lr

    seen = []

    class P:
        def __init__(self, doc):
            self.doc = doc

    monkeypatch.setattr(lr, "calib_paths", lambda *a: ["s/c2/lr-d2.jsonl"])
    monkeypatch.setattr(lr, "calibrate", lambda paths, **k: {"latency": {"target": {"contention": 0.2}}})
    monkeypatch.setattr(lr, "Profile", P)
    monkeypatch.setattr(lr, "validate_doc", lambda d: d)
    monkeypatch.setattr(lr, "speedup_errors", lambda prof, corpus, speed, carry=False:
                        seen.append((prof.doc, carry)) or {"lr@2": -0.1})
    prof = P({"probe": REF, "latency": {"target": {"contention": 0.05}}})
    out = lr.contention_whatif(prof, Path("x"), {2: {"lr-d2": []}}, TODAY)
    (doc, carry), = seen
    assert doc["latency"]["target"]["contention"] == 0.2 and carry is False
    assert prof.doc["latency"]["target"]["contention"] == 0.05          # the profile itself untouched
    assert out == {"profile": {"target": 0.05}, "held_out_fit": {"target": 0.2}, "replay_speedup_error": {"lr@2": -0.1}}


def test_the_contention_whatif_fits_only_the_blocks_it_replays(monkeypatch):
    """The held-out corpus's own contention is fit on the rounds and configurations predicted
    (--rounds, --configs): a configuration the prediction left out may have run in another sitting."""
    import benchmarks.load_replay as lr

    asked, fitted = [], []
    monkeypatch.setattr(lr, "calib_paths", lambda root, rounds, scratch: asked.append(rounds) or
                        ["s/c1/ar.jsonl", "s/c1/lr-d2.jsonl", "s/c1/sd.jsonl", "s/c2/lr+sd-d2.jsonl"])
    monkeypatch.setattr(lr, "calibrate", lambda paths, **k: fitted.append(paths) or {"latency": {}})
    monkeypatch.setattr(lr, "Profile", lambda doc: doc)
    monkeypatch.setattr(lr, "validate_doc", lambda d: d)
    monkeypatch.setattr(lr, "speedup_errors", lambda *a, **k: {})
    prof = type("P", (), {"doc": {"latency": {"target": {"contention": 0.05}}}})()
    lr.contention_whatif(prof, Path("x"), {1: {"ar": [], "lr-d2": []}, 2: {"ar": [], "lr-d2": []}}, TODAY, {0})
    assert asked == [{0}] and fitted == [["s/c1/ar.jsonl", "s/c1/lr-d2.jsonl"]]


def test_the_contention_whatif_skips_a_round_without_levels_1_2(monkeypatch):
    """A --rounds naming a round whose levels 1-2 the held-out corpus lacks: the diagnosis says so
    (and the render prints it) instead of failing in calibrate with no traces to fit."""
    import benchmarks.load_replay as lr

    monkeypatch.setattr(lr, "calib_paths", lambda root, rounds, scratch: [])
    monkeypatch.setattr(lr, "calibrate", lambda *a, **k: pytest.fail("nothing to calibrate"))
    prof = type("P", (), {"doc": {"latency": {"target": {"contention": 0.05}}}})()
    out = lr.contention_whatif(prof, Path("corpus-x"), {4: {"ar": [], "lr-d2": []}}, TODAY, {1})
    assert out == {"skipped": "corpus-x holds no level 1-2 traces of round 1 for ar, lr-d2: "
                              "no contention of its own to fit"}
    text = bl.render({"calibrated_on": {"corpus": "c", "levels": [1, 2], "held_out": True, "same_corpus": False},
                      "levels": {"4": {"ar": {"tokens_per_s": 1.0, "ttft_p50_s": 1, "tpot_p50_s": 1, "blocks": 1}}},
                      "planned": {}, "break_even": {}, "records": 1, "max_tokens": 8,
                      "replay_speedup_error_max": None, "target": {"speedup_rel_error": 0.10},
                      "contention_whatif": out})
    assert "Contention (a diagnosis, not a prediction): not refit; corpus-x holds no level 1-2 traces of " \
           "round 1 for ar, lr-d2: no contention of its own to fit." in text
    # levels 1-2 of ar-er alone (no calibration configuration): skipped too, rounds named as rounds
    monkeypatch.setattr(lr, "calib_paths", lambda root, rounds, scratch: ["s/c1/ar-er.jsonl"])
    out = lr.contention_whatif(prof, Path("corpus-x"), {4: {"ar-er": [], "lr-d2": []}}, TODAY, {0, 1})
    assert out == {"skipped": "corpus-x holds no level 1-2 traces of rounds 0, 1 for lr-d2: "
                              "no contention of its own to fit"}


def test_the_render_says_whether_the_contention_was_carried():
    out = {"calibrated_on": {"corpus": "c", "levels": [1, 2], "held_out": True, "same_corpus": False},
           "levels": {"1": {"ar": {"tokens_per_s": 1.0, "ttft_p50_s": 1, "tpot_p50_s": 1, "blocks": 1}}},
           "planned": {}, "break_even": {}, "records": 1, "max_tokens": 8, "replay_speedup_error_max": None,
           "target": {"speedup_rel_error": 0.10}, "replay_speedup_error_no_carry": {"lr@1": 0.05, "lr@2": -0.2},
           "contention_scales": {"target": 2.0}, "contention_carried": True}
    text = bl.render(out)
    assert "Without that carry (the profile's contention as fitted): replayed speedup within 10% at 1 of 2 " \
        "pairs, largest error 20.0%" in text
    assert "target x2.00; carried (--carry-contention)." in text
    out.update(contention_carried=False, replay_speedup_error_no_carry=None,
               replay_speedup_error_with_carry={"lr@1": 0.3})
    text = bl.render(out)
    assert "target x2.00; not carried (the profile's contention as fitted, the default)." in text
    assert "With that carry (--carry-contention): replayed speedup within 10% at 0 of 1 pairs, " \
        "largest error 30.0%" in text


def test_calibrate_on_pools_several_corpora_into_one_profile(monkeypatch):
    # two sittings' levels 1-2 calibrate one profile that predicts a third corpus (held out)
    seen = {}

    def measure(root, corpus, speed, paths, carry, batch_factors=False):
        seen["paths"] = paths
        seen["speed"] = speed
        raise Stop

    monkeypatch.setattr(bl, "measure", measure)
    monkeypatch.setattr("sys.argv", ["bench_load", "--load", "traces/load-cold-epyc-side12", "--calibrate-on",
                                     "traces/load-cold-epyc-side,traces/load-cold-epyc-more"])
    with pytest.raises(Stop):
        bl.main()
    corpora = {Path(p).parents[2].name for p in seen["paths"]}
    assert corpora == {"load-cold-epyc-side", "load-cold-epyc-more"}
    assert {Path(p).parent.name for p in seen["paths"]} == {"c1", "c2"}
    assert seen["speed"]                             # held out: replayed at the corpus's median probe


@pytest.mark.parametrize("calibrate_on, says", [
    ("traces/load-cold-epyc-side12,traces/load-cold-epyc-side", "names --load"),
    ("traces/load-cold-epyc-side,traces/load-cold-epyc-side/", "a corpus named twice"),
    ("traces/load-cold-epyc-side,traces/no-such-corpus", "no level 1-2 traces under traces/no-such-corpus"),
])
def test_calibrate_on_a_bad_list_is_a_one_line_error(monkeypatch, calibrate_on, says):
    monkeypatch.setattr("sys.argv", ["bench_load", "--load", "traces/load-cold-epyc-side12",
                                     "--calibrate-on", calibrate_on])
    with pytest.raises(SystemExit) as e:
        bl.main()
    assert says in str(e.value) and "\n" not in str(e.value)


def test_pooled_corpora_with_calibrate_rounds_keep_each_corpus_apart(monkeypatch):
    # each corpus's round-0 copies go to their own scratch folder: c1/ar.jsonl of one never
    # overwrites the other's (the pooled profile would fit one corpus twice)
    import json

    seen = {}

    def measure(root, corpus, speed, paths, carry, batch_factors=False):
        seen["files"] = {p: {json.loads(line)["problem_id"] for line in open(p)} for p in paths}
        raise Stop

    monkeypatch.setattr(bl, "measure", measure)
    monkeypatch.setattr("sys.argv", ["bench_load", "--load", "traces/load-cold-epyc-side3", "--calibrate-on",
                                     " traces/load-cold-epyc-side, traces/load-cold-epyc-side12,",
                                     "--calibrate-rounds", "0"])
    with pytest.raises(Stop):
        bl.main()
    files = seen["files"]
    want = {c: {json.loads(line)["problem_id"] for n in (1, 2) for p in (ROOT / c / "gsm8k" / f"c{n}").glob("*.jsonl")
                for line in open(p) if json.loads(line)["run"]["flags"]["load_round"] == 0}
            for c in ("traces/load-cold-epyc-side", "traces/load-cold-epyc-side12")}
    assert len(files) == len(set(files)) and set().union(*files.values()) == set().union(*want.values())
    assert all(ids <= want["traces/load-cold-epyc-side"] or ids <= want["traces/load-cold-epyc-side12"]
               for ids in files.values())
    assert not want["traces/load-cold-epyc-side"] & want["traces/load-cold-epyc-side12"]   # other problems


def test_render_rewrites_the_markdown_from_the_json_alone(tmp_path, monkeypatch):
    import shutil

    src = ROOT / "benchmarks" / "results" / "load_cold_epyc_side3_pooled.json"
    out = tmp_path / "r.json"
    shutil.copy(src, out)
    monkeypatch.setattr("sys.argv", ["bench_load", "--out", str(out), "--render"])
    bl.main()
    md = out.with_suffix(".md").read_text()
    assert md == src.with_suffix(".md").read_text()
    assert "calibrated on traces/load-cold-epyc-side and traces/load-cold-epyc-side12's levels 1, 2 " \
        "(other runs on other problems, the same CPU: AMD EPYC (family 25 model 1 stepping 1)), rescaled" in md
    doc = json.loads(src.read_text())      # a result written before problems and CPUs were recorded
    del doc["machines"], doc["calibrated_on"]["shared_problems"]
    out.write_text(json.dumps(doc))
    bl.main()
    assert "levels 1, 2 (other runs), rescaled" in out.with_suffix(".md").read_text()


def test_calibrate_levels_reach_the_calibration_files(monkeypatch, tmp_path):
    # --calibrate-levels 1,2,4,8: every load the calibration corpus ran, not only its 1-2
    seen = {}

    def measure(root, corpus, speed, paths, carry, batch_factors=False):
        seen["levels"] = sorted({Path(p).parent.name for p in paths})
        raise Stop

    monkeypatch.setattr(bl, "measure", measure)
    monkeypatch.setattr("sys.argv", ["bench_load", "--load", "traces/load-cold-epyc-f25m17-t36", "--calibrate-on",
                                     "traces/load-cold-epyc-f25m17-3", "--calibrate-levels", "8,1,2,4"])
    with pytest.raises(Stop):
        bl.main()
    assert seen["levels"] == ["c1", "c2", "c4", "c8"]
    # the default stays 1-2: the corpus's files at 4 and 8 in flight are not calibration data
    assert {Path(p).parent.name for p in bl.calib_paths(ROOT / "traces/load-cold-epyc-f25m17-3")} == {"c1", "c2"}
    assert bl.calib_paths(ROOT / "traces/load-cold-epyc-f25m17-t36", levels=(1, 2, 4, 8)) == []


@pytest.mark.parametrize("levels, says", [("x", "comma-separated levels in flight"),
                                          ("0,2", "levels in flight count from 1"),
                                          ("3,6", "no level 3,6 traces under traces/load-cold-epyc-f25m17-3")])
def test_bad_calibrate_levels_are_a_one_line_error(monkeypatch, levels, says):
    monkeypatch.setattr("sys.argv", ["bench_load", "--load", "traces/load-cold-epyc-f25m17-t36", "--calibrate-on",
                                     "traces/load-cold-epyc-f25m17-3", "--calibrate-levels", levels])
    with pytest.raises(SystemExit) as e:
        bl.main()
    assert says in str(e.value) and "\n" not in str(e.value)
