"""benchmarks/results/batch_curve.* (benchmarks/bench_batch_curve.py), quoted in docs/load.md, "A
fourth CPU": the committed curve is what the committed traces give now, and a pass shared by the
records in flight beside it is counted once."""
from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"


def test_the_committed_curve_is_the_traces_now():
    from benchmarks.bench_batch_curve import CORPORA, measure, render

    out = measure(CORPORA)
    assert json.loads(json.dumps(out)) == json.loads((RESULTS / "batch_curve.json").read_text())
    assert render(out) == (RESULTS / "batch_curve.md").read_text()


def test_a_shared_pass_counts_once(tmp_path, monkeypatch):
    import benchmarks.bench_batch_curve as bc

    p = {"batch_size": 2, "tokens_scheduled": 2, "prefill_tokens": 0, "duration_s": 0.5, "kv_tokens": 90}
    rec = {"run": {"flags": {"load_round": 0}}, "engine_stats": {"target": {"forward_passes": [p]}}}
    other = dict(rec, engine_stats={"target": {"forward_passes": [dict(p, duration_s=0.7)]}})
    f = tmp_path / "c" / "gsm8k" / "c2" / "ar.jsonl"
    f.parent.mkdir(parents=True)
    f.write_text("\n".join(json.dumps(r) for r in (rec, rec, other)) + "\n")
    monkeypatch.setattr(bc, "ROOT", tmp_path)
    assert bc.passes("c", "target") == {2: [0.5, 0.7]}
    # a pass with a prefill or SD verification positions is not a plain decode pass
    sd = dict(rec, engine_stats={"target": {"forward_passes": [dict(p, tokens_scheduled=14)]}})
    f.write_text(json.dumps(sd) + "\n")
    assert bc.passes("c", "target") == {}
