"""`lr plan --find-break-even`: the bisection against a linear scan, its edge cases on a known
speedup curve, the CLI table/JSON and its one-line errors."""
from __future__ import annotations

import json
import math

import pytest

from lrcore.errors import UserError
from lrsim.plan import breakeven, planner
from lrsim.plan.planner import Candidate, Hardware, Load
from lrsim.plan.sources import PresetSource

SRC = PresetSource("r1-gsm8k")


# --- the search on a known curve: planner.plan replaced by speedup = f(label, load) -------------
class _Res:
    def __init__(self, rows, meta):
        self.rows, self.meta = rows, meta


def _fake_plan(curves, calls):
    """planner.plan stand-in: each candidate's speedup vs AR is curves[label](x); vs equal
    resources it is 0.8 x that (the equal-resources baseline is faster than AR), unless the
    curve returns the pair (vs AR, vs equal resources)."""
    def both(label, x):
        v = curves[label](x)
        return v if isinstance(v, tuple) else (v, 0.8 * v)

    def plan(source, cands, hard, load, objective=None, jobs=0, ray_address=None):
        x = load.concurrency if load.concurrency is not None else load.rate
        calls.append((x, tuple(c.label for c in cands if not c.role)))
        rows = [{"label": c.label, "speedup": 1.0 if c.role else both(c.label, x)[0],
                 "speedup_vs_equal": None if c.role else both(c.label, x)[1],
                 # tokens/s ratios: 0.9 x the latency ratios (an LR block's makespan is longer
                 # than its requests' mean latency)
                 "throughput_speedup": 1.0 if c.role else 0.9 * both(c.label, x)[0],
                 "throughput_speedup_vs_equal": None if c.role else 0.9 * both(c.label, x)[1],
                 "speedup_ci": None} for c in cands]
        return _Res(rows, {"source": "fake", "hardware": {"devices": 2, "kind": "cpu-2core"}})
    return plan


def _cands(*labels_modes):
    return [Candidate("ar", role="reference"),
            Candidate("ar", placement="equal-resources", role="equal-resources")] + list(labels_modes)


LR2, LR4, SD5 = Candidate("lr", k1=3, depth=2), Candidate("lr", k1=5, depth=4), Candidate("sd", k2=5)


@pytest.fixture
def fake(monkeypatch):
    calls: list = []

    def install(curves):
        monkeypatch.setattr(planner, "plan", _fake_plan(curves, calls))
        monkeypatch.setattr(planner, "prepare", lambda s, c, h, l: (s, h, c))
        monkeypatch.setattr(planner, "work", lambda *a: 1)
        return calls
    return install


def test_bisection_finds_the_first_load_where_speedup_falls_to_one(fake):
    calls = fake({LR2.label: lambda x: 2.0 - x / 10,          # 1.0 at x = 10: break-even 10
                  LR4.label: lambda x: 0.95,                  # never wins
                  SD5.label: lambda x: 1.5})                  # wins everywhere
    res = breakeven.find(SRC, _cands(LR2, LR4, SD5), Hardware(), Load(concurrency=64, samples=1))
    rows = {r["label"]: r for r in res["rows"]}
    lr2 = rows[LR2.label]
    assert lr2["vs_ar"] == {"status": "found", "break_even": 10, "last_win": 9, "monotone": True}
    # vs equal resources: 0.8 (2 - x/10) <= 1 from x = 7.5 on
    assert lr2["vs_equal"]["break_even"] == 8 and lr2["vs_equal"]["last_win"] == 7
    assert rows[LR4.label]["vs_ar"]["status"] == "never" and rows[LR4.label]["vs_ar"]["break_even"] == 1
    assert rows[SD5.label]["vs_ar"]["status"] == "beyond" and rows[SD5.label]["vs_ar"]["last_win"] == 64
    # bisection, not a grid: the ends plus about log2(63) levels per search
    assert len(res["levels_evaluated"]) <= 2 + 2 * math.ceil(math.log2(63))
    assert calls[0][0] == 64                     # the largest load first: over-cap searches fail at once
    # configurations already decided are not simulated again
    assert all(LR4.label not in labels and SD5.label not in labels for _, labels in calls[2:])
    # rows: latest break-even first; the sentence names each mode's longest-lasting configuration
    assert [r["label"] for r in res["rows"]] == [SD5.label, LR2.label, LR4.label]
    assert "lr depth=2 stops beating AR at 10 (wins at 9)" in res["sentence"]
    assert "sd k2=5 still beats AR at 64" in res["sentence"]


def test_the_throughput_objective_bisects_the_tokens_per_s_ratio(fake):
    """--objective throughput: the same search on lr plan's throughput_speedup (here 0.9 x the
    latency ratio 2 - x/10: <= 1 from x = 8.9 on, so 9 where the latency ratio says 10)."""
    fake({LR2.label: lambda x: 2.0 - x / 10})
    res = breakeven.find(SRC, _cands(LR2), Hardware(), Load(concurrency=64, samples=1),
                         objective="throughput")
    row = res["rows"][0]
    assert res["objective"] == "throughput" and "tokens/s" in res["method"]
    assert row["vs_ar"] == {"status": "found", "break_even": 9, "last_win": 8, "monotone": True}
    assert row["curve"][0]["speedup"] == pytest.approx(0.9 * (2.0 - 1 / 10))
    with pytest.raises(UserError, match="--rate"):
        breakeven.find(SRC, _cands(LR2), Hardware(), Load(rate=4.0, requests=8, samples=1),
                       objective="throughput")


def test_a_curve_that_rises_again_is_flagged_not_monotone(fake):
    # vs AR: 2 - x/10 with a dip below 1 at x = 4, a level only the equal-resources search visits
    # (its break-even is 3: it bisects 32, 16, 8, 4, 2, 3); the AR search still ends at 10
    fake({LR2.label: lambda x: (0.9 if x == 4 else 2.0 - x / 10, 1.2 if x < 3 else 0.9)})
    res = breakeven.find(SRC, _cands(LR2), Hardware(), Load(concurrency=64, samples=1))
    ar, eq = res["rows"][0]["vs_ar"], res["rows"][0]["vs_equal"]
    assert eq == {"status": "found", "break_even": 3, "last_win": 2, "monotone": True}
    assert ar["break_even"] == 10 and ar["monotone"] is False
    assert breakeven.cell(ar, breakeven.Range("concurrency", 1, 64)) == "10?"
    assert "not monotone" in res["sentence"] and LR2.label in res["sentence"]


def test_rate_axis_bisects_geometrically_to_five_percent(fake):
    fake({LR2.label: lambda x: 1.3 if x < 3.3 else 0.9})
    res = breakeven.find(SRC, _cands(LR2), Hardware(), Load(rate=16.0, requests=8, samples=1))
    assert res["axis"] == "rate" and res["range"] == [16.0 / 64, 16.0]
    r = res["rows"][0]["vs_ar"]
    assert r["status"] == "found" and r["last_win"] < 3.3 <= r["break_even"]
    assert r["break_even"] / r["last_win"] <= 1 + breakeven.RATE_TOLERANCE


def test_two_levels_apart_is_found_without_bisection(fake):
    fake({LR2.label: lambda x: 1.1 if x < 2 else 0.9})
    res = breakeven.find(SRC, _cands(LR2), Hardware(), Load(concurrency=2, samples=1))
    assert res["rows"][0]["vs_ar"]["break_even"] == 2 and res["plans"] == 2


@pytest.mark.parametrize("load, msg", [
    (Load(concurrency=1, samples=1), "2 or more"),
    (Load(concurrency=4, samples=1, slo_ms=50), "--slo-ms"),
    (Load(concurrency=4, rate=1.0, samples=1), "exclusive"),
])
def test_bad_search_ranges_are_user_errors(load, msg):
    with pytest.raises(UserError, match=msg):
        breakeven.find(SRC, _cands(LR2), Hardware(), load)


def test_the_search_is_bounded_before_it_starts(monkeypatch):
    from lrcore import limits

    monkeypatch.setattr(limits, "MAX_COMMAND_POSITIONS", 1000)
    cands = planner.candidates(["lr"], [2], [2], [3], [1], ["dedicated"], None)
    with pytest.raises(UserError, match="find-break-even"):
        breakeven.find(SRC, cands, Hardware(), Load(concurrency=16, steps=12, samples=1))


# --- on the simulator: the bisection agrees with a linear scan -----------------------------------
def test_bisection_matches_a_linear_scan_on_the_preset():
    cands = planner.candidates(["lr"], [2], [2], [3], [1], ["dedicated"], None)
    load = Load(concurrency=12, steps=12, samples=1)
    res = breakeven.find(SRC, cands, Hardware(), load, jobs=1)
    row = res["rows"][0]
    scan = {}
    for n in range(1, 13):
        p = planner.plan(SRC, cands, Hardware(), Load(concurrency=n, steps=12, samples=1), jobs=1)
        scan[n] = next(r for r in p.rows if r["label"] == row["label"])
    for side, key in (("vs_ar", "speedup"), ("vs_equal", "speedup_vs_equal")):
        first = next((n for n in scan if scan[n][key] <= 1.0), None)
        r = row[side]
        if first is None:
            assert r["status"] == "beyond"
        elif first == 1:
            assert r["status"] == "never"
        elif r["monotone"]:
            assert r["status"] == "found" and r["break_even"] == first, (side, scan)
        # the curve the search reports is the planner's at each load it visited
        for p in row["curve"]:
            assert p[key] == pytest.approx(scan[p["load"]][key])


def test_cli_table_and_json(run_lr):
    args = ("plan", "--find-break-even", "--concurrency", "4", "--steps", "8", "--samples", "1",
            "--ci-target", "0", "--modes", "lr", "--depth", "2", "--k2", "3", "--placement", "dedicated",
            "--jobs", "1")
    code, out, err = run_lr(*args, "--json")
    assert code == 0, err
    res = json.loads(out)
    assert res["axis"] == "concurrency" and res["range"] == [1, 4] and res["plans"] >= 2
    assert {"label", "speedup_at_lo", "vs_ar", "vs_equal", "curve"} <= set(res["rows"][0])
    assert res["sentence"].startswith("Searching 1-4 requests in flight: lr depth=2")
    code, out, _ = run_lr(*args)
    text = " ".join(out.split())
    assert code == 0 and "lr depth=2" in text and "stops beating" in text and res["sentence"][:40] in text


@pytest.mark.parametrize("args, flag", [
    (["--concurrency", "1"], "2 or more"),
    (["--objective", "goodput"], "--objective"),
    (["--objective", "throughput", "--rate", "2"], "--rate"),
    (["--slo-ms", "50"], "--slo-ms"),
    (["--paper-table"], "--paper-table"),
    (["--modes", "lr", "--budget", "1"], "no speculative"),
])
def test_cli_bad_input_is_one_line_exit_2(run_lr, args, flag):
    code, _, err = run_lr("plan", "--find-break-even", "--steps", "4", "--samples", "1", "--jobs", "1", *args)
    assert code == 2 and err.startswith("lr: error:") and flag in err and err.count("\n") == 1
