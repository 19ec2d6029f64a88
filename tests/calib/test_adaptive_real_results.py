"""benchmarks/results/adaptive_real.{json,md} (benchmarks/bench_adaptive_real.py): the figure the
README quotes is what the committed records in traces/load-adaptive/ give, and it carries what the
README says of them."""
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
RESULTS = ROOT / "benchmarks" / "results"


@pytest.mark.parametrize("name,traces", [("adaptive_real", "load-adaptive"),
                                         ("adaptive_real_v1", "load-adaptive-v1"),
                                         ("adaptive_real_v3", "load-adaptive-v3"),
                                         ("adaptive_real_f25m17", "load-adaptive-f25m17"),
                                         ("adaptive_real_f25m17_kv", "load-adaptive-f25m17-kv"),
                                         ("adaptive_real_f25m17_paid", "load-adaptive-f25m17-paid"),
                                         ("adaptive_real_f25m17_prefill",
                                          "load-adaptive-f25m17-prefill"),
                                         ("adaptive_real_f23m1", "load-adaptive-f23m1"),
                                         ("adaptive_real_f26m2", "load-adaptive-f26m2"),
                                         ("adaptive_real_f26m2_unit", "load-adaptive-f26m2-unit"),
                                         ("adaptive_real_f26m2_3", "load-adaptive-f26m2-3"),
                                         ("adaptive_real_f6m167", "load-adaptive-f6m167"),
                                         ("adaptive_real_f6m207", "load-adaptive-f6m207")])
def test_the_committed_result_is_its_records_rendered(name, traces):
    from benchmarks.bench_adaptive_real import bench, render

    doc = json.loads((RESULTS / f"{name}.json").read_text())
    assert (RESULTS / f"{name}.md").read_text() == render(doc)
    assert bench(ROOT / "traces" / traces) == doc


def test_where_static_lr_loses_adaptive_loses_less():
    """Static lr-d2 lost at every level; lr-adaptive lost at most 5.5% (README)."""
    doc = json.loads((RESULTS / "adaptive_real.json").read_text())
    for table in doc["levels"].values():
        assert table["lr-d2"]["speedup_vs_ar"] < 0.9
        assert table["lr-adaptive-d2"]["speedup_vs_ar"] > 0.945
        assert table["lr-adaptive-d2"]["speedup_vs_ar"] > table["lr-d2"]["speedup_vs_ar"] + 0.1


def test_blocks_show_both_halves_of_the_rule():
    """What the README says of the per-block table: where the Estimator's first decision already
    preferred depth 0 (expected 1.00x AR), the block stayed at depth 0 at 60% of its decisions or more;
    every block whose first decision expected more than 1.12x AR speculated and ran below AR
    (the cost model is optimistic on this machine), and at 2 in flight there were such blocks."""
    doc = json.loads((RESULTS / "adaptive_real.json").read_text())
    promised = 0
    for n, table in doc["levels"].items():
        for b in table["lr-adaptive-d2"]["by_block"]:
            if b["expected_first"] == pytest.approx(1.0):
                assert b["depth0_share"] >= 0.6, (n, b)
            if b["expected_first"] > 1.12:
                assert b["depth0_share"] <= 0.4 and b["speedup_vs_ar"] < 1.0, (n, b)
                promised += n == "2"
    assert promised >= 2


def test_after_the_batch_cost_fixes_adaptive_stays_at_ar_and_prices_static_lr_closely():
    """What the README says of traces/load-adaptive-v3 (per-batch-size cost memory, time-averaged
    batch; sixteen rounds alone, eight at 2 and 4 in flight): lr-adaptive within 3% of AR at every
    level (1.00x / 0.99x / 1.03x), at depth 0 for at least 94% of its decisions, where lr-d2 ran
    0.65-0.84x; alone its 90% interval over the blocks is 0.96-1.03; its cost model prices lr-d2
    5-11% high, where the earlier corpus's estimates priced it 23-61% high."""
    doc = json.loads((RESULTS / "adaptive_real_v3.json").read_text())
    assert doc["target_met"] and doc["adaptive_min_speedup_vs_ar"] >= 0.985
    for n, table in doc["levels"].items():
        ad, st = table["lr-adaptive-d2"], table["lr-d2"]
        assert st["speedup_vs_ar"] < 0.85 and ad["depth0_share"] >= 0.94, n
        assert ad["speedup_vs_ar"] >= 0.97, n
        assert 1.05 <= st["priced_by_adaptive"] / st["speedup_vs_ar"] <= 1.12, n
    lo, hi = doc["levels"]["1"]["lr-adaptive-d2"]["speedup_vs_ar_ci90"]
    assert 0.955 < lo < 0.97 < 1.0 < hi < 1.04
    old = json.loads((RESULTS / "adaptive_real.json").read_text())
    for n, table in old["levels"].items():
        st = table["lr-d2"]
        assert st["priced_by_adaptive"] / st["speedup_vs_ar"] >= 1.22, n


def test_on_the_second_cpu_the_target_is_not_met_and_the_rule_speculated_near_its_break_even():
    """What the README and docs/adaptive.md say of traces/load-adaptive-f25m17 (13 rounds alone):
    lr-adaptive 0.94x AR (interval 0.91-0.98), lr-d2 0.91x; lr-d2 priced 0.99x; rounds 1-4 at
    depth 0 for 25-100% of their positions, and from round 5 on every block speculating at every
    position, its first decision expecting 1.01-1.09x AR at a believed acceptance of 0.09-0.29 and
    a slope of 1-9% of a step."""
    doc = json.loads((RESULTS / "adaptive_real_f25m17.json").read_text())
    assert not doc["target_met"] and list(doc["levels"]) == ["1"]
    ad, st = doc["levels"]["1"]["lr-adaptive-d2"], doc["levels"]["1"]["lr-d2"]
    assert ad["blocks"] == st["blocks"] == 13
    assert f"{ad['speedup_vs_ar']:.2f}" == "0.94" and f"{st['speedup_vs_ar']:.2f}" == "0.91"
    assert [f"{x:.2f}" for x in ad["speedup_vs_ar_ci90"]] == ["0.91", "0.98"]
    assert f"{st['priced_by_adaptive']:.2f}" == "0.99"
    blocks = ad["by_block"]
    early = [b["depth0_share"] for b in blocks[1:5]]
    assert min(early) == 0.25 and max(early) == 1.0
    late = blocks[5:]
    assert all(b["depth0_share"] == 0.0 for b in late)
    assert 1.005 <= min(b["expected_first"] for b in late) and max(b["expected_first"] for b in late) < 1.095
    believed = [b["alpha1_first"] for b in late]
    assert 0.085 <= min(believed) and max(believed) < 0.295
    slope = [b["slope_share_first"] for b in late]
    assert 0.005 <= min(slope) and max(slope) < 0.095


def test_with_the_drafter_priced_the_second_cpu_still_misses_the_target():
    """What the README and docs/adaptive.md say of traces/load-adaptive-f25m17-kv (9 rounds
    alone, after the drafter term): lr-adaptive 0.95x AR (interval 0.92-0.99), lr-d2 0.89x, lr-d2
    priced 0.94x (5% optimistic, from 8%); the drafter believed at 1-14% of a step per draft
    request; rounds 5-7 speculated at every position, expecting 1.02-1.07x AR, and ran
    0.84-0.94x."""
    doc = json.loads((RESULTS / "adaptive_real_f25m17_kv.json").read_text())
    assert not doc["target_met"] and list(doc["levels"]) == ["1"]
    ad, st = doc["levels"]["1"]["lr-adaptive-d2"], doc["levels"]["1"]["lr-d2"]
    assert ad["blocks"] == st["blocks"] == 9
    assert f"{ad['speedup_vs_ar']:.2f}" == "0.95" and f"{st['speedup_vs_ar']:.2f}" == "0.89"
    assert [f"{x:.2f}" for x in ad["speedup_vs_ar_ci90"]] == ["0.92", "0.99"]
    assert f"{st['priced_by_adaptive']:.2f}" == "0.94"
    blocks = ad["by_block"]
    drafter = [b["drafter_share_first"] for b in blocks[1:]]
    assert 0.005 <= min(drafter) and max(drafter) < 0.15
    late = blocks[5:8]
    assert all(b["depth0_share"] == 0.0 for b in late)
    assert 1.015 <= min(b["expected_first"] for b in late) and max(b["expected_first"] for b in late) < 1.075
    assert 0.835 <= min(b["speedup_vs_ar"] for b in late) and max(b["speedup_vs_ar"] for b in late) < 0.945


def test_with_the_price_checked_against_its_commits_the_second_cpu_meets_the_target_alone():
    """What the README and docs/adaptive.md say of traces/load-adaptive-f25m17-paid at 1 in flight
    (9 rounds alone): lr-adaptive 0.99x AR (interval 0.97-1.02), lr-d2 0.91x, the closed forms' own price of
    lr-d2 1.12x; a factor of 0.81 learned in the first problem, every later problem's first
    decision at depth 0, 93% of all decisions at depth 0, round 3's 0.91x."""
    doc = json.loads((RESULTS / "adaptive_real_f25m17_paid.json").read_text())
    assert list(doc["levels"]) == ["1", "2", "4"]
    ad, st = doc["levels"]["1"]["lr-adaptive-d2"], doc["levels"]["1"]["lr-d2"]
    assert ad["speedup_vs_ar"] >= 0.97     # met at 1 in flight (not at 4: the next test)
    assert ad["blocks"] == st["blocks"] == 9
    assert f"{ad['speedup_vs_ar']:.2f}" == "0.99" and f"{st['speedup_vs_ar']:.2f}" == "0.91"
    assert [f"{x:.2f}" for x in ad["speedup_vs_ar_ci90"]] == ["0.97", "1.02"]
    assert f"{st['priced_by_adaptive']:.2f}" == "1.12" and f"{ad['depth0_share']:.2f}" == "0.93"
    blocks = ad["by_block"]
    assert f"{blocks[1]['spec_factor_first']:.2f}" == "0.81"
    assert all(b["depth0_share"] == 1.0 for i, b in enumerate(blocks[1:], 1) if i != 3)
    assert f"{blocks[3]['speedup_vs_ar']:.2f}" == "0.91"


def test_at_two_and_four_in_flight_the_second_cpu_stays_at_depth_0():
    """What the README and docs/adaptive.md say of traces/load-adaptive-f25m17-paid at 2 and 4 in
    flight (8 rounds each): every lr-adaptive decision at depth 0; 1.01x AR at 2 (0.99-1.03),
    where lr-d2 won 1.11x (1.07-1.15) and was priced 0.78x with a drafter term of 0.348-0.718 of
    a step; 0.97x at 4 (0.966, interval 0.90-1.04: not met), blocks 0.82-1.17, lr-d2 0.65x."""
    doc = json.loads((RESULTS / "adaptive_real_f25m17_paid.json").read_text())
    assert not doc["target_met"]
    two, four = doc["levels"]["2"], doc["levels"]["4"]
    for table in (two, four):
        ad = table["lr-adaptive-d2"]
        assert ad["blocks"] == table["lr-d2"]["blocks"] == 8 and ad["depth0_share"] == 1.0
    ad2, st2 = two["lr-adaptive-d2"], two["lr-d2"]
    assert f"{ad2['speedup_vs_ar']:.2f}" == "1.01" and f"{st2['speedup_vs_ar']:.2f}" == "1.11"
    assert [f"{x:.2f}" for x in ad2["speedup_vs_ar_ci90"]] == ["0.99", "1.03"]
    assert [f"{x:.2f}" for x in st2["speedup_vs_ar_ci90"]] == ["1.07", "1.15"]
    assert f"{st2['priced_by_adaptive']:.2f}" == "0.78"
    drafter = [b["drafter_share_first"] for b in ad2["by_block"][1:]]
    assert f"{min(drafter):.3f}" == "0.348" and f"{max(drafter):.3f}" == "0.718"
    ad4, st4 = four["lr-adaptive-d2"], four["lr-d2"]
    assert f"{ad4['speedup_vs_ar']:.3f}" == "0.966" and f"{st4['speedup_vs_ar']:.2f}" == "0.65"
    assert [f"{x:.2f}" for x in ad4["speedup_vs_ar_ci90"]] == ["0.90", "1.04"]
    by_round = [b["speedup_vs_ar"] for b in ad4["by_block"]]
    assert f"{min(by_round):.2f}" == "0.82" and f"{max(by_round):.2f}" == "1.17"


def test_with_the_prefill_left_out_the_drafter_term_stays_0_and_lr_d2_is_priced_as_measured():
    """What the README and docs/adaptive.md say of traces/load-adaptive-f25m17-prefill (3 rounds
    at 2 in flight, after after_prefill): drafter term 0 at every block's first decision, lr-d2
    priced 1.08x and measured 1.08x, lr-adaptive 1.04x AR (0.98-1.11), speculating in round 2
    (expected 1.17x, measured 1.15x)."""
    doc = json.loads((RESULTS / "adaptive_real_f25m17_prefill.json").read_text())
    assert list(doc["levels"]) == ["2"]
    ad, st = doc["levels"]["2"]["lr-adaptive-d2"], doc["levels"]["2"]["lr-d2"]
    assert ad["blocks"] == st["blocks"] == 3
    assert all(b["drafter_share_first"] == 0.0 for b in ad["by_block"])
    assert f"{st['priced_by_adaptive']:.2f}" == f"{st['speedup_vs_ar']:.2f}" == "1.08"
    assert f"{ad['speedup_vs_ar']:.2f}" == "1.04"
    assert [f"{x:.2f}" for x in ad["speedup_vs_ar_ci90"]] == ["0.98", "1.11"]
    r2 = ad["by_block"][2]
    assert r2["depth0_share"] == 0.0
    assert f"{r2['expected_first']:.2f}" == "1.17" and f"{r2['speedup_vs_ar']:.2f}" == "1.15"


def test_on_the_third_cpu_four_rounds_show_depth_0_but_not_the_target_at_1_in_flight():
    """What the README and docs/adaptive.md say of traces/load-adaptive-f23m1 (4 rounds at 1 and 4
    in flight, 5 at 2): lr-d2 0.81x / 0.72x / 0.67x AR, lr-adaptive 0.94x / 0.98x / 1.01x with
    90% intervals 0.87-1.01 / 0.93-1.04 / 0.92-1.11, at depth 0 at every decision but the
    corpus's first problem (0.80x, depth 0 at 0.25 of its positions, from the neutral prior),
    rounds 1-3 at 1 in flight 0.97x / 1.05x / 0.96x; lr-d2 priced 0.86x / 0.80x / 0.66x; AR 1.26
    tok/s at 1 in flight; the target not met by the point estimate at 1 in flight."""
    doc = json.loads((RESULTS / "adaptive_real_f23m1.json").read_text())
    assert not doc["target_met"] and list(doc["levels"]) == ["1", "2", "4"]
    got = {n: (t["lr-adaptive-d2"], t["lr-d2"]) for n, t in doc["levels"].items()}
    assert [f"{st['speedup_vs_ar']:.2f}" for _, st in got.values()] == ["0.81", "0.72", "0.67"]
    assert [f"{ad['speedup_vs_ar']:.2f}" for ad, _ in got.values()] == ["0.94", "0.98", "1.01"]
    assert [f"{st['priced_by_adaptive']:.2f}" for _, st in got.values()] == ["0.86", "0.80", "0.66"]
    assert [ad["blocks"] for ad, _ in got.values()] == [4, 5, 4]
    assert [f"{lo:.2f}-{hi:.2f}" for lo, hi in (ad["speedup_vs_ar_ci90"] for ad, _ in got.values())] \
        == ["0.87-1.01", "0.93-1.04", "0.92-1.11"]
    blocks = got["1"][0]["by_block"]
    assert f"{blocks[0]['depth0_share']:.2f}" == "0.25" and f"{blocks[0]['speedup_vs_ar']:.2f}" == "0.80"
    assert blocks[0]["alpha1_first"] == 0.5                  # the neutral prior's
    assert all(b["depth0_share"] == 1.0 for b in blocks[1:])
    assert [f"{b['speedup_vs_ar']:.2f}" for b in blocks[1:]] == ["0.97", "1.05", "0.96"]
    assert [got[n][0]["first_problem_records"] for n in ("1", "2", "4")] == [1, 0, 0]
    assert all(b["depth0_share"] == 1.0 for n in ("2", "4") for b in got[n][0]["by_block"])
    # against the first CPU (v3) and the second (f25m17, the paid corpus): lr-d2 loses more at 1
    # and 2 in flight, less at 4
    for name, want in (("adaptive_real_v3", ["0.84", "0.74", "0.65"]),
                       ("adaptive_real_f25m17_paid", ["0.91", "1.11", "0.65"])):
        other = json.loads((RESULTS / f"{name}.json").read_text())["levels"]
        theirs = [other[n]["lr-d2"]["speedup_vs_ar"] for n in ("1", "2", "4")]
        assert [f"{x:.2f}" for x in theirs] == want
        assert [st["speedup_vs_ar"] < x for (_, st), x in zip(got.values(), theirs)] == [
            True, True, False]
    paid = json.loads((RESULTS / "adaptive_real_f25m17_paid.json").read_text())
    assert f"{paid['levels']['1']['ar']['tokens_per_s']:.2f}" == "2.26"
    assert f"{doc['levels']['1']['ar']['tokens_per_s']:.2f}" == "1.26"


def test_on_the_fourth_cpu_the_target_is_met_at_every_level():
    """What the README and docs/adaptive.md say of traces/load-adaptive-f26m2 (AMD EPYC family 26
    model 2; 6 rounds at 1, 2 and 4 in flight): AR 5.90 tok/s at 1 in flight; lr-d2 0.92x / 0.86x /
    0.72x AR, lr-adaptive 1.00x / 1.06x / 1.01x with 90% intervals 0.98-1.01 / 1.00-1.17 /
    0.94-1.07, the target met at every level (at 1 in flight by the whole interval); the first
    problem, from the neutral prior (expected 1.65x), at depth 0 at half of its positions (0.98x),
    every later decision depth 0 believing acceptance 0.33 and a commits' factor about 0.83; lr-d2
    priced 0.94x / 0.85x / 0.69x; at 2 in flight round 4 (1.35x) is where lr-d2 too ran its best
    (1.14x), against the level's slowest ar block."""
    from benchmarks.bench_load import blocks, load_corpus, makespan

    doc = json.loads((RESULTS / "adaptive_real_f26m2.json").read_text())
    assert doc["target_met"] and list(doc["levels"]) == ["1", "2", "4"]
    got = {n: (t["lr-adaptive-d2"], t["lr-d2"]) for n, t in doc["levels"].items()}
    assert f"{doc['levels']['1']['ar']['tokens_per_s']:.2f}" == "5.90"
    assert [f"{st['speedup_vs_ar']:.2f}" for _, st in got.values()] == ["0.92", "0.86", "0.72"]
    assert [f"{ad['speedup_vs_ar']:.2f}" for ad, _ in got.values()] == ["1.00", "1.06", "1.01"]
    assert [f"{lo:.2f}-{hi:.2f}" for lo, hi in (ad["speedup_vs_ar_ci90"] for ad, _ in got.values())] \
        == ["0.98-1.01", "1.00-1.17", "0.94-1.07"]
    assert min(ad["speedup_vs_ar"] for ad, _ in got.values()) >= 0.97     # the target, every level
    assert got["1"][0]["speedup_vs_ar_ci90"][0] >= 0.97                  # at 1 in flight, the interval too
    assert [f"{st['priced_by_adaptive']:.2f}" for _, st in got.values()] == ["0.94", "0.85", "0.69"]
    assert [ad["blocks"] for ad, _ in got.values()] == [6, 6, 6]
    first, *later = got["1"][0]["by_block"]
    assert (first["alpha1_first"], f"{first['expected_first']:.2f}") == (0.5, "1.65")
    assert f"{first['depth0_share']:.2f}" == "0.50" and f"{first['speedup_vs_ar']:.2f}" == "0.98"
    rest = later + [b for n in ("2", "4") for b in got[n][0]["by_block"]]
    assert all(b["depth0_share"] == 1.0 for b in rest)
    assert {f"{b['alpha1_first']:.2f}" for b in rest} == {"0.33"}
    assert all(0.82 <= b["spec_factor_first"] <= 0.85 for b in rest)
    assert [got[n][0]["first_problem_records"] for n in ("1", "2", "4")] == [1, 0, 0]
    # 2 in flight: round 4 is the widest block, lr-d2's best too, against the slowest ar block
    ad2, st2 = got["2"]
    assert f"{max(ad2['block_speedups_vs_ar']):.2f}" == "1.35" and ad2["block_speedups_vs_ar"].index(
        max(ad2["block_speedups_vs_ar"])) == 4
    st_blocks = st2["block_speedups_vs_ar"]
    assert f"{st_blocks[4]:.2f}" == "1.14" and max(st_blocks) == st_blocks[4]
    ar = blocks(load_corpus(ROOT / "traces" / "load-adaptive-f26m2")[2]["ar"])
    tps = {k: sum(r["output_tokens"] for r in b) / makespan(b) for k, b in ar.items()}
    assert sorted(tps) == list(range(6)) and min(tps, key=tps.get) == 4


def test_on_the_fourth_cpu_again_with_one_cost_unit_the_target_is_met():
    """What the README and docs/adaptive.md say of traces/load-adaptive-f26m2-unit (the same host
    seven hours later, the Estimator's costs in one unit): lr-d2 0.85x / 0.74x / 0.70x, lr-adaptive
    0.99x / 0.98x / 1.03x with intervals 0.97-1.00 / 0.97-1.00 / 0.95-1.11, lowest 0.984, met at
    every level (at 2 in flight by the whole interval, not at 1: 0.969); the first problem at depth
    0 at a quarter of its positions (0.94x), every later decision depth 0; slope believed
    0.03-0.07 (the first sitting 0.08-0.21), drafter 0.06-0.10 (0.000-0.005), commits' factor
    0.77-0.79; lr-d2 priced 0.97x / 0.90x / 0.74x, above measured and below AR at every level; the
    mean step length 38-51 tokens in both sittings (the records' last estimates)."""
    doc = json.loads((RESULTS / "adaptive_real_f26m2_unit.json").read_text())
    old = json.loads((RESULTS / "adaptive_real_f26m2.json").read_text())
    assert doc["target_met"] and list(doc["levels"]) == ["1", "2", "4"]
    got = {n: (t["lr-adaptive-d2"], t["lr-d2"]) for n, t in doc["levels"].items()}
    assert [f"{st['speedup_vs_ar']:.2f}" for _, st in got.values()] == ["0.85", "0.74", "0.70"]
    assert [f"{ad['speedup_vs_ar']:.2f}" for ad, _ in got.values()] == ["0.99", "0.98", "1.03"]
    ci = [ad["speedup_vs_ar_ci90"] for ad, _ in got.values()]
    assert [f"{lo:.2f}-{hi:.2f}" for lo, hi in ci] == ["0.97-1.00", "0.97-1.00", "0.95-1.11"]
    assert f"{min(ad['speedup_vs_ar'] for ad, _ in got.values()):.3f}" == "0.984"
    assert ci[1][0] >= 0.97 and f"{ci[0][0]:.3f}" == "0.969"
    assert [f"{st['priced_by_adaptive']:.2f}" for _, st in got.values()] == ["0.97", "0.90", "0.74"]
    assert all(1 > st["priced_by_adaptive"] > st["speedup_vs_ar"] for _, st in got.values())
    first, *later = got["1"][0]["by_block"]
    assert f"{first['depth0_share']:.2f}" == "0.25" and f"{first['speedup_vs_ar']:.2f}" == "0.94"
    rest = later + [b for n in ("2", "4") for b in got[n][0]["by_block"]]
    assert all(b["depth0_share"] == 1.0 for b in rest)

    def span(blocks, key, fmt=".2f"):
        v = [b[key] for b in blocks]
        return f"{min(v):{fmt}}-{max(v):{fmt}}"
    assert span(rest, "slope_share_first") == "0.03-0.07"
    assert span(rest, "drafter_share_first") == "0.06-0.10"
    assert span(rest, "spec_factor_first") == "0.77-0.79"
    old_rest = old["levels"]["1"]["lr-adaptive-d2"]["by_block"][1:] + [
        b for n in ("2", "4") for b in old["levels"][n]["lr-adaptive-d2"]["by_block"]]
    assert span(old_rest, "slope_share_first") == "0.08-0.21"
    assert span(old_rest, "drafter_share_first", ".3f") == "0.000-0.005"
    # the corpus ran before _scale_prior left out a launched step's launch: its prior came from
    # the first problem's first step whole (a tree's root: 21 tokens in 3.64 s, prefill included)
    first_rec = json.loads((ROOT / "traces/load-adaptive-f26m2-unit/gsm8k/c1/lr-adaptive-d2.jsonl")
                           .read_text().splitlines()[0])
    step, prior = first_rec["steps"][0]["target"], first_rec["adaptive"]["prior"]
    assert first_rec["adaptive"]["decisions"][0]["depth"] == 2 and step["tokens"] == 21
    assert f"{step['end'] - step['start']:.2f}" == "3.64"
    assert f"{prior['target_step_s']:.2f}" == "6.94" == f"{(step['end'] - step['start']) * 40 / 21:.2f}"
    for corpus in ("load-adaptive-f26m2", "load-adaptive-f26m2-unit"):
        lengths = [json.loads(line)["adaptive"]["final"]["step_tokens"]
                   for f in sorted((ROOT / "traces" / corpus / "gsm8k").glob("c*/lr-adaptive*.jsonl"))
                   for line in f.read_text().splitlines()]
        assert f"{min(lengths):.0f}-{max(lengths):.0f}" == "38-51"


def test_on_the_fourth_cpu_a_third_sitting_meets_the_target():
    """README and docs/adaptive.md on traces/load-adaptive-f26m2-3 (after 4189ca6): lr-d2 0.88x /
    0.84x / 0.71x, lr-adaptive 0.98x / 1.00x / 1.00x (lowest 0.980, met); the first problem at
    depth 0 at a quarter of its positions (0.92x), every later decision depth 0; lr-d2 priced
    0.94x / 0.87x / 0.72x, closer to measured than the second sitting's price at every level;
    its prior rescaled from its first step less the launch (below the step's whole seconds)."""
    doc = json.loads((RESULTS / "adaptive_real_f26m2_3.json").read_text())
    second = json.loads((RESULTS / "adaptive_real_f26m2_unit.json").read_text())
    assert doc["target_met"] and list(doc["levels"]) == ["1", "2", "4"]
    got = {n: (t["lr-adaptive-d2"], t["lr-d2"]) for n, t in doc["levels"].items()}
    assert [f"{st['speedup_vs_ar']:.2f}" for _, st in got.values()] == ["0.88", "0.84", "0.71"]
    assert [f"{ad['speedup_vs_ar']:.2f}" for ad, _ in got.values()] == ["0.98", "1.00", "1.00"]
    assert f"{min(ad['speedup_vs_ar'] for ad, _ in got.values()):.3f}" == "0.980"
    assert [f"{st['priced_by_adaptive']:.2f}" for _, st in got.values()] == ["0.94", "0.87", "0.72"]
    for n, (_, st) in got.items():
        old = second["levels"][n]["lr-d2"]
        assert abs(st["priced_by_adaptive"] - st["speedup_vs_ar"]) < abs(
            old["priced_by_adaptive"] - old["speedup_vs_ar"])
    first, *later = got["1"][0]["by_block"]
    assert f"{first['depth0_share']:.2f}" == "0.25" and f"{first['speedup_vs_ar']:.2f}" == "0.92"
    assert all(b["depth0_share"] == 1.0 for b in later + [b for n in ("2", "4") for b in got[n][0]["by_block"]])
    rec = json.loads((ROOT / "traces/load-adaptive-f26m2-3/gsm8k/c1/lr-adaptive-d2.jsonl").read_text().splitlines()[0])
    step, prior = rec["steps"][0]["target"], rec["adaptive"]["prior"]
    if rec["adaptive"]["decisions"][0]["depth"] > 0:       # a tree's root, timed first, less its launch
        assert prior["target_step_s"] < (step["end"] - step["start"]) * 40 / step["tokens"]


def test_on_the_fifth_cpu_an_intel_xeon_the_target_is_met():
    """README and docs/adaptive.md on traces/load-adaptive-f6m167 (Intel Xeon family 6 model 167,
    3 rounds per level): lr-d2 0.90x / 0.87x / 0.77x, lr-adaptive 1.00x / 0.98x / 0.97x (lowest
    0.972, met; 90% interval 0.93-1.02 at 4 in flight); the first problem at depth 0 at a quarter
    of its positions (0.95x), every later decision depth 0; lr-d2 priced 0.97x / 0.99x / 0.91x."""
    doc = json.loads((RESULTS / "adaptive_real_f6m167.json").read_text())
    assert doc["target_met"] and list(doc["levels"]) == ["1", "2", "4"]
    assert doc["records"] == 63
    got = {n: (t["lr-adaptive-d2"], t["lr-d2"]) for n, t in doc["levels"].items()}
    assert [len(ad["by_block"]) for ad, _ in got.values()] == [3, 3, 3]
    assert [f"{st['speedup_vs_ar']:.2f}" for _, st in got.values()] == ["0.90", "0.87", "0.77"]
    assert [f"{ad['speedup_vs_ar']:.2f}" for ad, _ in got.values()] == ["1.00", "0.98", "0.97"]
    assert f"{min(ad['speedup_vs_ar'] for ad, _ in got.values()):.3f}" == "0.972"
    assert [f"{x:.2f}" for x in got["4"][0]["speedup_vs_ar_ci90"]] == ["0.93", "1.02"]
    assert [f"{st['priced_by_adaptive']:.2f}" for _, st in got.values()] == ["0.97", "0.99", "0.91"]
    first, *later = got["1"][0]["by_block"]
    assert f"{first['depth0_share']:.2f}" == "0.25" and f"{first['speedup_vs_ar']:.2f}" == "0.95"
    assert all(b["depth0_share"] == 1.0 for b in later + [b for n in ("2", "4") for b in got[n][0]["by_block"]])


def test_on_the_sixth_cpu_another_intel_xeon_the_target_is_met():
    """README and docs/adaptive.md on traces/load-adaptive-f6m207 (Intel Xeon family 6 model 207,
    six rounds at every level in two sittings, 126 records): ar alone 2.26 tok/s at 1 in flight
    (1.47 and 1.71 in rounds 4 and 5); lr-d2 0.93x / 0.88x / 0.78x, lr-adaptive 1.03x / 1.04x /
    0.99x (lowest 0.992, met; 90% interval 0.95-1.04 at 4 in flight, its blocks 0.92x-1.11x); the
    first problem at depth 0 at a quarter of its positions (0.98x), every later decision depth 0,
    the resumed sitting's first problem (from the corpus's last estimates, at 4 in flight)
    included; lr-d2 priced 0.93x / 0.84x / 0.73x, at most 5 points below."""
    doc = json.loads((RESULTS / "adaptive_real_f6m207.json").read_text())
    assert doc["target_met"] and list(doc["levels"]) == ["1", "2", "4"]
    assert doc["records"] == 126
    got = {n: (t["lr-adaptive-d2"], t["lr-d2"]) for n, t in doc["levels"].items()}
    assert [len(ad["by_block"]) for ad, _ in got.values()] == [6, 6, 6]
    assert f"{doc['levels']['1']['ar']['tokens_per_s']:.2f}" == "2.26"
    assert [f"{st['speedup_vs_ar']:.2f}" for _, st in got.values()] == ["0.93", "0.88", "0.78"]
    assert [f"{ad['speedup_vs_ar']:.2f}" for ad, _ in got.values()] == ["1.03", "1.04", "0.99"]
    assert f"{min(ad['speedup_vs_ar'] for ad, _ in got.values()):.3f}" == "0.992"
    assert [f"{x:.2f}" for x in got["4"][0]["speedup_vs_ar_ci90"]] == ["0.95", "1.04"]
    four = [b["speedup_vs_ar"] for b in got["4"][0]["by_block"]]
    assert (f"{min(four):.2f}", f"{max(four):.2f}") == ("0.92", "1.11")
    priced = [st["priced_by_adaptive"] for _, st in got.values()]
    assert [f"{p:.2f}" for p in priced] == ["0.93", "0.84", "0.73"]
    assert max(st["speedup_vs_ar"] - st["priced_by_adaptive"] for _, st in got.values()) < 0.055
    first, *later = got["1"][0]["by_block"]
    assert f"{first['depth0_share']:.2f}" == "0.25" and f"{first['speedup_vs_ar']:.2f}" == "0.98"
    assert all(b["depth0_share"] == 1.0 for b in later + [b for n in ("2", "4") for b in got[n][0]["by_block"]])
    assert [(ad["first_problem_records"], ad["carried_prior_records"]) for ad, _ in got.values()] == [
        (1, 0), (0, 0), (0, 1)]
