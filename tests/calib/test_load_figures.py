"""The load figures of the README's "Under load" and docs/load.md (benchmarks/results/load.md,
load_heldout.md, the held-out check, and load_transfer.md, configurations the profile never ran) are what the
committed load corpora give: every measured and replayed number of each results file is
recomputed from its traces (traces/load; traces/load-heldout and traces/load-transfer predicted
from traces/load's profile), and each .md is its rendering. A trace edited, or the replay
changed, without rerunning benchmarks/bench_load.py fails here (tests/test_quoted_results.py pins
the README and docs/load.md to the .md files)."""
import json
from pathlib import Path

import pytest

from benchmarks import bench_load as bl

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
REL = 1e-6      # recomputed floats against the committed ones (see the first test)


def approx_tree(x):
    """`x` with every float compared to REL (dicts and lists walked)."""
    if isinstance(x, dict):
        return {k: approx_tree(v) for k, v in x.items()}
    if isinstance(x, list):
        return [approx_tree(v) for v in x]
    return pytest.approx(x, rel=REL) if isinstance(x, float) else x


# (results file, measured corpus, calibration corpus): bench_load.py's default and its held-out run
RUNS = {"load": ("traces/load", "traces/load"), "load_heldout": ("traces/load-heldout", "traces/load"),
        "load_transfer": ("traces/load-transfer", "traces/load"),
        "load_cold_epyc_all": ("traces/load-cold-epyc-all", "traces/load-cold-epyc-all"),
        "load_cold_epyc_all_heldout": ("traces/load-cold-epyc-all", "traces/load")}


@pytest.fixture(scope="module", params=sorted(RUNS))
def run_name(request):
    return request.param


@pytest.fixture(scope="module")
def committed(run_name):
    return json.loads((RESULTS / f"{run_name}.json").read_text())


@pytest.fixture(scope="module")
def recomputed(run_name):
    load, calib = RUNS[run_name]
    corpus = bl.load_corpus(ROOT / load)
    speed = bl.corpus_probe(corpus) if load != calib else None   # held out: one probe for all
    _, measured, profile = bl.measure(ROOT / calib, corpus, speed)
    return corpus, measured, profile


def replayed_pct(doc: dict) -> dict:
    """{(level, configuration): replayed / measured speedup over ar - 1, in %} of a bench_load result."""
    return {(n, c): 100 * (r["predicted_speedup_vs_ar"] / r["speedup_vs_ar"] - 1)
            for n, t in doc["levels"].items() for c, r in t.items() if r.get("predicted_speedup_vs_ar")}


def within_10(errs) -> int:
    """How many errors (in %) are within the issue's 10% target."""
    return sum(abs(e) <= 10 for e in errs)


def largest(errs: dict) -> tuple:
    """(the key of the largest error, its size in % to one decimal)."""
    return max(errs, key=lambda k: abs(errs[k])), round(max(map(abs, errs.values())), 1)


def planned_pct(doc: dict, key: str = "planned") -> list:
    """|planned / measured speedup over ar - 1|, in %, of every speculative (configuration, level)
    pair of a bench_load result (`key`: planned_at_measured_acceptance for the plan given each
    level's measured step acceptance)."""
    from benchmarks.load_summary import planned_errors
    return [100 * e for c, e in planned_errors(doc, key) if c != "ar-er"]


def break_evens(doc: dict) -> dict:
    """{speculative configuration: (planned, measured) break-even level against ar}."""
    return {c: (b["planned_vs_ar"], b["measured_vs_ar"]) for c, b in doc["break_even"].items() if c != "ar-er"}


def check_eight_points(doc: dict, replayed: int, worst: float, planned: int, breaks: dict,
                       top_plan: float | None = None, at_acc: int | None = None) -> None:
    """A result predicting two speculative configurations at four levels: how many of its 8
    replayed and planned speedups hold within 10%, the largest replay error (and plan error,
    `top_plan`), the plan at the measured acceptance (`at_acc`) and the break-evens against ar."""
    e = replayed_pct(doc)
    assert within_10(e.values()) == replayed and len(e) == 8 and largest(e)[1] == worst
    assert within_10(planned_pct(doc)) == planned and len(planned_pct(doc)) == 8
    if top_plan is not None:
        assert round(max(planned_pct(doc)), 1) == top_plan
    if at_acc is not None:
        assert within_10(planned_pct(doc, "planned_at_measured_acceptance")) == at_acc
    assert break_evens(doc) == breaks


def test_measured_and_replayed_numbers_come_from_the_committed_traces(committed, recomputed):
    corpus, measured, _ = recomputed
    assert committed["records"] == sum(len(r) for lv in corpus.values() for r in lv.values())
    assert set(committed["levels"]) == {str(n) for n in measured}
    for n, table in measured.items():
        want = committed["levels"][str(n)]
        assert set(want) == set(table), n
        for cfg, row in table.items():
            for key, value in row.items():
                if isinstance(value, float):
                    # measured: arithmetic on recorded times; replayed: a seeded simulation of a
                    # profile fitted by an iterative least-squares solve, whose last digits
                    # differ between CPUs (1.4e-9 relative between two machines here): 1e-6 is
                    # far below any change of a trace or of the model
                    assert want[cfg][key] == pytest.approx(value, rel=REL), (n, cfg, key)
                else:
                    assert want[cfg][key] == value, (n, cfg, key)


def test_break_even_and_error_summary_follow_from_the_levels(committed, recomputed):
    _, measured, _ = recomputed
    for cfg, b in committed["break_even"].items():
        assert b["measured_vs_ar"] == bl.break_even(measured, "speedup_vs_ar", cfg)
        assert b["measured_vs_ar-er"] == bl.break_even(measured, "speedup_vs_ar-er", cfg)
        assert b["replayed_vs_ar"] == bl.break_even(measured, "predicted_speedup_vs_ar", cfg)
    errs = [abs(r["predicted_speedup_vs_ar"] / r["speedup_vs_ar"] - 1)
            for t in measured.values() for r in t.values() if r.get("predicted_speedup_vs_ar")]
    assert committed["replay_speedup_error_max"] == pytest.approx(max(errs), rel=REL)


def test_the_latency_fit_summary_is_the_replay_profiles(committed, recomputed):
    assert committed["latency_fit"] == approx_tree(bl.fit_summary(recomputed[2]))


def test_position_factors_close_the_target_passes_total():
    """README, "Under load": with each record priced at its own or its run's probe in the fit (as
    the replay does), the target's line alone prices every configuration's passes within -0.9% to
    +3.6% of their measured total and with the measured factors by verification positions all are
    within 1.8%; the draft's line within 3.3%; the replay (whole-block prefill, or the records' own
    counts from round 5 on) is within 10% at 15 of the 16 points, largest error 12.7% (lr-d2-emb
    at 8 in flight, 0.62x against 0.71x), below the measured speedup of the LR configurations
    without SD at 2-8 in flight (by 2.7-12.7%), while sd and lr+sd are within 5.7% either side."""
    committed = json.loads((RESULTS / "load.json").read_text())
    fit = committed["latency_fit"]["target"]
    rows = fit["by_config"].values()
    assert len(rows) == 5
    assert all(-1.0 < r["linear_sum_diff_pct"] < 3.6 for r in rows)
    assert all(abs(r["sum_diff_pct"]) < 1.8 for r in rows)
    draft = committed["latency_fit"]["draft"]["by_config"].values()
    assert len(draft) == 3 and all(abs(r["sum_diff_pct"]) < 3.3 for r in draft)
    knots = dict(map(tuple, fit["position_factors"]))
    assert knots[6.0] > knots[0.0]
    rep = {(n, c): r["predicted_speedup_vs_ar"] / r["speedup_vs_ar"] - 1
           for n, t in committed["levels"].items() for c, r in t.items() if r.get("predicted_speedup_vs_ar")}
    assert len(rep) == 16 and sum(abs(e) <= 0.10 for e in rep.values()) == 15
    assert committed["replay_speedup_error_max"] == pytest.approx(0.127, abs=0.0005)
    assert rep[("8", "lr-d2-emb")] == pytest.approx(-0.127, abs=0.0005)
    assert sorted(k for k, e in rep.items() if abs(e) > 0.10) == [("8", "lr-d2-emb")]
    lr = [-e for (n, c), e in rep.items() if n != "1" and c in ("lr-d2", "lr-d2-emb")]
    assert len(lr) == 6 and round(min(lr), 3) == 0.027 and round(max(lr), 3) == 0.127
    sd = [e for (n, c), e in rep.items() if n != "1" and "sd" in c]
    assert len(sd) == 6 and max(abs(e) for e in sd) < 0.057


def test_the_markdown_is_the_json_rendered(committed, run_name):
    assert (RESULTS / f"{run_name}.md").read_text() == bl.render(committed)


def test_the_planned_equal_resources_baseline_is_the_measured_one(committed, run_name):
    """The plan's ar-er runs at the TP efficiency the profile measured from ar-er against ar on
    levels 1-2 (lrsim/calib/equal.py), not the GPU default of 0.9 (planned 1.80x, measured ~1.6x):
    AR priced on both cores is that speedup over AR on one at every level."""
    eff = committed["tp_efficiency"]["exact"]
    assert eff["core_ratio"] == 2 and eff["tp_efficiency"] == pytest.approx(eff["speedup"] / 2)
    if run_name == "load_transfer":     # its corpus runs no ar-er (collect_load.py --set transfer)
        assert not any("ar-er" in t for t in committed["levels"].values())
        return
    # the cold all-configuration corpus's ar-er grew with the load (1.36x at 2 in flight, 1.62x at
    # 8): one efficiency misses its ends, its own (0.69) at 8, traces/load's (0.78) at 1-2
    misses = {"load_cold_epyc_all": ["8"], "load_cold_epyc_all_heldout": ["1", "2"]}.get(run_name, [])
    off = []
    for n, planned in committed["planned"].items():
        assert planned["ar-er"]["speedup_vs_ar"] == pytest.approx(eff["speedup"], rel=1e-6), n
        measured = committed["levels"][n]["ar-er"]["speedup_vs_ar"]
        if planned["ar-er"]["speedup_vs_ar"] != pytest.approx(measured, rel=0.10):
            off.append(n)
    assert off == misses


def test_the_held_out_claims():
    """docs/load.md, "Held out": at the corpus's median probe (its equal-resources blocks' probes left
    out) the replay predicts tokens/s within -6.4%..+7.4% and speedups within 10% at 12 of 12
    (largest 9.5%, lr+sd at 6: 0.51x against 0.46x; below measured for every speculative
    configuration at 3, and at 6 above for all but lr-d2, 0.0%), and every break-even; each
    block's own probe does about as well (-11%..+4%); the plan (tokens/s ratios, as measured) is
    within 10% at 12 of 15 (largest 16.6%, lr+sd at 6: 0.54x against 0.46x; lr-d2-emb alone 1.03x
    against 0.93x, lr+sd alone 1.14x against 1.03x), placing 3 of 4 break-evens, and at 14 of 15
    given each level's measured step acceptance (largest 12.5%; traces/load: 17 and 14 of 20, its
    three misses lr-d2-emb at 2 (inside the measured 90% interval), lr-d2 at 4 and lr+sd at 8
    (+14.9%); the mean-latency ratios 15 of 20, largest 15.6%); the replay's one miss is not inside
    its interval; the embedding verifier's acceptance 0.62-0.67 in the calibration records,
    0.55-0.58 at 4-8 and 0.53-0.57 held out; AR on both cores 1.42-1.57x AR against the plan's
    1.55x."""
    held = json.loads((RESULTS / "load_heldout.json").read_text())
    assert held["calibrated_on"]["held_out"] and held["calibrated_on"]["corpus"] == "traces/load"
    assert held["replay_probe"] == "the corpus's median" and held["records"] == 300
    tps, own = held["replay_tokens_per_s_error"], held["replay_tokens_per_s_error_own_probe"]
    assert round(tps["min"], 3) == -0.064 and round(tps["max"], 3) == 0.074
    assert round(own["min"], 3) == -0.110 and round(own["max"], 3) == 0.039
    rep = {(n, c): r["predicted_speedup_vs_ar"] / r["speedup_vs_ar"] - 1
           for n, t in held["levels"].items() for c, r in t.items() if r.get("predicted_speedup_vs_ar")}
    assert len(rep) == 12 and sum(abs(e) <= 0.10 for e in rep.values()) == 12
    assert max(map(abs, rep.values())) == pytest.approx(0.095, abs=0.0005)
    assert rep[("6", "lr+sd-d2-emb")] == pytest.approx(0.095, abs=0.0005)
    assert all(e < 0 for (n, c), e in rep.items() if n == "3")
    assert [c for (n, c), e in rep.items() if n == "6" and e < 0] == ["lr-d2"]
    assert rep[("6", "lr-d2")] == pytest.approx(0.0, abs=0.0005)
    be = held["break_even"]
    lr = ("lr+sd-d2-emb", "lr-d2", "lr-d2-emb", "sd")
    assert all(be[c]["replayed_vs_ar"] == be[c]["measured_vs_ar"] for c in lr)
    assert [c for c in lr if be[c]["planned_vs_ar"] != be[c]["measured_vs_ar"]] == ["lr-d2-emb"]
    within = lambda doc, key: sum(e <= 0.10 for e in bl.plan_errors(doc, key))  # noqa: E731
    assert within(held, "planned") == 12 and within(held, "planned_at_measured_acceptance") == 14
    assert max(bl.plan_errors(held, "planned")) == pytest.approx(0.166, abs=0.0005)
    assert max(bl.plan_errors(held, "planned_at_measured_acceptance")) == pytest.approx(0.125, abs=0.0005)
    p1, p6 = held["planned"]["1"], held["planned"]["6"]
    assert round(p1["lr-d2-emb"]["speedup_vs_ar"], 2) == 1.03
    assert round(held["levels"]["1"]["lr-d2-emb"]["speedup_vs_ar"], 2) == 0.93
    assert round(p6["lr+sd-d2-emb"]["speedup_vs_ar"], 2) == 0.54
    assert round(held["levels"]["6"]["lr+sd-d2-emb"]["speedup_vs_ar"], 2) == 0.46
    off = lambda doc, n, c: (doc["planned"][n][c]["speedup_vs_ar"]  # noqa: E731
                             / doc["levels"][n][c]["speedup_vs_ar"] - 1)
    misses = lambda doc: sorted((n, c) for n, t in doc["planned"].items() for c in t  # noqa: E731
                                if abs(off(doc, n, c)) > 0.10)
    assert misses(held) == [("1", "lr+sd-d2-emb"), ("1", "lr-d2-emb"), ("6", "lr+sd-d2-emb")]
    assert round(p1["lr+sd-d2-emb"]["speedup_vs_ar"], 2) == 1.14
    assert round(held["levels"]["1"]["lr+sd-d2-emb"]["speedup_vs_ar"], 2) == 1.03
    load = json.loads((RESULTS / "load.json").read_text())
    assert within(load, "planned") == 17 and within(load, "planned_at_measured_acceptance") == 14
    assert round(max(bl.plan_errors(load, "planned")), 3) == 0.149
    assert max(bl.plan_errors(load, "planned_at_measured_acceptance")) == pytest.approx(0.144, abs=0.0005)
    lat = bl.plan_errors(load, "planned", "latency_speedup_vs_ar")
    assert sum(e <= 0.10 for e in lat) == 15 and max(lat) == pytest.approx(0.156, abs=0.0005)
    assert misses(load) == [("2", "lr-d2-emb"), ("4", "lr-d2"), ("8", "lr+sd-d2-emb")]
    assert round(off(load, "8", "lr+sd-d2-emb"), 3) == 0.149
    assert bl.misses_inside_interval(load, "planned") == (1, 3)
    # history docs/load.md keeps: before the fit priced each record at its own or its run's probe
    # (lrsim/calib/physical.record_probe) the replay held 14 of 16 points within 10% on traces/load,
    # 11 of 12 held out, 10 of 16 on load-cold-epyc-all's own profile and 15 of 16 (largest 13.9%)
    # on it held out; none of those counts fell
    cea = json.loads((RESULTS / "load_cold_epyc_all.json").read_text())
    ceah = json.loads((RESULTS / "load_cold_epyc_all_heldout.json").read_text())
    replayed = lambda doc: [r["predicted_speedup_vs_ar"] / r["speedup_vs_ar"] - 1  # noqa: E731
                            for t in doc["levels"].values() for r in t.values() if r.get("predicted_speedup_vs_ar")]
    now = [sum(abs(e) <= 0.10 for e in replayed(d)) for d in (load, held, cea, ceah)]
    assert now == [15, 12, 13, 15] and all(a >= b for a, b in zip(now, [14, 11, 10, 15]))
    assert 100 * max(map(abs, replayed(ceah))) < 13.9
    for doc in (load, held):     # the replay's misses: none inside the measured 90% interval
        for t in doc["levels"].values():
            for r in t.values():
                rep = r.get("predicted_speedup_vs_ar")
                if rep and abs(rep / r["speedup_vs_ar"] - 1) > 0.10:
                    lo, hi = r["speedup_vs_ar_ci90"]
                    assert not lo <= rep <= hi
    emb = lambda doc, levels: [round(doc["levels"][n][c]["step_acceptance"], 2)  # noqa: E731
                               for n in levels for c in ("lr-d2-emb", "lr+sd-d2-emb")]
    assert (min(emb(load, "12")), max(emb(load, "12"))) == (0.62, 0.67)
    assert (min(emb(load, "48")), max(emb(load, "48"))) == (0.55, 0.58)
    assert (min(emb(held, "136")), max(emb(held, "136"))) == (0.53, 0.57)
    er = [t["ar-er"]["speedup_vs_ar"] for t in held["levels"].values()]
    assert 1.41 < min(er) and max(er) < 1.575
    assert all(p["ar-er"]["speedup_vs_ar"] == pytest.approx(1.55, abs=0.005) for p in held["planned"].values())


def test_the_transfer_claims():
    """docs/load.md, "Transfer": alone, nine blocks measure all three unseen configurations at 0.94x AR;
    the replay says 1.04x for lr+sd (9.7% off) and 0.98x / 0.97x for depths 1 and 3 (break-even 1
    as measured for those two, 3 for lr+sd), the plan 1.02-1.14x (3 for all three); at 3 in flight
    the replay is within 10% for all three (depth 3 replays 0.81x against 0.86x), the plan for all
    but lr+sd (+10.1%); at 6 the replay is above measured for all three (lr+sd 16.0%), the plan
    optimistic for all three, up to 26.9% (lr+sd, 0.51x against 0.41x); there the replay prices ar
    11.1% slow and the LR configurations -6.1% to +3.2%; replay within 10% at 8 of 9 (largest
    16.0%), plan 5 of 9 (largest 26.9%), 7 of 9 at the measured acceptance (largest 18.1%, lr+sd at
    6; lr+sd alone 12.9%); depth 1 accepted 0.43-0.46, depth 3 0.53-0.56, lr+sd 0.53-0.54; the
    absolute range at the median probe up to +101.0%, at each block's own probe -11.9%..+3.1%."""
    doc = json.loads((RESULTS / "load_transfer.json").read_text())
    assert doc["records"] == 217 and doc["calibrated_on"]["corpus"] == "traces/load"
    one = doc["levels"]["1"]
    cfgs = ("lr+sd-d3-emb", "lr-d1-emb", "lr-d3-emb")
    assert all(one[c]["blocks"] == 9 and round(one[c]["speedup_vs_ar"], 2) == 0.94 for c in cfgs)
    assert [round(one[c]["predicted_speedup_vs_ar"], 2) for c in cfgs] == [1.04, 0.98, 0.97]
    lrsd = one["lr+sd-d3-emb"]
    assert round(100 * (lrsd["predicted_speedup_vs_ar"] / lrsd["speedup_vs_ar"] - 1), 1) == 9.7
    planned = [doc["planned"]["1"][c]["speedup_vs_ar"] for c in cfgs]
    assert round(min(planned), 2) == 1.02 and round(max(planned), 2) == 1.14
    be = doc["break_even"]
    assert [be[c]["measured_vs_ar"] for c in cfgs] == ["1", "1", "1"]
    assert [be[c]["replayed_vs_ar"] for c in cfgs] == ["3", "1", "1"]
    assert [be[c]["planned_vs_ar"] for c in cfgs] == ["3", "3", "3"]
    six = doc["levels"]["6"]
    off = {c: six[c]["predicted_tokens_per_s"] / six[c]["tokens_per_s"] - 1 for c in ("ar", *cfgs)}
    assert round(100 * off["ar"], 1) == -11.1
    assert round(100 * min(off[c] for c in cfgs), 1) == -6.1 and round(100 * max(off[c] for c in cfgs), 1) == 3.2
    assert [round(six[c][k], 2) for c in cfgs for k in ("predicted_speedup_vs_ar", "speedup_vs_ar")] == \
        [0.47, 0.41, 0.74, 0.68, 0.68, 0.65]
    rep = {(n, c): r["predicted_speedup_vs_ar"] / r["speedup_vs_ar"] - 1
           for n, t in doc["levels"].items() for c, r in t.items() if r.get("predicted_speedup_vs_ar")}
    assert sum(abs(e) <= 0.10 for e in rep.values()) == 8
    assert max(map(abs, rep.values())) == pytest.approx(0.160, abs=0.0005)
    assert rep[("6", "lr+sd-d3-emb")] == pytest.approx(0.160, abs=0.0005)
    assert round(doc["levels"]["3"]["lr-d3-emb"]["predicted_speedup_vs_ar"], 2) == 0.81
    assert all(abs(rep[("3", c)]) <= 0.10 for c in cfgs) and all(rep[("6", c)] > 0 for c in cfgs)
    plan = {(n, c): doc["planned"][n][c]["speedup_vs_ar"] / doc["levels"][n][c]["speedup_vs_ar"] - 1
            for n in doc["planned"] for c in cfgs}
    assert [c for c in cfgs if abs(plan[("3", c)]) > 0.10] == ["lr+sd-d3-emb"]
    assert round(100 * plan[("3", "lr+sd-d3-emb")], 1) == 10.1
    assert all(plan[("6", c)] > 0 for c in cfgs)
    assert max(plan.values()) == pytest.approx(plan[("6", "lr+sd-d3-emb")])
    assert round(100 * plan[("6", "lr+sd-d3-emb")], 1) == 26.9
    assert round(doc["planned"]["6"]["lr+sd-d3-emb"]["speedup_vs_ar"], 2) == 0.51
    within = lambda key: sum(e <= 0.10 for e in bl.plan_errors(doc, key))  # noqa: E731
    assert within("planned") == 5 and within("planned_at_measured_acceptance") == 7
    assert max(bl.plan_errors(doc, "planned")) == pytest.approx(0.269, abs=0.0005)
    assert max(bl.plan_errors(doc, "planned_at_measured_acceptance")) == pytest.approx(0.181, abs=0.0005)
    at_acc = {(n, c): round(100 * (p["speedup_vs_ar"] / doc["levels"][n][c]["speedup_vs_ar"] - 1), 1)
              for n, t in doc["planned_at_measured_acceptance"].items() for c, p in t.items()
              if c in cfgs and abs(p["speedup_vs_ar"] / doc["levels"][n][c]["speedup_vs_ar"] - 1) > 0.10}
    assert at_acc == {("1", "lr+sd-d3-emb"): 12.9, ("6", "lr+sd-d3-emb"): 18.1}
    acc = lambda c: [round(t[c]["step_acceptance"], 2) for t in doc["levels"].values()]  # noqa: E731
    assert (min(acc("lr-d1-emb")), max(acc("lr-d1-emb"))) == (0.43, 0.46)
    assert (min(acc("lr-d3-emb")), max(acc("lr-d3-emb"))) == (0.53, 0.56)
    assert (min(acc("lr+sd-d3-emb")), max(acc("lr+sd-d3-emb"))) == (0.53, 0.54)
    own, tps = doc["replay_tokens_per_s_error_own_probe"], doc["replay_tokens_per_s_error"]
    assert round(own["min"], 3) == -0.119 and round(own["max"], 3) == 0.031
    assert round(tps["max"], 3) == 1.010


def test_the_cold_all_configuration_claims():
    """docs/load.md, "Every configuration with cold caches": traces/load-cold-epyc-all (540 records)
    measured sd 1.21 / 1.15 / 0.84 / 0.69x AR at 1 / 2 / 4 / 8 in flight, lr+sd 1.22 / 1.02 / 0.64 /
    0.47x, lr-d2-emb 1.05 / 0.89 / 0.77 / 0.71x, lr-d2 0.84 / 0.79 / 0.70 / 0.64x (warm: sd and lr+sd
    1.04x and 0.97x alone), break-even sd 4, lr+sd 4, lr-d2-emb 2, lr-d2 1; AR on both cores
    1.36-1.62x. Its own profile: replay within 10% at 13 of 16 (largest 22.6%, sd at 8; lr+sd at 8
    14.8%, sd at 1 10.0%), every break-even right, plan 15 of 20 (largest 16.6%), the plan's
    break-even right for all but lr+sd; traces/load's profile, held out: replay 15 of 16 (largest
    11.1%, sd at 2: 1.02x against 1.15x), break-even right for sd and both LR configurations
    without SD (lr+sd at 2 instead of 4), plan 15 of 20 (largest 14.6%), tokens/s at the corpus's
    median probe -11.7% to +6.6% (its equal-resources blocks' probes left out)."""
    own = json.loads((RESULTS / "load_cold_epyc_all.json").read_text())
    held = json.loads((RESULTS / "load_cold_epyc_all_heldout.json").read_text())
    warm = json.loads((RESULTS / "load.json").read_text())
    ns = ("1", "2", "4", "8")
    assert own["records"] == held["records"] == 540 and not own["calibrated_on"]["held_out"]
    assert held["calibrated_on"]["held_out"] and held["calibrated_on"]["corpus"] == "traces/load"
    speed = lambda doc, c: [round(doc["levels"][n][c]["speedup_vs_ar"], 2) for n in ns]  # noqa: E731
    assert speed(own, "sd") == [1.21, 1.15, 0.84, 0.69]
    assert speed(own, "lr+sd-d2-emb") == [1.22, 1.02, 0.64, 0.47]
    assert speed(own, "lr-d2-emb") == [1.05, 0.89, 0.77, 0.71]
    assert speed(own, "lr-d2") == [0.84, 0.79, 0.70, 0.64]
    assert (speed(warm, "sd")[0], speed(warm, "lr+sd-d2-emb")[0]) == (1.04, 0.97)
    er = speed(own, "ar-er")
    assert (min(er), max(er)) == (1.36, 1.62)
    lr = ("lr+sd-d2-emb", "lr-d2", "lr-d2-emb", "sd")
    be = lambda doc, key: [doc["break_even"][c][key] for c in lr]  # noqa: E731
    assert be(own, "measured_vs_ar") == be(held, "measured_vs_ar") == ["4", "1", "2", "4"]
    assert be(own, "planned_vs_ar") == ["2", "1", "2", "4"]
    assert be(own, "replayed_vs_ar") == ["4", "1", "2", "4"]
    assert be(held, "replayed_vs_ar") == ["2", "1", "2", "4"]
    rep = lambda doc: {(n, c): r["predicted_speedup_vs_ar"] / r["speedup_vs_ar"] - 1  # noqa: E731
                       for n, t in doc["levels"].items() for c, r in t.items() if r.get("predicted_speedup_vs_ar")}
    mine, theirs = rep(own), rep(held)
    assert sum(abs(e) <= 0.10 for e in mine.values()) == 13 and len(mine) == 16
    assert max(mine, key=lambda k: abs(mine[k])) == ("8", "sd") and round(100 * mine[("8", "sd")], 1) == 22.6
    assert {k: round(100 * e, 1) for k, e in mine.items() if abs(e) > 0.10} == \
        {("1", "sd"): 10.0, ("8", "lr+sd-d2-emb"): 14.8, ("8", "sd"): 22.6}
    assert sum(abs(e) <= 0.10 for e in theirs.values()) == 15
    assert max(theirs, key=lambda k: abs(theirs[k])) == ("2", "sd") and round(100 * theirs[("2", "sd")], 1) == -11.1
    assert round(held["levels"]["2"]["sd"]["predicted_speedup_vs_ar"], 2) == 1.02
    within = lambda doc: sum(e <= 0.10 for e in bl.plan_errors(doc, "planned"))  # noqa: E731
    assert within(own) == 15 and round(100 * max(bl.plan_errors(own, "planned")), 1) == 16.6
    assert within(held) == 15 and round(100 * max(bl.plan_errors(held, "planned")), 1) == 14.6
    tps = held["replay_tokens_per_s_error"]
    assert (round(100 * tps["min"], 1), round(100 * tps["max"], 1)) == (-11.7, 6.6)


def test_the_slow_host_claims():
    """docs/load.md, "A host four times slower": traces/load-cold-epyc-more (45 records: round 0's ar,
    lr-d2, lr-d2-emb at 1-8 in flight) on a host whose probe decode pass took 4.56x / 4.60x
    load-cold-epyc-all's; that corpus's profile at the median probe prices AR's tokens/s within
    -6.8%..+7.8% and LR's 3.7-17.0% slow, and replays LR's speedup low at all eight points, by
    5.3-16.9% (3 of 8 within 10%); LR measured 1.04x / 1.11x alone, 0.77x / 0.80x at 8."""
    doc = json.loads((RESULTS / "load_cold_epyc_more_heldout.json").read_text())
    assert doc["records"] == 45 and doc["calibrated_on"]["corpus"] == "traces/load-cold-epyc-all"
    ms = doc["machine_speed"]
    assert [round(ms["corpus"][e]["decode_s"] / ms["profile"][e]["decode_s"], 2) for e in ("target", "draft")] == [4.56, 4.6]
    tps = {c: [100 * (t[c]["predicted_tokens_per_s"] / t[c]["tokens_per_s"] - 1) for t in doc["levels"].values()]
           for c in ("ar", "lr-d2", "lr-d2-emb")}
    assert (round(min(tps["ar"]), 1), round(max(tps["ar"]), 1)) == (-6.8, 7.8)
    lr = tps["lr-d2"] + tps["lr-d2-emb"]
    assert (round(max(lr), 1), round(min(lr), 1)) == (-3.7, -17.0)
    rep = [100 * (r["predicted_speedup_vs_ar"] / r["speedup_vs_ar"] - 1)
           for t in doc["levels"].values() for c, r in t.items() if r.get("predicted_speedup_vs_ar")]
    assert len(rep) == 8 and all(e < 0 for e in rep) and sum(abs(e) <= 10 for e in rep) == 3
    assert (round(max(rep), 1), round(min(rep), 1)) == (-5.3, -16.9)
    sp = lambda n: [round(doc["levels"][n][c]["speedup_vs_ar"], 2) for c in ("lr-d2", "lr-d2-emb")]  # noqa: E731
    assert sp("1") == [1.04, 1.11] and sp("8") == [0.77, 0.80]
    # round 0 only, ar and lr (the sitting that ran them); the contention what-if (a diagnosis)
    assert doc["rounds"] == [0] and doc["configs"] == ["ar", "lr-d2", "lr-d2-emb"]
    wi = doc["contention_whatif"]
    # the round's own fit (round 0's levels 1-2 of ar and lr: the blocks the replay predicts)
    assert round(wi["profile"]["target"], 3) == 0.166 and round(wi["held_out_fit"]["target"], 3) == 0.066
    e = [abs(100 * x) for x in wi["replay_speedup_error"].values()]
    assert len(e) == 8 and sum(x <= 10 for x in e) == 7 and round(max(e), 1) == 14.0


def test_the_slow_host_second_sitting_claims():
    """docs/load.md, "A host four times slower": round 1's ar, lr-d2, lr-d2-emb (45 records) at 1.70x
    load-cold-epyc-all's target probe; that profile replays LR's speedup within 10% at all 8
    points (largest 8.7%; tokens/s -4.0%..+9.5%), plans it within 10% at 6 of 8 (largest 12.5%);
    with the round's own contention the largest error is 4.7%."""
    doc = json.loads((RESULTS / "load_cold_epyc_more_r1_heldout.json").read_text())
    assert doc["records"] == 45 and doc["rounds"] == [1] and doc["calibrated_on"]["corpus"] == "traces/load-cold-epyc-all"
    ms = doc["machine_speed"]
    assert round(ms["corpus"]["target"]["decode_s"] / ms["profile"]["target"]["decode_s"], 2) == 1.70
    rep = [abs(100 * (r["predicted_speedup_vs_ar"] / r["speedup_vs_ar"] - 1))
           for t in doc["levels"].values() for c, r in t.items() if r.get("predicted_speedup_vs_ar")]
    assert len(rep) == 8 and max(rep) <= 10 and round(max(rep), 1) == 8.7
    assert round(100 * doc["replay_speedup_error_max"], 1) == 8.7
    tps = doc["replay_tokens_per_s_error"]
    assert (round(100 * tps["min"], 1), round(100 * tps["max"], 1)) == (-4.0, 9.5)
    plan = [abs(100 * (doc["planned"][n][c]["speedup_vs_ar"] / r["speedup_vs_ar"] - 1))
            for n, t in doc["levels"].items() for c, r in t.items() if c in ("lr-d2", "lr-d2-emb")]
    assert sum(x <= 10 for x in plan) == 6 and round(max(plan), 1) == 12.5
    wi = [abs(100 * x) for x in doc["contention_whatif"]["replay_speedup_error"].values()]
    assert round(max(wi), 1) == 4.7 and round(doc["contention_whatif"]["held_out_fit"]["target"], 3) == 0.071


def test_the_contention_probe_claims():
    """docs/load.md, "A host four times slower": the side-by-side probe's c above the fitted contention
    for the target, and well above it for the draft, whose contention these traces leave
    unidentified."""
    doc = json.loads((RESULTS / "contention_probe.json").read_text())
    t, d = doc["engines"]["target"], doc["engines"]["draft"]
    assert t["c_median"] > t["fitted_contention"] > 0
    assert d["c_median"] > 0.1 and d["fitted_contention"] == 0.0 and d["fitted_fixed"]
    assert doc["repeats"] == 5 and all(n and n >= 2 for n in t["beside_passes"])


def test_the_side_by_side_corpus_claims():
    """docs/load.md, "One sitting with side-by-side probes": traces/load-cold-epyc-side (120 records,
    problems 1100 on, one sitting): lr-d2-emb 0.88x and lr+sd 0.78x AR alone (break-even 1), AR on
    both cores 1.65-1.74x against the plan's 1.66x; own profile: replay 7 of 8 (largest 10.8%, lr+sd
    at 4), plan 9 of 12 (largest 20.1%), 11 of 12 at measured acceptance, every break-even; round
    0 predicts round 1: replay at 4 and 8 within 10% at all 4 (largest 8.5%), at 1-2 at 1 of 4
    (lr+sd at 2, 27.2%), 5 of 8; plan 4 of 12, 8 at measured acceptance; carried contention x1.10
    target, x1.05 draft; with round 1's own contention 6 of 8 (largest 26.1%); load-cold-epyc-more's
    profile (0.65x the target probe): lr-d2-emb 4 of 4, lr+sd 2 of 4 (26.0% at 2, 15.8% at 8), 6 of
    8, own probes 7 of 8 (largest 15.6%), plan 8 of 12 (largest 29.0%), lr+sd's break-even planned
    2, measured 1; per probe the target's c 0.080 -> 0.148 and its fit 0.044 -> 0.106 from round 0
    to 1, c 0.000-0.269 over the sitting's probes; the carry x1.10 per request is 1.64 per probe
    over the same records."""
    own = json.loads((RESULTS / "load_cold_epyc_side.json").read_text())
    r1 = json.loads((RESULTS / "load_cold_epyc_side_r1_heldout.json").read_text())
    held = json.loads((RESULTS / "load_cold_epyc_side_heldout.json").read_text())
    ct = json.loads((RESULTS / "contention_traces.json").read_text())
    assert own["records"] == 120 and r1["records"] == 60 and r1["rounds"] == [1]
    assert r1["calibrated_on"]["rounds"] == [0] and r1["calibrated_on"]["same_corpus"]
    assert held["calibrated_on"]["corpus"] == "traces/load-cold-epyc-more"
    sp = lambda doc, c: [round(doc["levels"][n][c]["speedup_vs_ar"], 2) for n in ("1", "2", "4", "8")]  # noqa: E731
    assert sp(own, "lr-d2-emb")[0] == 0.88 and sp(own, "lr+sd-d2-emb")[0] == 0.78
    er = sp(own, "ar-er")
    assert (min(er), max(er)) == (1.65, 1.74)
    assert {round(own["planned"][n]["ar-er"]["speedup_vs_ar"], 2) for n in own["planned"]} == {1.66}
    for doc in (own, r1):
        assert all(b["measured_vs_ar"] == "1" for c, b in doc["break_even"].items() if c != "ar-er")
    assert all(b["planned_vs_ar"] == b["replayed_vs_ar"] == b["measured_vs_ar"] == "1"
               for c, b in own["break_even"].items() if c != "ar-er")
    rep, within = replayed_pct, within_10
    mine = rep(own)
    assert within(mine.values()) == 7 and len(mine) == 8
    assert max(mine, key=lambda k: abs(mine[k])) == ("4", "lr+sd-d2-emb") and round(abs(mine[("4", "lr+sd-d2-emb")]), 1) == 10.8
    plan = lambda doc, key: [100 * e for e in bl.plan_errors(doc, key)]  # noqa: E731
    assert within(plan(own, "planned")) == 9 and round(max(plan(own, "planned")), 1) == 20.1
    assert within(plan(own, "planned_at_measured_acceptance")) == 11
    e1 = rep(r1)
    hi = {k: e for k, e in e1.items() if k[0] in ("4", "8")}
    lo = {k: e for k, e in e1.items() if k[0] in ("1", "2")}
    assert within(hi.values()) == 4 and round(max(map(abs, hi.values())), 1) == 9.9
    assert within(lo.values()) == 1 and round(e1[("2", "lr+sd-d2-emb")], 1) == 29.2 == round(max(map(abs, lo.values())), 1)
    assert within(e1.values()) == 5
    assert within(plan(r1, "planned")) == 5 and within(plan(r1, "planned_at_measured_acceptance")) == 8
    cs = r1["contention_scales"]                  # each probe counted once (reference_probe)
    assert (round(cs["target"], 2), round(cs["draft"], 2)) == (1.64, 2.89)
    assert not r1["contention_carried"]           # measured, not carried: the default
    wc = [100 * abs(v) for v in r1["replay_speedup_error_with_carry"].values()]
    assert within(wc) == 5 and round(max(wc), 1) == 27.2
    wi = [100 * abs(v) for v in r1["contention_whatif"]["replay_speedup_error"].values()]
    assert within(wi) == 6 and round(max(wi), 1) == 26.1
    assert round(r1["contention_whatif"]["held_out_fit"]["target"], 3) == 0.106   # round 1's own
    # the same carry counted once per probe: round 0's levels 1-2 (the profile's records) and round 1
    from benchmarks.bench_contention_traces import probes_c
    corpus = bl.load_corpus(ROOT / "traces/load-cold-epyc-side")
    recs = [r for n, lv in corpus.items() for rs in lv.values() for r in rs]
    rnd = lambda r: r["run"]["flags"]["load_round"]  # noqa: E731
    ref = probes_c([r for r in recs if rnd(r) == 0 and r["load"]["concurrency"] <= 2])["target"]
    now = probes_c([r for r in recs if rnd(r) == 1])["target"]
    import statistics
    assert round(statistics.median(now) / statistics.median(ref), 2) == 1.64
    # ... and counted once per request, as a reference was taken before: x1.10
    per_req = lambda rs: [c for r in rs for c in probes_c([r])["target"]]  # noqa: E731
    assert round(statistics.median(per_req([r for r in recs if rnd(r) == 1]))
                 / statistics.median(per_req([r for r in recs if rnd(r) == 0 and r["load"]["concurrency"] <= 2])), 2) == 1.10
    eh = rep(held)
    assert within(v for (n, c), v in eh.items() if c == "lr-d2-emb") == 4
    assert within(v for (n, c), v in eh.items() if c == "lr+sd-d2-emb") == 2 and within(eh.values()) == 6
    assert round(eh[("2", "lr+sd-d2-emb")], 1) == 26.0 == round(max(map(abs, eh.values())), 1)
    assert round(eh[("8", "lr+sd-d2-emb")], 1) == 15.8
    ownp = [100 * abs(v) for v in held["replay_speedup_error_own_probe"].values()]
    assert within(ownp) == 7 and round(max(ownp), 1) == 15.6
    assert within(plan(held, "planned")) == 8 and round(max(plan(held, "planned")), 1) == 29.0
    assert held["break_even"]["lr+sd-d2-emb"]["planned_vs_ar"] == "2" and held["break_even"]["lr+sd-d2-emb"]["measured_vs_ar"] == "1"
    ms = held["machine_speed"]
    assert round(ms["corpus"]["target"]["decode_s"] / ms["profile"]["target"]["decode_s"], 2) == 0.65
    assert not held["contention_scales"]          # that profile's probes never ran side by side
    rows = ct["corpora"]["traces/load-cold-epyc-side"]["rows"]
    t0, t1 = rows["round 0"]["target"], rows["round 1"]["target"]
    assert (round(t0["c_median"], 3), round(t1["c_median"], 3)) == (0.080, 0.148)
    assert (round(t0["fitted_contention"], 3), round(t1["fitted_contention"], 3)) == (0.044, 0.106)
    assert t0["c_median"] > t0["fitted_contention"] and t1["c_median"] > t1["fitted_contention"]
    every = rows["all"]["target"]["c"]          # one sitting's probes, once each
    assert (round(min(every), 3), round(max(every), 3)) == (0.0, 0.269)



def test_the_two_side_by_side_sittings_claims():
    """docs/load.md, "Two sittings with side-by-side probes": traces/load-cold-epyc-side12 (120
    records, problems 1200 on, 12-pass probes): c's quartiles 0.107-0.239 in round 0 against
    0.058-0.120 with 4 passes, up to 0.887; probes 1.25x / 1.31x load-cold-epyc-side's, fitted
    contention 0.131 against 0.061; LR alone 1.13x / 1.10x (break-even 2) against 0.78x / 0.88x
    (1); own profile: replay 7 of 8 (13.9%, lr-d2-emb at 8), plan 7 of 8, both break-evens;
    round 0 -> 1: 7 of 8 (17.4%, lr+sd alone), carried 6 of 8 (12.7%); measured x2.58 / x3.40 and
    back x0.35 / x0.24, not carried (the default); side -> side12: replay 5 of 8 (19.4%, lr+sd at
    4; lr+sd 12-19% low from 2 on), carried 4 of 8 (23.0%), own contention 5 of 8, plan 0 of 8
    (36.0%), 5 at measured acceptance, break-evens 1 vs 2; side12 -> side: 6 of 8 (25.2%, lr+sd
    at 2; lr-d2-emb within 5.0%), carried 4 of 8 (30.9%), plan 2 of 8 (44.0%), 3 at measured
    acceptance, break-evens 2 vs 1; lr-d2-emb within 8.8% both ways; c moved more than the fit
    (2.1x); over the four held-out results 23 of 32 without the carry, 19 of 32 with it."""
    res = {k: json.loads((RESULTS / f"{k}.json").read_text()) for k in (
        "load_cold_epyc_side12", "load_cold_epyc_side12_r1_heldout", "load_cold_epyc_side12_heldout",
        "load_cold_epyc_side_heldout12", "contention_traces")}
    own, r1, fwd, back, ct = res.values()
    assert own["records"] == 120 and fwd["calibrated_on"]["corpus"] == "traces/load-cold-epyc-side"
    assert back["calibrated_on"]["corpus"] == "traces/load-cold-epyc-side12"
    rows = ct["corpora"]
    q12 = rows["traces/load-cold-epyc-side12"]["rows"]["round 0"]["target"]["c_quartiles"]
    q4 = rows["traces/load-cold-epyc-side"]["rows"]["round 0"]["target"]["c_quartiles"]
    assert [round(x, 3) for x in q12] == [0.107, 0.239] and [round(x, 3) for x in q4] == [0.058, 0.120]
    assert rows["traces/load-cold-epyc-side12"]["rows"]["round 0"]["target"]["passes_median"] == 12
    assert round(max(rows["traces/load-cold-epyc-side12"]["rows"]["all"]["target"]["c"]), 3) == 0.887
    fits = [rows[c]["rows"]["all"]["target"]["fitted_contention"] for c in ("traces/load-cold-epyc-side", "traces/load-cold-epyc-side12")]
    assert [round(f, 3) for f in fits] == [0.061, 0.131] and round(fits[1] / fits[0], 1) == 2.1
    ms = fwd["machine_speed"]
    assert [round(ms["corpus"][r]["decode_s"] / ms["profile"][r]["decode_s"], 2) for r in ("target", "draft")] == [1.25, 1.31]
    sp1 = lambda doc, c: round(doc["levels"]["1"][c]["speedup_vs_ar"], 2)  # noqa: E731
    assert (sp1(own, "lr+sd-d2-emb"), sp1(own, "lr-d2-emb")) == (1.13, 1.10)
    assert (sp1(back, "lr+sd-d2-emb"), sp1(back, "lr-d2-emb")) == (0.78, 0.88)
    rep, within, top = replayed_pct, within_10, largest
    plan = lambda doc, key: [100 * e for e in bl.plan_errors(doc, key)]  # noqa: E731
    spec = planned_pct
    e = rep(own)
    assert within(e.values()) == 7 and top(e) == (("8", "lr-d2-emb"), 13.9)
    assert within(spec(own, "planned")) == 7 and len(spec(own, "planned")) == 8
    for doc, m in ((own, "2"), (fwd, "2"), (back, "1")):
        assert {b["measured_vs_ar"] for c, b in doc["break_even"].items() if c != "ar-er"} == {m}
    assert all(b["planned_vs_ar"] == "2" for c, b in own["break_even"].items() if c != "ar-er")
    carried = lambda doc: [100 * abs(v) for v in doc["replay_speedup_error_with_carry"].values()]  # noqa: E731
    e = rep(r1)
    assert within(e.values()) == 7 and top(e) == (("1", "lr+sd-d2-emb"), 17.4)
    assert within(carried(r1)) == 6 and round(max(carried(r1)), 1) == 12.7
    for doc, cs in ((fwd, (2.58, 3.40)), (back, (0.35, 0.24))):
        assert (round(doc["contention_scales"]["target"], 2), round(doc["contention_scales"]["draft"], 2)) == cs
        assert not doc["contention_carried"]
    e = rep(fwd)
    assert within(e.values()) == 5 and top(e) == (("4", "lr+sd-d2-emb"), 19.4)
    sd = [e[(n, "lr+sd-d2-emb")] for n in ("2", "4", "8")]
    assert all(x < 0 for x in sd) and (round(-max(sd)), round(-min(sd))) == (12, 19)
    assert within(carried(fwd)) == 4 and round(max(carried(fwd)), 1) == 23.0
    wi = [100 * abs(v) for v in fwd["contention_whatif"]["replay_speedup_error"].values()]
    assert within(wi) == 5
    assert within(spec(fwd, "planned")) == 0 and round(max(plan(fwd, "planned")), 1) == 36.0
    assert within(spec(fwd, "planned_at_measured_acceptance")) == 5
    assert all(b["planned_vs_ar"] == "1" for c, b in fwd["break_even"].items() if c != "ar-er")
    e = rep(back)
    assert within(e.values()) == 6 and top(e) == (("2", "lr+sd-d2-emb"), 25.2)
    assert round(max(abs(v) for (n, c), v in e.items() if c == "lr-d2-emb"), 1) == 5.0
    both = [abs(v) for doc in (fwd, back) for (n, c), v in rep(doc).items() if c == "lr-d2-emb"]
    assert round(max(both), 1) == 8.8            # "holds lr-d2-emb within 8.8% both ways"
    assert within(carried(back)) == 4 and round(max(carried(back)), 1) == 30.9
    wi = [100 * abs(v) for v in back["contention_whatif"]["replay_speedup_error"].values()]
    assert within(wi) <= within(e.values())
    assert within(spec(back, "planned")) == 2 and round(max(plan(back, "planned")), 1) == 44.0
    assert within(spec(back, "planned_at_measured_acceptance")) == 3
    assert all(b["planned_vs_ar"] == "2" for c, b in back["break_even"].items() if c != "ar-er")
    # the carry over the four held-out results of the two sittings (docs/load.md, calibration.md)
    four = (r1, fwd, back, json.loads((RESULTS / "load_cold_epyc_side_r1_heldout.json").read_text()))
    assert sum(within(rep(d).values()) for d in four) == 23 and sum(within(carried(d)) for d in four) == 19
    assert len([v for d in four for v in rep(d).values()]) == 32
    # "its largest error is smaller with the carry in two of the four, larger in the other two"
    smaller = [max(carried(d)) < max(map(abs, rep(d).values())) for d in four]
    assert sum(smaller) == 2 and len(smaller) == 4

def test_the_third_sitting_claims():
    """docs/load.md, "A third sitting": traces/load-cold-epyc-side3 (60 records, one round): probes
    1.44x side's and 1.09x side12's, target's fitted contention 0.198; LR alone 1.33x / 1.08x,
    break-even 2, ar-er 1.83x at 1; own profile: replay 4 of 8 (37.6%, lr-d2-emb at 4), plan 6 of
    8, both break-evens; side's: 6 of 8 (20.4%, lr+sd at 2), plan 1 of 8 (31.9%), break-evens 1 vs
    2; side12's: 5 of 8 (14.2%), plan 5 of 8, both; pooled: 7 of 8 (15.5%, lr+sd at 2), plan 4 of
    8, 7 at measured acceptance, both; own probes 2-3 of 8 (38.6-41.3%); carried 5, 5, 7 against
    6, 5, 7."""
    names = ("load_cold_epyc_side3", "load_cold_epyc_side3_heldout", "load_cold_epyc_side3_heldout12",
             "load_cold_epyc_side3_pooled")
    own, side, s12, pooled = (json.loads((RESULTS / f"{k}.json").read_text()) for k in names)
    ct = json.loads((RESULTS / "contention_traces.json").read_text())
    assert own["records"] == 60 and pooled["calibrated_on"]["corpus"] == \
        "traces/load-cold-epyc-side,traces/load-cold-epyc-side12"
    speed = lambda doc: round(doc["machine_speed"]["corpus"]["target"]["decode_s"]  # noqa: E731
                              / doc["machine_speed"]["profile"]["target"]["decode_s"], 2)
    assert (speed(side), speed(s12)) == (1.44, 1.09)
    fit = ct["corpora"]["traces/load-cold-epyc-side3"]["rows"]["all"]["target"]["fitted_contention"]
    assert round(fit, 3) == 0.198
    lv1 = own["levels"]["1"]
    assert [round(lv1[c]["speedup_vs_ar"], 2) for c in ("lr+sd-d2-emb", "lr-d2-emb", "ar-er")] == [1.33, 1.08, 1.83]
    rep, within, top = replayed_pct, within_10, largest
    spec = planned_pct
    be = lambda doc: set(break_evens(doc).values())  # noqa: E731
    assert own["replay_probe"] == "its own"
    for doc, n, worst, planned, breaks in ((own, 4, (("4", "lr-d2-emb"), 37.6), 6, {("2", "2")}),
                                           (side, 6, (("2", "lr+sd-d2-emb"), 20.4), 1, {("1", "2")}),
                                           (s12, 5, (None, 14.2), 5, {("2", "2")}),
                                           (pooled, 7, (("2", "lr+sd-d2-emb"), 15.5), 4, {("2", "2")})):
        e = rep(doc)
        assert within(e.values()) == n and len(e) == 8
        assert (top(e) if worst[0] else (None, top(e)[1])) == worst
        assert within(spec(doc)) == planned and len(spec(doc)) == 8 and be(doc) == breaks
    assert round(max(spec(side)), 1) == 31.9 and within(spec(pooled, "planned_at_measured_acceptance")) == 7
    ownp = [[abs(100 * v) for v in d["replay_speedup_error_own_probe"].values()] for d in (side, s12, pooled)]
    assert sorted(within(x) for x in ownp) == [2, 2, 3]
    assert (round(min(max(x) for x in ownp), 1), round(max(max(x) for x in ownp), 1)) == (38.6, 41.3)
    carried = [within(100 * v for v in d["replay_speedup_error_with_carry"].values()) for d in (side, s12, pooled)]
    assert carried == [5, 5, 7] and [within(rep(d).values()) for d in (side, s12, pooled)] == [6, 5, 7]
    er = sorted(round(own["levels"][n]["ar-er"]["speedup_vs_ar"], 2) for n in ("2", "4", "8"))
    assert (er[0], er[-1]) == (1.68, 2.40)                           # "1.68-2.40x at 2-8 in flight"
    assert not any(d["contention_carried"] for d in (side, s12, pooled))


def test_the_another_machine_claims():
    """docs/load.md, "Another machine": traces/load-cold-xeon-side (120 records, an Intel Xeon family
    6 model 207, kernel fc-v1147); target contention fit 0.041 (EPYC side3 0.198), draft not
    identified; LR alone 1.14x / 1.00x, break-evens 4 and 2, ar-er 1.56x at 1; own profile replay 6
    of 8 (14.6%), plan 3 of 8 (25.4%), break-evens 4 as measured and 4 vs 2; round 0 -> 1: replay 6
    of 8 (19.9%), own probes 3 of 8 (28.1%), plan 2 of 8 (46.2%), 4 at measured acceptance, LR alone
    0.94x / 0.83x against 1.37x / 1.15x planned; EPYC pooled: probe 1.31x both, replay 5 of 8 (16.8%),
    7 of 8 carried (13.2%), plan 7 of 8 (13.1%), break-evens 2 as measured and 2 vs 4, its
    contention 0.099 / 0.065."""
    names = ("load_cold_xeon_side", "load_cold_xeon_side_r1_heldout", "load_cold_xeon_side_epyc")
    own, r1, epyc = (json.loads((RESULTS / f"{k}.json").read_text()) for k in names)
    rec = json.loads((ROOT / "traces/load-cold-xeon-side/gsm8k/c1/ar.jsonl").read_text().splitlines()[0])
    hw = rec["run"]["hardware"]
    assert hw["cpu_id"].startswith("family 6 model 207 ") and "-fc-v1147-" in hw["platform"]
    xeon, amd = "Intel(R) Xeon(R) Processor (family 6 model 207 stepping 2)", "AMD EPYC (family 25 model 1 stepping 1)"
    assert own["records"] == 120 and epyc["machines"] == {"corpus": {xeon: 120}, "calibrated_on": {amd: 60}}
    assert epyc["calibrated_on"]["shared_problems"] == 0 and r1["calibrated_on"]["shared_problems"] > 0
    assert f"(other runs on other problems, another CPU: {amd}, predicting {xeon}" in (RESULTS / f"{names[2]}.md").read_text()
    ct = json.loads((RESULTS / "contention_traces.json").read_text())["corpora"]
    rows = ct["traces/load-cold-xeon-side"]["rows"]["all"]
    assert round(rows["target"]["fitted_contention"], 3) == 0.041 and not rows["draft"]["fitted_contention"]
    assert round(ct["traces/load-cold-epyc-side3"]["rows"]["all"]["target"]["fitted_contention"], 3) == 0.198
    lv1 = own["levels"]["1"]
    assert [round(lv1[c]["speedup_vs_ar"], 2) for c in ("lr+sd-d2-emb", "lr-d2-emb", "ar-er")] == [1.14, 1.00, 1.56]
    spec = planned_pct
    for doc, n, worst, planned, top_plan, breaks in (
            (own, 6, 14.6, 3, 25.4, {"lr+sd-d2-emb": ("4", "4"), "lr-d2-emb": ("4", "2")}),
            (r1, 6, 19.9, 2, 46.2, {"lr+sd-d2-emb": ("4", "1"), "lr-d2-emb": ("4", "1")}),
            (epyc, 5, 16.8, 7, 13.1, {"lr+sd-d2-emb": ("2", "4"), "lr-d2-emb": ("2", "2")})):
        check_eight_points(doc, n, worst, planned, breaks, top_plan=top_plan)
    assert within_10(spec(r1, "planned_at_measured_acceptance")) == 4
    ownp = [abs(100 * v) for v in r1["replay_speedup_error_own_probe"].values()]
    assert (within_10(ownp), round(max(ownp), 1)) == (3, 28.1)
    m1, p1 = r1["levels"]["1"], r1["planned"]["1"]
    assert [round(m1[c]["speedup_vs_ar"], 2) for c in ("lr+sd-d2-emb", "lr-d2-emb")] == [0.94, 0.83]
    assert [round(p1[c]["speedup_vs_ar"], 2) for c in ("lr+sd-d2-emb", "lr-d2-emb")] == [1.37, 1.15]
    ms = epyc["machine_speed"]
    assert {round(ms["corpus"][e]["decode_s"] / ms["profile"][e]["decode_s"], 2) for e in ("target", "draft")} == {1.31}
    carried = [abs(100 * v) for v in epyc["replay_speedup_error_with_carry"].values()]
    assert (within_10(carried), round(max(carried), 1)) == (7, 13.2) and not epyc["contention_carried"]
    fit = epyc["contention_whatif"]["profile"]
    assert (round(fit["target"], 3), round(fit["draft"], 3)) == (0.099, 0.065)
    # "every LR point at 2-8 in flight below the measured one (3.3-16.8% low)"
    low = [e for (n, _), e in replayed_pct(epyc).items() if n != "1"]
    assert len(low) == 6 and max(low) < 0 and (round(-max(low), 1), round(-min(low), 1)) == (3.3, 16.8)
    # the Xeon's own profile: "replays 4 in flight within 1.7% and plans it 9.1-16.9% high"
    at4 = {c: r for (n, c), r in replayed_pct(own).items() if n == "4"}
    assert round(max(map(abs, at4.values())), 1) == 1.7
    hi = [100 * (own["planned"]["4"][c]["speedup_vs_ar"] / own["levels"]["4"][c]["speedup_vs_ar"] - 1) for c in at4]
    assert (round(min(hi), 1), round(max(hi), 1)) == (9.1, 16.9)


def test_the_second_xeon_sitting_claims():
    """docs/load.md, "A second Xeon sitting": traces/load-cold-xeon-2, both rounds (120 records,
    round 0 problems 716-723, round 1 717-731; the Xeon of load-cold-xeon-side: same cpu_id and
    kernel build); LR alone 1.45x / 1.09x (round 1 2.21x / 1.37x; the first sitting 1.14x / 1.00x),
    lr+sd 0.99x at 2, break-evens 2, ar-er 1.59-1.86x; own: replay 6 of 8 (18.7%), plan 6 (13.9%),
    6 at acceptance, break-evens 2 as measured and 4 vs 2; round 0 -> 1: replay 4 (25.7%), plan 3
    (38.6%), 4 at acceptance, break-evens as measured (4, 2), LR alone planned 1.36x / 1.09x; the
    first sitting's profile: probe 0.96x / 0.95x, replay 8 (9.6%), plan 5 (16.4%), 7 at acceptance,
    both planned at 4; EPYC pooled: 1.24x / 1.21x, replay 7 (14.2%), 8 carried, plan 4 (18.8%), 5 at
    acceptance, both as measured; the reverse: replay 7 (14.4%), plan 3 (25.7%), 2 at acceptance, as
    measured (4, 2); lr+sd at 8 planned 16.4% / 20.2% high; the EPYC profile replays 7 of 8 LR points
    low and, with this corpus's contention (0.028, 0) in both, all 8 lower than the Xeon's (7 of 8
    each)."""
    names = ("load_cold_xeon_2", "load_cold_xeon_2_r1_heldout", "load_cold_xeon_2_heldout",
             "load_cold_xeon_2_epyc", "load_cold_xeon_side_heldout2")
    own, r1, first, epyc, back = (json.loads((RESULTS / f"{k}.json").read_text()) for k in names)
    hw = [json.loads(line)["run"]["hardware"] for d in ("load-cold-xeon-2", "load-cold-xeon-side")
          for line in (ROOT / f"traces/{d}/gsm8k/c1/ar.jsonl").read_text().splitlines()[:1]]
    assert hw[0]["cpu_id"] == hw[1]["cpu_id"] and hw[0]["platform"] == hw[1]["platform"]
    assert own["records"] == first["records"] == epyc["records"] == 120 and r1["records"] == 60
    assert own["rounds"] is None and r1["rounds"] == [1] and r1["calibrated_on"]["rounds"] == [0]
    assert not own["calibrated_on"]["held_out"] and r1["calibrated_on"]["held_out"]
    assert first["calibrated_on"]["shared_problems"] == 0 == back["calibrated_on"]["shared_problems"]
    assert back["corpus"] == "traces/load-cold-xeon-side" and back["calibrated_on"]["corpus"] == "traces/load-cold-xeon-2"
    by_round: dict[int, list] = {}
    for f in (ROOT / "traces/load-cold-xeon-2/gsm8k").glob("c*/*.jsonl"):
        for line in f.read_text().splitlines():
            r = json.loads(line)
            by_round.setdefault(r["run"]["flags"]["load_round"], []).append(r)
    # round 0: problems 716-723; round 1: 717-731 (round r of N: 716 + r*N on)
    for rnd, first_id, last_id in ((0, 716, 723), (1, 717, 731)):
        assert len(by_round[rnd]) == 60
        assert {r["problem_id"] for r in by_round[rnd]} == {f"gsm8k/{i}" for i in range(first_id, last_id + 1)}
    sp = lambda doc, n: [round(doc["levels"][n][c]["speedup_vs_ar"], 2) for c in ("lr+sd-d2-emb", "lr-d2-emb")]  # noqa: E731
    assert sp(own, "1") == [1.45, 1.09] and sp(r1, "1") == [2.21, 1.37] and sp(own, "2") == [0.99, 0.92]
    side = json.loads((RESULTS / "load_cold_xeon_side.json").read_text())
    assert sp(side, "1") == [1.14, 1.00]
    er = [own["levels"][n]["ar-er"]["speedup_vs_ar"] for n in own["levels"]]
    assert (round(min(er), 2), round(max(er), 2)) == (1.59, 1.86)
    assert [round(r1["planned"]["1"][c]["speedup_vs_ar"], 2) for c in ("lr+sd-d2-emb", "lr-d2-emb")] == [1.36, 1.09]
    for doc, want in ((first, [0.96, 0.95]), (epyc, [1.24, 1.21])):
        ms = doc["machine_speed"]
        assert [round(ms["corpus"][e]["decode_s"] / ms["profile"][e]["decode_s"], 2) for e in ("target", "draft")] == want
    for doc, n, worst, planned, top_plan, at_acc, breaks in (
            (own, 6, 18.7, 6, 13.9, 6, {"lr+sd-d2-emb": ("4", "2"), "lr-d2-emb": ("2", "2")}),
            (r1, 4, 25.7, 3, 38.6, 4, {"lr+sd-d2-emb": ("4", "4"), "lr-d2-emb": ("2", "2")}),
            (first, 8, 9.6, 5, 16.4, 7, {"lr+sd-d2-emb": ("4", "2"), "lr-d2-emb": ("4", "2")}),
            (epyc, 7, 14.2, 4, 18.8, 5, {"lr+sd-d2-emb": ("2", "2"), "lr-d2-emb": ("2", "2")}),
            (back, 7, 14.4, 3, 25.7, 2, {"lr+sd-d2-emb": ("4", "4"), "lr-d2-emb": ("2", "2")})):
        check_eight_points(doc, n, worst, planned, breaks, top_plan=top_plan, at_acc=at_acc)
    carried = [abs(100 * v) for v in epyc["replay_speedup_error_with_carry"].values()]
    assert within_10(carried) == 8
    # each block at its own probe (as in sample) the two sittings replay each other at 5 and 6 of 8
    assert [within_10(100 * v for v in d["replay_speedup_error_own_probe"].values()) for d in (first, back)] == [5, 6]
    plan8 = [100 * (d["planned"]["8"]["lr+sd-d2-emb"]["speedup_vs_ar"] / d["levels"]["8"]["lr+sd-d2-emb"]["speedup_vs_ar"] - 1)
             for d in (first, back)]
    assert [round(x, 1) for x in plan8] == [16.4, 20.2]
    # the EPYC profile low at 7 of the 8; with this corpus's own contention in both profiles it
    # still replays every point lower than the first Xeon sitting's
    e = replayed_pct(epyc)
    assert sorted(k for k, v in e.items() if v >= 0) == [("1", "lr-d2-emb")]
    wf, we = first["contention_whatif"], epyc["contention_whatif"]
    assert wf["held_out_fit"] == we["held_out_fit"]
    assert (round(we["held_out_fit"]["target"], 3), we["held_out_fit"]["draft"]) == (0.028, 0)
    ef, ee = wf["replay_speedup_error"], we["replay_speedup_error"]
    assert set(ef) == set(ee) and len(ef) == 8 and all(ee[k] < ef[k] for k in ef)
    assert (within_10(100 * v for v in ee.values()), within_10(100 * v for v in ef.values())) == (7, 7)


def test_the_third_cpu_claims():
    """docs/load.md, "A third CPU": traces/load-cold-epyc-f23 round 0 of ar, lr-d2-emb and lr+sd-d2-emb
    (45 records, GSM8K 1216-1223; its ar-er, 15 more, a session later) on an AMD EPYC family 23
    model 1 (AVX2, no avx512f);
    decode pass 1.40x / 1.65x the Xeon sittings', 1.73x / 2.06x the EPYC's; contention fit 0.180 /
    0.096 (Xeon 0.035 / 0, EPYC 0.099 / 0.065); LR alone 1.18x / 1.14x, 0.64-0.66x at 2, lr+sd 0.34x
    at 8, break-evens 2; own: replay 4 of 8, plan 4 of 8 (4 at acceptance), break-evens planned 1,
    at 1 in flight ar's block +13.8% and the LR blocks 12-14% slow (LR alone 0.88-0.89x), target
    passes within 5.0%; Xeon pooled: replay 1, plan 1, break-evens right, LR alone planned 1.03x /
    1.14x, 2-8 in flight 14-47% high, 4 of 8 with own contention (lr+sd +25.7 / +35.5% at 4 / 8);
    EPYC pooled: replay 3, plan 4 (4 at acceptance), break-evens 1 vs 2, LR alone 0.97x / 0.92x, 5 of
    8 with own contention; the largest misses left 21.3-35.5% high; draft passes within 5.7%."""
    names = ("load_cold_epyc_f23", "load_cold_epyc_f23_xeon", "load_cold_epyc_f23_epyc")
    own, xeon, epyc = (json.loads((RESULTS / f"{k}.json").read_text()) for k in names)
    every = [json.loads(line) for f in sorted((ROOT / "traces/load-cold-epyc-f23/gsm8k").glob("c*/*.jsonl"))
             for line in f.read_text().splitlines()]
    # round 0 (the first session's 45 records and the second's ar-er block), round 1: all four
    assert len(every) == 120 and {r["run"]["flags"]["load_round"] for r in every} == {0, 1}
    recs = [r for r in every if r["run"]["flags"]["load_round"] == 0]
    assert len(recs) == own["records"] == 60 and sum(r["run"]["flags"]["equal_resources"] for r in recs) == 15
    assert {r["mode"] for r in recs} == {"ar", "lr", "lr+sd"}
    assert {r["problem_id"] for r in recs} == {f"gsm8k/{i}" for i in range(1216, 1223 + 1)}
    assert {r["problem_id"] for r in every if r["run"]["flags"]["load_round"] == 1} == {
        f"gsm8k/{i}" for i in range(1217, 1231 + 1)}
    recs = [r for r in every if not r["run"]["flags"]["equal_resources"]]
    hw = {r["run"]["hardware"]["cpu_id"].rsplit(" stepping", 1)[0] for r in recs}
    assert hw == {"family 23 model 1"} and all(r["run"]["hardware"]["cpu_model"] == "AMD EPYC" for r in recs)
    xeon_isa = json.loads((ROOT / "traces/load-cold-xeon-2/gsm8k/c1/ar.jsonl").read_text().splitlines()[0])["run"]["hardware"]["cpu_isa"]
    assert all("avx2" in r["run"]["hardware"]["cpu_isa"] and "avx512f" not in r["run"]["hardware"]["cpu_isa"] for r in recs)
    assert "avx512f" in xeon_isa
    assert all(d["rounds"] == [0] for d in (own, xeon, epyc)) and own["calibrated_on"]["rounds"] == [0]
    assert not own["calibrated_on"]["held_out"] and xeon["calibrated_on"]["shared_problems"] == 0 == epyc["calibrated_on"]["shared_problems"]
    for doc, want in ((xeon, [1.40, 1.65]), (epyc, [1.73, 2.06])):
        ms = doc["machine_speed"]
        assert [round(ms["corpus"][e]["decode_s"] / ms["profile"][e]["decode_s"], 2) for e in ("target", "draft")] == want
    wx, we = xeon["contention_whatif"], epyc["contention_whatif"]
    assert wx["held_out_fit"] == we["held_out_fit"]
    assert [round(wx["held_out_fit"][e], 3) for e in ("target", "draft")] == [0.180, 0.096]
    assert [round(wx["profile"][e], 3) for e in ("target", "draft")] == [0.035, 0]
    assert [round(we["profile"][e], 3) for e in ("target", "draft")] == [0.099, 0.065]
    sp = {(n, c): round(r["speedup_vs_ar"], 2) for n, t in own["levels"].items() for c, r in t.items() if c != "ar"}
    assert (sp[("1", "lr-d2-emb")], sp[("1", "lr+sd-d2-emb")]) == (1.18, 1.14)
    assert sorted((sp[("2", "lr+sd-d2-emb")], sp[("2", "lr-d2-emb")])) == [0.64, 0.66] and sp[("8", "lr+sd-d2-emb")] == 0.34
    for doc, n, worst, planned, at_acc, breaks in (
            (own, 4, 24.6, 4, 4, {"lr+sd-d2-emb": ("1", "2"), "lr-d2-emb": ("1", "2")}),
            (xeon, 1, 45.3, 1, 1, {"lr+sd-d2-emb": ("2", "2"), "lr-d2-emb": ("2", "2")}),
            (epyc, 3, 25.7, 4, 4, {"lr+sd-d2-emb": ("1", "2"), "lr-d2-emb": ("1", "2")})):
        check_eight_points(doc, n, worst, planned, breaks, at_acc=at_acc)
    # own, at 1 in flight: ar's block replayed fast, both LR blocks slow, the passes priced right
    lv1 = own["levels"]["1"]
    tps = {c: 100 * (r["predicted_tokens_per_s"] / r["tokens_per_s"] - 1) for c, r in lv1.items() if c != "ar-er"}
    assert round(tps["ar"], 1) == 13.8 and [round(-tps[c]) for c in ("lr+sd-d2-emb", "lr-d2-emb")] == [12, 14]
    assert sorted(round(lv1[c]["predicted_speedup_vs_ar"], 2) for c in ("lr+sd-d2-emb", "lr-d2-emb")) == [0.88, 0.89]
    fit = own["latency_fit"]["target"]["by_config"]
    assert round(max(abs(v["linear_sum_diff_pct"]) for v in fit.values()), 1) == 5.0
    assert max(abs(v["sum_diff_pct"]) for v in fit.values()) < 5.0
    draft = own["latency_fit"]["draft"]["by_config"]
    assert round(max(abs(v[k]) for v in draft.values() for k in ("linear_sum_diff_pct", "sum_diff_pct")), 1) == 5.7
    # the Xeon profile: LR alone planned above 1, every level from 2 on planned high
    assert [round(xeon["planned"]["1"][c]["speedup_vs_ar"], 2) for c in ("lr-d2-emb", "lr+sd-d2-emb")] == [1.03, 1.14]
    assert [round(epyc["planned"]["1"][c]["speedup_vs_ar"], 2) for c in ("lr-d2-emb", "lr+sd-d2-emb")] == [0.97, 0.92]
    high = [100 * (xeon["planned"][n][c]["speedup_vs_ar"] / r["speedup_vs_ar"] - 1)
            for n, t in xeon["levels"].items() if n != "1" for c, r in t.items() if c not in ("ar", "ar-er")]
    assert len(high) == 6 and (round(min(high)), round(max(high))) == (14, 47)
    # with this corpus's own contention: 4 and 5 of 8; lr+sd at 8 (and 4 from the Xeon) 21.3-35.5% high
    ex, ee = wx["replay_speedup_error"], we["replay_speedup_error"]
    assert (within_10(100 * v for v in ex.values()), within_10(100 * v for v in ee.values())) == (4, 5)
    assert [round(100 * ex[f"lr+sd-d2-emb@{n}"], 1) for n in (4, 8)] == [25.7, 35.5]
    rest = [100 * ex["lr+sd-d2-emb@4"], 100 * ex["lr+sd-d2-emb@8"], 100 * ee["lr+sd-d2-emb@8"]]
    assert (round(min(rest), 1), round(max(rest), 1)) == (21.3, 35.5)
    # round 0's ar-er: its plan's break-evens against ar-er as measured (1); its speedup 1.97-2.12x
    assert all(own["break_even"][c]["measured_vs_ar-er"] == own["break_even"][c]["planned_vs_ar-er"] == "1"
               for c in ("lr-d2-emb", "lr+sd-d2-emb"))
    er0 = [own["levels"][n]["ar-er"]["speedup_vs_ar"] for n in own["levels"]]
    assert (round(min(er0), 2), round(max(er0), 2)) == (1.97, 2.12)


def test_the_third_cpu_round_1_claims():
    """docs/load.md, "A third CPU", round 1 (second session): LR alone 0.77x / 0.82x, 0.38-0.58x at 8,
    ar-er 1.48-1.68x; round 0 -> round 1: replay 7 of 8 (11.0%, 8 of 8 at own probes), plan 7 of 8,
    break-evens as measured (1) against ar and ar-er, ar-er planned 2.00x, largest planned error
    35.4%; the Xeon sittings: replay 1 (37.0%), plan 1, neither break-even (LR alone planned above 1);
    the EPYC sittings: replay 4 (20.3%), plan 6, both break-evens."""
    from benchmarks.load_summary import planned_errors

    names = ("load_cold_epyc_f23_r1_heldout", "load_cold_epyc_f23_xeon_r1", "load_cold_epyc_f23_epyc_r1")
    r1, xeon, epyc = (json.loads((RESULTS / f"{k}.json").read_text()) for k in names)
    assert all(d["rounds"] == [1] and d["records"] == 60 for d in (r1, xeon, epyc))
    assert r1["calibrated_on"]["rounds"] == [0] and r1["calibrated_on"]["held_out"]
    lv = r1["levels"]
    assert [round(lv["1"][c]["speedup_vs_ar"], 2) for c in ("lr-d2-emb", "lr+sd-d2-emb")] == [0.77, 0.82]
    assert sorted(round(lv["8"][c]["speedup_vs_ar"], 2) for c in ("lr-d2-emb", "lr+sd-d2-emb")) == [0.38, 0.58]
    er = [lv[n]["ar-er"]["speedup_vs_ar"] for n in lv]
    assert (round(min(er), 2), round(max(er), 2)) == (1.48, 1.68)
    assert all(round(r1["planned"][n]["ar-er"]["speedup_vs_ar"], 2) == 2.00 for n in lv)
    for doc, n, worst, planned, breaks in (
            (r1, 7, 11.0, 7, {"lr+sd-d2-emb": ("1", "1"), "lr-d2-emb": ("1", "1")}),
            (xeon, 1, 37.0, 1, {"lr+sd-d2-emb": ("2", "1"), "lr-d2-emb": ("2", "1")}),
            (epyc, 4, 20.3, 6, {"lr+sd-d2-emb": ("1", "1"), "lr-d2-emb": ("1", "1")})):
        check_eight_points(doc, n, worst, planned, breaks)
    assert round(100 * max(e for _, e in planned_errors(r1)), 1) == 35.4
    assert all(r1["break_even"][c]["measured_vs_ar-er"] == r1["break_even"][c]["planned_vs_ar-er"] == "1"
               for c in ("lr-d2-emb", "lr+sd-d2-emb"))
    ownp = [100 * abs(v) for v in r1["replay_speedup_error_own_probe"].values()]
    assert len(ownp) == 8 and within_10(ownp) == 8
    # round 0's ar-er ran in the second session, its ar in the first: round 1's probe 0.78x round 0's,
    # and round 0's ar-er speedup scaled by it 1.53-1.64x; the efficiency fit on it 2.01x over 3
    # pairs, capped at 1.00, planned 2.00x: above every level's measured ar-er in round 1
    ms = r1["machine_speed"]
    scale = ms["corpus"]["target"]["decode_s"] / ms["profile"]["target"]["decode_s"]
    own0 = json.loads((RESULTS / "load_cold_epyc_f23.json").read_text())
    er0 = [own0["levels"][n]["ar-er"]["speedup_vs_ar"] for n in own0["levels"]]
    assert round(scale, 2) == 0.78 and (round(min(er0) * scale, 2), round(max(er0) * scale, 2)) == (1.53, 1.64)
    eff = r1["tp_efficiency"]["emb"]
    assert (round(eff["speedup"], 2), eff["pairs"], eff["tp_efficiency"]) == (2.01, 3, 1.0)
    assert all(r1["planned"][n]["ar-er"]["speedup_vs_ar"] > lv[n]["ar-er"]["speedup_vs_ar"] for n in lv)
    e0 = json.loads((RESULTS / "load_cold_epyc_f23_epyc.json").read_text())
    assert within_10(planned_pct(e0)) == 4 and break_evens(e0) != break_evens(epyc)
    assert all(xeon["planned"]["1"][c]["speedup_vs_ar"] > 1 for c in ("lr-d2-emb", "lr+sd-d2-emb"))

def test_the_fourth_cpu_claims():
    """docs/load.md, "A fourth CPU": traces/load-cold-epyc-f25m17 (120 records, one boot, GSM8K
    1232-1239 / 1233-1247) on an AMD EPYC family 25 model 17 with avx512f; LR alone 1.42x / 1.02x,
    1.29x / 1.07x at 2, lr+sd 0.58x / 0.44x and lr-d2-emb 0.70x / 0.66x at 4 / 8, break-evens 4; ar-er
    1.51-1.75x; ar 9.50 tok/s at 4 against 3.57 at 2; own: replay 2 of 8 (94.0%: lr+sd at 4 1.13x vs
    0.58x), plan 3 of 8 (67.1%), break-evens replayed 8 / 2, planned 4 / 2; round 0 -> 1: replay 2
    (81.2%), plan 2, break-evens 8 / 4 against 4 / 1 (lr-d2-emb alone 0.87x, planned 1.15x); Xeon: 2
    (39.8%), 3, lr+sd's as measured; EPYC (f25 m1): 2 (32.6%), 2, both at 2; f23: 4 (37.3%), 5, 2 / 1;
    ar-er planned 3 of 4 in each, largest 10.1-15.2%, at 4 in flight."""
    from benchmarks.load_summary import planned_errors

    names = ("load_cold_epyc_f25m17", "load_cold_epyc_f25m17_r1_heldout", "load_cold_epyc_f25m17_xeon",
             "load_cold_epyc_f25m17_epyc", "load_cold_epyc_f25m17_f23")
    own, r1, xeon, epyc, f23 = (json.loads((RESULTS / f"{k}.json").read_text()) for k in names)
    every = [json.loads(line) for f in sorted((ROOT / "traces/load-cold-epyc-f25m17/gsm8k").glob("c*/*.jsonl"))
             for line in f.read_text().splitlines()]
    assert len(every) == 120 == own["records"] and len({r["run"]["hardware"]["boot_id"] for r in every}) == 1
    assert {r["problem_id"] for r in every if r["run"]["flags"]["load_round"] == 0} == {
        f"gsm8k/{i}" for i in range(1232, 1239 + 1)}
    assert {r["problem_id"] for r in every if r["run"]["flags"]["load_round"] == 1} == {
        f"gsm8k/{i}" for i in range(1233, 1247 + 1)}
    assert {r["run"]["hardware"]["cpu_id"].rsplit(" stepping", 1)[0] for r in every} == {"family 25 model 17"}
    assert all("avx512f" in r["run"]["hardware"]["cpu_isa"] for r in every)
    sp = {(n, c): round(r["speedup_vs_ar"], 2) for n, t in own["levels"].items() for c, r in t.items() if c != "ar"}
    assert [sp[("1", c)] for c in ("lr+sd-d2-emb", "lr-d2-emb")] == [1.42, 1.02]
    assert [sp[("2", c)] for c in ("lr+sd-d2-emb", "lr-d2-emb")] == [1.29, 1.07]
    assert [sp[(n, "lr+sd-d2-emb")] for n in ("4", "8")] == [0.58, 0.44]
    assert [sp[(n, "lr-d2-emb")] for n in ("4", "8")] == [0.70, 0.66]
    er = [sp[(n, "ar-er")] for n in own["levels"]]
    assert (min(er), max(er)) == (1.51, 1.75)
    assert [round(own["levels"][n]["ar"]["tokens_per_s"], 2) for n in ("2", "4")] == [3.57, 9.50]
    assert round(own["levels"]["4"]["lr+sd-d2-emb"]["predicted_speedup_vs_ar"], 2) == 1.13
    assert not own["calibrated_on"]["held_out"] and r1["calibrated_on"]["held_out"] and r1["rounds"] == [1]
    for doc, n, worst, planned, breaks in (
            (own, 2, 94.0, 3, {"lr+sd-d2-emb": ("4", "4"), "lr-d2-emb": ("2", "4")}),
            (r1, 2, 81.2, 2, {"lr+sd-d2-emb": ("8", "4"), "lr-d2-emb": ("4", "1")}),
            (xeon, 2, 39.8, 3, {"lr+sd-d2-emb": ("4", "4"), "lr-d2-emb": ("2", "4")}),
            (epyc, 2, 32.6, 2, {"lr+sd-d2-emb": ("2", "4"), "lr-d2-emb": ("2", "4")}),
            (f23, 4, 37.3, 5, {"lr+sd-d2-emb": ("2", "4"), "lr-d2-emb": ("1", "4")})):
        check_eight_points(doc, n, worst, planned, breaks)
    assert [own["break_even"][c]["replayed_vs_ar"] for c in ("lr+sd-d2-emb", "lr-d2-emb")] == ["8", "2"]
    assert (round(r1["levels"]["1"]["lr-d2-emb"]["speedup_vs_ar"], 2),
            round(r1["planned"]["1"]["lr-d2-emb"]["speedup_vs_ar"], 2)) == (0.87, 1.15)
    # every other CPU's profile replays no worse than the corpus's own
    assert all(within_10(replayed_pct(d).values()) >= within_10(replayed_pct(own).values())
               and largest(replayed_pct(d))[1] < largest(replayed_pct(own))[1] for d in (xeon, epyc, f23))
    # the plan's AR on both cores: 3 of 4 levels in every prediction, its miss at 4 in flight
    worst_er = []
    for d in (own, r1, xeon, epyc, f23):
        errs = {n: abs(p["ar-er"]["speedup_vs_ar"] / d["levels"][n]["ar-er"]["speedup_vs_ar"] - 1)
                for n, p in d["planned"].items()}
        assert sum(e <= 0.10 for e in errs.values()) == 3 and max(errs, key=errs.get) == "4"
        worst_er.append(max(e for c, e in planned_errors(d) if c == "ar-er"))
    assert (round(100 * min(worst_er), 1), round(100 * max(worst_er), 1)) == (10.1, 15.2)
    # the batch curve (bench_batch_curve): the target's plain decode pass by sequences, pooled and
    # within the lr-d2-emb blocks at 2 in flight; the dip on this CPU against every other's
    curve = {(r["corpus"], r["role"]): r for r in json.loads((RESULTS / "batch_curve.json").read_text())["rows"]}
    t = curve[("traces/load-cold-epyc-f25m17", "target")]
    ms = {p["batch"]: round(p["median_ms"]) for p in t["pooled"] if p["passes"] >= 20}
    assert (ms[1], ms[2]) == (448, 533) and (min(ms[b] for b in range(3, 7)), max(ms[b] for b in range(3, 7))) == (353, 400)
    assert [round(p["median_ms"]) for p in t["same_blocks"] if p["passes"] >= 20] == [458, 560, 439, 350]
    d = curve[("traces/load-cold-epyc-f25m17", "draft")]
    assert (round(t["dip_pooled"], 2), round(d["dip_pooled"], 2)) == (0.79, 0.77)
    others = [r["dip_pooled"] for (c, _), r in curve.items() if "f25m17" not in c]
    assert len(others) == 12 and (round(min(others), 2), round(max(others), 2)) == (1.04, 1.23)


def test_the_fourth_cpu_second_sitting_and_batch_factor_claims():
    """docs/load.md, "A fourth CPU", its second sitting (120 records, GSM8K 1248-1255 /
    1249-1263, the same boot; probe 0.99x the first's; dip 0.69 / 0.82; lr+sd 1.49 / 1.38 / 0.53 / 0.40x,
    lr-d2-emb 0.89 / 1.05 / 0.70 / 0.65x, break-evens 4 and 1): own replay 2 (55.3%), plan 1 (48.2%);
    from the first: 4 (98.5%), 2 (84.3%), ar-er 4 of 4; the reverse: 2 (44.9%), 3 (35.6%); lr+sd's
    break-even as measured in all three. --batch-factors: target 1.00 / 1.12 / 0.82 / 0.71, draft
    1.06 / 1.03; own 5 (39.3%) / 6 (24.1%), break-evens as measured replayed and planned; round 1: 2
    (57.5%) / 1 (59.7%), lr+sd's 4 (8 without); second from first: 6 (43.6%) / 4 (36.5%); held out
    8 of 16 replayed (6 without), 5 of 16 planned (4); left at 4 and 8: lr+sd 30.4-57.5%, lr-d2-emb
    8.6-24.3% high."""
    def load(k):
        return json.loads((RESULTS / f"{k}.json").read_text())

    own2, s2, back = load("load_cold_epyc_f25m17_2"), load("load_cold_epyc_f25m17_2_heldout"), load("load_cold_epyc_f25m17_heldout2")
    bf, r1bf, s2bf = load("load_cold_epyc_f25m17_bf"), load("load_cold_epyc_f25m17_r1_heldout_bf"), load("load_cold_epyc_f25m17_2_heldout_bf")
    own, r1 = load("load_cold_epyc_f25m17"), load("load_cold_epyc_f25m17_r1_heldout")
    every = [json.loads(line) for f in sorted((ROOT / "traces/load-cold-epyc-f25m17-2/gsm8k").glob("c*/*.jsonl"))
             for line in f.read_text().splitlines()]
    first = json.loads((ROOT / "traces/load-cold-epyc-f25m17/gsm8k/c1/ar.jsonl").read_text().splitlines()[0])
    # the same host and machine boot as the first sitting, a collector run six hours later
    assert len(every) == 120 == own2["records"] and {r["run"]["hardware"]["boot_id"] for r in every} == {
        first["run"]["hardware"]["boot_id"]}
    assert {r["run"]["hardware"]["cpu_id"].rsplit(" stepping", 1)[0] for r in every} == {"family 25 model 17"}
    for rnd, lo, hi in ((0, 1248, 1255), (1, 1249, 1263)):
        assert {r["problem_id"] for r in every if r["run"]["flags"]["load_round"] == rnd} == {
            f"gsm8k/{i}" for i in range(lo, hi + 1)}
    ms = s2["machine_speed"]
    assert [round(ms["corpus"][e]["decode_s"] / ms["profile"][e]["decode_s"], 2) for e in ("target", "draft")] == [0.99, 0.99]
    curve = {(r["corpus"], r["role"]): r for r in json.loads((RESULTS / "batch_curve.json").read_text())["rows"]}
    assert [round(curve[("traces/load-cold-epyc-f25m17-2", e)]["dip_pooled"], 2) for e in ("target", "draft")] == [0.69, 0.82]
    sp = {(n, c): round(r["speedup_vs_ar"], 2) for n, t in own2["levels"].items() for c, r in t.items() if c != "ar"}
    assert [sp[(n, "lr+sd-d2-emb")] for n in ("1", "2", "4", "8")] == [1.49, 1.38, 0.53, 0.40]
    assert [sp[(n, "lr-d2-emb")] for n in ("1", "2", "4", "8")] == [0.89, 1.05, 0.70, 0.65]
    for doc, n, worst, planned, breaks in (
            (own2, 2, 55.3, 1, {"lr+sd-d2-emb": ("4", "4"), "lr-d2-emb": ("2", "1")}),
            (s2, 4, 98.5, 2, {"lr+sd-d2-emb": ("4", "4"), "lr-d2-emb": ("2", "1")}),
            (back, 2, 44.9, 3, {"lr+sd-d2-emb": ("4", "4"), "lr-d2-emb": ("2", "4")}),
            (bf, 5, 39.3, 6, {"lr+sd-d2-emb": ("4", "4"), "lr-d2-emb": ("4", "4")}),
            (r1bf, 2, 57.5, 1, {"lr+sd-d2-emb": ("4", "4"), "lr-d2-emb": ("4", "1")}),
            (s2bf, 6, 43.6, 4, {"lr+sd-d2-emb": ("4", "4"), "lr-d2-emb": ("4", "1")})):
        check_eight_points(doc, n, worst, planned, breaks)
    for doc, top in ((own2, 48.2), (s2, 84.3), (back, 35.6), (bf, 24.1), (r1bf, 59.7), (s2bf, 36.5), (own, 67.1), (r1, 84.6)):
        assert round(max(planned_pct(doc)), 1) == top
    assert all(abs(p["ar-er"]["speedup_vs_ar"] / s2["levels"][n]["ar-er"]["speedup_vs_ar"] - 1) <= 0.10
               for n, p in s2["planned"].items())
    assert all(bf["break_even"][c]["replayed_vs_ar"] == "4" for c in ("lr+sd-d2-emb", "lr-d2-emb"))
    assert r1["break_even"]["lr+sd-d2-emb"]["planned_vs_ar"] == "8"
    # the factors as fitted, and only with the flag
    fit = bf["latency_fit"]
    assert [round(f, 2) for _, f in fit["target"]["batch_factors"]] == [1.00, 1.12, 0.82, 0.71]
    assert [b for b, _ in fit["target"]["batch_factors"]] == [1, 2, 3, 4]
    assert [round(f, 2) for _, f in fit["draft"]["batch_factors"]] == [1.06, 1.03]
    assert bf["calibrated_on"]["batch_factors"] and "batch_factors" not in own["calibrated_on"]
    assert "batch_factors" not in own["latency_fit"]["target"]
    # held out: 8 of 16 replayed within 10% (the line: 6), 5 of 16 planned (the line: 4); every
    # largest error cut
    assert [sum(within_10(replayed_pct(d).values()) for d in ds) for ds in ((r1bf, s2bf), (r1, s2))] == [8, 6]
    assert [sum(within_10(planned_pct(d)) for d in ds) for ds in ((r1bf, s2bf), (r1, s2))] == [5, 4]
    assert within_10(replayed_pct(s2).values()) == 4 and within_10(planned_pct(s2)) == 2
    for with_, without in ((bf, own), (r1bf, r1), (s2bf, s2)):
        assert largest(replayed_pct(with_))[1] < largest(replayed_pct(without))[1]
        assert max(planned_pct(with_)) < max(planned_pct(without))
    hi = {c: [v for d in (bf, r1bf, s2bf) for (n, cc), v in replayed_pct(d).items() if cc == c and n in ("4", "8")]
          for c in ("lr+sd-d2-emb", "lr-d2-emb")}
    assert [(round(min(v), 1), round(max(v), 1)) for v in hi.values()] == [(30.4, 57.5), (8.6, 24.3)]
    assert round(r1["levels"]["1"]["lr-d2-emb"]["speedup_vs_ar"], 2) == 0.87


# Parameters the "Under load" prose names that no result holds: where a corpus starts in GSM8K.
PARAMETERS = {"400": "traces/load-heldout's --first-problem", "600": "traces/load-transfer's --first-problem",
              "1000": "traces/load-cold-epyc-more's --first-problem",
              "1100": "traces/load-cold-epyc-side's --first-problem",
              "1200": "traces/load-cold-epyc-side12's --first-problem",
              "1300": "traces/load-cold-epyc-side3's --first-problem",
              "700": "traces/load-cold-xeon-side's --first-problem",
              "716": "traces/load-cold-xeon-2's --first-problem",
              "1216": "traces/load-cold-epyc-f23's --first-problem",
              "1217": "traces/load-cold-epyc-f23's round 1's first problem (its block at 1 in flight)",
              "1231": "traces/load-cold-epyc-f23's round 1's last problem",
              "1232": "traces/load-cold-epyc-f25m17's --first-problem",
              "1233": "traces/load-cold-epyc-f25m17's round 1's first problem",
              "1239": "traces/load-cold-epyc-f25m17's round 0's last problem",
              "1247": "traces/load-cold-epyc-f25m17's round 1's last problem",
              "1248": "traces/load-cold-epyc-f25m17-2's --first-problem",
              "1249": "traces/load-cold-epyc-f25m17-2's round 1's first problem",
              "1255": "traces/load-cold-epyc-f25m17-2's round 0's last problem",
              "1263": "traces/load-cold-epyc-f25m17-2's round 1's last problem",
              "50": "physical.MIN_KNOT_PASSES, the passes a batch factor needs"}


def test_the_family_26_claims():
    """docs/load.md, "An EPYC of family 26, predicted from the others": traces/load-adaptive-f26m2
    (126 records, one boot, one collector run of 43 minutes; family 26 model 2 with avx512f and
    avx512_bf16; 84 of ar and lr-d2, six blocks each at 1, 2 and 4 in flight), lr-d2 0.92x /
    0.86x / 0.72x, break-even 1; own: replay 2 of 3 (29.3%, at 2), plan 3 of 3 (4.4%); f23m1's
    profile: 2 (14.5%), 1 (15.5%); f25m17's: 2 (16.4%), 2 (10.1%), 3 at the measured acceptance;
    v3's: 2 (10.3%), 2 (10.7%); every break-even as measured; absolute replay within -1.6..+18.8,
    -2.8..+20.0, -7.7..+4.8%; the plan within 16% at every level from every other CPU; every
    replay error below the fourth CPU's held-out ones."""
    from datetime import datetime

    names = ("load_adaptive_f26m2", "load_adaptive_f26m2_f23m1", "load_adaptive_f26m2_f25m17",
             "load_adaptive_f26m2_v3")
    own, f23, f25, v3 = (json.loads((RESULTS / f"{k}.json").read_text()) for k in names)
    every = [json.loads(line) for f in sorted((ROOT / "traces/load-adaptive-f26m2/gsm8k").glob("c*/*.jsonl"))
             for line in f.read_text().splitlines()]
    assert len(every) == 126 and own["records"] == 84
    assert len({r["run"]["hardware"]["boot_id"] for r in every}) == 1
    assert {r["run"]["hardware"]["cpu_id"] for r in every} == {"family 26 model 2 stepping 1"}
    assert all({"avx512f", "avx512_bf16"} <= set(r["run"]["hardware"]["cpu_isa"]) for r in every)
    log = (ROOT / "traces/load-adaptive-f26m2/collection.log").read_text().splitlines()
    stamps = [datetime.fromisoformat(" ".join(ln.split()[1:3])) for ln in log if ln.startswith("# 2026")]
    assert int((stamps[-1] - stamps[0]).total_seconds() // 60) == 43    # minutes, one run
    assert sum("collect_load" in ln for ln in log if ln.startswith("#")) == 1
    sp = [round(own["levels"][n]["lr-d2"]["speedup_vs_ar"], 2) for n in ("1", "2", "4")]
    assert sp == [0.92, 0.86, 0.72]
    assert all(own["levels"][n]["lr-d2"]["blocks"] == 6 for n in ("1", "2", "4"))
    for doc, rep, worst, plan, top in ((own, 2, 29.3, 3, 4.4), (f23, 2, 14.5, 1, 15.5),
                                       (f25, 2, 16.4, 2, 10.1), (v3, 2, 10.3, 2, 10.7)):
        e = replayed_pct(doc)
        assert len(e) == 3 and within_10(e.values()) == rep and largest(e)[1] == worst
        assert within_10(planned_pct(doc)) == plan and round(max(planned_pct(doc)), 1) == top
        assert break_evens(doc) == {"lr-d2": ("1", "1")}
    assert largest(replayed_pct(own))[0] == ("2", "lr-d2")
    assert within_10(planned_pct(f25, "planned_at_measured_acceptance")) == 3
    assert all(doc["calibrated_on"]["held_out"] for doc in (f23, f25, v3)) and not own["calibrated_on"]["held_out"]
    assert all(max(planned_pct(doc)) < 16 for doc in (f23, f25, v3))
    fourth = [json.loads((RESULTS / f"load_cold_epyc_f25m17_{k}.json").read_text()) for k in ("xeon", "epyc", "f23")]
    assert max(largest(replayed_pct(d))[1] for d in (f23, f25, v3)) < min(
        largest(replayed_pct(d))[1] for d in fourth)


def test_the_family_26_second_sitting_claims():
    """docs/load.md: traces/load-adaptive-f26m2-unit (126 records, one collector run of 46
    minutes, the same boot as the first sitting) predicted by the first sitting's profile: lr-d2
    measured 0.85x / 0.74x / 0.70x, replayed 0.91x / 0.83x / 0.74x, planned 0.93x / 0.82x / 0.70x;
    replay 2 of 3 (11.8%, at 2 in flight), plan 2 of 3 (10.1%, at 1); break-even 1; absolute
    replay 3-15% fast; contention scales target 1.14, draft 1.34; the profile's fit 0.000, this
    corpus's own 0.148, with which 3 of 3 within 3.6%."""
    from datetime import datetime

    doc = json.loads((RESULTS / "load_adaptive_f26m2_unit_heldout.json").read_text())
    every = [json.loads(line) for f in sorted((ROOT / "traces/load-adaptive-f26m2-unit/gsm8k").glob("c*/*.jsonl"))
             for line in f.read_text().splitlines()]
    first = json.loads(next((ROOT / "traces/load-adaptive-f26m2/gsm8k/c1").glob("*.jsonl")).read_text().splitlines()[0])
    assert len(every) == 126 and doc["records"] == 84
    assert {r["run"]["hardware"]["boot_id"] for r in every} == {first["run"]["hardware"]["boot_id"]}
    log = (ROOT / "traces/load-adaptive-f26m2-unit/collection.log").read_text().splitlines()
    stamps = [datetime.fromisoformat(" ".join(ln.split()[1:3])) for ln in log if ln.startswith("# 2026")]
    assert int((stamps[-1] - stamps[0]).total_seconds() // 60) == 46    # minutes, one run
    assert doc["calibrated_on"]["held_out"] and doc["calibrated_on"]["corpus"] == "traces/load-adaptive-f26m2"
    lv = doc["levels"]
    assert [f"{lv[n]['lr-d2']['speedup_vs_ar']:.2f}" for n in ("1", "2", "4")] == ["0.85", "0.74", "0.70"]
    assert [f"{lv[n]['lr-d2']['predicted_speedup_vs_ar']:.2f}" for n in ("1", "2", "4")] == ["0.91", "0.83", "0.74"]
    assert [f"{doc['planned'][n]['lr-d2']['speedup_vs_ar']:.2f}" for n in ("1", "2", "4")] == ["0.93", "0.82", "0.70"]
    e = replayed_pct(doc)
    assert within_10(e.values()) == 2 and largest(e) == (("2", "lr-d2"), 11.8)
    plan = planned_pct(doc)
    assert within_10(plan) == 2 and round(max(plan), 1) == 10.1 and plan.index(max(plan)) == 0
    assert break_evens(doc) == {"lr-d2": ("1", "1")}
    err = doc["replay_tokens_per_s_error"]
    assert (round(100 * err["min"]), round(100 * err["max"])) == (3, 15)
    assert {k: round(v, 2) for k, v in doc["contention_scales"].items()} == {"target": 1.14, "draft": 1.34}
    w = doc["contention_whatif"]
    assert w["profile"]["target"] == 0.0 and round(w["held_out_fit"]["target"], 3) == 0.148
    assert max(abs(x) for x in w["replay_speedup_error"].values()) * 100 <= 3.6
    # the third sitting (traces/load-adaptive-f26m2-3), the same profile: lr-d2 measured 0.88 /
    # 0.84 / 0.71, replayed 0.91 / 0.83 / 0.74, planned 0.93 / 0.82 / 0.70; 3 of 3 (5.3%), 3 of 3 (5.9%)
    third = json.loads((RESULTS / "load_adaptive_f26m2_3_heldout.json").read_text())
    lv = third["levels"]
    assert third["calibrated_on"]["held_out"] and third["records"] == 84
    assert [f"{lv[n]['lr-d2']['speedup_vs_ar']:.2f}" for n in ("1", "2", "4")] == ["0.88", "0.84", "0.71"]
    assert [f"{lv[n]['lr-d2']['predicted_speedup_vs_ar']:.2f}" for n in ("1", "2", "4")] == ["0.91", "0.83", "0.74"]
    assert [f"{third['planned'][n]['lr-d2']['speedup_vs_ar']:.2f}" for n in ("1", "2", "4")] == ["0.93", "0.82", "0.70"]
    e = replayed_pct(third)
    assert within_10(e.values()) == 3 and largest(e)[1] == 5.3
    assert within_10(planned_pct(third)) == 3 and round(max(planned_pct(third)), 1) == 5.9
    assert break_evens(third) == {"lr-d2": ("1", "1")}


def test_the_other_vendor_claims():
    """docs/load.md, "Another vendor": the family 26 EPYC's third sitting's profile predicting the
    Intel Xeon family 6 model 167's adaptive corpus (every record held out): ar alone 1.89 tok/s
    against 5.61 there; lr-d2 measured 0.90 / 0.87 / 0.77, replayed 0.89 / 0.82 / 0.75, planned
    0.94 / 0.83 / 0.72; replay 3 of 3 (5.8%), plan 3 of 3 (6.0%), break-even as measured; the
    replayed tokens/s 7% slow to 2% fast; the side-by-side probes' c 0.50 (target) and 0.19
    (draft) of the EPYC's, and with that carry 3 of 3 within 3.9%."""
    doc = json.loads((RESULTS / "load_adaptive_f6m167_f26m2_3.json").read_text())
    epyc = json.loads((RESULTS / "load_adaptive_f26m2_3_heldout.json").read_text())
    assert doc["calibrated_on"]["held_out"] and doc["calibrated_on"]["corpus"] == "traces/load-adaptive-f26m2-3"
    assert doc["records"] == 42 and list(doc["levels"]) == ["1", "2", "4"]
    # the corpus itself (docs/load.md: "3 rounds per level, 63 records"; ar, lr-d2 and lr-adaptive)
    assert json.loads((RESULTS / "adaptive_replay_f6m167.json").read_text())["records"] == 63
    assert f"{doc['levels']['1']['ar']['tokens_per_s']:.2f}" == "1.89"
    assert f"{epyc['levels']['1']['ar']['tokens_per_s']:.2f}" == "5.61"
    lv = doc["levels"]
    assert [f"{lv[n]['lr-d2']['speedup_vs_ar']:.2f}" for n in ("1", "2", "4")] == ["0.90", "0.87", "0.77"]
    assert [f"{lv[n]['lr-d2']['predicted_speedup_vs_ar']:.2f}" for n in ("1", "2", "4")] == ["0.89", "0.82", "0.75"]
    assert [f"{doc['planned'][n]['lr-d2']['speedup_vs_ar']:.2f}" for n in ("1", "2", "4")] == ["0.94", "0.83", "0.72"]
    e = replayed_pct(doc)
    assert within_10(e.values()) == 3 and largest(e)[1] == 5.8
    assert within_10(planned_pct(doc)) == 3 and round(max(planned_pct(doc)), 1) == 6.0
    assert break_evens(doc) == {"lr-d2": ("1", "1")}
    err = doc["replay_tokens_per_s_error"]
    assert (round(100 * err["min"]), round(100 * err["max"])) == (-7, 2)
    assert {k: round(v, 2) for k, v in doc["contention_scales"].items()} == {"target": 0.50, "draft": 0.19}
    md = (RESULTS / "load_adaptive_f6m167_f26m2_3.md").read_text()
    assert "With that carry (--carry-contention): replayed speedup within 10% at 3 of 3 pairs, largest error 3.9%." in md


def test_the_another_intel_generation_claims():
    """docs/load.md, "Another Intel generation": the sixth CPU's adaptive corpus (six rounds, 126
    records; 84 of ar and lr-d2; ar alone 2.26 tok/s; lr-d2 measured 0.93 / 0.88 / 0.78) predicted
    by the fifth CPU's profile (replayed 0.93 / 0.85 / 0.78, planned 0.95 / 0.85 / 0.75: 3 of 3
    (2.8%), 3 of 3 (4.9%), break-even as measured, tokens/s 1% slow to 6% fast), by the family 26
    EPYC's third sitting (replayed 0.91 / 0.82 / 0.75, 3 of 3 (6.2%); planned 0.93 / 0.82 / 0.71,
    3 of 3 (9.7%); tokens/s within 5%) and by its own levels 1-2 (replayed 0.96 / 0.82 / 0.72, 3
    of 3 (7.7%, at 4 in flight); planned 0.95 / 0.85 / 0.75, 3 of 3 (4.8%)); every prediction of 4
    in flight below the measured 0.78; the probes' c 0.86 / 0.36 of the profiles' on the target,
    1.48 / 0.53 on the drafter; with that carry 2.4% and 3.2%. (The first sitting's 0.92 / 0.89 /
    0.80 and the own profile's 11.1% miss are history in the prose, not in these results.)"""
    def lr(doc, key):
        got = doc["planned"] if key == "planned" else doc["levels"]
        field = "speedup_vs_ar" if key in ("planned", "measured") else "predicted_speedup_vs_ar"
        return [f"{got[n]['lr-d2'][field]:.2f}" for n in ("1", "2", "4")]

    docs = {stem: json.loads((RESULTS / f"load_adaptive_{stem}.json").read_text())
            for stem in ("f6m207_f6m167", "f6m207_f26m2_3", "f6m207")}
    for stem, doc in docs.items():
        assert doc["records"] == 84 and list(doc["levels"]) == ["1", "2", "4"]
        assert doc["corpus"] == "traces/load-adaptive-f6m207"
        assert lr(doc, "measured") == ["0.93", "0.88", "0.78"]
        assert f"{doc['levels']['1']['ar']['tokens_per_s']:.2f}" == "2.26"
        assert all(p < 0.78 for p in (doc["levels"]["4"]["lr-d2"]["predicted_speedup_vs_ar"],
                                      doc["planned"]["4"]["lr-d2"]["speedup_vs_ar"]))
        assert break_evens(doc) == {"lr-d2": ("1", "1")}
    intel, epyc, own = docs["f6m207_f6m167"], docs["f6m207_f26m2_3"], docs["f6m207"]
    assert intel["calibrated_on"]["held_out"] and epyc["calibrated_on"]["held_out"]
    assert not own["calibrated_on"]["held_out"]
    assert (lr(intel, "replayed"), lr(intel, "planned")) == (["0.93", "0.85", "0.78"], ["0.95", "0.85", "0.75"])
    assert (lr(epyc, "replayed"), lr(epyc, "planned")) == (["0.91", "0.82", "0.75"], ["0.93", "0.82", "0.71"])
    assert (lr(own, "replayed"), lr(own, "planned")) == (["0.96", "0.82", "0.72"], ["0.95", "0.85", "0.75"])
    for doc, rep, plan in ((intel, (3, 2.8), (3, 4.9)), (epyc, (3, 6.2), (3, 9.7)), (own, (3, 7.7), (3, 4.8))):
        e = replayed_pct(doc)
        assert (within_10(e.values()), largest(e)[1]) == rep
        assert (within_10(planned_pct(doc)), round(max(planned_pct(doc)), 1)) == plan
    assert largest(replayed_pct(own))[0] == ("4", "lr-d2")
    assert max(planned_pct(epyc)) == abs(100 * (epyc["planned"]["4"]["lr-d2"]["speedup_vs_ar"]
                                               / epyc["levels"]["4"]["lr-d2"]["speedup_vs_ar"] - 1))
    err = intel["replay_tokens_per_s_error"]
    assert (round(100 * err["min"]), round(100 * err["max"])) == (-1, 6)
    err = epyc["replay_tokens_per_s_error"]
    assert max(abs(err["min"]), abs(err["max"])) < 0.05
    assert [round(d["contention_scales"]["target"], 2) for d in (intel, epyc)] == [0.86, 0.36]
    assert [round(d["contention_scales"]["draft"], 2) for d in (intel, epyc)] == [1.48, 0.53]
    for stem, pct in (("f6m207_f6m167", "2.4"), ("f6m207_f26m2_3", "3.2")):
        md = (RESULTS / f"load_adaptive_{stem}.md").read_text()
        assert f"With that carry (--carry-contention): replayed speedup within 10% at 3 of 3 pairs, largest error {pct}%." in md


def test_the_warm_sixth_cpu_claims():
    """docs/load.md, "Every configuration on the sixth CPU, warm caches": traces/load-f6m207 (270
    records, three rounds at 1, 2, 4 and 8, one boot), whose probes slowed from a 0.41 s target
    decode pass (round 0) to a median 0.49 s (rounds 1-2, 8 in flight included); sd, lr+sd and
    lr-d2-emb pay alone and break even at 4, and lose further at 8; predicted by its own levels 1-2
    (11 of 16 replayed, 27.3%, SD at 8 the largest; 11 of 16 planned, 17.5%; 3 of 4 break-evens),
    its round 0 (12 of 16, 17.6%; 13 of 16, 22.2%; 3 of 4), the same boot's adaptive corpus (8 of
    16, 17.4%; lr-d2 planned only, 1 of 4; lr-d2-emb within 5%, sd and lr+sd 4-17% high), the
    cold-cache Xeon sittings (13 of 16, 16.1%; 6 of 8, 14.4%) and traces/load's EPYC (11 of 16,
    17.0%; 9 of 16, 21.5%; lr+sd at 2 planned 0.95x against 1.09x); lr-d2 at 4 replayed
    0.69x-0.79x (four beyond 10%) and planned 0.68x-0.75x, below the measured 0.87x / 0.90x."""
    stems = ("", "_r12_heldout", "_adaptive", "_xeon", "_epyc")
    docs = {s: json.loads((RESULTS / f"load_f6m207{s}.json").read_text()) for s in stems}
    own, r12, ada, xeon, epyc = (docs[s] for s in stems)
    assert own["records"] == 270 and list(own["levels"]) == ["1", "2", "4", "8"]
    assert all(d["corpus"] == "traces/load-f6m207" for d in docs.values())
    assert r12["rounds"] == [1, 2] and r12["calibrated_on"]["rounds"] == [0]
    speed = r12["machine_speed"]
    assert [f"{speed[k]['target']['decode_s']:.2f}" for k in ("profile", "corpus")] == ["0.41", "0.49"]

    def sp(doc, n, c, key="speedup_vs_ar"):
        return f"{doc['levels'][n][c][key]:.2f}"
    assert [sp(own, "1", c) for c in ("sd", "lr+sd-d2-emb", "lr-d2-emb")] == ["1.25", "1.22", "1.14"]
    assert [sp(own, "2", c) for c in ("sd", "lr+sd-d2-emb", "lr-d2-emb")] == ["1.08", "1.09", "1.00"]
    at4 = sorted(sp(own, "4", c) for c in ("sd", "lr+sd-d2-emb", "lr-d2-emb"))
    assert (at4[0], at4[-1]) == ("0.82", "0.98")
    assert [sp(own, "8", c) for c in ("sd", "lr+sd-d2-emb", "lr-d2-emb")] == ["0.75", "0.58", "0.79"]
    lr = sorted(sp(own, n, "lr-d2") for n in ("1", "2", "4", "8"))
    assert (lr[0], lr[-1]) == ("0.74", "0.87")
    assert (sp(own, "1", "ar-er"), sp(own, "4", "ar-er"), sp(own, "8", "ar-er")) == ("1.97", "1.63", "1.63")
    assert all(t[c]["speedup_vs_ar-er"] < 1 for t in own["levels"].values() for c in t if c not in ("ar", "ar-er"))
    assert {c: b[1] for c, b in break_evens(own).items()} == {"sd": "4", "lr+sd-d2-emb": "4", "lr-d2-emb": "4", "lr-d2": "1"}
    load = json.loads((RESULTS / "load.json").read_text())["break_even"]
    assert [load[c]["measured_vs_ar"] for c in ("sd", "lr-d2-emb", "lr+sd-d2-emb")] == ["2", "2", "1"]
    rows = {r["result"]: r for r in json.loads((RESULTS / "load_summary.json").read_text())["results"]}
    for stem, rep, plan, be in (("", (11, 16, 27.3), (11, 16, 17.5), (3, 4)),
                                ("_r12_heldout", (12, 16, 17.6), (13, 16, 22.2), (3, 4)),
                                ("_adaptive", (8, 16, 17.4), (1, 4, 21.0), (1, 1)),
                                ("_xeon", (13, 16, 16.1), (6, 8, 14.4), (1, 2)),
                                ("_epyc", (11, 16, 17.0), (9, 16, 21.5), (2, 4))):
        r = rows[f"load_f6m207{stem}"]
        assert (r["replayed"]["within"], r["replayed"]["pairs"], round(100 * r["replayed"]["largest"], 1)) == rep, stem
        assert (r["planned"]["within"], r["planned"]["pairs"], round(100 * r["planned"]["largest"], 1)) == plan, stem
        assert (r["break_even"]["vs_ar"]["as_measured"], r["break_even"]["vs_ar"]["configs"]) == be, stem
    # the largest replay errors of its own profile: SD at 8 in flight
    e = replayed_pct(own)
    assert max(e, key=lambda k: abs(e[k])) == ("8", "sd") and round(e["8", "sd"], 1) == 27.3
    assert (sp(own, "8", "sd", "predicted_speedup_vs_ar"), sp(own, "8", "lr+sd-d2-emb", "predicted_speedup_vs_ar")) == ("0.95", "0.73")
    # the break-evens that move
    assert [f"{d['planned']['2']['lr-d2-emb']['speedup_vs_ar']:.2f}" for d in (own, r12)] == ["0.98", "1.02"]
    assert sp(r12, "2", "lr-d2-emb") == "0.98" and break_evens(r12)["lr-d2-emb"] == ("4", "2")
    assert break_evens(xeon)["lr-d2-emb"] == ("2", "4") and break_evens(xeon)["lr+sd-d2-emb"] == ("4", "4")
    assert {c: b for c, b in break_evens(epyc).items() if b[0] != b[1]} == {"lr+sd-d2-emb": ("2", "4"), "lr-d2-emb": ("2", "4")}
    assert f"{epyc['planned']['2']['lr+sd-d2-emb']['speedup_vs_ar']:.2f}" == "0.95"
    assert all(abs(d["levels"]["2"]["lr-d2-emb"]["speedup_vs_ar"] - 1) <= 0.02 for d in docs.values())
    # the profile that never ran SD: lr-d2-emb within 5%, sd and lr+sd 4-17% high; lr-d2 planned only
    e = replayed_pct(ada)
    assert max(abs(e[n, "lr-d2-emb"]) for n in ("1", "2", "4", "8")) <= 5
    high = [e[n, c] for n in ("1", "2", "4", "8") for c in ("sd", "lr+sd-d2-emb")]
    assert (round(min(high)), round(max(high))) == (4, 17)
    assert {c for t in ada["planned"].values() for c in t} == {"lr-d2", "ar-er"}
    assert ada["calibrated_on"]["unseen_configs"] == ["ar-er", "lr+sd-d2-emb", "lr-d2-emb", "sd"]
    assert xeon["calibrated_on"]["unseen_configs"] == ["lr-d2", "sd"]
    # where the profile ran the configuration (this CPU or the EPYC), the replay at 2 at most 12.0% off
    assert max(abs(v) for d in (own, r12, epyc) for (n, _), v in replayed_pct(d).items() if n == "2") < 12.05
    # lr-d2 at 4: low from every profile
    assert (sp(own, "4", "lr-d2"), sp(r12, "4", "lr-d2")) == ("0.87", "0.90")
    rep = [d["levels"]["4"]["lr-d2"]["predicted_speedup_vs_ar"] for d in docs.values()]
    plan = [d["planned"]["4"]["lr-d2"]["speedup_vs_ar"] for d in docs.values() if "lr-d2" in d["planned"]["4"]]
    assert (f"{min(rep):.2f}", f"{max(rep):.2f}", f"{min(plan):.2f}", f"{max(plan):.2f}") == ("0.69", "0.79", "0.68", "0.75")
    assert sum(abs(replayed_pct(d)["4", "lr-d2"]) > 10 for d in docs.values()) == 4
    assert len(plan) == 4 and all(d["levels"]["4"]["lr-d2"]["predicted_speedup_vs_ar"]
                                  < d["levels"]["4"]["lr-d2"]["speedup_vs_ar"] for d in docs.values())


def test_the_batch_curve_claims():
    """docs/load.md, "What the line charges a larger batch" (and the README's paragraph on it):
    benchmarks/results/pass_pricing.* are bench_pass_pricing.py's rendering of the committed traces
    and curves now (each pass counted once: load_replay.pass_key); the line prices its own levels'
    target passes within 5%, AR's at 8 in flight at 1.34, 9-16 and 17+ sequences at 1.32 and 1.44,
    shaped 1.16, 1.06 and 1.08, one sequence 4-8% high, SD's 1.12 and 1.07 (shaped 1.12 and 1.06),
    the others at 4 1.01-1.12, lr-d2 at 4 1.18 -> 1.09; its line adds 0.0375 s a sequence and 6.74e-05
    s a context token (0.017 s for 256); 8 in flight grew by about half of that; the curve's 24
    sequences 2.15x (draft 1.55x) one, the line's 3.4x; bench_load with the curves: 13 of 16 (19.2%)
    against 11 (27.3%), tokens/s -14.3..+7.7% against -23.0..+11.8%, every replayed break-even right,
    plan 10 of 16 against 11, every speculative configuration planned lower at 8 (lr-d2 0.59x
    against 0.63x, measured 0.74x), sd at 8 planned 0.65x against 0.75x (line 0.79x); round 0 -> rounds
    1-2: 13 of 16 (17.5%), plan 12 of 16 (21.8%); the Xeon sittings: 13 of 16 (15.9%), 6 of 8
    (14.0%), their line's curve factors 0.99-1.03; lr-d2 at 4 replayed 0.70x-0.80x."""
    from benchmarks import bench_pass_pricing as bp

    curves = {"target": "traces/curves/f6m207-target.json", "draft": "traces/curves/f6m207-draft.json"}
    doc = bp.bench(bp.CORPORA, curves)
    assert json.loads(json.dumps(doc)) == json.loads((RESULTS / "pass_pricing.json").read_text())
    assert bp.render(doc) == (RESULTS / "pass_pricing.md").read_text()
    c = doc["corpora"]["traces/load-f6m207"]
    cfg, bb = c["by_config"], c["by_batch"]
    assert max(abs(v[n]["ratio_line"] - 1) for e in cfg.values() for v in (e["target"],) for n in ("1", "2")) <= 0.05 + 5e-3
    assert [f"{cfg['ar']['target']['8'][k]:.2f}" for k in ("ratio_line", "ratio_curve")] == ["1.34", "1.16"]
    assert [f"{bb['8'][b][k]:.2f}" for b in ("9-16", "17-64") for k in ("ratio_line", "ratio_curve")] == [
        "1.32", "1.06", "1.44", "1.08"]
    one = [bb[n]["1"]["ratio_curve"] for n in ("1", "2", "4", "8")]
    assert (f"{min(one) - 1:.0%}", f"{max(one) - 1:.0%}") == ("4%", "8%")
    assert [f"{cfg['sd']['target'][n][k]:.2f}" for k in ("ratio_line", "ratio_curve") for n in ("4", "8")] == [
        "1.12", "1.07", "1.12", "1.06"]
    assert [f"{cfg['lr-d2']['target']['4'][k]:.2f}" for k in ("ratio_line", "ratio_curve")] == ["1.18", "1.09"]
    others = [cfg[k]["target"]["4"]["ratio_line"] for k in cfg if k != "lr-d2"]
    assert (f"{min(others):.2f}", f"{max(others):.2f}") == ("1.01", "1.12")
    t = c["target_line"]
    assert (f"{t['per_token_s'] + t['per_seq_s']:.4f}", f"{t['per_ctx_token_s']:.2e}",
            f"{256 * t['per_ctx_token_s']:.3f}") == ("0.0375", "6.74e-05", "0.017")
    top = bb["8"]["17-64"]
    grew = (top["measured_ref_s_median"] - bb["8"]["1"]["measured_ref_s_median"]) / (top["mean_seqs"] - 1)
    assert 0.45 <= grew / (t["per_token_s"] + t["per_seq_s"] + 256 * t["per_ctx_token_s"]) <= 0.55
    ms = {r: {row["batch"]: row["ms"] for row in next(iter(json.loads((ROOT / p).read_text())["models"].values()))["decode"]}
          for r, p in curves.items()}
    assert [f"{ms[r][24] / ms[r][1]:.2f}" for r in ("target", "draft")] == ["2.15", "1.55"]
    line = lambda b: t["base_s"] + (b - 1) * (t["per_token_s"] + t["per_seq_s"]) + b * 256 * t["per_ctx_token_s"]  # noqa: E731
    assert f"{line(24) / line(1):.1f}" == "3.4"
    rows = {r["result"]: r for r in json.loads((RESULTS / "load_summary.json").read_text())["results"]}
    for stem, rep, plan in (("_curve", (13, 16, 19.2), (10, 16)), ("", (11, 16, 27.3), (11, 16)),
                            ("_r12_heldout_curve", (13, 16, 17.5), (12, 16)), ("_r12_heldout", (12, 16, 17.6), (13, 16)),
                            ("_xeon_curve", (13, 16, 15.9), (6, 8))):
        r = rows[f"load_f6m207{stem}"]
        assert (r["replayed"]["within"], r["replayed"]["pairs"], round(100 * r["replayed"]["largest"], 1)) == rep, stem
        assert (r["planned"]["within"], r["planned"]["pairs"]) == plan, stem
        assert bool(r.get("batch_curves")) == stem.endswith("_curve")
    assert round(100 * rows["load_f6m207_r12_heldout_curve"]["planned"]["largest"], 1) == 21.8
    assert round(100 * rows["load_f6m207_xeon_curve"]["planned"]["largest"], 1) == 14.0
    cur = {s: json.loads((RESULTS / f"load_f6m207{s}.json").read_text()) for s in ("", "_curve", "_r12_heldout_curve", "_xeon_curve")}
    tps = lambda d: (f"{100 * d['replay_tokens_per_s_error']['min']:+.1f}", f"{100 * d['replay_tokens_per_s_error']['max']:+.1f}")  # noqa: E731
    assert (tps(cur["_curve"]), tps(cur[""])) == (("-14.3", "+7.7"), ("-23.0", "+11.8"))
    assert all(b["replayed_vs_ar"] == b["measured_vs_ar"] for k, b in cur["_curve"]["break_even"].items() if k != "ar-er")
    assert (cur[""]["break_even"]["lr-d2-emb"]["replayed_vs_ar"], cur["_curve"]["break_even"]["lr-d2-emb"]["replayed_vs_ar"]) == ("2", "4")
    assert [f"{d['planned']['8']['sd']['speedup_vs_ar']:.2f}" for d in (cur["_curve"], cur[""])] == ["0.65", "0.79"]
    assert f"{cur['_curve']['levels']['8']['sd']['speedup_vs_ar']:.2f}" == "0.75"
    rep4 = [d["levels"]["4"]["lr-d2"]["predicted_speedup_vs_ar"] for k, d in cur.items() if k]
    assert (f"{min(rep4):.2f}", f"{max(rep4):.2f}") == ("0.70", "0.80")
    assert cur["_curve"]["calibrated_on"]["batch_curves"] == curves
    # the plan at 8 in flight: every speculative configuration lower with the curve, lr-d2 too
    assert all(cur["_curve"]["planned"]["8"][k]["speedup_vs_ar"] < cur[""]["planned"]["8"][k]["speedup_vs_ar"]
               for k in ("sd", "lr+sd-d2-emb", "lr-d2", "lr-d2-emb"))
    assert [f"{d['planned']['8']['lr-d2']['speedup_vs_ar']:.2f}" for d in (cur["_curve"], cur[""])] == ["0.59", "0.63"]
    assert f"{cur['']['levels']['8']['lr-d2']['speedup_vs_ar']:.2f}" == "0.74"
    # the Xeon sittings' line already rises as the curve does
    fx = [f for r in ("target", "draft") for _, f in cur["_xeon_curve"]["latency_fit"][r]["batch_factors"]]
    assert (f"{min(fx):.2f}", f"{max(fx):.2f}") == ("0.99", "1.03")



def _collection(corpus: str) -> tuple[list[dict], list[int], set[int], float]:
    """A load corpus's records, their GSM8K problem numbers (sorted), levels in flight and the
    seconds from the first record's start to the last one's end."""
    recs = [json.loads(line) for f in (ROOT / corpus).glob("gsm8k/c*/*.jsonl")
            for line in f.read_text().splitlines() if line.strip()]
    ids = sorted(int(r["problem_id"].split("/")[1]) for r in recs)
    span = max(r["run"]["probe_at_start"]["t"] + r["load"]["latency_s"] for r in recs) - min(
        r["run"]["probe_at_start"]["t"] for r in recs)
    return recs, ids, {int(r["run"]["flags"]["concurrency"]) for r in recs}, span

def _collector_minutes(corpus: Path) -> int:
    """Whole minutes from the first to the last time-stamped line of a corpus's collection.log."""
    import datetime
    import re

    stamps = re.findall(r"^# (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) ", (corpus / "collection.log").read_text(), re.M)
    t0, t1 = (datetime.datetime.strptime(t, "%Y-%m-%d %H:%M:%S") for t in (stamps[0], stamps[-1]))
    return round((t1 - t0).total_seconds() / 60)


def _machines(recs: list[dict]) -> set[tuple[str, str]]:
    """(CPU id, boot id's first 8 characters) of every record."""
    return {(r["run"]["hardware"]["cpu_id"], r["run"]["hardware"]["boot_id"][:8]) for r in recs}


def _corpus_is(corpus: str, records: int, problems: tuple[int, int], levels: set[int], rounds: int,
               minutes: int, machine=("family 25 model 17 stepping 1", "feb902f3")) -> list[dict]:
    """A pre-registered load corpus is what its docs say: so many records of every problem in the
    range (each once per level and configuration), these levels and rounds, one machine and boot, and the
    collector's minutes. Its records."""
    from collections import Counter

    recs, ids, got, _ = _collection(corpus)
    assert len(recs) == records and (ids[0], ids[-1]) == problems and len(set(ids)) == problems[1] - problems[0] + 1
    assert set(Counter((r["run"]["flags"]["concurrency"], r["run"]["flags"]["load_config"], r["problem_id"])
                       for r in recs).values()) == {1}
    assert got == levels and {int(r["run"]["flags"]["load_round"]) for r in recs} == set(range(rounds))
    assert _machines(recs) == {machine}
    assert _collector_minutes(ROOT / corpus) == minutes
    return recs


def test_the_preregistered_claims():
    """docs/load.md, "A plan written before its runs" (and the README's paragraph on it): the plan
    for traces/load-f6m207-36 committed before its 162 records (problems 1264-1281, levels 3 and 6,
    80 minutes alone); measured sd 1.00x, lr-d2-emb 0.98x, lr-d2 0.86x, lr+sd 0.83x at 3, 0.66x-0.94x
    at 6; break-evens 3 of 4 by the line (sd planned 1.01x, 1.6% high) and 4 of 4 by the curve; 3 and
    4 of 8 within 10%; LR alone planned 14-16% low at 6, lr+sd 11-15% high at 3, sd within 3% by the
    line; the rescale moves a planned speedup by at most 0.01; the four bench_load results; the
    replay's passes at 6 (0.99 as many, batches 4-6% larger, 25-26% more time, AR 12%, makespans
    1.25-1.26 and 1.11; the draft 1.21-1.25 as many at 0.81-0.85 the batch; lr+sd 6-8% fewer) and the
    recorded ones priced 1.22 (lr-d2) and 1.17 (lr-d2-emb, ar)."""
    from benchmarks import bench_replay_passes as brp
    from benchmarks.load_summary import PREDICTIONS, shaped, summarise

    pre = {k: json.loads((RESULTS / f"prereg_f6m207_36{k}.check.json").read_text()) for k in ("", "_curve")}
    recs, ids, levels, span = _collection("traces/load-f6m207-36")
    assert len(recs) == 162 and (ids[0], ids[-1]) == (1264, 1281) and len(set(ids)) == 18 and levels == {3, 6}
    assert 75 * 60 <= span <= 81 * 60                  # the collection's 80 minutes
    rows = {(r["level"], r["config"]): r for r in pre[""]["check"]["rows"]}
    m = {k: f"{r['measured']:.2f}" for k, r in rows.items()}
    assert [m[(3, c)] for c in ("sd", "lr-d2-emb", "lr-d2", "lr+sd-d2-emb")] == ["1.00", "0.98", "0.86", "0.83"]
    six = [rows[(6, c)]["measured"] for c in ("sd", "lr-d2-emb", "lr-d2", "lr+sd-d2-emb")]
    assert (f"{min(six):.2f}", f"{max(six):.2f}") == ("0.66", "0.94")
    assert all(rows[(n, c)]["measured"] <= 1.0 for n in (3, 6) for c in ("sd", "lr-d2-emb", "lr-d2", "lr+sd-d2-emb"))
    lv3 = json.loads((RESULTS / "load_f6m207_36_heldout.json").read_text())["levels"]["3"]
    assert [f"{x:.2f}" for c in ("sd", "lr-d2-emb") for x in lv3[c]["speedup_vs_ar_ci90"]] == ["0.98", "1.01", "0.94", "1.02"]
    # the other misses beyond 10%, and what the first committed comparison would have counted: the
    # searched break-even against the measured one as text, the equal-resources baseline counted
    rest = {(r["level"], r["config"], k): f"{r['rel_error']:+.1%}" for k, c in pre.items() for r in c["check"]["rows"]
            if abs(r["rel_error"]) > 0.10 and r["config"] != "ar-er"}
    assert {v for (n, cfg, k), v in rest.items() if (n, cfg) not in ((6, "lr-d2"), (6, "lr-d2-emb"), (3, "lr+sd-d2-emb"))} == {
        "-10.9%", "+11.2%", "-12.3%"}
    first = [(sum(v["searched"] == v["measured"] for v in c["check"]["break_even"].values()),
              sum(abs(r["rel_error"]) <= 0.10 for r in c["check"]["rows"])) for c in pre.values()]
    assert first == [(0, 4), (2, 5)] and all(len(c["check"]["rows"]) == 10 for c in pre.values())
    assert (f"{rows[(3, 'sd')]['preregistered']:.2f}", f"{rows[(3, 'sd')]['rel_error']:.1%}") == ("1.01", "1.6%")
    assert [(c["check"]["within_target"], c["check"]["compared"], c["check"]["break_even_right"]) for c in pre.values()] == [
        (3, 8, 3), (4, 8, 4)]
    lr6 = [abs(c["check"]["rows"][i]["rel_error"]) for c in pre.values() for i, r in enumerate(c["check"]["rows"])
           if r["level"] == 6 and r["config"] in ("lr-d2", "lr-d2-emb")]
    assert (f"{min(lr6):.0%}", f"{max(lr6):.0%}") == ("14%", "16%")
    assert all(r["rel_error"] < 0 for c in pre.values() for r in c["check"]["rows"]
               if r["level"] == 6 and r["config"] in ("lr-d2", "lr-d2-emb"))
    sd3 = [r["rel_error"] for c in pre.values() for r in c["check"]["rows"] if r["level"] == 3 and r["config"] == "lr+sd-d2-emb"]
    assert (f"{min(sd3):.0%}", f"{max(sd3):.0%}") == ("11%", "15%")
    assert max(abs(r["rel_error"]) for r in pre[""]["check"]["rows"] if r["config"] == "sd") <= 0.03
    for k, stem in (("", "load_f6m207_36_heldout"), ("_curve", "load_f6m207_36_heldout_curve")):
        planned = json.loads((RESULTS / f"{stem}.json").read_text())["planned"]
        assert max(abs(round(p["speedup_vs_ar"], 2) - round(planned[n][c]["speedup_vs_ar"], 2))
                   for n, t in pre[k]["planned"].items() for c, p in t.items() if c in planned[n]) <= 0.01 + 1e-9
    # the four profiles' results (the off-path replay, the plain first pass and the own SD rate,
    # diagnoses: test_the_off_path_prefill_claims, test_the_sd_first_pass_claims,
    # test_past_the_swept_loads_preregistered_claims)
    got = {row["result"]: row for row in (summarise(*p) for p in PREDICTIONS if p[1] == "traces/load-f6m207-36")
           if shaped(row) not in ("--off-path-prefill", "--sd-plain-first-pass", "--own-sd-rate",
                                  "--recorded-sd-rounds")}
    cell = {k: (r["replayed"]["within"], r["replayed"]["pairs"], f"{r['replayed']['largest']:.1%}",
                r["planned"]["within"], r["planned"]["pairs"], r["break_even"]["vs_ar"]["as_measured"],
                r["break_even"]["vs_ar"]["configs"]) for k, r in got.items()}
    assert cell == {"load_f6m207_36_heldout": (4, 8, "15.7%", 4, 8, 3, 4),
                    "load_f6m207_36_heldout_curve": (5, 8, "12.2%", 4, 8, 4, 4),
                    "load_f6m207_36_xeon": (7, 8, "14.1%", 2, 4, 2, 2),
                    "load_f6m207_36_epyc": (5, 8, "17.7%", 4, 8, 4, 4)}
    # the replay's passes beside the real ones: rendered from the committed traces now
    doc = json.loads((RESULTS / "replay_passes.json").read_text())
    assert brp.render(doc) == (RESULTS / "replay_passes.md").read_text()
    assert approx_tree(doc) == json.loads(json.dumps(brp.bench(doc["corpus"], doc["calibrated_on"],
                                                              tuple(doc.get("calibrate_levels", ())) or None)))

    def ratio(n, cfg, eng, key):
        rows_ = [r[eng] for r in doc["levels"][n][cfg] if eng in r]
        return sum(g["replayed"][key] for g in rows_) / sum(g["real"][key] for g in rows_)

    def span_(n, cfg):
        rs = doc["levels"][n][cfg]
        return sum(r["makespan_s"][1] for r in rs) / sum(r["makespan_s"][0] for r in rs)

    lr = ("lr-d2", "lr-d2-emb")
    assert {f"{ratio('6', c, 'target', 'passes'):.2f}" for c in lr} == {"0.99"}
    for key, lo, hi in (("batch", "1.04", "1.06"), ("busy_s", "1.25", "1.26")):
        got_ = sorted(ratio("6", c, "target", key) for c in lr)
        assert (f"{got_[0]:.2f}", f"{got_[1]:.2f}") == (lo, hi)
    assert (f"{ratio('6', 'ar', 'target', 'busy_s'):.2f}", f"{span_('6', 'ar'):.2f}") == ("1.12", "1.11")
    assert sorted(f"{span_('6', c):.2f}" for c in lr) == ["1.25", "1.26"]
    assert sorted(f"{ratio('6', c, 'draft', 'passes'):.2f}" for c in lr) == ["1.21", "1.25"]
    assert sorted(f"{ratio('6', c, 'draft', 'batch'):.2f}" for c in lr) == ["0.81", "0.85"]
    assert [f"{ratio(n, 'lr+sd-d2-emb', 'target', 'passes'):.2f}" for n in ("3", "6")] == ["0.92", "0.94"]
    pp = json.loads((RESULTS / "pass_pricing.json").read_text())["corpora"]["traces/load-f6m207-36"]["by_config"]
    assert [f"{pp[c]['target']['6']['ratio_line']:.2f}" for c in ("lr-d2", "lr-d2-emb", "ar")] == ["1.22", "1.17", "1.17"]

def test_the_profile_terms_claims():
    """docs/load.md, "Another Intel generation": benchmarks/profile_terms.py's table is its script's
    rendering; the sixth CPU's own fit adds 53.6% / 57.5% (target / draft) for 7 more sequences of
    300 context tokens, the fifth CPU's 32.9% / 39.4% (sequences and context together); the family
    23 CPU's 62.6% / 50.9% with -10.0% at 4 in flight, the family 25 model 17's drafter 151.9% with
    +30.4%; the rows' lr-d2 errors are adaptive_replay_<cpu>.json's."""
    from benchmarks import profile_terms as pt

    doc = json.loads((RESULTS / "profile_terms.json").read_text())
    assert (RESULTS / "profile_terms.md").read_text() == pt.render(doc)
    assert (doc["batch"], doc["context_tokens"]) == (8, 300)
    rows = {r["tag"]: r for r in doc["rows"]}
    assert list(rows) == [tag for tag, _, _ in pt.CORPORA]
    for tag, r in rows.items():
        assert r["lr_d2_error_at_4"] == pt.lr_d2_error(tag)
    for tag in ("f6m207", "f6m167"):                  # the fit itself, refitted (a few seconds)
        fresh = pt.terms(rows[tag]["corpus"])
        for role in ("target", "draft"):
            for k, v in fresh[role].items():
                assert rows[tag][role][k] == pytest.approx(v, rel=1e-6, abs=1e-12), (tag, role, k)

    def total(tag, role):
        return f"{100 * (rows[tag][role]['seq_share'] + rows[tag][role]['ctx_share']):.1f}"
    assert [total("f6m207", r) for r in ("target", "draft")] == ["53.6", "57.5"]
    assert [total("f6m167", r) for r in ("target", "draft")] == ["32.9", "39.4"]
    assert [total("f23m1", r) for r in ("target", "draft")] == ["62.6", "50.9"]
    assert total("f25m17", "draft") == "151.9"
    assert [f"{100 * rows[t]['lr_d2_error_at_4']:+.1f}" for t in ("f6m207", "f23m1", "f25m17")] == [
        "-7.7", "-10.0", "+30.4"]


def test_the_ten_in_flight_preregistered_claims():
    """docs/load.md, "Ten in flight, planned from one and two" (and the README's paragraph):
    traces/load-f6m207-510's round 0 (90 records, problems 1116-1125, levels 5 and 10, 33 minutes
    alone, one block a cell) against the plan committed before it; the host at 0.83x (target) and
    0.64x (draft) the profile's probe; by the line 4 of 8 within 10% (sd within 0.6%, lr-d2-emb
    +8.1%/-9.8%, lr+sd +16.4%/+16.0%, lr-d2 -14.9%/-10.8%), by the curve 3 of 8 (lr+sd within 7.4% and
    1.7%; sd -19.2%, lr-d2 -18.4%, lr-d2-emb -15.3% at 10); every configuration measured and planned
    below AR, break-evens 4 of 4; bench_load: replay 3 and 5 of 8 (13.5%, 16.7%), plan 7 and 5 of 10
    (19.9%, 16.9%)."""
    from benchmarks.bench_load import plan_errors
    from benchmarks.load_replay import replay_speedup_errors

    pre = {k: json.loads((RESULTS / f"prereg_f6m207_510{k}.check.json").read_text()) for k in ("", "_curve")}
    recs, ids, levels, span = _collection("traces/load-f6m207-510")
    assert len(recs) == 90 and (ids[0], ids[-1]) == (1116, 1125) and len(set(ids)) == 10 and levels == {5, 10}
    assert 30 * 60 <= span <= 34 * 60                  # round 0's 33 minutes
    assert {int(r["run"]["flags"]["load_round"]) for r in recs} == {0}
    rows = {k: {(r["level"], r["config"]): f"{r['rel_error']:+.1%}" for r in c["check"]["rows"]} for k, c in pre.items()}
    assert [rows[""][(n, c)] for c in ("sd", "lr-d2-emb", "lr+sd-d2-emb", "lr-d2") for n in (5, 10)] == [
        "-0.6%", "+0.4%", "+8.1%", "-9.8%", "+16.4%", "+16.0%", "-14.9%", "-10.8%"]
    assert [rows["_curve"][(n, "lr+sd-d2-emb")] for n in (5, 10)] == ["+7.4%", "-1.7%"]
    assert [rows["_curve"][(10, c)] for c in ("sd", "lr-d2", "lr-d2-emb")] == ["-19.2%", "-18.4%", "-15.3%"]
    assert all(r["preregistered"] <= 1.0 and r["measured"] <= 1.0 for c in pre.values() for r in c["check"]["rows"]
               if r["config"] != "ar-er")
    assert [(c["check"]["within_target"], c["check"]["compared"], c["check"]["break_even_right"],
             len(c["check"]["break_even"])) for c in pre.values()] == [(4, 8, 4, 4), (3, 8, 4, 4)]
    out = {k: json.loads((RESULTS / f"load_f6m207_510_heldout{k}.json").read_text()) for k in ("", "_curve")}
    speed = out[""]["machine_speed"]
    assert [f"{speed['corpus'][r]['decode_s'] / speed['profile'][r]['decode_s']:.2f}" for r in ("target", "draft")] == [
        "0.83", "0.64"]
    rep = [replay_speedup_errors(o["levels"]) for o in out.values()]
    assert [(sum(e <= 0.10 for e in r), len(r), f"{max(r):.1%}") for r in rep] == [(3, 8, "13.5%"), (5, 8, "16.7%")]
    plan = [plan_errors(o, "planned") for o in out.values()]
    assert [(sum(e <= 0.10 for e in p), len(p), f"{max(p):.1%}") for p in plan] == [(7, 10, "19.9%"), (5, 10, "16.9%")]


def test_the_other_boot_preregistered_claims():
    """docs/load.md, "Another boot of the fourth CPU, planned before its runs" (and the README's
    paragraph, traces/README.md): traces/load-cold-epyc-f25m17-3's 120 records (problems 1136-1151,
    levels 1, 2, 4 and 8, two rounds, 71 minutes alone) on the AMD EPYC family 25 model 17 in a later
    boot (feb902f3, fc-v1300) than traces/load-cold-epyc-f25m17's, against the plan from the earlier
    boot committed before them; this boot's curves (419, 504, 378, 349 ms at 1-4 sequences; 10.8 and
    3.8 minutes); the host at 0.96x and 1.03x the profile's probe; measured lr+sd 1.56x, 1.25x, 0.60x,
    0.41x and lr-d2-emb 1.06x, 1.11x, 0.73x, 0.62x, break-evens 4 and 4; the checks (line 3 of 8,
    20-77% high past 2, lr-d2-emb's break-even at 2; curve 4 of 8, +16.5% to +49.2%; batch factors
    6 of 8, lr+sd +10.6%/+31.4%, both break-evens); the factors at four sequences (0.93 shaped, 0.71
    measured); bench_load (replay 3, 3, 4 of 8; plan 7, 8, 10 of 12; AR on both cores 1.72x planned,
    1.57x-1.71x measured)."""

    corpus = ROOT / "traces" / "load-cold-epyc-f25m17-3"
    recs = [json.loads(line) for f in corpus.glob("gsm8k/c*/*.jsonl") for line in f.read_text().splitlines() if line.strip()]
    ids = sorted(int(r["problem_id"].split("/")[1]) for r in recs)
    assert len(recs) == 120 and (ids[0], ids[-1]) == (1136, 1151) and len(set(ids)) == 16
    assert {int(r["run"]["flags"]["concurrency"]) for r in recs} == {1, 2, 4, 8}
    assert {int(r["run"]["flags"]["load_round"]) for r in recs} == {0, 1}
    assert _machines(recs) == {("family 25 model 17 stepping 1", "feb902f3")}
    assert all("fc-v1300" in r["run"]["hardware"]["platform"] for r in recs)
    old = {json.loads(line)["run"]["hardware"]["boot_id"] for f in (ROOT / "traces" / "load-cold-epyc-f25m17").glob("gsm8k/c*/*.jsonl")
           for line in f.read_text().splitlines() if line.strip()}
    assert len(old) == 1 and not old & {r["run"]["hardware"]["boot_id"] for r in recs}
    assert _collector_minutes(corpus) == 71
    curves = {r: json.loads((ROOT / "traces" / "curves" / f"f25m17-{r}.json").read_text()) for r in ("target", "draft")}
    dec = {p["batch"]: p["ms"] for p in next(iter(curves["target"]["models"].values()))["decode"]}
    assert [f"{dec[b]:.0f}" for b in (1, 2, 3, 4)] == ["419", "504", "378", "349"]
    assert [f"{c['measured_s'] / 60:.1f}" for c in curves.values()] == ["10.8", "3.8"]
    assert {c["hardware"]["boot_id"][:8] for c in curves.values()} == {"feb902f3"}
    # the checks
    pre = {k: json.loads((RESULTS / f"prereg_f25m17_3{k}.check.json").read_text()) for k in ("", "_curve", "_bf")}
    rows = {k: {(r["level"], r["config"]): r for r in c["check"]["rows"]} for k, c in pre.items()}
    meas = {c: [f"{rows[''][(n, c)]['measured']:.2f}" for n in (1, 2, 4, 8)] for c in ("lr+sd-d2-emb", "lr-d2-emb")}
    assert meas == {"lr+sd-d2-emb": ["1.56", "1.25", "0.60", "0.41"], "lr-d2-emb": ["1.06", "1.11", "0.73", "0.62"]}
    assert all(v["measured"] == "4" for c in pre.values() for v in c["check"]["break_even"].values())
    assert [(c["check"]["within_target"], c["check"]["compared"], c["check"]["break_even_right"]) for c in pre.values()] == [
        (3, 8, 1), (4, 8, 2), (6, 8, 2)]
    assert pre[""]["check"]["break_even"]["lr-d2-emb"]["preregistered"] == "2"
    spec = ("lr+sd-d2-emb", "lr-d2-emb")
    low = {k: [rows[k][(n, c)]["rel_error"] for n in (1, 2) for c in spec] for k in rows}
    assert all(abs(e) <= 0.10 for k in ("_curve", "_bf") for e in low[k])
    assert [f"{e:+.1%}" for e in low[""] if abs(e) > 0.10] == ["-10.3%"]
    high = {k: [rows[k][(n, c)]["rel_error"] for n in (4, 8) for c in spec] for k in rows}
    assert (f"{min(high['']):.0%}", f"{max(high['']):.0%}") == ("20%", "77%")
    assert (f"{min(high['_curve']):+.1%}", f"{max(high['_curve']):+.1%}") == ("+16.5%", "+49.2%")
    assert [f"{rows['_bf'][(n, 'lr+sd-d2-emb')]['rel_error']:+.1%}" for n in (4, 8)] == ["+10.6%", "+31.4%"]
    # the batch factors at four sequences: the curve's (smoothed) and the earlier traces'
    out = {k: json.loads((RESULTS / f"load_cold_epyc_f25m17_3_heldout{k}.json").read_text()) for k in ("", "_curve", "_bf")}
    bf = {k: dict(map(tuple, out[k]["latency_fit"]["target"]["batch_factors"])) for k in ("_curve", "_bf")}
    assert f"{bf['_curve'][4.0]:.2f}" == "0.93"
    assert [f"{bf['_bf'][b]:.2f}" for b in (1.0, 2.0, 3.0, 4.0)] == ["1.00", "1.12", "0.82", "0.71"]
    speed = out[""]["machine_speed"]
    assert [f"{speed['corpus'][r]['decode_s'] / speed['profile'][r]['decode_s']:.2f}" for r in ("target", "draft")] == [
        "0.96", "1.03"]
    from benchmarks.bench_load import plan_errors
    from benchmarks.load_replay import replay_speedup_errors

    rep = [replay_speedup_errors(o["levels"]) for o in out.values()]
    assert [(sum(e <= 0.10 for e in r), len(r), f"{max(r):.1%}") for r in rep] == [
        (3, 8, "84.6%"), (3, 8, "54.9%"), (4, 8, "37.0%")]
    plan = [plan_errors(o, "planned") for o in out.values()]
    assert [(sum(e <= 0.10 for e in p), len(p), f"{max(p):.1%}") for p in plan] == [
        (7, 12, "77.2%"), (8, 12, "49.2%"), (10, 12, "31.6%")]
    er = [out[""]["levels"][str(n)]["ar-er"]["speedup_vs_ar"] for n in (1, 2, 4, 8)]
    assert (f"{out['']['planned']['1']['ar-er']['speedup_vs_ar']:.2f}", f"{min(er):.2f}", f"{max(er):.2f}") == (
        "1.72", "1.57", "1.71")


def test_the_sd_first_pass_claims():
    """docs/load.md, "lr+sd's first pass, a small part of the miss": with --sd-plain-first-pass
    lr+sd's replayed speedup on traces/load-f6m207-36 falls by 0.017 and 0.006 (0.96x to 0.95x,
    0.73x to 0.72x, against 0.83x and 0.66x; error +15.7% to +13.7%, +10.9% to +10.0%: 13% and 8%
    of the miss), every other configuration's unchanged, its target passes from 0.919 to 0.936
    and 0.939 to 0.948 of the real ones; the pass pricing beside it (AR 1.17, LR alone 1.17-1.22, sd
    1.13, lr+sd 1.02 at 6 in flight; shaped AR 1.05, lr+sd 1.02, sd 1.12) and the 510 check's lr+sd
    within 7.4% and 1.7% and sd 10.6% and 19.2% low by the curve."""
    from benchmarks import bench_replay_passes as brp

    a, b = (json.loads((RESULTS / f"load_f6m207_36_heldout{k}.json").read_text()) for k in ("", "_sd_first_pass"))
    assert b.get("sd_plain_first_pass") and not a.get("sd_plain_first_pass")
    pred = {k: {(n, c): v["predicted_speedup_vs_ar"] for n in o["levels"] for c, v in o["levels"][n].items()
                if v.get("predicted_speedup_vs_ar")} for k, o in (("off", a), ("on", b))}
    assert all(pred["on"][k] == v for k, v in pred["off"].items() if k[1] != "lr+sd-d2-emb")
    lr = {n: (pred["off"][(n, "lr+sd-d2-emb")], pred["on"][(n, "lr+sd-d2-emb")],
              a["levels"][n]["lr+sd-d2-emb"]["speedup_vs_ar"]) for n in ("3", "6")}
    assert [f"{x - y:.3f}" for x, y, _ in lr.values()] == ["0.017", "0.006"]
    assert [(f"{x:.2f}", f"{y:.2f}", f"{m:.2f}") for x, y, m in lr.values()] == [
        ("0.96", "0.95", "0.83"), ("0.73", "0.72", "0.66")]
    assert [(f"{x / m - 1:+.1%}", f"{y / m - 1:+.1%}", f"{(x - y) / (x - m):.0%}") for x, y, m in lr.values()] == [
        ("+15.7%", "+13.7%", "13%"), ("+10.9%", "+10.0%", "8%")]
    rp = [json.loads((RESULTS / f"replay_passes{k}.json").read_text()) for k in ("", "_sd_first_pass")]
    assert rp[1].get("sd_plain_first_pass") and rp[0]["corpus"] == rp[1]["corpus"] == "traces/load-f6m207-36"
    assert [[f"{brp.ratio(r['levels'][n]['lr+sd-d2-emb'], 'target', 'passes'):.3f}" for r in rp] for n in ("3", "6")] == [
        ["0.919", "0.936"], ["0.939", "0.948"]]
    pp = json.loads((RESULTS / "pass_pricing.json").read_text())["corpora"]["traces/load-f6m207-36"]["by_config"]
    six = {c: (f"{pp[c]['target']['6']['ratio_line']:.2f}", f"{pp[c]['target']['6']['ratio_curve']:.2f}")
           for c in ("ar", "lr-d2", "lr-d2-emb", "sd", "lr+sd-d2-emb")}
    assert six == {"ar": ("1.17", "1.05"), "lr-d2": ("1.22", "1.10"), "lr-d2-emb": ("1.17", "1.05"),
                   "sd": ("1.13", "1.12"), "lr+sd-d2-emb": ("1.02", "1.02")}
    rows = {(r["level"], r["config"]): f"{r['rel_error']:+.1%}"
            for r in json.loads((RESULTS / "prereg_f6m207_510_curve.check.json").read_text())["check"]["rows"]}
    assert [rows[(n, c)] for c in ("lr+sd-d2-emb", "sd") for n in (5, 10)] == ["+7.4%", "-1.7%", "-10.6%", "-19.2%"]


def test_the_fourth_cpu_transfer_preregistered_claims():
    """docs/load.md, "Depths never run, on the fourth CPU, planned before their runs" (and the
    README's and traces/README's paragraphs): traces/load-cold-epyc-f25m17-t36's 108 records
    (problems 1152-1169, levels 3 and 6, three rounds, 59 minutes) on the AMD EPYC family 25 model
    17 in boot feb902f3, after the plan from traces/load-cold-epyc-f25m17-3's 1-2; AR 7.24 and
    14.54 tokens/s, the curve's six sequences 378 ms against one's 419; 1 of 6 within 10% by each
    plan (lr-d1-emb at 3), every speedup planned high (+8.0..+93.2%, +7.6..+85.6%, +8.3..+43.7%; LR
    alone at 6 +20..+47%), break-evens 3 of 3; AR replayed -16.9% and -27.6% by the line, -1.9% and
    -2.3% by the batch factors, which replay lr+sd +39.4%/+66.5%, lr-d3-emb +15.5%/+42.1%,
    lr-d1-emb +10.5%/+25.7%; the replayed passes; the curves as measured (AR within 4.7%, plan 2
    of 6 at 41.1% against the smoothed curves' 84.3%; on traces/load-cold-epyc-f25m17-3 7 of 8 at
    25.2% against 4 of 8 at 49.2% and the batch factors' 6 of 8 at 31.6%); and the probe read at
    the reference speed (82 records, every one of sd or lr+sd; sd's passes at 6 in flight on
    traces/load-f6m207-36 1.13 -> 1.10 against lr+sd's 1.02, the gap narrowed by about a quarter by the line
    and the curve (1.12 -> 1.10); lr+sd-d3-emb
    on the Xeon's transfer corpus 1.10/1.07 -> 1.06/1.05)."""

    from benchmarks import bench_replay_passes as brp

    corpus = "traces/load-cold-epyc-f25m17-t36"
    recs = _corpus_is(corpus, 108, (1152, 1169), {3, 6}, 3, 59)
    dec = {p["batch"]: p["ms"] for p in next(iter(json.loads(
        (ROOT / "traces" / "curves" / "f25m17-target.json").read_text())["models"].values()))["decode"]}
    assert [f"{dec[b]:.0f}" for b in (6, 1)] == ["378", "419"]
    out = {k: json.loads((RESULTS / f"load_cold_epyc_f25m17_t36_heldout{k}.json").read_text())
           for k in ("", "_curve", "_bf", "_raw")}
    assert [f"{out[''] ['levels'][n]['ar']['tokens_per_s']:.2f}" for n in ("3", "6")] == ["7.24", "14.54"]
    # the checks
    pre = {k: json.loads((RESULTS / f"prereg_f25m17_t36{k}.check.json").read_text()) for k in ("", "_curve", "_bf")}
    assert all(c["calibrated_on"] == "traces/load-cold-epyc-f25m17-3" and c["for"] == corpus for c in pre.values())
    for c in pre.values():
        rows = c["check"]["rows"]
        assert [(r["level"], r["config"]) for r in rows if abs(r["rel_error"]) <= 0.10] == [(3, "lr-d1-emb")]
        assert all(r["rel_error"] > 0 for r in rows)
        assert all(v["measured"] == "3" for v in c["check"]["break_even"].values())
    span = {k: (f"{min(r['rel_error'] for r in c['check']['rows']):+.1%}", f"{max(r['rel_error'] for r in c['check']['rows']):+.1%}")
            for k, c in pre.items()}
    assert span == {"": ("+8.0%", "+93.2%"), "_curve": ("+7.6%", "+85.6%"), "_bf": ("+8.3%", "+43.7%")}
    alone6 = [r["rel_error"] for c in pre.values() for r in c["check"]["rows"] if r["level"] == 6 and r["config"].startswith("lr-")]
    assert (f"{min(alone6):+.0%}", f"{max(alone6):+.0%}") == ("+20%", "+47%")
    # the replay's tokens/s over measured
    rep = {k: {(n, c): f"{t['predicted_tokens_per_s'] / t['tokens_per_s'] - 1:+.1%}" for n, lv in o["levels"].items()
               for c, t in lv.items()} for k, o in out.items()}
    assert [rep[""][(n, "ar")] for n in ("3", "6")] == ["-16.9%", "-27.6%"]
    assert [rep["_bf"][(n, c)] for c in ("ar", "lr+sd-d3-emb", "lr-d3-emb", "lr-d1-emb") for n in ("3", "6")] == [
        "-1.9%", "-2.3%", "+39.4%", "+66.5%", "+15.5%", "+42.1%", "+10.5%", "+25.7%"]
    assert max(abs(float(rep["_raw"][(n, "ar")].rstrip("%"))) for n in ("3", "6")) == 4.7
    assert [rep[""][(n, "lr+sd-d3-emb")] for n in ("3", "6")] == ["+39.2%", "+66.4%"]
    assert [rep[""][("3", c)] for c in ("lr-d1-emb", "lr-d3-emb")] == ["-7.7%", "-1.6%"]
    assert rep[""][("6", "lr-d3-emb")] == "+17.1%" and rep["_raw"][("6", "lr-d1-emb")] == "+19.6%"
    raw_lr = [t["predicted_tokens_per_s"] / t["tokens_per_s"] - 1 for lv in out["_raw"]["levels"].values()
              for c, t in lv.items() if c != "ar"]
    assert (f"{min(raw_lr):.0%}", f"{max(raw_lr):.0%}") == ("11%", "58%")
    assert out["_raw"]["calibrated_on"].get("batch_curves_as_measured") and not out["_curve"]["calibrated_on"].get(
        "batch_curves_as_measured")
    rows = {r["result"]: r for r in json.loads((RESULTS / "load_summary.json").read_text())["results"]}
    got = {k: (rows[k]["planned"]["within"], rows[k]["planned"]["pairs"], f"{rows[k]['planned']['largest']:.1%}")
           for k in ("load_cold_epyc_f25m17_t36_heldout_raw", "load_cold_epyc_f25m17_t36_heldout_curve",
                     "load_cold_epyc_f25m17_3_heldout_raw", "load_cold_epyc_f25m17_3_heldout_curve",
                     "load_cold_epyc_f25m17_3_heldout_bf")}
    assert got == {"load_cold_epyc_f25m17_t36_heldout_raw": (2, 6, "41.1%"),
                   "load_cold_epyc_f25m17_t36_heldout_curve": (2, 6, "84.3%"),
                   "load_cold_epyc_f25m17_3_heldout_raw": (7, 8, "25.2%"),
                   "load_cold_epyc_f25m17_3_heldout_curve": (4, 8, "49.2%"),
                   "load_cold_epyc_f25m17_3_heldout_bf": (6, 8, "31.6%")}
    r3 = rows["load_cold_epyc_f25m17_3_heldout_raw"]["replayed"]
    assert (r3["within"], r3["pairs"], f"{r3['largest']:.1%}") == (4, 8, "27.9%")   # its replay beside the 7 of 8
    # the replayed passes (by the line)
    rp = json.loads((RESULTS / "replay_passes_f25m17_t36.json").read_text())
    assert rp["corpus"] == corpus
    lv = rp["levels"]
    lr = ("lr+sd-d3-emb", "lr-d1-emb", "lr-d3-emb")
    tp = [brp.ratio(lv[n][c], "target", "passes") for n in ("3", "6") for c in lr]
    assert (f"{min(tp):.2f}", f"{max(tp):.2f}") == ("0.94", "1.01")
    assert [f"{brp.ratio(lv['6'][c], 'target', 'batch'):.2f}" for c in ("lr+sd-d3-emb", "lr-d3-emb")] == ["0.76", "0.80"]
    big = {c: (sum(b["target"]["replayed"]["by_batch"][-1] for b in lv["6"][c]),
               sum(b["target"]["real"]["by_batch"][-1] for b in lv["6"][c])) for c in ("lr+sd-d3-emb", "lr-d3-emb")}
    assert big == {"lr+sd-d3-emb": (0, 29), "lr-d3-emb": (0, 33)}
    assert f"{brp.ratio(lv['6']['lr+sd-d3-emb'], 'draft', 'batch'):.2f}" == "1.88"
    xeon = json.loads((RESULTS / "replay_passes_transfer.json").read_text())["levels"]
    xb = [brp.ratio(xeon[n][c], "target", "batch") for n in ("3", "6") for c in lr]
    assert (f"{min(xb):.2f}", f"{max(xb):.2f}") == ("0.99", "1.03")
    # the probe read at the reference speed
    from lrsim.calib.physical import record_probe

    def timed_none(r: dict) -> bool:
        return any(not e.get("decode_s") for side in record_probe(r).values() if side
                   for e in (side.get("engines") or {}).values())

    recs = [json.loads(line) for f in (ROOT / "traces").rglob("*.jsonl") for line in f.read_text().splitlines()
            if '"decode_s":null' in line.replace(' ', '')]
    nulls = [(r["problem_id"], r["mode"]) for r in recs if timed_none(r)]
    assert len(nulls) == 82 and {m for _, m in nulls} == {"sd", "lr+sd"}
    pp = {k: json.loads((RESULTS / f"pass_pricing{k}.json").read_text())["corpora"] for k in ("", "_probe_fallback")}
    six = {k: [f"{c['traces/load-f6m207-36']['by_config'][m]['target']['6']['ratio_line']:.2f}" for m in ("sd", "lr+sd-d2-emb")]
           for k, c in pp.items()}
    assert six == {"": ["1.13", "1.02"], "_probe_fallback": ["1.10", "1.02"]}
    d3 = {k: [f"{c['traces/load-f6m207-transfer-36']['by_config']['lr+sd-d3-emb']['target'][n]['ratio_line']:.2f}"
              for n in ("3", "6")] for k, c in pp.items()}
    assert d3 == {"": ["1.10", "1.07"], "_probe_fallback": ["1.06", "1.05"]}
    gap = {k: c["traces/load-f6m207-36"]["by_config"] for k, c in pp.items()}
    moved = {r: [g["sd"]["target"]["6"][r] - g["lr+sd-d2-emb"]["target"]["6"][r] for g in gap.values()]
             for r in ("ratio_line", "ratio_curve")}
    assert all(0.2 < 1 - m[1] / m[0] < 0.3 for m in moved.values())           # about a quarter, line and curve
    assert [f"{g['sd']['target']['6']['ratio_curve']:.2f}" for g in gap.values()] == ["1.12", "1.10"]
    assert json.loads((RESULTS / "pass_pricing_probe_fallback.json").read_text()).get("probe_decode_fallback")


def test_every_load_of_a_corpus_of_other_depths_claims():
    """docs/load.md, "Every load of a corpus of other depths, on the fourth CPU" (and the README's,
    traces/README's and docs/calibration.md's paragraphs): traces/load-cold-epyc-f25m17-t36 replayed
    from every level of traces/load-cold-epyc-f25m17-3 (target batch 0.93-1.07 of real, from
    0.76-1.04; draft 0.83-1.05, from 0.90-1.88; LR makespans 0.94-1.05, lr+sd 0.94/0.95 from
    0.72/0.60), held out (LR within 7%, 3 of 6 planned, AR at 6 -23.2%; with the batch factors AR
    within 4.1%, 6 of 6 planned at 8.1%, 5 of 6 replayed); traces/load-cold-epyc-f25m17-t48's 144
    records (problems 1170-1193, levels 4 and 8, three rounds, 70 minutes, boot feb902f3) after its
    four plans: 6 of 6 by each (-1.7..+6.6%, -7.3..+1.7%, -6.5..-2.0%, -9.5..-0.6%; largest 9.5%),
    break-evens 3 of 3 at 4; replayed 4, 6, 6, 6 of 6 (tokens/s -6.9..+8.1% by the line, -5.2..+10.6%
    with the batch factors); the control from 1-2 (0 of 6 replayed and planned by the line, largest
    62.4%; 3 of 6 planned by the batch factors; lr+sd replayed 47-73% fast); its replayed passes
    (target batch 0.90-1.04, draft 0.88-1.05, makespans 0.93-1.07)."""

    from benchmarks import bench_replay_passes as brp

    lr = ("lr+sd-d3-emb", "lr-d1-emb", "lr-d3-emb")

    def span(vals):
        vals = list(vals)
        return f"{min(vals):.2f}", f"{max(vals):.2f}"

    def passes(name):
        doc = json.loads((RESULTS / f"{name}.json").read_text())
        lv = doc["levels"]
        return doc, {k: [brp.ratio(lv[n][c], eng, "batch") for n in lv for c in lr]
                     for k, eng in (("target", "target"), ("draft", "draft"))}, \
            {(n, c): brp.makespan_ratio(lv[n][c]) for n in lv for c in lv[n]}
    # t36 from every level: the passes beside the real ones, and the old profile's
    doc, new, mk = passes("replay_passes_f25m17_t36_lv")
    assert doc["calibrate_levels"] == [1, 2, 4, 8] and doc["calibrated_on"] == "traces/load-cold-epyc-f25m17-3"
    _, old, mk_old = passes("replay_passes_f25m17_t36")
    assert (span(new["target"]), span(old["target"])) == (("0.93", "1.07"), ("0.76", "1.04"))
    assert (span(new["draft"]), span(old["draft"])) == (("0.83", "1.05"), ("0.90", "1.88"))
    assert span(mk[(n, c)] for n in ("3", "6") for c in lr) == ("0.94", "1.05")
    assert [f"{m[(n, 'lr+sd-d3-emb')]:.2f}" for m in (mk, mk_old) for n in ("3", "6")] == ["0.94", "0.95", "0.72", "0.60"]
    # held out by bench_load from every level
    out = {k: json.loads((RESULTS / f"load_cold_epyc_f25m17_{k}.json").read_text())
           for k in ("t36_heldout_lv", "t36_heldout_lv_bf", "t48_heldout", "t48_heldout_bf", "t48_heldout_pooled",
                     "t48_heldout_pooled_bf", "t48_heldout_12", "t48_heldout_12_bf")}
    assert all(o["calibrated_on"]["levels"] == ([1, 2] if "_12" in k else [1, 2, 3, 4, 6, 8] if "pooled" in k
                                                else [1, 2, 4, 8]) for k, o in out.items())
    rep = {k: {(n, c): t["predicted_tokens_per_s"] / t["tokens_per_s"] - 1 for n, lv in o["levels"].items()
               for c, t in lv.items()} for k, o in out.items()}
    assert max(abs(rep["t36_heldout_lv"][(n, c)]) for n in ("3", "6") for c in lr) < 0.07
    assert f"{rep['t36_heldout_lv'][('6', 'ar')]:+.1%}" == "-23.2%"
    assert max(abs(rep["t36_heldout_lv_bf"][(n, "ar")]) for n in ("3", "6")) == pytest.approx(0.041, abs=5e-4)
    rows = {r["result"]: r for r in json.loads((RESULTS / "load_summary.json").read_text())["results"]}

    def counts(k, key):
        c = rows[f"load_cold_epyc_f25m17_{k}"][key]
        return c["within"], c["pairs"], f"{c['largest']:.1%}"
    assert [counts(k, "planned")[:2] for k in ("t36_heldout_lv", "t36_heldout_lv_bf")] == [(3, 6), (6, 6)]
    planned_out = [(n, c) for n, t in out["t36_heldout_lv"]["planned"].items() for c, p in t.items() if c in lr
                   and abs(p["speedup_vs_ar"] / out["t36_heldout_lv"]["levels"][n][c]["speedup_vs_ar"] - 1) > 0.10]
    assert {n for n, _ in planned_out} == {"6"} and len(planned_out) == 3
    assert counts("t36_heldout_lv_bf", "planned")[2] == "8.1%" and counts("t36_heldout_lv_bf", "replayed")[:2] == (5, 6)
    # the pre-registered corpus
    corpus = "traces/load-cold-epyc-f25m17-t48"
    _corpus_is(corpus, 144, (1170, 1193), {4, 8}, 3, 70)
    pre = {k: json.loads((RESULTS / f"prereg_f25m17_t48{k}.check.json").read_text())
           for k in ("", "_bf", "_pooled", "_pooled_bf")}
    assert all(c["for"] == corpus and c["commit"].startswith("33353b2") and not c["dirty"] for c in pre.values())
    spans = {k: (f"{min(r['rel_error'] for r in c['check']['rows']):+.1%}",
                 f"{max(r['rel_error'] for r in c['check']['rows']):+.1%}") for k, c in pre.items()}
    assert spans == {"": ("-1.7%", "+6.6%"), "_bf": ("-7.3%", "+1.7%"), "_pooled": ("-6.5%", "-2.0%"),
                     "_pooled_bf": ("-9.5%", "-0.6%")}
    assert all((c["check"]["within_target"], c["check"]["compared"], c["check"]["break_even_right"]) == (6, 6, 3)
               and all(v["measured"] == "4" for v in c["check"]["break_even"].values()) for c in pre.values())
    assert counts("t48_heldout_pooled_bf", "planned") == (5, 6, "10.2%")   # bench_load's rescaled plan
    assert [counts(k, "replayed")[:2] for k in ("t48_heldout", "t48_heldout_bf", "t48_heldout_pooled",
                                                "t48_heldout_pooled_bf")] == [(4, 6), (6, 6), (6, 6), (6, 6)]
    line = [v for k in ("t48_heldout", "t48_heldout_pooled") for v in rep[k].values()]
    bf = [v for k in ("t48_heldout_bf", "t48_heldout_pooled_bf") for v in rep[k].values()]
    assert [f"{f(x):+.1%}" for x in (line, bf) for f in (min, max)] == ["-6.9%", "+8.1%", "-5.2%", "+10.6%"]
    # the control from levels 1-2
    assert counts("t48_heldout_12", "replayed")[:2] == (0, 6) and counts("t48_heldout_12", "planned") == (0, 6, "62.4%")
    assert counts("t48_heldout_12_bf", "planned")[:2] == (3, 6)
    sd = [rep[k][(n, "lr+sd-d3-emb")] for k in ("t48_heldout_12", "t48_heldout_12_bf") for n in ("4", "8")]
    assert (f"{min(sd):.0%}", f"{max(sd):.0%}") == ("47%", "73%")
    # its replayed passes
    doc, p48, mk48 = passes("replay_passes_f25m17_t48")
    assert doc["corpus"] == corpus and doc["calibrate_levels"] == [1, 2, 4, 8]
    assert (span(p48["target"]), span(p48["draft"])) == (("0.90", "1.04"), ("0.88", "1.05"))
    assert span(mk48.values()) == ("0.93", "1.07")
    # the README's sentence: the largest error of the four plans
    assert f"{max(abs(r['rel_error']) for c in pre.values() for r in c['check']['rows']):.1%}" == "9.5%"


def test_between_the_swept_loads_preregistered_claims():
    """docs/load.md, "Planned before its runs: depths 1 and 3 at 3 and 6, between the swept loads"
    (and the README's, traces/README's and docs/calibration.md's paragraphs):
    traces/load-cold-epyc-f25m17-b36's 108 records (problems 1016-1033, levels 3 and 6, three
    rounds, 67 minutes, boot feb902f3) after its four plans (0c5201d): 2, 5, 2 and 5 of 6 within
    10% (line -8.6..+35.9%, batch factors -3.1..+18.5%, pooled -10.5..+29.6%, pooled batch factors
    -4.4..+16.8%; the line's misses every configuration at 6, planned 19.0-35.9% high, and one at 3,
    lr+sd +11.9% alone, lr-d1 -10.5% pooled; the batch factors' one miss lr+sd at 3, +18.5%),
    break-evens 3 of 3 at 3; held out: AR at 6 replayed -17.4% by the line
    (-13.2% pooled), within 4.0% by the batch factors, LR alone within 6.2% by all four, lr+sd
    8.9-14.6% fast; replayed 3, 5, 3, 5 of 6; the control from 1-2 replays 1 and 0 of 6, plans 1
    of 6 by each (largest 110.0%, the line's), lr+sd 48-77% fast; its replayed passes (target batch
    0.96-1.05, draft 0.88-1.07, speculative makespans 0.88-1.01, AR's at 6 1.21)."""
    from benchmarks import bench_replay_passes as brp

    lr = ("lr+sd-d3-emb", "lr-d1-emb", "lr-d3-emb")
    corpus = "traces/load-cold-epyc-f25m17-b36"
    _corpus_is(corpus, 108, (1016, 1033), {3, 6}, 3, 67)
    plans = ("", "_bf", "_pooled", "_pooled_bf")
    pre = {k: json.loads((RESULTS / f"prereg_f25m17_b36{k}.check.json").read_text()) for k in plans}
    # written at ed42a27 (planning code clean), committed in 0c5201d before the first record
    assert all(c["for"] == corpus and c["commit"].startswith("ed42a27") and not c["dirty"]
               and c["calibrate_levels"] == [1, 2, 4, 8] for c in pre.values())
    assert [pre[k]["calibrated_on"] for k in ("", "_pooled")] == [
        "traces/load-cold-epyc-f25m17-3", "traces/load-cold-epyc-f25m17-3,traces/load-cold-epyc-f25m17-t48"]
    err = {k: {(r["level"], r["config"]): r["rel_error"] for r in c["check"]["rows"]} for k, c in pre.items()}
    spans = {k: (f"{min(e.values()):+.1%}", f"{max(e.values()):+.1%}") for k, e in err.items()}
    assert spans == {"": ("-8.6%", "+35.9%"), "_bf": ("-3.1%", "+18.5%"), "_pooled": ("-10.5%", "+29.6%"),
                     "_pooled_bf": ("-4.4%", "+16.8%")}
    assert [(c["check"]["within_target"], c["check"]["compared"], c["check"]["break_even_right"])
            for c in pre.values()] == [(2, 6, 3), (5, 6, 3), (2, 6, 3), (5, 6, 3)]
    assert all(v["measured"] == "3" for c in pre.values() for v in c["check"]["break_even"].values())
    # the line's misses: every configuration at 6, each planned high, and one at 3
    for k, at3 in (("", "lr+sd-d3-emb"), ("_pooled", "lr-d1-emb")):
        assert {key for key, e in err[k].items() if abs(e) > 0.10} == {(6, c) for c in lr} | {(3, at3)}
    assert [f"{err[k][(3, c)]:+.1%}" for k, c in (("", "lr+sd-d3-emb"), ("_pooled", "lr-d1-emb"))] == ["+11.9%", "-10.5%"]
    high = [err[k][(6, c)] for k in ("", "_pooled") for c in lr]
    assert (f"{min(high):.1%}", f"{max(high):.1%}") == ("19.0%", "35.9%")
    for k in ("_bf", "_pooled_bf"):
        assert {key for key, e in err[k].items() if abs(e) > 0.10} == {(3, "lr+sd-d3-emb")}
    assert f"{err['_bf'][(3, 'lr+sd-d3-emb')]:+.1%}" == "+18.5%"
    # held out by bench_load
    out = {k: json.loads((RESULTS / f"load_cold_epyc_f25m17_b36_heldout{k}.json").read_text())
           for k in (*plans, "_12", "_12_bf")}
    assert all(o["calibrated_on"]["levels"] == ([1, 2] if "_12" in k else [1, 2, 4, 8]) for k, o in out.items())
    rep = {k: {(n, c): t["predicted_tokens_per_s"] / t["tokens_per_s"] - 1 for n, lv in o["levels"].items()
               for c, t in lv.items()} for k, o in out.items()}
    assert [f"{rep[k][('6', 'ar')]:+.1%}" for k in ("", "_pooled")] == ["-17.4%", "-13.2%"]
    assert f"{rep['_pooled'][('3', 'ar')]:+.1%}" == "+12.4%"       # with the pooled line's lr-d1 at 3
    # the batch factors of the sweep's passes: sizes 1-19, six among them, cheaper than the line
    bf = dict(map(tuple, out["_bf"]["latency_fit"]["target"]["batch_factors"]))
    assert (min(bf), max(bf)) == (1.0, 19.0) and f"{bf[6.0]:.2f}" == "0.84"
    assert (f"{min(bf[1.0], bf[2.0]):.1f}", f"{max(bf[1.0], bf[2.0]):.1f}") == ("1.5", "1.6")
    assert max(abs(rep[k][('6', 'ar')]) for k in ("_bf", "_pooled_bf")) == pytest.approx(0.040, abs=5e-4)
    assert max(abs(rep[k][(n, c)]) for k in plans for n in ("3", "6") for c in lr[1:]) == pytest.approx(0.062, abs=5e-4)
    sd = [rep[k][(n, "lr+sd-d3-emb")] for k in plans for n in ("3", "6")]
    assert (f"{min(sd):.1%}", f"{max(sd):.1%}") == ("8.9%", "14.6%")
    rows = {r["result"]: r for r in json.loads((RESULTS / "load_summary.json").read_text())["results"]}

    def counts(k, key):
        c = rows[f"load_cold_epyc_f25m17_b36_heldout{k}"][key]
        return c["within"], c["pairs"], f"{c['largest']:.1%}"
    assert [counts(k, "replayed")[:2] for k in plans] == [(3, 6), (5, 6), (3, 6), (5, 6)]
    assert [counts(k, "replayed")[:2] for k in ("_12", "_12_bf")] == [(1, 6), (0, 6)]
    assert [counts(k, "planned") for k in ("_12", "_12_bf")] == [(1, 6, "110.0%"), (1, 6, "56.2%")]
    sd12 = [rep[k][(n, "lr+sd-d3-emb")] for k in ("_12", "_12_bf") for n in ("3", "6")]
    assert (f"{min(sd12):.0%}", f"{max(sd12):.0%}") == ("48%", "77%")
    # its replayed passes
    doc = json.loads((RESULTS / "replay_passes_f25m17_b36.json").read_text())
    assert doc["corpus"] == corpus and doc["calibrate_levels"] == [1, 2, 4, 8]
    lv = doc["levels"]
    for eng, want in (("target", ("0.96", "1.05")), ("draft", ("0.88", "1.07"))):
        v = [brp.ratio(lv[n][c], eng, "batch") for n in lv for c in lr]
        assert (f"{min(v):.2f}", f"{max(v):.2f}") == want
    mk = [brp.makespan_ratio(lv[n][c]) for n in lv for c in lr]
    assert (f"{min(mk):.2f}", f"{max(mk):.2f}") == ("0.88", "1.01")
    assert f"{brp.makespan_ratio(lv['6']['ar']):.2f}" == "1.21"
    # lr+sd: about the real price a pass, too few passes
    sd_lv = [lv[n]["lr+sd-d3-emb"] for n in ("3", "6")]
    assert [f"{brp.ratio(x, 'target', 'passes'):.2f}" for x in sd_lv] == ["0.91", "0.91"]
    assert [f"{brp.ratio(x, 'target', 'busy_s'):.2f}" for x in sd_lv] == ["0.88", "0.91"]

def test_past_the_swept_loads_preregistered_claims():
    """docs/load.md, "Planned before its runs: 12 in flight, past the swept loads" (and the README's
    and traces/README's paragraphs): traces/load-cold-epyc-f25m17-b12's 144 records (problems
    1034-1069, 12 in flight, three rounds, 58 minutes, boot feb902f3) after its four plans (written at
    0fe2297, committed in 7c468f5): 3 of 3 within 10% by each (line +5.7..+6.7%, batch factors
    +5.0..+7.0%, pooled +2.7..+3.1%, pooled batch factors +2.6..+4.5%), every speculative one warned
    of for both engines (draft 12 past 8, target 23-41 past 22), ar-er not; measured 0.63x, 0.53x,
    0.31x; held out: AR replayed 10.4%, 8.9%, 7.0%, 6.9% slow, LR within 3.2%, lr+sd within 1.5%,
    replayed 1, 1, 3, 2 of 3; the control plans 0 and 1 of 3 (58.2%, lr+sd 0.50x) and replays 0;
    its passes (target batch 1.01-1.03, draft 0.90-0.92, makespans 0.98-1.03, AR's 1.12, lr+sd's
    target passes 0.94). And "lr+sd's own SD rate": --own-sd-rate moves lr+sd's replay by about a
    point on b36, t48 and f6m207-36."""
    from benchmarks import bench_replay_passes as brp
    from lrsim.calib.calibrate import read_records
    from lrsim.sim.traces import own_tokens_per_pass

    lr = ("lr+sd-d3-emb", "lr-d1-emb", "lr-d3-emb")
    corpus = "traces/load-cold-epyc-f25m17-b12"
    _corpus_is(corpus, 144, (1034, 1069), {12}, 3, 58)
    plans = ("", "_bf", "_pooled", "_pooled_bf")
    pre = {k: json.loads((RESULTS / f"prereg_f25m17_b12{k}.check.json").read_text()) for k in plans}
    assert all(c["for"] == corpus and c["commit"].startswith("0fe2297") and not c["dirty"]
               and c["calibrate_levels"] == [1, 2, 4, 8] and c["levels"] == [12] for c in pre.values())
    err = {k: {r["config"]: r["rel_error"] for r in c["check"]["rows"] if r["config"] != "ar-er"} for k, c in pre.items()}
    assert {k: (f"{min(e.values()):+.1%}", f"{max(e.values()):+.1%}") for k, e in err.items()} == {
        "": ("+5.7%", "+6.7%"), "_bf": ("+5.0%", "+7.0%"), "_pooled": ("+2.7%", "+3.1%"), "_pooled_bf": ("+2.6%", "+4.5%")}
    assert all(c["check"]["by_warning"] == {"warned": {"within_target": 3, "compared": 3}} for c in pre.values())
    assert all((c["check"]["within_target"], c["check"]["compared"], c["check"]["break_even_right"]) == (3, 3, 3)
               for c in pre.values())
    for c in pre.values():
        planned = c["planned"]["12"]
        assert planned["ar-er"]["beyond_measured"] == [] and planned["ar-er"]["ar_max_batch"] == {"target": 12}
        assert all(planned[x]["beyond_measured"] == ["target", "draft"] and planned[x]["max_batch"]["draft"] == 12
                   for x in lr)
    # the line's plan (the other three price the same passes: their simulated batches are alike)
    line = pre[""]["planned"]["12"]
    assert sorted(line[x]["max_batch"]["target"] for x in line if x != "ar-er") == [23, 32, 32, 40, 41]
    measured = {r["config"]: f"{r['measured']:.2f}" for r in pre[""]["check"]["rows"]}
    assert measured == {"lr+sd-d3-emb": "0.31", "lr-d1-emb": "0.63", "lr-d3-emb": "0.53"}
    # held out by bench_load
    out = {k: json.loads((RESULTS / f"load_cold_epyc_f25m17_b12_heldout{k}.json").read_text())
           for k in (*plans, "_12", "_12_bf")}
    held = out["_bf"]["latency_fit"]
    assert held["target"]["batch_factors"][-1][0] == 19.0
    rep = {k: {c: t["predicted_tokens_per_s"] / t["tokens_per_s"] - 1 for c, t in o["levels"]["12"].items()}
           for k, o in out.items()}
    assert [f"{rep[k]['ar']:+.1%}" for k in plans] == ["-10.4%", "-8.9%", "-7.0%", "-6.9%"]
    assert f"{max(abs(rep[k][c]) for k in plans for c in lr[1:]):.1%}" == "3.2%"
    assert f"{max(abs(rep[k]['lr+sd-d3-emb']) for k in plans):.1%}" == "1.5%"
    rows = {r["result"]: r for r in json.loads((RESULTS / "load_summary.json").read_text())["results"]}

    def counts(k, key):
        c = rows[f"load_cold_epyc_f25m17_b12_heldout{k}"][key]
        return c["within"], c["pairs"], f"{c['largest']:.1%}"
    assert [counts(k, "replayed")[:2] for k in plans] == [(1, 3), (1, 3), (3, 3), (2, 3)]
    assert [counts(k, "replayed")[0] for k in ("_12", "_12_bf")] == [0, 0]
    assert [counts(k, "planned") for k in ("_12", "_12_bf")] == [(0, 3, "58.2%"), (1, 3, "25.4%")]
    assert f"{out['_12']['planned']['12']['lr+sd-d3-emb']['speedup_vs_ar']:.2f}" == "0.50"
    # the sweep's passes: draft at most 8 sequences, target at most 22 (the profile of levels 1, 2, 4, 8);
    # 12 in flight is 1.5 times its largest load
    from benchmarks.load_replay import calib_paths
    from lrsim.calib.calibrate import calibrate

    fit = calibrate(calib_paths(ROOT / "traces/load-cold-epyc-f25m17-3", levels=(1, 2, 4, 8)),
                    select_placement=False)["latency"]
    assert {k: fit[k]["fit"]["ranges"]["sequences"][1] for k in fit} == {"target": 22, "draft": 8}
    assert f"{12 / fit['draft']['fit']['ranges']['sequences'][1]:.1f}" == "1.5"     # 12 in flight, 8 the largest load
    doc = json.loads((RESULTS / "replay_passes_f25m17_b12.json").read_text())
    assert doc["corpus"] == corpus and doc["calibrate_levels"] == [1, 2, 4, 8]
    lv = doc["levels"]
    for eng, want in (("target", ("1.01", "1.03")), ("draft", ("0.90", "0.92"))):
        v = [brp.ratio(lv["12"][c], eng, "batch") for c in lr]
        assert (f"{min(v):.2f}", f"{max(v):.2f}") == want
    mk = [brp.makespan_ratio(lv["12"][c]) for c in lr]
    assert (f"{min(mk):.2f}", f"{max(mk):.2f}") == ("0.98", "1.03")
    assert f"{brp.makespan_ratio(lv['12']['ar']):.2f}" == "1.12"
    assert f"{brp.ratio(lv['12']['lr+sd-d3-emb'], 'target', 'passes'):.2f}" == "0.94"
    # lr+sd's own SD rate: spread in a block, the window's not; the replay moves by about a point
    recs = read_records(ROOT / "traces/load-cold-epyc-f25m17-b36/gsm8k/c6/lr+sd-d3-emb.jsonl")
    by_block: dict[int, list[float]] = {}
    for r in recs:
        by_block.setdefault(int(r["run"]["flags"]["load_round"]), []).append(own_tokens_per_pass(r))
    assert f"{min(by_block[1]):.2f}-{max(by_block[1]):.2f}" == "1.53-1.96"
    spreads = sorted(max(v) - min(v) for v in by_block.values())
    assert (f"{spreads[0]:.2f}", f"{spreads[-1]:.2f}") == ("0.26", "0.43")
    from lrsim.calib.replay import ReplayWorkload, sd_tokens_per_pass      # the window's rates of block 1
    block = [r for r in recs if int(r["run"]["flags"]["load_round"]) == 1]
    wl = ReplayWorkload(block)
    window = [sd_tokens_per_pass(wl.token_hit(q), wl.token_alpha(q), 6) for q in wl.requests()]
    assert f"{min(window):.2f}-{max(window):.2f}" == "1.69-1.70"
    passes = {n: [f"{brp.ratio(json.loads((RESULTS / f'{n}.json').read_text())['levels'][lvl]['lr+sd-d3-emb'], 'target', 'passes'):.2f}"
                  for lvl in ("3", "6")] for n in ("replay_passes_f25m17_b36", "replay_passes_f25m17_b36_own_sd")}
    assert passes == {"replay_passes_f25m17_b36": ["0.91", "0.91"], "replay_passes_f25m17_b36_own_sd": ["0.93", "0.92"]}
    sd = {}
    for name, cfg in (("load_cold_epyc_f25m17_b36_heldout_bf", "lr+sd-d3-emb"), ("load_cold_epyc_f25m17_t48_heldout_bf", "lr+sd-d3-emb"),
                      ("load_f6m207_36_heldout", "lr+sd-d2-emb")):
        for suffix in ("", "_own_sd"):
            o = json.loads((RESULTS / f"{name}{suffix}.json").read_text())
            sd[name + suffix] = [f"{t[cfg]['predicted_tokens_per_s'] / t[cfg]['tokens_per_s'] - 1:+.1%}"
                                 for _, t in sorted(o["levels"].items(), key=lambda x: int(x[0]))]
    assert sd == {"load_cold_epyc_f25m17_b36_heldout_bf": ["+14.6%", "+9.2%"],
                  "load_cold_epyc_f25m17_b36_heldout_bf_own_sd": ["+13.5%", "+9.7%"],
                  "load_cold_epyc_f25m17_t48_heldout_bf": ["+8.0%", "+4.6%"],
                  "load_cold_epyc_f25m17_t48_heldout_bf_own_sd": ["+7.2%", "+3.6%"],
                  "load_f6m207_36_heldout": ["+9.0%", "-0.5%"], "load_f6m207_36_heldout_own_sd": ["+8.2%", "+1.0%"]}
    assert json.loads((RESULTS / "load_f6m207_36_heldout_own_sd.json").read_text())["own_sd_rate"] is True
    # it moves lr+sd by 0.5-1.5 points, toward the measured at 4 of 6 levels
    pairs = [(float(b[:-1]), float(o[:-1])) for name in ("load_cold_epyc_f25m17_b36_heldout_bf",
             "load_cold_epyc_f25m17_t48_heldout_bf", "load_f6m207_36_heldout")
             for b, o in zip(sd[name], sd[name + "_own_sd"])]
    moves = [abs(o - b) for b, o in pairs]
    assert (f"{min(moves):.1f}", f"{max(moves):.1f}") == ("0.5", "1.5")
    assert (sum(abs(o) < abs(b) for b, o in pairs), len(pairs)) == (4, 6)


def test_the_sd_rate_by_span_claims():
    """docs/load.md, "lr+sd's SD rate by kind of span" (and the README's sentence): on six corpora
    of two CPUs (four of the fourth CPU, two of the Xeon f6m207) and every level, the committed step
    after the prompt ran 1.11-1.31 tokens a pass, the target's other committed steps 1.44-1.76, the
    spans off the path 1.60-1.88, all spans 1.58-1.68, the first step the slowest kind in every
    cell; benchmarks/results/sd_rate_by_span.json is what the script reads from the traces."""
    from benchmarks import sd_rate_by_span as sr

    doc = json.loads((RESULTS / "sd_rate_by_span.json").read_text())
    assert doc == json.loads(json.dumps(sr.bench(list(doc["corpora"]))))
    assert (RESULTS / "sd_rate_by_span.md").read_text() == sr.render(doc)
    assert list(doc["corpora"]) == list(sr.CORPORA)
    cells = [r for by in doc["corpora"].values() for cfgs in by.values() for r in cfgs.values()]
    assert len(cells) == 15
    recs = [json.loads(line) for c in doc["corpora"] for f in (ROOT / c).glob("gsm8k/c*/lr+sd*.jsonl")
            for line in f.read_text().splitlines() if line.strip()]
    assert {m for m, _ in _machines(recs)} == {"family 25 model 17 stepping 1", "family 6 model 207 stepping 2"}
    span = {k: (f"{min(c[k]['rate'] for c in cells):.2f}", f"{max(c[k]['rate'] for c in cells):.2f}")
            for k in ("first", "committed", "off the path", "all")}
    assert span == {"first": ("1.11", "1.31"), "committed": ("1.44", "1.76"),
                    "off the path": ("1.60", "1.88"), "all": ("1.58", "1.68")}
    # in every cell the first step is the slowest kind and below the mean
    assert all(c["first"]["rate"] < min(c[k]["rate"] for k in ("committed", "verified", "off the path", "all"))
               for c in cells)


def _replay_errors(stem: str, level: int, suffixes) -> dict:
    """{suffix: {config: replayed tokens/s over measured - 1}} of the bench_load results
    `stem + suffix` at `level` in flight."""
    docs = {k: json.loads((RESULTS / f"{stem}{k}.json").read_text()) for k in suffixes}
    return {k: {c: t["predicted_tokens_per_s"] / t["tokens_per_s"] - 1 for c, t in o["levels"][str(level)].items()}
            for k, o in docs.items()}


def test_twice_the_swept_loads_preregistered_claims():
    """docs/load.md, "Planned before its runs: 16 in flight, twice the swept loads" (and the
    README's and traces/README's paragraphs): traces/load-cold-epyc-f25m17-b16's 192 records
    (problems 48-95, 16 in flight, three rounds, 77 minutes, boot feb902f3) after its four plans
    (written at 9665cb8, committed in 495ea19): 3 of 3 within 10% by the line (-0.7..-3.9%), 1 of 3
    by the batch factors (-8.0..-11.3%), 0 of 3 by the two with 12 (-10.4..-16.2%, -14.8..-20.0%),
    all low; measured 0.65x, 0.56x, 0.31x; held out: the profiles with 12 replay AR 8.8% and 12.5%
    fast, LR 0.4-4.5% fast, the line's AR 6.4% slow and LR within 3.1%; the target engine's cap of
    32 sequences held 36% and 40% of depth 3's distinct passes; the replay's target batch 1.10
    (lr+sd) and 1.07 (lr-d3), 1.01 (lr-d1, AR); the control plans 0 and 1 of 3 (45.7%)."""
    from benchmarks import bench_replay_passes as brp

    corpus = "traces/load-cold-epyc-f25m17-b16"
    _corpus_is(corpus, 192, (48, 95), {16}, 3, 77)
    plans = ("", "_bf", "_with12", "_with12_bf")
    pre = {k: json.loads((RESULTS / f"prereg_f25m17_b16{k}.check.json").read_text()) for k in plans}
    assert all(c["for"] == corpus and c["commit"].startswith("9665cb8") and not c["dirty"] and c["levels"] == [16]
               for c in pre.values())
    assert [pre[k]["calibrate_levels"] for k in plans] == [[1, 2, 4, 8]] * 2 + [[1, 2, 4, 8, 12]] * 2
    assert [pre[k]["calibrated_on"] for k in plans] == ["traces/load-cold-epyc-f25m17-3"] * 2 + [
        "traces/load-cold-epyc-f25m17-3,traces/load-cold-epyc-f25m17-b12"] * 2
    err = {k: [r["rel_error"] for r in c["check"]["rows"] if r["config"] != "ar-er"] for k, c in pre.items()}
    assert all(e < 0 for v in err.values() for e in v)                  # every plan planned low
    assert {k: (f"{max(e):+.1%}", f"{min(e):+.1%}") for k, e in err.items()} == {
        "": ("-0.7%", "-3.9%"), "_bf": ("-8.0%", "-11.3%"), "_with12": ("-10.4%", "-16.2%"),
        "_with12_bf": ("-14.8%", "-20.0%")}
    assert [pre[k]["check"]["within_target"] for k in plans] == [3, 1, 0, 0]
    assert all(c["check"]["break_even_right"] == 3 for c in pre.values())
    assert all(set(c["check"]["by_warning"]) == {"warned"} for c in pre.values())
    assert {r["config"]: f"{r['measured']:.2f}" for r in pre[""]["check"]["rows"]} == {
        "lr+sd-d3-emb": "0.31", "lr-d1-emb": "0.65", "lr-d3-emb": "0.56"}
    rep = _replay_errors("load_cold_epyc_f25m17_b16_heldout", 16, (*plans, "_12", "_12_bf"))
    lr = ("lr+sd-d3-emb", "lr-d1-emb", "lr-d3-emb")
    assert [f"{rep[k]['ar']:+.1%}" for k in ("_with12", "_with12_bf")] == ["+8.8%", "+12.5%"]
    with12 = [rep[k][c] for k in ("_with12", "_with12_bf") for c in lr]
    assert (f"{min(with12):.1%}", f"{max(with12):.1%}") == ("0.4%", "4.5%")
    assert f"{rep['']['ar']:+.1%}" == "-6.4%" and f"{max(abs(rep[''][c]) for c in lr):.1%}" == "3.1%"
    rows = {r["result"]: r for r in json.loads((RESULTS / "load_summary.json").read_text())["results"]}
    planned = [rows[f"load_cold_epyc_f25m17_b16_heldout{k}"]["planned"] for k in ("_12", "_12_bf")]
    assert [(p["within"], p["pairs"]) for p in planned] == [(0, 3), (1, 3)]
    assert f"{planned[0]['largest']:.1%}" == "45.7%"
    # the real engine's cap (lrreal/engine.py EngineArgs.max_num_seqs) and how often depth 3 met it
    from lrreal.engine import EngineArgs

    assert EngineArgs("m").max_num_seqs == 32
    share = {}
    for cfg in lr + ("ar",):
        passes = {}
        for line in (ROOT / corpus / "gsm8k" / "c16" / f"{cfg}.jsonl").read_text().splitlines():
            for p in json.loads(line)["engine_stats"]["target"]["forward_passes"]:
                passes[p["start"]] = p["batch_size"]         # a pass in several records' windows: once
        assert max(passes.values()) <= 32
        share[cfg] = f"{sum(b == 32 for b in passes.values()) / len(passes):.0%}"
    assert share == {"lr+sd-d3-emb": "36%", "lr-d1-emb": "0%", "lr-d3-emb": "40%", "ar": "0%"}
    lv = json.loads((RESULTS / "replay_passes_f25m17_b16.json").read_text())["levels"]["16"]
    assert {c: f"{brp.ratio(lv[c], 'target', 'batch'):.2f}" for c in (*lr, "ar")} == {
        "lr+sd-d3-emb": "1.10", "lr-d1-emb": "1.01", "lr-d3-emb": "1.07", "ar": "1.01"}
    b12 = json.loads((RESULTS / "replay_passes_f25m17_b12.json").read_text())["levels"]["12"]
    assert [f"{brp.ratio(b12[c], 'target', 'batch'):.2f}" for c in lr] == ["1.03", "1.01", "1.01"]


def test_the_recorded_sd_rounds_claims():
    """docs/load.md, "lr+sd's committed path at its recorded SD rounds" (and the README's
    sentence): with --recorded-sd-rounds lr+sd's replayed target passes are 0.99-1.00 of the real
    ones on five corpora (0.91-0.98 without), 0.92-1.02 with the first step's alone; b36 at 3's
    passes of one sequence 60 of 60 (37 without); makespans toward the real at 5 of 8 levels, as
    far at 1, away at 2 (f6m207-36 at 6: 1.00 to 1.02; b16: 0.99 to 1.07); held out, lr+sd's
    replay errors 8 of 8 within 10% (7 of 8 without), largest 7.8% (14.6%)."""
    from benchmarks import bench_replay_passes as brp

    names = ("replay_passes_f25m17_b36", "replay_passes_f25m17_t48", "replay_passes_f25m17_b12",
             "replay_passes_f25m17_b16", "replay_passes")

    def lrsd(name):
        doc = json.loads((RESULTS / f"{name}.json").read_text())
        return [v for _, by in sorted(doc["levels"].items(), key=lambda x: int(x[0]))
                for c, v in by.items() if c.startswith("lr+sd")]
    flags = {s: [json.loads((RESULTS / f"{n}{s}.json").read_text()).get("recorded_sd_rounds") for n in names]
             for s in ("", "_sd_rounds", "_sd_rounds_first")}
    assert flags == {"": [None] * 5, "_sd_rounds": ["committed"] * 5, "_sd_rounds_first": ["first"] * 5}
    passes = {s: [brp.ratio(v, "target", "passes") for n in names for v in lrsd(n + s)]
              for s in ("", "_sd_rounds", "_sd_rounds_first")}
    assert {s: (f"{min(v):.2f}", f"{max(v):.2f}") for s, v in passes.items()} == {
        "": ("0.91", "0.98"), "_sd_rounds": ("0.99", "1.00"), "_sd_rounds_first": ("0.92", "1.02")}
    doc = {s: json.loads((RESULTS / f"replay_passes_f25m17_b36{s}.json").read_text())["levels"]["3"]["lr+sd-d3-emb"]
           for s in ("", "_sd_rounds")}
    one = {s: [round(sum(r["target"][side]["by_batch"][0] for r in rows)) for side in ("replayed", "real")]
           for s, rows in doc.items()}        # passes of one sequence, b36 at 3 in flight
    assert one == {"": [37, 60], "_sd_rounds": [60, 60]}
    mk = {s: [brp.makespan_ratio(v) for n in names for v in lrsd(n + s)] for s in ("", "_sd_rounds")}
    closer = [round(abs(a - 1), 2) - round(abs(b - 1), 2) for b, a in zip(mk[""], mk["_sd_rounds"])]
    assert (sum(c < 0 for c in closer), sum(c == 0 for c in closer), sum(c > 0 for c in closer)) == (5, 1, 2)
    assert [f"{m:.2f}" for m in (mk[""][0], mk["_sd_rounds"][0], mk[""][5], mk["_sd_rounds"][5],
                                 mk[""][7], mk["_sd_rounds"][7])] == ["0.88", "0.93", "0.99", "1.07", "1.00", "1.02"]
    errs = {}
    for name, cfg in (("load_cold_epyc_f25m17_b36_heldout_bf", "lr+sd-d3-emb"), ("load_cold_epyc_f25m17_t48_heldout_bf", "lr+sd-d3-emb"),
                      ("load_cold_epyc_f25m17_b12_heldout_bf", "lr+sd-d3-emb"), ("load_cold_epyc_f25m17_b16_heldout_bf", "lr+sd-d3-emb"),
                      ("load_f6m207_36_heldout", "lr+sd-d2-emb")):
        for suffix in ("", "_sd_rounds"):
            o = json.loads((RESULTS / f"{name}{suffix}.json").read_text())
            assert o.get("recorded_sd_rounds") == ("committed" if suffix else None)
            errs.setdefault(suffix, []).extend(
                f"{t[cfg]['predicted_tokens_per_s'] / t[cfg]['tokens_per_s'] - 1:+.1%}"
                for _, t in sorted(o["levels"].items(), key=lambda x: int(x[0])))
    assert errs == {"": ["+14.6%", "+9.2%", "+8.0%", "+4.6%", "+1.4%", "+1.2%", "+9.0%", "-0.5%"],
                    "_sd_rounds": ["+7.8%", "+3.3%", "+5.6%", "+2.9%", "-2.4%", "-6.2%", "+4.0%", "-2.2%"]}
    within = {k: sum(abs(float(e[:-1])) <= 10 for e in v) for k, v in errs.items()}
    assert within == {"": 7, "_sd_rounds": 8}


def test_three_times_the_swept_loads_preregistered_claims():
    """docs/load.md, "Planned before its runs: 24 in flight, three times the swept loads" (and the
    README's and traces/README's paragraphs): traces/load-cold-epyc-f25m17-b24's 192 records
    (problems 96-143, 24 in flight, two rounds, 73 minutes, boot feb902f3) after its four plans
    (written at b4b3108, committed in c880e50): 3 of 3 within 10% by the line (-3.2..+2.9%) and by
    the batch factors (-3.7..+3.8%), 1 and 2 of 3 by the two with 16 (-4.8..-14.1%, -1.1..-10.6%,
    every one low); measured 0.61x, 0.53x, 0.28x; held out: the profiles with 16 replay AR 13.1% and
    8.5% fast, the line's 3.7% slow and the batch factors' 1.2%; the real target engine held 32
    sequences in 63-68% of the speculative configurations' distinct passes, AR's at most 24, the
    draft's at most 21; the uncapped replay's depth-3 target batch 1.53 and 1.58 of real in 0.73-0.75
    of the passes; the control plans 0 and 1 of 3 (31.9%)."""
    from benchmarks import bench_replay_passes as brp

    corpus = "traces/load-cold-epyc-f25m17-b24"
    _corpus_is(corpus, 192, (96, 143), {24}, 2, 73)
    plans = ("", "_bf", "_with16", "_with16_bf")
    pre = {k: json.loads((RESULTS / f"prereg_f25m17_b24{k}.check.json").read_text()) for k in plans}
    assert all(c["for"] == corpus and c["commit"].startswith("b4b3108") and not c["dirty"] and c["levels"] == [24]
               and c["records_of_future_corpus_then"] == 0 for c in pre.values())
    assert [pre[k]["calibrate_levels"] for k in plans] == [[1, 2, 4, 8]] * 2 + [[1, 2, 4, 8, 16]] * 2
    assert [pre[k]["calibrated_on"] for k in plans] == ["traces/load-cold-epyc-f25m17-3"] * 2 + [
        "traces/load-cold-epyc-f25m17-3,traces/load-cold-epyc-f25m17-b16"] * 2
    err = {k: sorted(r["rel_error"] for r in c["check"]["rows"] if r["config"] != "ar-er") for k, c in pre.items()}
    assert {k: (f"{e[0]:+.1%}", f"{e[-1]:+.1%}") for k, e in err.items()} == {
        "": ("-3.2%", "+2.9%"), "_bf": ("-3.7%", "+3.8%"), "_with16": ("-14.1%", "-4.8%"),
        "_with16_bf": ("-10.6%", "-1.1%")}
    assert all(e < 0 for k in ("_with16", "_with16_bf") for e in err[k])
    assert f"{max(abs(e) for k in ('', '_bf') for e in err[k]):.1%}" == "3.8%"
    assert [pre[k]["check"]["within_target"] for k in plans] == [3, 3, 1, 2]
    assert all(c["check"]["break_even_right"] == 3 for c in pre.values())
    assert {r["config"]: f"{r['measured']:.2f}" for r in pre[""]["check"]["rows"]} == {
        "lr+sd-d3-emb": "0.28", "lr-d1-emb": "0.61", "lr-d3-emb": "0.53"}
    rep = _replay_errors("load_cold_epyc_f25m17_b24_heldout", 24, plans)
    assert [f"{rep[k]['ar']:+.1%}" for k in plans] == ["-3.7%", "-1.2%", "+13.1%", "+8.5%"]
    rows = {r["result"]: r for r in json.loads((RESULTS / "load_summary.json").read_text())["results"]}
    planned = [rows[f"load_cold_epyc_f25m17_b24_heldout{k}"]["planned"] for k in ("_12", "_12_bf")]
    assert [(p["within"], p["pairs"]) for p in planned] == [(0, 3), (1, 3)]
    assert f"{planned[0]['largest']:.1%}" == "31.9%"
    # the real engines' passes: the target's cap of 32 reached, the draft's never
    share, top = {}, {}
    for cfg in ("lr+sd-d3-emb", "lr-d1-emb", "lr-d3-emb", "ar"):
        passes = {"target": {}, "draft": {}}
        for line in (ROOT / corpus / "gsm8k" / "c24" / f"{cfg}.jsonl").read_text().splitlines():
            for eng, st in json.loads(line)["engine_stats"].items():
                for p in st["forward_passes"]:
                    passes[eng][p["start"]] = p["batch_size"]     # a pass in several records' windows: once
        top[cfg] = {e: max(v.values()) for e, v in passes.items() if v}
        share[cfg] = f"{sum(b == 32 for b in passes['target'].values()) / len(passes['target']):.0%}"
    assert share == {"lr+sd-d3-emb": "65%", "lr-d1-emb": "63%", "lr-d3-emb": "68%", "ar": "0%"}
    assert top == {"lr+sd-d3-emb": {"target": 32, "draft": 21}, "lr-d1-emb": {"target": 32, "draft": 21},
                   "lr-d3-emb": {"target": 32, "draft": 21}, "ar": {"target": 24}}
    lv = json.loads((RESULTS / "replay_passes_f25m17_b24.json").read_text())["levels"]["24"]
    assert {c: (f"{brp.ratio(lv[c], 'target', 'batch'):.2f}", f"{brp.ratio(lv[c], 'target', 'passes'):.2f}")
            for c in ("lr+sd-d3-emb", "lr-d3-emb")} == {"lr+sd-d3-emb": ("1.58", "0.73"), "lr-d3-emb": ("1.53", "0.75")}


def test_the_engine_cap_claims():
    """docs/load.md, "The engines' sequence cap" (and the README's sentences): with --max-num-seqs
    recorded, the line's replay of traces/load-cold-epyc-f25m17-b24 runs depth 3's target batch at
    1.02 and 1.03 of real (1.53, 1.58 without; every speculative configuration 1.02-1.03 from
    1.20-1.58), its passes 0.91 and 0.96 of real (0.73, 0.75), decode positions 108.28 and 22.78 per
    block against 105.69 and 22.78 (139.05, 30.21 without); at 16 the batch 1.01 and 1.00 (1.10,
    1.07); the speculative makespans 0.98-1.01 (1.00-1.02 without); over the eight held-out results
    no replayed or planned speedup moved by more than 1.8 points."""
    from benchmarks import bench_replay_passes as brp

    spec = ("lr+sd-d3-emb", "lr-d1-emb", "lr-d3-emb")
    doc = {s: json.loads((RESULTS / f"replay_passes_f25m17_b24{s}.json").read_text()) for s in ("", "_cap")}
    assert doc[""].get("max_num_seqs") is None and doc["_cap"]["max_num_seqs"] == "recorded"
    lv = {s: d["levels"]["24"] for s, d in doc.items()}
    batch = {s: [f"{brp.ratio(v[c], 'target', 'batch'):.2f}" for c in spec] for s, v in lv.items()}
    assert batch == {"": ["1.58", "1.20", "1.53"], "_cap": ["1.02", "1.02", "1.03"]}
    passes = {s: [f"{brp.ratio(v[c], 'target', 'passes'):.2f}" for c in ("lr+sd-d3-emb", "lr-d3-emb")]
              for s, v in lv.items()}
    assert passes == {"": ["0.73", "0.75"], "_cap": ["0.91", "0.96"]}
    mk = {s: [brp.makespan_ratio(v[c]) for c in spec] for s, v in lv.items()}
    assert {s: (f"{min(m):.2f}", f"{max(m):.2f}") for s, m in mk.items()} == {"": ("1.00", "1.02"), "_cap": ("0.98", "1.01")}
    text = {s: (RESULTS / f"replay_passes_f25m17_b24{s}.md").read_text() for s in ("", "_cap")}
    assert "| 24 | lr+sd-d3-emb | 139.05 / 105.69 |" in text[""] and "| 24 | lr-d3-emb | 30.21 / 22.78 |" in text[""]
    assert "| 24 | lr+sd-d3-emb | 108.28 / 105.69 |" in text["_cap"] and "| 24 | lr-d3-emb | 22.78 / 22.78 |" in text["_cap"]
    b16 = {s: json.loads((RESULTS / f"replay_passes_f25m17_b16{s}.json").read_text())["levels"]["16"] for s in ("", "_cap")}
    assert {s: [f"{brp.ratio(v[c], 'target', 'batch'):.2f}" for c in ("lr+sd-d3-emb", "lr-d3-emb")]
            for s, v in b16.items()} == {"": ["1.10", "1.07"], "_cap": ["1.01", "1.00"]}
    moved = []
    for name in ("b24_heldout", "b24_heldout_bf", "b24_heldout_with16", "b24_heldout_with16_bf",
                 "b16_heldout", "b16_heldout_bf", "b16_heldout_with12", "b16_heldout_with12_bf"):
        o = {s: json.loads((RESULTS / f"load_cold_epyc_f25m17_{name}{s}.json").read_text()) for s in ("", "_cap")}
        assert o[""].get("max_num_seqs") is None and o["_cap"]["max_num_seqs"] == "recorded"
        n = next(iter(o[""]["levels"]))
        for c in spec:
            m = o[""]["levels"][n][c]["speedup_vs_ar"]
            assert o["_cap"]["levels"][n][c]["speedup_vs_ar"] == m
            moved.append(abs(o["_cap"]["levels"][n][c]["predicted_speedup_vs_ar"]
                             - o[""]["levels"][n][c]["predicted_speedup_vs_ar"]) / m)
            moved.append(abs(o["_cap"]["planned"][n][c]["speedup_vs_ar"] - o[""]["planned"][n][c]["speedup_vs_ar"]) / m)
            assert max(o["_cap"]["planned"][n][c]["max_batch"].values()) <= 32
    assert len(moved) == 48 and f"{max(moved) * 100:.1f}" == "1.8"


def test_the_transfer_preregistered_claims():
    """docs/load.md, "Depths the profile never ran, planned before their runs" (and the README's
    paragraph): traces/load-f6m207-transfer-36's 108 records (problems 1282-1299, levels 3 and 6, 57
    minutes alone) against the plan committed before them: LR alone at depths 1 and 3 within 7.5% at
    both levels by the line (lr-d3-emb within 1.6% by both), measured 0.81x-0.92x at 3 and
    0.52x-0.78x at 6, every break-even right; lr+sd at depth 3 planned high (+16.2%/+35.6% by the
    line, +12.5%/+22.1% by the curve); 4 of 6 within 10% by both; the held-out bench_load results
    (replay 5 of 6, 23.5% and 10.3%; plan 4 and 5 of 6; lr+sd at 6 replayed 0.64x and 0.57x against
    0.52x) and the replay's passes (lr+sd at 6: makespan 0.95 against AR's 1.17, 0.96 the passes at
    batch 1.00 and 0.95 the time, its recorded target passes priced 1.07; LR alone 0.99 the passes,
    1.13-1.25 the time)."""
    pre = {k: json.loads((RESULTS / f"prereg_f6m207_transfer_36{k}.check.json").read_text()) for k in ("", "_curve")}
    recs, ids, levels, span = _collection("traces/load-f6m207-transfer-36")
    assert len(recs) == 108 and (ids[0], ids[-1]) == (1282, 1299) and len(set(ids)) == 18 and levels == {3, 6}
    assert 52 * 60 <= span <= 58 * 60                  # the collection's 57 minutes
    rows = {k: {(r["level"], r["config"]): r for r in c["check"]["rows"]} for k, c in pre.items()}
    lr = [abs(r["rel_error"]) for (n, cfg), r in rows[""].items() if cfg in ("lr-d1-emb", "lr-d3-emb")]
    assert len(lr) == 4 and f"{max(lr):.1%}" == "7.5%"
    d3 = [abs(rows[k][(n, "lr-d3-emb")]["rel_error"]) for k in pre for n in (3, 6)]
    assert f"{max(d3):.1%}" == "1.6%"
    m = {n: [rows[""][(n, c)]["measured"] for c in ("lr-d1-emb", "lr-d3-emb", "lr+sd-d3-emb")] for n in (3, 6)}
    assert [(f"{min(v):.2f}", f"{max(v):.2f}") for v in m.values()] == [("0.81", "0.92"), ("0.52", "0.78")]
    assert [f"{rows[k][(n, 'lr+sd-d3-emb')]['rel_error']:+.1%}" for k in pre for n in (3, 6)] == [
        "+16.2%", "+35.6%", "+12.5%", "+22.1%"]
    assert (f"{rows[''][(3, 'lr+sd-d3-emb')]['rel_error']:.0%}", f"{rows[''][(6, 'lr+sd-d3-emb')]['rel_error']:.0%}") == (
        "16%", "36%")
    assert all(r["preregistered"] <= 1.0 and r["measured"] <= 1.0 for c in rows.values() for r in c.values())
    assert [(c["check"]["within_target"], c["check"]["compared"], c["check"]["break_even_right"],
             len(c["check"]["break_even"])) for c in pre.values()] == [(4, 6, 3, 3), (4, 6, 3, 3)]
    assert all(v["measured"] == "3" for c in pre.values() for v in c["check"]["break_even"].values())
    # the held-out bench_load results and the replay's passes
    out = {k: json.loads((RESULTS / f"load_f6m207_transfer_36_heldout{k}.json").read_text()) for k in ("", "_curve")}
    assert [f"{o['levels']['6']['lr+sd-d3-emb']['predicted_speedup_vs_ar']:.2f}" for o in out.values()] == ["0.64", "0.57"]
    from benchmarks import bench_replay_passes as brp

    rp = json.loads((RESULTS / "replay_passes_transfer.json").read_text())["levels"]["6"]
    assert [f"{brp.makespan_ratio(rp[c]):.2f}" for c in ("lr+sd-d3-emb", "ar")] == ["0.95", "1.17"]
    assert [f"{brp.ratio(rp['lr+sd-d3-emb'], 'target', k):.2f}" for k in ("passes", "batch", "busy_s")] == [
        "0.96", "1.00", "0.95"]
    assert [f"{brp.ratio(rp[c], 'target', 'passes'):.2f}" for c in ("lr-d1-emb", "lr-d3-emb")] == ["0.99", "0.99"]
    assert [f"{brp.ratio(rp[c], 'target', 'busy_s'):.2f}" for c in ("lr-d1-emb", "lr-d3-emb")] == ["1.13", "1.25"]
    pp = json.loads((RESULTS / "pass_pricing.json").read_text())
    cell = pp["corpora"]["traces/load-f6m207-transfer-36"]["by_config"]["lr+sd-d3-emb"]["target"]["6"]
    assert f"{cell['ratio_line']:.2f}" == "1.07"


def test_the_pass_contents_claims():
    """docs/load.md, "A plan written before its runs" and "Depths the profile never ran": what the
    replay's passes hold beside the real ones. LR alone's simulated target decodes the real
    positions a pass (within 6%) and prefills more (over 1.10x at 3 and 6 in flight in both
    held-out corpora, and at 1 in flight in sample), AR's prefill is the real one's (within 2%);
    lr+sd at depth 3 decodes fewer at 6 in flight; lr+sd at depth 2 runs fewer, larger passes at 3."""
    from benchmarks import bench_replay_passes as brp

    def per_pass(name, n, cfg, key):
        return brp.per_pass(json.loads((RESULTS / f"{name}.json").read_text())["levels"][n][cfg], "target", key)

    lr = {"replay_passes": ("lr-d2", "lr-d2-emb"), "replay_passes_transfer": ("lr-d1-emb", "lr-d3-emb")}
    for name, cfgs in lr.items():
        for n in ("3", "6"):
            for cfg in cfgs:
                (sd, rd), (sp, rp) = per_pass(name, n, cfg, "positions"), per_pass(name, n, cfg, "prefill")
                assert abs(sd / rd - 1) < 0.06 and sp / rp > 1.10, (name, n, cfg)
            a, b = per_pass(name, n, "ar", "prefill")
            assert abs(a / b - 1) < 0.02
    assert [f"{x:.2f}" for x in per_pass("replay_passes", "6", "lr-d2-emb", "prefill")] == ["7.70", "5.67"]
    assert [f"{x:.2f}" for x in per_pass("replay_passes_f6m207", "1", "lr-d2-emb", "prefill")] == ["1.18", "0.85"]
    assert [f"{x:.2f}" for x in per_pass("replay_passes_transfer", "6", "lr+sd-d3-emb", "positions")] == ["36.57", "39.44"]
    # lr+sd's simulated target at 3 in flight: fewer passes of 3-4 sequences, more of 5-8
    rows = json.loads((RESULTS / "replay_passes.json").read_text())["levels"]["3"]["lr+sd-d2-emb"]
    assert [tuple(round(x) for x in brp.by_batch(rows, lo, hi)) for lo, hi in ((3, 4), (5, 8))] == [(137, 188), (113, 85)]


def test_the_off_path_prefill_claims():
    """docs/load.md, "A plan written before its runs": the record whose discarded target job
    prefilled 4 of 228 prompt tokens; replayed with the recorded off-path prefill
    (--off-path-prefill) lr-d2-emb's simulated target prefills 7.07 a pass at 6 (was 7.70, real
    5.67) and 1.02 at 1 in sample (was 1.18, real 0.85), its makespan ratio 1.25 -> 1.23, LR alone's
    replayed speedups up by about 0.01 (0.69 -> 0.70, 0.84 -> 0.85), 6 of 8 within 10% instead of
    4: lr-d2 and lr-d2-emb at 6, 11.6% and 10.6% low before, 10.0% and 9.6% after."""
    rec = json.loads((ROOT / "traces/load-f6m207/gsm8k/c1/lr-d2-emb.jsonl").read_text().splitlines()[0])
    step = rec["steps"][2]
    assert step["verify"]["verdict"] is False
    assert [(d["prompt_tokens"] - d["cached_tokens"], d["prompt_tokens"]) for d in step["discarded"]
            if d["kind"] == "target"] == [(4, 228)]

    from benchmarks import bench_replay_passes as brp

    def level(name, n, cfg):
        return json.loads((RESULTS / f"{name}.json").read_text())["levels"][n][cfg]

    def per_pass(name, n, cfg, key="prefill"):
        return [f"{x:.2f}" for x in brp.per_pass(level(name, n, cfg), "target", key)]
    assert [per_pass(f, "6", "lr-d2-emb") for f in ("replay_passes", "replay_passes_off_path")] == [
        ["7.70", "5.67"], ["7.07", "5.67"]]
    assert [per_pass(f, "6", "lr-d2") for f in ("replay_passes", "replay_passes_off_path")] == [
        ["9.82", "7.32"], ["8.85", "7.32"]]
    assert [per_pass(f, "1", "lr-d2-emb") for f in ("replay_passes_f6m207", "replay_passes_f6m207_off_path")] == [
        ["1.18", "0.85"], ["1.02", "0.85"]]
    spans = [brp.makespan_ratio(level(f, "6", "lr-d2-emb")) for f in ("replay_passes", "replay_passes_off_path")]
    assert [f"{x:.2f}" for x in spans] == ["1.25", "1.23"]
    # about a third of the excess prefill at 6; at that rate all of it would cost about 0.05 of the
    # makespan, about a third of the gap between LR's 1.25 and AR's 1.11
    (p0, real), (p1, _) = (brp.per_pass(level(f, "6", "lr-d2-emb"), "target", "prefill")
                           for f in ("replay_passes", "replay_passes_off_path"))
    assert 0.25 < (p0 - p1) / (p0 - real) < 0.40 and f"{p0 - p1:.2f}" == "0.63"
    whole = (spans[0] - spans[1]) / (p0 - p1) * (p0 - real)
    ar = brp.makespan_ratio(level("replay_passes", "6", "ar"))
    assert f"{whole:.2f}" == "0.05" and f"{ar:.2f}" == "1.11" and 0.3 < whole / (spans[0] - ar) < 0.4
    pp = json.loads((RESULTS / "pass_pricing.json").read_text())["corpora"]["traces/load-f6m207-36"]["by_config"]
    assert {f"{pp[c]['target']['6']['ratio_line']:.2f}" for c in ("lr-d2-emb", "ar")} == {"1.17"}
    a, b = (json.loads((RESULTS / f"load_f6m207_36_heldout{k}.json").read_text())["levels"] for k in ("", "_off_path"))
    got = {c: [f"{x['6'][c]['predicted_speedup_vs_ar']:.2f}" for x in (a, b)] for c in ("lr-d2", "lr-d2-emb")}
    assert got == {"lr-d2": ["0.69", "0.70"], "lr-d2-emb": ["0.84", "0.85"]}
    errs = {k: {(n, c): abs(t[n][c]["predicted_speedup_vs_ar"] / t[n][c]["speedup_vs_ar"] - 1)
                for n in t for c in t[n] if c not in ("ar", "ar-er")} for k, t in (("line", a), ("off", b))}
    assert [sum(e <= 0.10 for e in v.values()) for v in errs.values()] == [4, 6]
    crossed = sorted(k for k in errs["line"] if errs["line"][k] > 0.10 >= errs["off"][k])
    assert crossed == [("6", "lr-d2"), ("6", "lr-d2-emb")]
    assert [(f"{errs['line'][k]:.1%}", f"{errs['off'][k]:.1%}") for k in crossed] == [("11.6%", "10.0%"), ("10.6%", "9.6%")]
    assert all(0 < b[n][c]["predicted_speedup_vs_ar"] - a[n][c]["predicted_speedup_vs_ar"] < 0.02
               for n, c in (("6", "lr-d2"), ("6", "lr-d2-emb")))


def test_the_under_load_prose_states_only_rendered_or_pinned_numbers():
    """Every number in the README's "Under load" prose and in docs/load.md's up to "Open loop" (outside
    the quoted results and code spans) is one the rendered results it cites hold, one a claims test
    asserts (its code, not its docstring), or a named parameter; an unsigned one may be a signed
    one's size. A figure typed by hand or left stale when the results were rerun fails here (the
    check is by value, not by place: the open-loop prose has its own, test_open_loop_figures)."""
    import re

    import test_block_speed
    import test_load_cold

    from tests.figures import NUMBER, claims_code, numbers, prose, untraced

    readme, doc = (ROOT / "README.md").read_text(), (ROOT / "docs" / "load.md").read_text()
    section = prose(readme[readme.index("### Under load: real runs vs the simulator"):
                           readme.index("## Planning and the report")]
                    + doc[:doc.index("## Open loop: requests that arrive over time")])
    code = claims_code(test_the_held_out_claims, test_the_transfer_claims, test_the_cold_all_configuration_claims,
                       test_load_cold.test_the_readme_claims, test_load_cold.test_the_epyc_claims,
                       test_block_speed.test_the_readme_claims, test_the_slow_host_claims,
                       test_the_slow_host_second_sitting_claims, test_the_side_by_side_corpus_claims,
                       test_the_two_side_by_side_sittings_claims, test_the_third_sitting_claims,
                       test_the_another_machine_claims, test_the_second_xeon_sitting_claims,
                       test_the_third_cpu_claims, test_the_third_cpu_round_1_claims, test_the_fourth_cpu_claims,
                       test_the_fourth_cpu_second_sitting_and_batch_factor_claims,
                       test_the_family_26_claims, test_the_family_26_second_sitting_claims,
                       test_the_other_vendor_claims, test_the_another_intel_generation_claims,
                       test_the_profile_terms_claims, test_the_warm_sixth_cpu_claims,
                       test_the_batch_curve_claims, test_the_preregistered_claims,
                       test_the_transfer_preregistered_claims, test_the_pass_contents_claims,
                       test_the_off_path_prefill_claims, test_the_ten_in_flight_preregistered_claims,
                       test_the_other_boot_preregistered_claims, test_the_sd_first_pass_claims,
                       test_the_fourth_cpu_transfer_preregistered_claims,
                       test_every_load_of_a_corpus_of_other_depths_claims,
                       test_between_the_swept_loads_preregistered_claims,
                       test_past_the_swept_loads_preregistered_claims, test_the_sd_rate_by_span_claims,
                       test_twice_the_swept_loads_preregistered_claims, test_the_recorded_sd_rounds_claims,
                       test_three_times_the_swept_loads_preregistered_claims, test_the_engine_cap_claims)
    texts = [(RESULTS / f"{name}.md").read_text() for name in
             ("load", "load_heldout", "load_transfer", "load_cold", "load_cold_epyc", "load_cold_epyc_all",
              "load_cold_epyc_all_heldout", "load_cold_epyc_more_heldout",
              "load_cold_epyc_more_r1_heldout", "contention_probe", "prefix_hits",
              "load_cold_epyc_side", "load_cold_epyc_side_r1_heldout", "load_cold_epyc_side_heldout",
              "contention_traces", "load_summary", "load_cold_epyc_side12", "load_cold_epyc_side12_heldout",
              "load_cold_epyc_side_heldout12", "load_cold_epyc_side12_r1_heldout",
              "collector_stalls", "plan_gap", "plan_gap_histogram", "block_speed", "load_cold_epyc_side3",
              "load_cold_epyc_side3_heldout", "load_cold_epyc_side3_heldout12", "load_cold_epyc_side3_pooled",
              "load_cold_xeon_side", "load_cold_xeon_side_r1_heldout", "load_cold_xeon_side_epyc",
              "load_cold_xeon_2", "load_cold_xeon_2_heldout", "load_cold_xeon_2_epyc",
              "load_cold_xeon_2_r1_heldout", "load_cold_xeon_side_heldout2", "load_cold_epyc_f23", "load_cold_epyc_f23_xeon", "load_cold_epyc_f23_epyc",
              "load_cold_epyc_f23_r1_heldout", "load_cold_epyc_f23_xeon_r1", "load_cold_epyc_f23_epyc_r1",
              "load_cold_epyc_f25m17", "load_cold_epyc_f25m17_r1_heldout", "load_cold_epyc_f25m17_xeon",
              "load_cold_epyc_f25m17_epyc", "load_cold_epyc_f25m17_f23", "batch_curve", "load_cold_epyc_f25m17_2",
              "load_cold_epyc_f25m17_2_heldout", "load_cold_epyc_f25m17_heldout2", "load_cold_epyc_f25m17_bf",
              "load_cold_epyc_f25m17_r1_heldout_bf", "load_cold_epyc_f25m17_2_heldout_bf",
              "load_adaptive_f26m2", "load_adaptive_f26m2_f23m1", "load_adaptive_f26m2_f25m17",
              "load_adaptive_f26m2_v3", "load_adaptive_f26m2_unit_heldout", "load_adaptive_f26m2_3_heldout",
              "load_adaptive_f6m167_f26m2_3", "load_adaptive_f6m207", "load_adaptive_f6m207_f6m167",
              "load_adaptive_f6m207_f26m2_3", "profile_terms", "load_f6m207", "load_f6m207_r12_heldout",
              "load_f6m207_adaptive", "load_f6m207_xeon", "load_f6m207_epyc", "pass_pricing",
              "load_f6m207_curve", "load_f6m207_r12_heldout_curve", "load_f6m207_xeon_curve",
              "prereg_f6m207_36.check", "prereg_f6m207_36_curve.check", "load_f6m207_36_heldout",
              "load_f6m207_36_heldout_curve", "load_f6m207_36_xeon", "load_f6m207_36_epyc", "replay_passes",
              "prereg_f6m207_transfer_36.check", "prereg_f6m207_transfer_36_curve.check",
              "load_f6m207_transfer_36_heldout", "load_f6m207_transfer_36_heldout_curve", "replay_passes_transfer",
              "replay_passes_f6m207", "replay_passes_off_path", "replay_passes_f6m207_off_path",
              "load_f6m207_36_heldout_off_path", "prereg_f6m207_510.check", "prereg_f6m207_510_curve.check",
              "load_f6m207_510_heldout", "load_f6m207_510_heldout_curve", "prereg_f25m17_3.check",
              "prereg_f25m17_3_curve.check", "prereg_f25m17_3_bf.check", "load_cold_epyc_f25m17_3_heldout",
              "load_cold_epyc_f25m17_3_heldout_curve", "load_cold_epyc_f25m17_3_heldout_bf",
              "load_f6m207_36_heldout_sd_first_pass", "replay_passes_sd_first_pass",
              "prereg_f25m17_t36.check", "prereg_f25m17_t36_curve.check", "prereg_f25m17_t36_bf.check",
              "load_cold_epyc_f25m17_t36_heldout", "load_cold_epyc_f25m17_t36_heldout_curve",
              "load_cold_epyc_f25m17_t36_heldout_bf", "load_cold_epyc_f25m17_t36_heldout_raw",
              "load_cold_epyc_f25m17_3_heldout_raw", "replay_passes_f25m17_t36", "pass_pricing_probe_fallback",
              "replay_passes_f25m17_t36_lv", "load_cold_epyc_f25m17_t36_heldout_lv",
              "load_cold_epyc_f25m17_t36_heldout_lv_bf", "prereg_f25m17_t48.check", "prereg_f25m17_t48_bf.check",
              "prereg_f25m17_t48_pooled.check", "prereg_f25m17_t48_pooled_bf.check",
              "load_cold_epyc_f25m17_t48_heldout", "load_cold_epyc_f25m17_t48_heldout_bf",
              "load_cold_epyc_f25m17_t48_heldout_pooled", "load_cold_epyc_f25m17_t48_heldout_pooled_bf",
              "load_cold_epyc_f25m17_t48_heldout_12", "load_cold_epyc_f25m17_t48_heldout_12_bf",
              "replay_passes_f25m17_t48", "prereg_f25m17_b36.check", "prereg_f25m17_b36_bf.check",
              "prereg_f25m17_b36_pooled.check", "prereg_f25m17_b36_pooled_bf.check",
              "load_cold_epyc_f25m17_b36_heldout", "load_cold_epyc_f25m17_b36_heldout_bf",
              "load_cold_epyc_f25m17_b36_heldout_pooled", "load_cold_epyc_f25m17_b36_heldout_pooled_bf",
              "load_cold_epyc_f25m17_b36_heldout_12", "load_cold_epyc_f25m17_b36_heldout_12_bf",
              "replay_passes_f25m17_b36", "prereg_f25m17_b12.check", "prereg_f25m17_b12_bf.check",
              "prereg_f25m17_b12_pooled.check", "prereg_f25m17_b12_pooled_bf.check",
              "load_cold_epyc_f25m17_b12_heldout", "load_cold_epyc_f25m17_b12_heldout_bf",
              "load_cold_epyc_f25m17_b12_heldout_pooled", "load_cold_epyc_f25m17_b12_heldout_pooled_bf",
              "load_cold_epyc_f25m17_b12_heldout_12", "load_cold_epyc_f25m17_b12_heldout_12_bf",
              "replay_passes_f25m17_b12", "replay_passes_f25m17_b36_own_sd", "replay_passes_f25m17_t48_own_sd",
              "replay_passes_own_sd", "load_cold_epyc_f25m17_b36_heldout_bf_own_sd",
              "load_cold_epyc_f25m17_t48_heldout_bf_own_sd", "load_f6m207_36_heldout_own_sd", "sd_rate_by_span")]
    assert len(re.findall(NUMBER, section)) > 400
    assert untraced(section, numbers(*texts, code) | set(PARAMETERS)) == []
