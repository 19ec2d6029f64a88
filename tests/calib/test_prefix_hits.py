"""benchmarks/bench_prefix_hits.py: what vLLM's prefix cache held for the load corpora's LR jobs
against the simulator's block model, recomputed from the committed traces, and docs/load.md's
claims ("What the prefix cache held")."""
import json
from pathlib import Path

import pytest

from benchmarks import bench_prefix_hits as ph

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"


@pytest.fixture(scope="module")
def committed():
    return json.loads((RESULTS / "prefix_hits.json").read_text())


def test_the_results_come_from_the_committed_traces(committed):
    assert ph.bench()["corpora"] == committed["corpora"]
    assert (RESULTS / "prefix_hits.md").read_text() == ph.render(committed)


def _share(a):
    return round(100 * a["more_cached"] / a["jobs"])


def _mean(a, key):
    return round(a[key] / a["jobs"], 1)


def test_the_readme_claims(committed):
    """A target step after the target's own step: never more cached than the model (at most 15.3
    against 14.6 tokens a job held less); after an accepted draft, a problem's first LR run:
    21-32% of jobs held more (78% of traces/load's nine), the clean open loop 59.4 against 66.5;
    a rerun (an earlier block ran the problem with an LR configuration): 53-68%, traces/load
    42.3 against 84.5, but 27% where every block began with empty caches (load-cold; its first runs 23%;
    on the EPYC, load-cold-epyc, 25% and 21%); the drafter's prompt in the clean open loop 105.8
    against the target's 61.8, in the cold corpora the same as the target's (both caches empty)."""
    pooled = {c: ph.pooled(committed, c) for c in ph.CORPORA}
    for c, (kinds, _) in pooled.items():
        assert kinds["root"]["more_cached"] == 0, c
    roots = [(_mean(k["root"], "measured"), _mean(k["root"], "modelled")) for k, _ in pooled.values()]
    assert max(m - p for m, p in roots) == pytest.approx(15.3 - 14.6)
    first = {c: _share(k["after_draft_first"]) for c, (k, _) in pooled.items()}
    assert first.pop("load") == 78 and pooled["load"][0]["after_draft_first"]["jobs"] == 9
    assert (min(first.values()), max(first.values())) == (21, 32) and first["load-cold"] == 23
    assert first["load-cold-epyc"] == 21
    rerun = {c: _share(k["after_draft_rerun"]) for c, (k, _) in pooled.items() if k["after_draft_rerun"]["jobs"]}
    assert set(rerun) == {"load", "load-heldout", "load-transfer", "load-cold", "load-cold-epyc"}
    assert rerun.pop("load-cold") == 27 and rerun.pop("load-cold-epyc") == 25
    assert (min(rerun.values()), max(rerun.values())) == (53, 68)
    assert all(rerun[c] > first[c] for c in ("load-heldout", "load-transfer"))
    v2 = pooled["load-open-v2"][0]["after_draft_first"]
    assert (_mean(v2, "measured"), _mean(v2, "modelled")) == (59.4, 66.5)
    ld = pooled["load"][0]["after_draft_rerun"]
    assert (_mean(ld, "measured"), _mean(ld, "modelled")) == (42.3, 84.5)
    d = pooled["load-open-v2"][1]
    assert round((d["prompt"] - d["drafter_cached"]) / d["requests"], 1) == 105.8
    assert round((d["prompt"] - d["target_cached"]) / d["requests"], 1) == 61.8
    for c in ("load-cold", "load-cold-epyc"):
        cold = pooled[c][1]
        assert cold["drafter_cached"] == cold["target_cached"]
