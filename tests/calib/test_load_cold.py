"""benchmarks/bench_cold_cache.py: traces/load against its cold corpora (the same rounds, at 1, 2, 4
and 8 in flight, with every engine's prefix cache emptied before each block: traces/load-cold on
an Intel Xeon, traces/load-cold-epyc on traces/load's own AMD EPYC), recomputed from the
committed traces, and docs/load.md's claims about them ("Without the reuse")."""
import json
from pathlib import Path

import pytest

from benchmarks import bench_cold_cache as bc
from test_load_figures import approx_tree  # the same float tolerance

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
# each cold corpus: its results' stem and the rounds it ran in full by level so far (resuming a
# collection changes them, and the pinned numbers below, on purpose)
CORPORA = {"traces/load-cold": ("load_cold", {1: 6, 2: 6, 4: 6, 8: 6}),
           "traces/load-cold-epyc": ("load_cold_epyc", {1: 6, 2: 6, 4: 6, 8: 6})}


def results(corpus: str) -> dict:
    return json.loads((RESULTS / f"{CORPORA[corpus][0]}.json").read_text())


@pytest.fixture(scope="module")
def committed():
    return results("traces/load-cold")


@pytest.mark.parametrize("corpus", sorted(CORPORA))
def test_the_results_come_from_the_committed_traces(corpus):
    stem, _ = CORPORA[corpus]
    committed = results(corpus)
    fresh = bc.bench(plan=False, cold_dir=corpus)   # the plan's output is pinned in the claims
    assert committed["cold"] == fresh["cold"] == corpus
    for key in ("levels", "prefill", "machine", "cold_cache_flag"):
        assert approx_tree(committed[key]) == fresh[key], key
    assert (RESULTS / f"{stem}.md").read_text() == bc.render(committed)


@pytest.mark.parametrize("corpus", sorted(CORPORA))
def test_the_corpora_pair_block_by_block(corpus):
    rounds = CORPORA[corpus][1]
    warm, cold = bc.paired(bc.load_corpus(ROOT / bc.WARM), bc.load_corpus(ROOT / corpus))
    assert sorted(cold) == sorted(warm) == sorted(rounds)
    for n in cold:
        assert sorted(cold[n]) == ["ar", "lr-d2-emb"]
        for cfg in cold[n]:
            w, c = bc.blocks(warm[n][cfg]), bc.blocks(cold[n][cfg])
            # the rounds both ran in full at every level (1-2: the cold profile's calibration)
            assert sorted(w) == sorted(c) == list(range(rounds[n]))
            for k in c:        # block k ran the same problems in both corpora
                assert sorted(r["problem_id"] for r in w[k]) == sorted(r["problem_id"] for r in c[k])
    # every cold record says its caches were emptied; none of the warm corpus's does
    assert results(corpus)["cold_cache_flag"] == [True]
    assert not any(r["run"]["flags"].get("cold_cache") for lv in warm.values()
                   for recs in lv.values() for r in recs)


def test_the_readme_claims(committed):
    """Measured LR speedup warm / cold 0.83 / 0.81 at 4 in flight, 0.71 / 0.76 at 8; replayed
    with traces/load's profile 2.1% and 11.3% below the cold measurement (7.8% and 12.7% warm);
    the cold corpus ran on another CPU, whose probe decode pass was 1.76x the warm corpus's
    (target) while its ar blocks ran 16-17% slower at 4-8 in flight, so the probe-scaled replay
    put ar 14.5-18.7% below measured there (-2.4% and +2.7% at 1-2); with the cold corpus's own
    profile LR's speedup is replayed within 10% at every level: +2.9%, -4.6% (in sample), +6.5%,
    -2.9% (out of sample), and the break-even where it was measured: LR 1.10x and 1.06x at 1-2
    in flight, 0.81x and 0.76x at 4-8 (replayed 1.13, 1.01, 0.86, 0.74; at 1 and 2 the measured
    90% intervals, 0.98-1.26 and 0.97-1.18, hold 1; own ar replay up to 12.8% off); the cold
    speedups at 4-8 inside the warm ones' 90% intervals."""
    lv = committed["levels"]
    lr = {n: lv[n]["lr-d2-emb"] for n in ("4", "8")}
    got = {n: (round(r["warm"]["speedup_vs_ar"], 2), round(r["cold"]["speedup_vs_ar"], 2)) for n, r in lr.items()}
    assert got == {"4": (0.83, 0.81), "8": (0.71, 0.76)}
    for r in lr.values():       # the cold speedup inside the warm one's 90% interval over blocks
        w, c = r["warm"], r["cold"]
        assert w["speedup_vs_ar_ci90"][0] <= c["speedup_vs_ar"] <= w["speedup_vs_ar_ci90"][1]
    err = {n: (round(100 * bc._err(r["warm"]), 1), round(100 * bc._err(r["cold"]), 1)) for n, r in lr.items()}
    assert err == {"4": (-7.8, -2.1), "8": (-12.7, -11.3)}
    own = [round(100 * bc._err(lv[n]["lr-d2-emb"]["cold_own_profile"]), 1) for n in ("1", "2", "4", "8")]
    assert own == [2.9, -4.6, 6.5, -2.9] and max(map(abs, own)) < 10
    # the break-even: LR beats ar at 1-2 in flight and loses at 4-8, measured and replayed
    cold = [round(lv[n]["lr-d2-emb"]["cold"]["speedup_vs_ar"], 2) for n in ("1", "2", "4", "8")]
    mine = [round(lv[n]["lr-d2-emb"]["cold_own_profile"]["predicted_speedup_vs_ar"], 2) for n in ("1", "2", "4", "8")]
    assert cold == [1.10, 1.06, 0.81, 0.76] and mine == [1.13, 1.01, 0.86, 0.74]
    assert [x > 1 for x in cold] == [x > 1 for x in mine] == [True, True, False, False]
    # `lr plan` on the same profile: 1.13, 1.01, 0.91, 0.80 (+12.2% at 4, outside 10%); the
    # break-even at the measured levels where measured; the plan's own search (its AR as two
    # replicas) says 2
    plan = committed["cold_own_plan"]
    got = [round(plan["planned"][n]["speedup_vs_ar"], 2) for n in ("1", "2", "4", "8")]
    assert got == [1.13, 1.01, 0.91, 0.80]
    err = [round(100 * (plan["planned"][n]["speedup_vs_ar"] / lv[n]["lr-d2-emb"]["cold"]["speedup_vs_ar"] - 1), 1)
           for n in ("1", "2", "4", "8")]
    assert err == [2.2, -5.5, 12.2, 4.5]
    assert plan["break_even"] == {"measured": "4", "replayed": "4", "planned": "4", "searched": "2"}
    # fitted at 1-2, where LR's lead is small: both measured 90% intervals still hold 1
    cis = [lv[n]["lr-d2-emb"]["cold"]["speedup_vs_ar_ci90"] for n in ("1", "2")]
    assert [[round(x, 2) for x in ci] for ci in cis] == [[0.98, 1.26], [0.97, 1.18]]
    assert all(lo < 1 < hi for lo, hi in cis)
    m = committed["machine"]
    assert list(m["warm"]["cpu_models"]) == ["AMD EPYC"]
    assert list(m["cold"]["cpu_models"]) == ["Intel(R) Xeon(R) Processor @ 2.50GHz"]
    ratio = m["cold"]["probe"]["target"]["decode_s"] / m["warm"]["probe"]["target"]["decode_s"]
    assert round(ratio, 2) == 1.76
    slower = [1 - lv[n]["ar"]["cold"]["tokens_per_s"] / lv[n]["ar"]["warm"]["tokens_per_s"] for n in ("4", "8")]
    assert [round(100 * s) for s in slower] == [17, 16]
    ar = [round(100 * (lv[n]["ar"]["cold"]["predicted_tokens_per_s"] / lv[n]["ar"]["cold"]["tokens_per_s"] - 1), 1)
          for n in ("1", "2", "4", "8")]
    assert ar == [-2.4, 2.7, -18.7, -14.5]
    own_ar = [round(100 * (lv[n]["ar"]["cold_own_profile"]["predicted_tokens_per_s"]
                           / lv[n]["ar"]["cold_own_profile"]["tokens_per_s"] - 1), 1) for n in ("1", "2", "4", "8")]
    assert own_ar == [-2.0, 5.9, -12.8, -1.4]      # the speedup's ratio cancels most of it


def test_the_epyc_claims():
    """traces/load-cold-epyc, the cold design on traces/load's own CPU model (a faster host: probe
    0.67x, ar 51-90% more tokens/s): LR measured 1.05 / 0.99 / 0.77 / 0.69x AR (warm 1.05 / 0.97 /
    0.83 / 0.71), each inside the warm one's 90% interval; traces/load's profile replays it within
    10% at three of four levels (+8.0, -7.2, +10.5, -2.6%; warm -12.7% at 8); its own profile +8.3, -6.6,
    +11.7, -5.2%; `lr plan` on its own profile 1.05 / 0.92 / 0.80 / 0.69 (+0.3, -7.7, +4.0, -0.7%),
    the break-even 2 measured, replayed, planned and searched; at 1 and 2 the measured 90%
    intervals (0.95-1.17, 0.90-1.10) hold 1; no block with other processes over 5% of a core."""
    doc = results("traces/load-cold-epyc")
    lv, m = doc["levels"], doc["machine"]
    records = sum(len(f.read_text().splitlines()) for f in (ROOT / "traces" / "load-cold-epyc").rglob("*.jsonl"))
    assert records == 180       # all six rounds at 1, 2, 4 and 8 in flight, ar and lr-d2-emb
    ns = ("1", "2", "4", "8")
    assert list(m["warm"]["cpu_models"]) == list(m["cold"]["cpu_models"]) == ["AMD EPYC"]
    assert round(m["cold"]["probe"]["target"]["decode_s"] / m["warm"]["probe"]["target"]["decode_s"], 2) == 0.67
    faster = [round(100 * (lv[n]["ar"]["cold"]["tokens_per_s"] / lv[n]["ar"]["warm"]["tokens_per_s"] - 1)) for n in ns]
    assert faster == [51, 56, 90, 88]
    lr = {n: lv[n]["lr-d2-emb"] for n in ns}
    warm = [round(lr[n]["warm"]["speedup_vs_ar"], 2) for n in ns]
    cold = [round(lr[n]["cold"]["speedup_vs_ar"], 2) for n in ns]
    assert warm == [1.05, 0.97, 0.83, 0.71] and cold == [1.05, 0.99, 0.77, 0.69]
    for r in lr.values():       # the cold speedup inside the warm one's 90% interval over blocks
        lo, hi = r["warm"]["speedup_vs_ar_ci90"]
        assert lo <= r["cold"]["speedup_vs_ar"] <= hi
    errs = [round(100 * bc._err(lr[n]["cold"]), 1) for n in ns]
    assert errs == [8.0, -7.2, 10.5, -2.6] and sum(abs(e) <= 10 for e in errs) == 3
    assert round(100 * bc._err(lr["8"]["warm"]), 1) == -12.7
    own = [round(100 * bc._err(lr[n]["cold_own_profile"]), 1) for n in ns]
    assert own == [8.3, -6.6, 11.7, -5.2]
    plan = doc["cold_own_plan"]
    assert [round(plan["planned"][n]["speedup_vs_ar"], 2) for n in ns] == [1.05, 0.92, 0.80, 0.69]
    perr = [round(100 * (plan["planned"][n]["speedup_vs_ar"] / lr[n]["cold"]["speedup_vs_ar"] - 1), 1) for n in ns]
    assert perr == [0.3, -7.7, 4.0, -0.7] and max(map(abs, perr)) < 10
    assert plan["break_even"] == {"measured": "2", "replayed": "2", "planned": "2", "searched": "2"}
    cis = [[round(x, 2) for x in lr[n]["cold"]["speedup_vs_ar_ci90"]] for n in ("1", "2")]
    assert cis == [[0.95, 1.17], [0.9, 1.1]] and all(lo < 1 < hi for lo, hi in cis)
    assert m["cold"]["other_cpu"]["blocks"] == 48 and m["cold"]["other_cpu"]["over_limit"] == 0


def test_the_xeon_corpus_was_not_always_alone(committed):
    """docs/load.md: some of traces/load-cold's blocks ran beside other processes (5 of 48 over 5% of a
    core, at most 9.4%); bench_cold_cache keeps every block, as the numbers above assume."""
    o = committed["machine"]["cold"]["other_cpu"]
    assert (o["blocks"], o["over_limit"], round(100 * o["max"], 1)) == (48, 5, 9.4)


def test_a_missing_cold_corpus_is_a_one_line_error(monkeypatch):
    monkeypatch.setattr("sys.argv", ["bench_cold_cache.py", "--cold", "traces/no-such-corpus"])
    with pytest.raises(SystemExit) as e:
        bc.main()
    assert str(e.value) == "bench_cold_cache: traces/no-such-corpus: no such trace folder"
