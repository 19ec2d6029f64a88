"""benchmarks/preregister_load.py: a plan written down before the held-out runs it predicts. The
committed pre-registrations must predate every record of their corpus and still be what the script
plans; the check pairs them with the measured speedups as bench_load.py does."""
import datetime
import json
import subprocess
from pathlib import Path

import pytest

from benchmarks import preregister_load as pr

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
PREREGS = ("prereg_f6m207_36.json", "prereg_f6m207_36_curve.json", "prereg_f6m207_transfer_36.json",
           "prereg_f6m207_transfer_36_curve.json", "prereg_f6m207_510.json", "prereg_f6m207_510_curve.json",
           "prereg_f25m17_3.json", "prereg_f25m17_3_curve.json", "prereg_f25m17_3_bf.json",
           "prereg_f25m17_t36.json", "prereg_f25m17_t36_curve.json", "prereg_f25m17_t36_bf.json",
           "prereg_f25m17_t48.json", "prereg_f25m17_t48_bf.json", "prereg_f25m17_t48_pooled.json",
           "prereg_f25m17_t48_pooled_bf.json", "prereg_f25m17_b36.json", "prereg_f25m17_b36_bf.json",
           "prereg_f25m17_b36_pooled.json", "prereg_f25m17_b36_pooled_bf.json", "prereg_f25m17_b12.json",
           "prereg_f25m17_b12_bf.json", "prereg_f25m17_b12_pooled.json", "prereg_f25m17_b12_pooled_bf.json",
           "prereg_f25m17_b16.json", "prereg_f25m17_b16_bf.json", "prereg_f25m17_b16_with12.json",
           "prereg_f25m17_b16_with12_bf.json", "prereg_f25m17_b24.json", "prereg_f25m17_b24_bf.json",
           "prereg_f25m17_b24_with16.json", "prereg_f25m17_b24_with16_bf.json")


def _prereg(**planned) -> dict:
    return {"levels": [3, 6], "for": "traces/x", "calibrated_on": "traces/y", "commit": "0" * 40,
            "written_utc": "2026-12-06 20:37:39", "records_of_future_corpus_then": 0, "batch_curves": None,
            "planned": planned, "searched_break_even": {"sd": {"vs_ar": "4"}, "lr-d2": {"vs_ar": "1"}}}


def test_check_pairs_each_level_and_counts_speculative_configurations_only():
    prereg = _prereg(**{"3": {"sd": {"speedup_vs_ar": 1.05}, "lr-d2": {"speedup_vs_ar": 0.77},
                              "ar-er": {"speedup_vs_ar": 1.93}},
                        "6": {"sd": {"speedup_vs_ar": 0.84}, "lr-d2": {"speedup_vs_ar": 0.66},
                              "ar-er": {"speedup_vs_ar": 1.93}}})
    result = {"levels": {"3": {"sd": {"speedup_vs_ar": 1.00}, "lr-d2": {"speedup_vs_ar": 0.90},
                               "ar-er": {"speedup_vs_ar": 1.60}},
                         "6": {"sd": {"speedup_vs_ar": 0.80}}},          # lr-d2 at 6 not measured
              "break_even": {"sd": {"measured_vs_ar": "3"}, "lr-d2": {"measured_vs_ar": "3"},
                             "ar-er": {"measured_vs_ar": ">6"}}}
    c = pr.check(prereg, result)
    errs = {(r["level"], r["config"]): r["rel_error"] for r in c["rows"]}
    assert errs[(3, "sd")] == pytest.approx(0.05) and errs[(3, "lr-d2")] == pytest.approx(0.77 / 0.9 - 1)
    assert (6, "lr-d2") not in errs and (3, "ar-er") in errs        # shown, not counted
    assert (c["compared"], c["within_target"]) == (3, 2)          # sd 3 (5%), sd 6 (5%) in; lr-d2 3 (14%) out
    # the plan's break-even at the measured levels: sd first <= 1 at 6, lr-d2 at 3; ar-er not judged
    assert c["break_even"] == {"lr-d2": {"preregistered": "3", "searched": "1", "measured": "3"},
                               "sd": {"preregistered": "6", "searched": "4", "measured": "3"}}
    assert c["break_even_right"] == 1
    text = pr.render(prereg | {"check": c, "checked_against": "r.json"})
    assert "2/3 pre-registered speedups" in text and "| 3 | lr-d2 | 0.77 | 0.90 | -14.4% |" in text


def test_a_check_counts_the_speedups_lr_plan_warned_of_apart():
    """A plan that recorded lr plan's "not measured" warning (benchmarks/load_plan.plan_at's
    beyond_measured) is scored warned and not warned apart, and both renders show the engines."""
    prereg = _prereg(**{"3": {"sd": {"speedup_vs_ar": 1.05, "beyond_measured": []},
                              "lr-d2": {"speedup_vs_ar": 0.77, "beyond_measured": ["draft"]},
                              "ar-er": {"speedup_vs_ar": 1.93, "beyond_measured": ["draft", "target"]}},
                        "6": {"sd": {"speedup_vs_ar": 0.84, "beyond_measured": []},
                              "lr-d2": {"speedup_vs_ar": 0.66, "beyond_measured": ["draft"]}}})
    result = {"levels": {"3": {"sd": {"speedup_vs_ar": 1.00}, "lr-d2": {"speedup_vs_ar": 0.90},
                               "ar-er": {"speedup_vs_ar": 1.0}},
                         "6": {"sd": {"speedup_vs_ar": 0.80}, "lr-d2": {"speedup_vs_ar": 0.64}}},
              "break_even": {}}
    c = pr.check(prereg, result)
    # lr-d2 at 3 (14% out) and 6 (3% in) warned; sd at 3 and 6 (5% each) not; ar-er not counted
    assert c["by_warning"] == {"not_warned": {"within_target": 2, "compared": 2},
                               "warned": {"within_target": 1, "compared": 2}}
    text = pr.render(prereg | {"check": c, "checked_against": "r.json"})
    assert "| 3 | lr-d2 | 0.77 | - | draft |" in text and "| 3 | lr-d2 | 0.77 | 0.90 | -14.4% | draft |" in text
    assert "| 6 | sd | 0.84 | 0.80 | +5.0% | - |" in text
    assert "warned of (passes past the traces' largest): 1/2 within 10%" in text
    assert "Speedups `lr plan` did not warn of: 2/2 within 10%" in text
    # a plan written before the warning: no column, no count
    old = _prereg(**{"3": {"sd": {"speedup_vs_ar": 1.05}}, "6": {}})
    assert "by_warning" not in pr.check(old, {"levels": {"3": {"sd": {"speedup_vs_ar": 1.0}}, "6": {}},
                                              "break_even": {}})
    assert "not measured" not in pr.render(old)


def test_a_corpus_with_records_cannot_be_preregistered(tmp_path, monkeypatch):
    """Any record counts, whatever its data set or level (and even one a reader would reject)."""
    f = tmp_path / "traces" / "z" / "math500" / "c3" / "ar.jsonl"
    f.parent.mkdir(parents=True)
    f.write_text('{"a": 1}\n{"b": 2}\n\n{"c": 3}\n')
    monkeypatch.setattr(pr, "ROOT", tmp_path)
    with pytest.raises(SystemExit, match="already holds 3 records"):
        pr.preregister("traces/y", [3], "traces/z", {})


def test_dirty_means_planning_code_not_results(tmp_path):
    """A new or changed results file leaves the plan clean; a changed or new module does not."""
    def git(*a):
        subprocess.run(["git", *a], cwd=tmp_path, check=True, capture_output=True)
    (tmp_path / "benchmarks" / "results").mkdir(parents=True)
    (tmp_path / "benchmarks" / "plan.py").write_text("x = 1\n")
    git("init", "-q")
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c")
    assert not pr.planning_code_dirty(tmp_path)
    (tmp_path / "benchmarks" / "results" / "prereg_x.json").write_text("{}\n")
    assert not pr.planning_code_dirty(tmp_path)
    (tmp_path / "lrsim").mkdir()
    (tmp_path / "lrsim" / "new.py").write_text("")
    assert pr.planning_code_dirty(tmp_path)
    (tmp_path / "lrsim" / "new.py").unlink()
    (tmp_path / "benchmarks" / "plan.py").write_text("x = 2\n")
    assert pr.planning_code_dirty(tmp_path)


def test_batch_factors_and_a_curve_are_refused_together(monkeypatch):
    """Both shape the line in the batch size (bench_load.py refuses the pair too)."""
    monkeypatch.setattr("sys.argv", ["preregister_load.py", "--batch-factors", "--target-batch-curve",
                                     "traces/curves/f6m207-target.json"])
    with pytest.raises(SystemExit, match="--batch-factors or a batch curve, not both"):
        pr.main()


def test_a_check_takes_no_shaping_flag(monkeypatch):
    monkeypatch.setattr("sys.argv", ["preregister_load.py", "--check", "x.json", "--against", "y.json",
                                     "--batch-factors"])
    with pytest.raises(SystemExit, match="--check compares a plan as it was written"):
        pr.main()


def test_a_check_takes_no_calibrate_levels(monkeypatch):
    monkeypatch.setattr("sys.argv", ["preregister_load.py", "--check", "x.json", "--against", "y.json",
                                     "--calibrate-levels", "1,2,4,8"])
    with pytest.raises(SystemExit, match="--calibrate-levels shape a new plan only"):
        pr.main()


def test_a_plan_pools_corpora_at_the_levels_asked(monkeypatch):
    """--calibrate-on A,B --calibrate-levels 1,2,3,4,6,8: each corpus's files at those levels (here
    f25m17-3's 1, 2, 4, 8 and t36's 3, 6) calibrate the profiles; recorded, and rendered."""
    seen = {}

    class Stop(Exception):
        pass

    def plan_profile(paths, *a, **k):
        seen["paths"] = paths
        raise Stop

    monkeypatch.setattr(pr, "plan_profile", plan_profile)
    with pytest.raises(Stop):
        pr._plan("traces/load-cold-epyc-f25m17-3,traces/load-cold-epyc-f25m17-t36", [4, 8], False, (1, 2, 3, 4, 6, 8))
    got = {(Path(p).parents[2].name, Path(p).parent.name) for p in seen["paths"]}
    assert {lv for c, lv in got if c == "load-cold-epyc-f25m17-3"} == {"c1", "c2", "c4", "c8"}
    assert {lv for c, lv in got if c == "load-cold-epyc-f25m17-t36"} == {"c3", "c6"}
    doc = _prereg(**{"3": {"lr-d2": {"speedup_vs_ar": 0.9}}}) | {"calibrate_levels": [1, 2, 4, 8]}
    assert "traces/y's levels 1, 2, 4, 8 in flight" in pr.render(doc)
    assert "traces/y's 1-2 in flight" in pr.render(_prereg(**{"3": {"lr-d2": {"speedup_vs_ar": 0.9}}}))


@pytest.mark.parametrize("cal, says", [
    ("traces/load-cold-epyc-f25m17-3, traces/load-cold-epyc-f25m17-3/", "a corpus named twice"),
    ("traces/load-cold-epyc-f25m17-3,traces/no-such-corpus", "no level 1-2 traces under traces/no-such-corpus"),
])
def test_a_pooled_plan_refuses_a_corpus_twice_or_one_without_traces(cal, says):
    with pytest.raises(SystemExit) as e:
        pr._plan(cal, [4, 8])
    assert says in str(e.value) and "\n" not in str(e.value)


def test_a_check_of_other_levels_is_refused():
    with pytest.raises(SystemExit, match="measured levels 3, 8, the plan was for 3, 6"):
        pr.check(_prereg(**{"3": {}, "6": {}}), {"levels": {"3": {}, "8": {}}, "break_even": {}})


def _starts(corpus: Path) -> list[float]:
    """When a corpus's runs began: each record's run's probe of the idle engines, or (a cold-cache
    corpus) a lone record's own probe and each block's probe, kept beside its passes. Every record
    is dated by one of them."""
    recs = [json.loads(line) for f in corpus.glob("gsm8k/c*/*.jsonl") for line in f.read_text().splitlines()
            if line.strip()]
    assert recs
    own = [(r["run"].get("probe_at_start") or (r.get("probe") or {}).get("before") or {}).get("t") for r in recs]
    blocks = {(f.parent.parent.name, f.parent.name.removesuffix(".passes"), f.stem.removeprefix("round")):
              json.loads(f.read_text()).get("probe_at_start_t") for f in corpus.glob("gsm8k/c*/*.passes/round*.json")}
    flags = [r["run"]["flags"] for r in recs]
    assert all(t is not None or blocks.get((f"c{f['concurrency']}", f["load_config"], str(f["load_round"]))) is not None
               for f, t in zip(flags, own))
    return [t for t in own + list(blocks.values()) if t is not None]


@pytest.mark.parametrize("name", PREREGS)
def test_the_committed_preregistrations_predate_their_corpus(name):
    doc = json.loads((RESULTS / name).read_text())
    assert doc["records_of_future_corpus_then"] == 0
    assert pr.render(doc) == (RESULTS / name).with_suffix(".md").read_text()
    written = datetime.datetime.strptime(doc["written_utc"], "%Y-%m-%d %H:%M:%S").replace(
        tzinfo=datetime.timezone.utc).timestamp()
    starts = _starts(ROOT / doc["for"])
    assert starts and min(starts) > written            # every run began after the plan was written
    # ... and git says so: the commit adding the plan is an ancestor of the one adding the traces
    # (a clone without that history, e.g. a shallow one, cannot tell)
    def added(path: str) -> str:
        return subprocess.run(["git", "log", "--diff-filter=A", "--format=%H", "--", path], capture_output=True,
                              text=True, cwd=ROOT).stdout.split()[-1:]
    plan, traces = added(f"benchmarks/results/{name}"), added(f"{doc['for']}/collection.log")
    if not plan or not traces:
        pytest.skip("no git history of the plan or the traces here")
    assert plan != traces and subprocess.run(["git", "merge-base", "--is-ancestor", plan[0], traces[0]],
                                             cwd=ROOT).returncode == 0


@pytest.mark.parametrize("corpus,lo,hi", [("load-f6m207-36", 1264, 1281), ("load-f6m207-transfer-36", 1282, 1299),
                                          ("load-f6m207-510", 1116, 1135), ("load-cold-epyc-f25m17-3", 1136, 1151),
                                          ("load-cold-epyc-f25m17-t36", 1152, 1169),
                                          ("load-cold-epyc-f25m17-t48", 1170, 1193),
                                          ("load-cold-epyc-f25m17-b36", 1016, 1033),
                                          ("load-cold-epyc-f25m17-b12", 1034, 1069),
                                          ("load-cold-epyc-f25m17-b16", 48, 95),
                                          ("load-cold-epyc-f25m17-b24", 96, 143)])
def test_no_other_corpus_ran_the_preregistered_corpus_problems(corpus, lo, hi):
    """A pre-registered corpus's GSM8K problems (traces/load-f6m207-36: 1264-1281,
    traces/load-f6m207-transfer-36: 1282-1299, traces/load-f6m207-510: 1116-1135,
    traces/load-cold-epyc-f25m17-3: 1136-1151, traces/load-cold-epyc-f25m17-t36: 1152-1169,
    traces/load-cold-epyc-f25m17-t48: 1170-1193, traces/load-cold-epyc-f25m17-b36: 1016-1033, traces/load-cold-epyc-f25m17-b12: 1034-1069,
    traces/load-cold-epyc-f25m17-b16: 48-95, traces/load-cold-epyc-f25m17-b24: 96-143) appear
    in no other trace file here."""
    import re

    pat = re.compile(r'"problem_id": ?"gsm8k/(\d+)"')
    hits = {f for f in (ROOT / "traces").rglob("*.jsonl")
            if any(lo <= int(m) <= hi for m in pat.findall(f.read_text()))}
    assert hits and {f.relative_to(ROOT).parts[1] for f in hits} == {corpus}


@pytest.mark.parametrize("name", PREREGS)
def test_the_preregistration_is_what_the_script_plans(name, tmp_path):
    """Rerun on the calibration corpus (the future corpus named as one that does not exist yet):
    the same plan, to the rendered digits, by the line, with the batch curves and with the batch factors."""
    from benchmarks import load_replay

    doc = json.loads((RESULTS / name).read_text())
    again = pr.preregister(doc["calibrated_on"], doc["levels"], str(tmp_path / "none"), doc["batch_curves"] or {},
                           doc.get("batch_factors", False), tuple(doc.get("calibrate_levels", (1, 2))),
                           doc.get("max_num_seqs"))
    assert load_replay.BATCH_CURVES == {} and load_replay.MAX_NUM_SEQS is None   # put back for what runs next
    assert {n: {c: f"{r['speedup_vs_ar']:.2f}" for c, r in t.items()} for n, t in again["planned"].items()} == \
        {n: {c: f"{r['speedup_vs_ar']:.2f}" for c, r in t.items()} for n, t in doc["planned"].items()}
    # the warning and the simulated passes, where the plan recorded them (written since e5e8ebb)
    for key in ("beyond_measured", "max_batch", "ar_max_batch"):
        assert {(n, c): r[key] for n, t in doc["planned"].items() for c, r in t.items() if key in r} == \
            {(n, c): r[key] for n, t in again["planned"].items() for c, r in t.items() if key in r and key in doc["planned"][n][c]}
    assert again["searched_break_even"] == doc["searched_break_even"]


@pytest.mark.parametrize("name,result", [(PREREGS[0], "load_f6m207_36_heldout.json"),
                                         (PREREGS[1], "load_f6m207_36_heldout_curve.json"),
                                         (PREREGS[2], "load_f6m207_transfer_36_heldout.json"),
                                         (PREREGS[3], "load_f6m207_transfer_36_heldout_curve.json"),
                                         (PREREGS[4], "load_f6m207_510_heldout.json"),
                                         (PREREGS[5], "load_f6m207_510_heldout_curve.json"),
                                         (PREREGS[6], "load_cold_epyc_f25m17_3_heldout.json"),
                                         (PREREGS[7], "load_cold_epyc_f25m17_3_heldout_curve.json"),
                                         (PREREGS[8], "load_cold_epyc_f25m17_3_heldout_bf.json"),
                                         (PREREGS[9], "load_cold_epyc_f25m17_t36_heldout.json"),
                                         (PREREGS[10], "load_cold_epyc_f25m17_t36_heldout_curve.json"),
                                         (PREREGS[11], "load_cold_epyc_f25m17_t36_heldout_bf.json"),
                                         (PREREGS[12], "load_cold_epyc_f25m17_t48_heldout.json"),
                                         (PREREGS[13], "load_cold_epyc_f25m17_t48_heldout_bf.json"),
                                         (PREREGS[14], "load_cold_epyc_f25m17_t48_heldout_pooled.json"),
                                         (PREREGS[15], "load_cold_epyc_f25m17_t48_heldout_pooled_bf.json"),
                                         (PREREGS[16], "load_cold_epyc_f25m17_b36_heldout.json"),
                                         (PREREGS[17], "load_cold_epyc_f25m17_b36_heldout_bf.json"),
                                         (PREREGS[18], "load_cold_epyc_f25m17_b36_heldout_pooled.json"),
                                         (PREREGS[19], "load_cold_epyc_f25m17_b36_heldout_pooled_bf.json"),
                                         (PREREGS[20], "load_cold_epyc_f25m17_b12_heldout.json"),
                                         (PREREGS[21], "load_cold_epyc_f25m17_b12_heldout_bf.json"),
                                         (PREREGS[22], "load_cold_epyc_f25m17_b12_heldout_pooled.json"),
                                         (PREREGS[23], "load_cold_epyc_f25m17_b12_heldout_pooled_bf.json"),
                                         (PREREGS[24], "load_cold_epyc_f25m17_b16_heldout.json"),
                                         (PREREGS[25], "load_cold_epyc_f25m17_b16_heldout_bf.json"),
                                         (PREREGS[26], "load_cold_epyc_f25m17_b16_heldout_with12.json"),
                                         (PREREGS[27], "load_cold_epyc_f25m17_b16_heldout_with12_bf.json"),
                                         (PREREGS[28], "load_cold_epyc_f25m17_b24_heldout.json"),
                                         (PREREGS[29], "load_cold_epyc_f25m17_b24_heldout_bf.json"),
                                         (PREREGS[30], "load_cold_epyc_f25m17_b24_heldout_with16.json"),
                                         (PREREGS[31], "load_cold_epyc_f25m17_b24_heldout_with16_bf.json")])
def test_the_committed_checks_are_the_preregistration_beside_the_measured_corpus(name, result):
    """benchmarks/results/prereg_{f6m207_36,f6m207_transfer_36,f6m207_510,f25m17_3}{,_curve,_bf}.check.*: the
    pre-registration unchanged,
    and the check recomputed from it and bench_load.py's committed result on the corpus (docs/load.md, "A
    plan written before its runs": 3 and 4 of 8 within 10%, break-evens 3 and 4 of 4; "Depths the profile
    never ran": 4 of 6 by both, break-evens 3 of 3; "Ten in flight, planned from one and two": 4 and 3
    of 8, break-evens 4 of 4; "Another boot of the fourth CPU": 3, 4 and 6 of 8 by the line, the curves
    and the batch factors, break-evens 1, 2 and 2 of 2; "Depths never run, on the fourth CPU": 1 of 6 by
    each, break-evens 3 of 3; "Every load of a corpus of other depths": 6 of 6 by each of four plans,
    break-evens 3 of 3; between its swept loads: 2, 5, 2 and 5 of 6, break-evens 3 of 3; past them, at 12: 3 of 3 by each;
    at 16: 3, 1, 0 and 0 of 3 by the line, the batch factors and the two with 12, break-evens 3 of 3;
    at 24: 3, 3, 1 and 2 of 3 by the line, the batch factors and the two with 16, break-evens 3 of 3)."""
    prereg = json.loads((RESULTS / name).read_text())
    got = json.loads((RESULTS / name).with_suffix(".check.json").read_text())
    assert {k: v for k, v in got.items() if k not in ("check", "checked_against")} == prereg
    assert got["check"] == json.loads(json.dumps(pr.check(prereg, json.loads((RESULTS / result).read_text()))))
    assert pr.render(got) == (RESULTS / name).with_suffix(".check.md").read_text()
    c = got["check"]
    assert (c["within_target"], c["compared"], c["break_even_right"]) == {
        PREREGS[0]: (3, 8, 3), PREREGS[1]: (4, 8, 4), PREREGS[2]: (4, 6, 3), PREREGS[3]: (4, 6, 3),
        PREREGS[4]: (4, 8, 4), PREREGS[5]: (3, 8, 4), PREREGS[6]: (3, 8, 1), PREREGS[7]: (4, 8, 2),
        PREREGS[8]: (6, 8, 2), PREREGS[9]: (1, 6, 3), PREREGS[10]: (1, 6, 3), PREREGS[11]: (1, 6, 3),
        PREREGS[12]: (6, 6, 3), PREREGS[13]: (6, 6, 3), PREREGS[14]: (6, 6, 3), PREREGS[15]: (6, 6, 3),
        PREREGS[16]: (2, 6, 3), PREREGS[17]: (5, 6, 3), PREREGS[18]: (2, 6, 3), PREREGS[19]: (5, 6, 3),
        PREREGS[20]: (3, 3, 3), PREREGS[21]: (3, 3, 3), PREREGS[22]: (3, 3, 3), PREREGS[23]: (3, 3, 3),
        PREREGS[24]: (3, 3, 3), PREREGS[25]: (1, 3, 3), PREREGS[26]: (0, 3, 3), PREREGS[27]: (0, 3, 3),
        PREREGS[28]: (3, 3, 3), PREREGS[29]: (3, 3, 3), PREREGS[30]: (1, 3, 3), PREREGS[31]: (2, 3, 3)}[name]


def test_plan_at_names_the_engines_lr_plan_warned_of(tmp_path):
    """benchmarks/load_plan.warned reads ProfileSource.beyond_measured's real notes: the engines
    whose passes, in the configuration's row or ar's, held more sequences than the profile's
    traces (here the shipped CPU test profile as if they held at most 2 in every entry)."""
    from benchmarks.load_plan import warned
    from lrsim.plan.sources import ProfileSource

    doc = json.loads((ROOT / "tests" / "data" / "calib" / "cpu-gsm8k-profile.json").read_text())
    for entry in doc["latency"].values():
        entry["fit"]["ranges"] = {"sequences": [1, 2]}
    (tmp_path / "p.json").write_text(json.dumps(doc))
    src = ProfileSource(str(tmp_path / "p.json"))
    row = lambda mode, **mb: {"mode": mode, "label": mode, "max_batch": mb}  # noqa: E731
    assert warned(src, row("lr", target=2, draft=2), row("ar", target=2)) == []
    assert warned(src, row("lr", target=3, draft=2), row("ar", target=2)) == ["target"]
    assert warned(src, row("lr", target=2, draft=5), row("ar", target=2)) == ["draft"]
    assert warned(src, row("lr", target=1, draft=1), row("ar", target=3)) == ["target"]     # ar's own passes
    assert warned(src, row("lr", target=9, draft=9), row("ar", target=1)) == ["target", "draft"]
