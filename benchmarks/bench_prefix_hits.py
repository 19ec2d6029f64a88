"""What vLLM's prefix cache held for each new engine request of the load corpora, measured against
the simulator's model of it (results/prefix_hits.{json,md}).

Records from traces/load's round 5 on count each generation's prompt tokens and the engine's
cached tokens (vLLM's num_cached_tokens). The simulator prices a new request's prefill as the
tokens its engine never processed, rounded to the cache's whole blocks (lrsim/sim/kvcache.py,
request_prefill). Here each LR record's target step jobs are set against that model, by what
their context ends in:
  prompt        the first step's context, the prompt (what an earlier request left cached);
  root          a target step (the engine wrote it: only its last token and the block's rest);
  after draft   an accepted draft, which the target never wrote: the model prefills the draft;
and, for after-draft jobs, whether an LR configuration ran the same problem in an earlier block
of the corpus (rerun: the same round's other configuration on the same engines, or a run at
another level, often hours before): with temperature 0 and seeded drafts its target saw the same contexts, so the
engine's cache may hold them. lr-async records only (the tree's jobs). The drafter's first request (the prompt alone,
before the first step) is set against the target's hit on the same prompt, which the replay
charged the drafter until traces.draft_prompt_cached. The prompt's own jobs are in the JSON
(kind "prompt": the replay takes their hit from the record, nothing to test).

    .venv/bin/python benchmarks/bench_prefix_hits.py     # reads traces/load*/, seconds
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.write import run_and_write  # noqa: E402
from lrcore.modes import MODE_POLICY  # noqa: E402
from lrcore.traces import read_traces  # noqa: E402
from lrsim.calib.kv import CPU_DEFAULT_BLOCK  # noqa: E402
from lrsim.sim.kvcache import request_prefill  # noqa: E402
from lrsim.sim.traces import draft_prompt_cached, span_cache  # noqa: E402

CORPORA = ("load", "load-heldout", "load-transfer", "load-open", "load-open-v2", "load-cold", "load-cold-epyc")
OUT = ROOT / "benchmarks" / "results" / "prefix_hits.json"
KINDS = ("prompt", "root", "after_draft_first", "after_draft_rerun")


def _acc() -> dict:
    return {"jobs": 0, "measured": 0, "modelled": 0, "more_cached": 0}


def _add(acc: dict, measured: int, modelled: int) -> None:
    acc["jobs"] += 1
    acc["measured"] += measured
    acc["modelled"] += modelled
    acc["more_cached"] += measured < modelled


def target_jobs(rec: dict, rerun: bool, out: dict) -> None:
    """Each committed target step job of `rec` whose span counts its cache hits, into out[kind]:
    measured prefill (prompt - cached) and the model's (request_prefill)."""
    block = int(((rec.get("run") or {}).get("flags") or {}).get("block_size") or CPU_DEFAULT_BLOCK)
    steps = [s for s in rec["steps"] if s.get("tokens", 0) > 0]
    for i, s in enumerate(steps):
        c = span_cache(s.get("target"))
        if c is None:
            continue
        ctx, cached = c
        if i == 0:
            kind, unseen = "prompt", None
        elif steps[i - 1].get("source") == "draft":
            kind = "after_draft_rerun" if rerun else "after_draft_first"
            unseen = int(steps[i - 1]["tokens"])
        else:
            kind, unseen = "root", 0
        # the prompt: the model is the record's own hit (traces.prompt_cached), nothing to test
        modelled = ctx - cached if unseen is None else request_prefill(ctx, unseen, block)
        _add(out[kind], ctx - cached, modelled)


def file_rows(records: list[dict], seen_before: dict) -> dict:
    """One trace file's records: its LR records' target jobs by kind and the drafter's first
    request."""
    kinds = {k: _acc() for k in KINDS}
    drafter = {"requests": 0, "prompt": 0, "drafter_cached": 0, "target_cached": 0}
    for rec in records:
        t = (rec["run"].get("probe_at_start") or {}).get("t", 0.0)
        earlier = seen_before.get(rec["problem_id"])
        target_jobs(rec, earlier is not None and earlier < t, kinds)
        first = span_cache((rec["steps"] or [{}])[0].get("target"))
        d = draft_prompt_cached(rec)
        if first is not None and d is not None:
            drafter["requests"] += 1
            drafter["prompt"] += first[0]
            drafter["drafter_cached"] += d
            drafter["target_cached"] += first[1]
    return {"target": kinds, "drafter_prompt": drafter}


def lr_async_records(path: Path) -> list[dict]:
    """The file's lr-async records (the tree's jobs; lr-sync's read every draft since the last
    commit); AR and SD files are not read."""
    if path.stem in ("ar", "ar-er", "sd"):
        return []
    return [r for r in read_traces(path) if MODE_POLICY.get(r.get("mode"), ("",))[0] == "lr-async"]


def bench() -> dict:
    t0 = time.perf_counter()
    corpora = {}
    for name in CORPORA:
        root = ROOT / "traces" / name
        files = {str(p.relative_to(root)): lr_async_records(p) for p in sorted(root.glob("*/*/*.jsonl"))}
        first: dict = {}         # problem -> the earliest block start of an LR record of it
        for recs in files.values():
            for r in recs:
                t = (r["run"].get("probe_at_start") or {}).get("t", 0.0)
                first[r["problem_id"]] = min(t, first.get(r["problem_id"], t))
        corpora[name] = {f: file_rows(recs, first) for f, recs in files.items() if recs}
    return {"benchmark": "bench_prefix_hits", "corpora": corpora, "wall_s": time.perf_counter() - t0}


def pooled(doc: dict, corpus: str) -> tuple[dict, dict]:
    """A corpus's files pooled: target jobs by kind, the drafter's first requests."""
    kinds = {k: _acc() for k in KINDS}
    drafter = {"requests": 0, "prompt": 0, "drafter_cached": 0, "target_cached": 0}
    for row in doc["corpora"][corpus].values():
        for k in KINDS:
            for f in kinds[k]:
                kinds[k][f] += row["target"][k][f]
        for f in drafter:
            drafter[f] += row["drafter_prompt"][f]
    return kinds, drafter


def _cell(a: dict) -> str:
    if not a["jobs"]:
        return "-"
    return (f"{a['measured'] / a['jobs']:.1f} / {a['modelled'] / a['jobs']:.1f} "
            f"({a['jobs']}, {100 * a['more_cached'] / a['jobs']:.0f}%)")


def render(doc: dict) -> str:
    lines = ["Target step jobs of the LR records whose spans count the prefix cache's hits: prefill "
             "tokens a job, measured (prompt - cached) / the simulator's model (what the engine never "
             "processed, rounded to whole KV blocks: kvcache.request_prefill), and (jobs, share with "
             "more cached than the model holds). Context ending in a target step (root) or in an "
             "accepted draft, the latter split by whether an LR configuration ran the same "
             "problem in an earlier block (rerun) or not (first). The drafter's first request, the "
             "prompt alone: prompt tokens it prefilled against those the target's cache left.",
             "",
             "| corpus | root | after draft, first | after draft, rerun | drafter's prompt / target's |",
             "|---|---|---|---|---|"]
    for name in CORPORA:
        kinds, d = pooled(doc, name)
        dp = (f"{(d['prompt'] - d['drafter_cached']) / d['requests']:.1f} / "
              f"{(d['prompt'] - d['target_cached']) / d['requests']:.1f} ({d['requests']})"
              if d["requests"] else "-")
        lines.append(f"| {name} | {_cell(kinds['root'])} | {_cell(kinds['after_draft_first'])} | "
                     f"{_cell(kinds['after_draft_rerun'])} | {dp} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    run_and_write(OUT, bench, render)
