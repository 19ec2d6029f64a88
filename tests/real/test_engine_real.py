"""End to end on the real thing: packaged models, vLLM CPU engines, GSM8K, trace records.

Engines start once for this module (target + draft, ~1-2 min on 2 cores) under the machine-wide
vLLM lock and always shut down; every real-engine test that can run in-process runs here, on
them (lr-adaptive's too: an engine start costs more than most of these tests). Budgets are tiny
(32 tokens) and the machine-speed probe runs only where a test checks it, so the module fits CI.
A cold model cache is converted first (`lr models prepare`, ~5 min on 2 cores, once).
"""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.real, pytest.mark.slow]

MAX_TOKENS = 32
ROOT = Path(__file__).resolve().parents[2]




@pytest.fixture(scope="module")
def real(prepared_cache):
    """(collector, event loop, first GSM8K problem) with both engines started."""
    from lrreal.collect import CollectSpec, Collector
    from lrreal.datasets import load_problems
    from lrreal.lock import vllm_lock

    # probe=False: the probe (~5-20 s a record here) is switched on by the test that checks it
    spec = CollectSpec(mode="lr", dataset="gsm8k", limit=1, depth=2, max_tokens=MAX_TOKENS,
                       max_step_tokens=32, verifier="exact", probe=False,
                       cache_dir=str(prepared_cache))
    col = Collector(spec)
    loop = asyncio.new_event_loop()
    lock = vllm_lock()
    lock.__enter__()
    try:
        col.verifier = col.make_verifier()

        async def start():
            col.start()
            await col.warm_up()

        loop.run_until_complete(start())
        yield col, loop, load_problems("gsm8k", limit=1)[0]
    finally:
        async def stop():  # inside the loop: vLLM closes its zmq sockets only from its own loop
            col.shutdown()
            await asyncio.sleep(0.1)

        loop.run_until_complete(stop())
        loop.close()
        lock.__exit__(None, None, None)


def _run(real, mode: str) -> dict:
    from lrreal.scheduler import SchedulerConfig

    col, loop, prob = real
    col.spec.mode = mode
    col.cfg = SchedulerConfig(mode=mode, depth=2, max_tokens=MAX_TOKENS, max_step_tokens=32)
    return loop.run_until_complete(col.run_one(prob, 0))


def _write_and_read(tmp_path, recs):
    from lrcore.traces import TraceWriter, read_traces

    out = tmp_path / "traces.jsonl"
    with TraceWriter(out, resume=True) as w:
        for r in recs:
            w.write(r)
    return out, read_traces(out)


def test_models_prepare_is_idempotent_on_real_models(prepared_cache):
    from lrreal import models

    for name in (models.DEFAULT_DRAFT, models.DEFAULT_TARGET):
        path = models.model_dir(models.lookup(name), prepared_cache)
        before = (path / models.MARKER).stat().st_mtime_ns
        t0 = time.monotonic()
        assert models.prepare(name, prepared_cache) == path
        assert time.monotonic() - t0 < 5
        assert (path / models.MARKER).stat().st_mtime_ns == before
        assert json.loads((path / "config.json").read_text())["architectures"] == ["Qwen2ForCausalLM"]


def test_ar_and_lr_write_valid_traces(real, tmp_path):
    col = real[0]
    col.spec.probe = True
    try:
        ar = _run(real, "ar")
        lr = _run(real, "lr")
    finally:
        col.spec.probe = False
    out, recs = _write_and_read(tmp_path, [ar, lr])
    assert [r["mode"] for r in recs] == ["ar", "lr"]
    for r in recs:
        assert 0 < r["output_tokens"] <= MAX_TOKENS
        assert r["finish_reason"] in ("eos", "budget")
        assert r["output_text"] == "".join(s["text"] for s in r["steps"])
        assert r["engine_stats"]["target"]["forward_passes"], "per-pass stats from vLLM"
        assert all(p["batch_size"] >= 1 for p in r["engine_stats"]["target"]["forward_passes"])
        assert r["run"]["vllm_version"] and r["run"]["models"]["target"]["sha256"]
    assert ar["finish_reason"] != "budget" or ar["output_tokens"] == MAX_TOKENS
    # the machine-speed probe around each record (both engines, real decode and prefill times)
    # and the physical context of every pass
    for r in recs:
        for side in ("before", "after"):
            eng = r["probe"][side]["engines"]
            assert set(eng) == {"target", "draft"}
            assert all(0.01 < e["decode_s"] < 10 and e["prefill_s"] > 0 for e in eng.values())
            # side by side: each engine's decode pass beside the other's, on the real engines
            # (lrreal/probe.side_by_side): the target's 12 probe passes and the draft's dozens
            assert all(e["contended_passes"] >= 1 and 0.01 < e["contended_decode_s"] < 10
                       for e in eng.values()), eng
            assert eng["target"]["contended_passes"] >= 8, eng     # most of the 12 beside it
        # KV usage is read after a pass: the pass that finishes a request has freed its blocks
        kv = [p.get("kv_tokens") for p in r["engine_stats"]["target"]["forward_passes"]]
        # (None), so only the passes that end a request lack it
        known = [k for k in kv if k is not None]
        assert all(k >= 32 for k in known) and len(known) >= 0.8 * len(kv)
        assert r is not ar or kv[-1] is None
    assert lr["probe"]["before"] is not None and lr["probe"]["before"]["t"] >= ar["probe"]["after"]["t"] - 1e-6
    # LR: the first step follows the chat prompt (no boundary) so the target writes it; later
    # steps are drafted and judged; both engines did work.
    assert lr["steps"][0]["source"] == "target"
    assert lr["engine_stats"]["draft"]["forward_passes"]
    assert lr["run"]["models"]["draft"]["sha256"]
    if len(lr["steps"]) > 1:
        assert lr["step_acceptance"]["proposed"] >= 1
    # Greedy target, same prompt: the first step is the same text in both modes.
    assert lr["steps"][0]["text"] == ar["steps"][0]["text"]
    # every real engine request says why it ended (vLLM's finish and stop reasons): lr's steps
    # but the last one end at the "\n\n" stop string or their 32-token cap; ar's one streamed
    # request ends at EOS or its token budget, which only its last step carries
    for s in lr["steps"][:-1]:
        if s["target"] is not None:
            t = s["target"]
            assert t["finish"] == "stop" or (t["finish"] == "length" and t["tokens"] >= 32), s
        if s["draft"] is not None:
            assert s["draft"]["finish"] in ("stop", "eos", "length"), s
    assert [s["target"].get("finish") for s in ar["steps"][:-1]] == [None] * (len(ar["steps"]) - 1)
    assert ar["steps"][-1]["target"]["finish"] == ("length" if ar["finish_reason"] == "budget" else "eos")

    # Resume through the CLI: everything is recorded, so nothing runs and no engine starts.
    cmd = [sys.executable, str(ROOT / "cli.py"), "collect", "--mode", "ar", "--dataset", "gsm8k",
           "--limit", "1", "--max-tokens", str(MAX_TOKENS), "--max-step-tokens", "32", "--out", str(out),
           "--resume", "--json"]  # the settings the records were made with (else refused)
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=ROOT,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert p.returncode == 0, p.stderr
    res = json.loads(p.stdout)
    assert res["written"] == 0 and res["skipped"] == 1
    assert time.monotonic() - t0 < 60
    assert len(out.read_text().splitlines()) == 2  # no duplicate


def test_lr_sync_writes_a_valid_trace(real, tmp_path):
    """Algorithm 1 on the real engines: sequential drafts, concurrent target steps, judged pairs."""
    rec = _run(real, "lr-sync")
    _, recs = _write_and_read(tmp_path, [rec])
    r = recs[0]
    assert r["mode"] == "lr-sync" and 0 < r["output_tokens"] <= MAX_TOKENS
    assert r["steps"][0]["source"] == "target" and r["steps"][0]["verify"] is None
    assert r["engine_stats"]["draft"]["forward_passes"]
    judged = [s for s in r["steps"] if s["verify"] is not None]
    assert r["step_acceptance"]["proposed"] == len(judged)


def test_accept_mode_measures_acceptance_on_the_target_s_own_text(real, tmp_path):
    """The acceptance protocol (`--mode accept`) on the real engines, GSM8K problem 0, greedy,
    exact verifier, the same budget as `ar`: valid records; the output is the target's own answer
    (the text `ar` writes); judged == the steps that had a draft; the summary's interval holds
    the point estimate."""
    from lrreal.summary import summarize
    from lrreal.scheduler import SchedulerConfig

    col, loop, prob = real
    made = []
    for mode in ("ar", "accept"):
        col.spec.mode = mode
        # steps of up to 100 tokens: cut at "\n\n" or at the budget only, as `ar` is
        col.cfg = SchedulerConfig(mode=mode, max_tokens=MAX_TOKENS)
        made.append(loop.run_until_complete(col.run_one(prob, 0)))
    _, recs = _write_and_read(tmp_path, made)     # validated on write and on read
    ar, acc = recs
    assert acc["mode"] == "accept" and 0 < acc["output_tokens"] <= MAX_TOKENS
    assert acc["output_text"] == ar["output_text"] and acc["output_tokens"] == ar["output_tokens"]
    assert acc["finish_reason"] == ar["finish_reason"]
    assert all(s["source"] == "target" for s in acc["steps"])
    assert acc["steps"][0]["draft"] is None       # after the chat prompt: no step boundary
    with_draft = [s for s in acc["steps"] if s["draft"] is not None]
    assert all(s["verify"] is not None and s["depth"] == 1 for s in with_draft)
    sa = acc["step_acceptance"]
    assert sa["proposed"] == len(with_draft)
    assert sa["accepted"] == sum(1 for s in with_draft if s["verify"]["verdict"] is True)
    if with_draft:
        assert acc["engine_stats"]["draft"]["forward_passes"]
        [row] = [r for r in summarize(recs) if r["mode"] == "accept"]
        lo, hi = row["step_acceptance_ci95"]
        assert lo <= sa["accepted"] / sa["proposed"] <= hi


def test_sampled_lr_with_two_sibling_drafts(real, tmp_path):
    """Sampled decoding (the paper's temperature 0.6 / top_p 0.95, seeded per request) with
    width 2 on the real engines: a valid record, exact budget, both engines used, and - whenever
    a step was drafted - two sibling drafts in flight together on the draft engine."""
    from lrreal.scheduler import SchedulerConfig

    col, loop, prob = real
    col.spec.mode = "lr"
    col.cfg = SchedulerConfig(mode="lr", depth=2, width=2, max_tokens=MAX_TOKENS, max_step_tokens=32,
                              temperature=0.6, top_p=0.95, seed=7)
    rec = loop.run_until_complete(col.run_one(prob, 0))
    _, recs = _write_and_read(tmp_path, [rec])
    r = recs[0]
    assert r["mode"] == "lr" and 0 < r["output_tokens"] <= MAX_TOKENS
    assert r["output_text"] == "".join(s["text"] for s in r["steps"])
    passes = r["engine_stats"]["draft"]["forward_passes"]
    assert passes and r["engine_stats"]["target"]["forward_passes"]
    if r["step_acceptance"]["proposed"] >= 1:
        assert max(p["batch_size"] for p in passes) >= 2


def test_score_verifier_asks_the_real_target(real):
    """`--verifier score` (the SpecReason-style baseline) on the real target: one greedy token,
    through the target's own chat template, whose first character is a score digit 0-9."""
    from lrreal.verifiers import make_verifier

    col, loop, _ = real
    v = make_verifier("score")
    col.bind_verifier(v)
    assert v.engine is col.engines["target"]
    target_step = "In May she sold half as many clips."   # not shown to the scorer
    for step in ("Natalia sold 48 / 2 = 24 clips in May.",
                 "Natalia sold 48 / 2 = 31 clips in May, so the answer is blue."):
        r = loop.run_until_complete(v.verify(target_step, step))
        assert r.error is None, r.error
        assert r.method == "score" and not r.shortcut
        assert r.score in [float(d) for d in range(10)]
        assert r.accepted == (r.score >= 7)
        assert r.end - r.start < 60


def test_step_stop_and_deferred_judging_on_the_real_engines(real, tmp_path):
    """`--step-stop` and `--judge-timing` on the real engines: steps cut at ". " as well as at a
    blank line (vLLM stop strings, kept in the output), the same first step in ar and lr (greedy),
    and a valid lr record judged deferred, with `ready` on every verdict."""
    from lrreal.scheduler import SchedulerConfig

    col, loop, prob = real
    stops = (". ", "\n\n")
    made = []
    for mode in ("ar", "lr"):
        col.spec.mode = mode
        col.cfg = SchedulerConfig(mode=mode, depth=2, max_tokens=MAX_TOKENS, max_step_tokens=32,
                                  step_stop=stops, judge_timing="deferred")
        made.append(loop.run_until_complete(col.run_one(prob, 0)))
    _, (ar, lr) = _write_and_read(tmp_path, made)
    for r in (ar, lr):
        assert r["output_text"] == "".join(s["text"] for s in r["steps"])
        for s in r["steps"][:-1]:  # every step but the last ends at a stop string or the step cap
            assert s["text"].endswith(stops) or s["tokens"] >= 32, s
    assert lr["steps"][0]["text"] == ar["steps"][0]["text"]
    assert len(ar["steps"]) > 1 and any(s["text"].endswith(". ") for s in ar["steps"])
    n = lr["step_acceptance"]["judgements"]
    assert n["started"] == n["used"]  # deferred, width 1: every judgement decided a position
    for s in lr["steps"]:
        if s["verify"] and s["draft"] and s["target"]:
            assert s["verify"]["start"] >= s["verify"]["ready"] - 1e-6


@pytest.mark.parametrize("mode", ["ar", "lr"])
def test_two_requests_in_flight_share_the_real_engines(real, tmp_path, mode):
    """--concurrency 2 on the real engines: both requests run at once, vLLM batches them (passes
    of batch size 2 in the records), and each record says the load it met."""
    from lrreal.load import arrival_offsets, run_in_flight
    from lrreal.scheduler import SchedulerConfig

    col, loop, prob = real
    col.spec.mode, col.spec.concurrency = mode, 2
    col.cfg = SchedulerConfig(mode=mode, depth=2, max_tokens=MAX_TOKENS, max_step_tokens=32)
    recs = []
    try:
        todo = [(prob, 0), (prob, 1)]
        loop.run_until_complete(run_in_flight(
            todo, 2, None, arrival_offsets(2, None, 0),
            lambda item, adm: col.run_one(*item, admission=adm),
            lambda item, rec, err: recs.append(rec if err is None else err)))
    finally:
        col.spec.concurrency = 1
    assert all(isinstance(r, dict) for r in recs), recs
    _, recs = _write_and_read(tmp_path, recs)
    assert sorted(r["sample"] for r in recs) == [0, 1]
    for r in recs:
        ld = r["load"]
        assert ld["concurrency"] == 2 and ld["queue_s"] < 1.0 and "probe" not in r
        assert 0 < ld["ttft_s"] <= ld["latency_s"] and ld["tpot_s"] > 0
    # the two requests overlapped on the target and vLLM ran them in one batch
    a, b = (r["load"] for r in recs)
    assert max(a["admitted_s"], b["admitted_s"]) < min(a["latency_s"], b["latency_s"])
    sizes = [p["batch_size"] for r in recs for p in r["engine_stats"]["target"]["forward_passes"]]
    assert max(sizes) == 2
    # every generation says its prompt and the prefix cache's share of it (vLLM num_cached_tokens):
    # the two samples share the problem's prompt, so the engine found it cached at least once
    spans = [sp for r in recs for s in r["steps"] for sp in (s["draft"], s["target"])
             if sp is not None and "prompt_tokens" in sp]
    assert spans and all(0 <= sp["cached_tokens"] <= sp["prompt_tokens"] for sp in spans)
    assert all("prompt_tokens" in r["steps"][0]["target"] for r in recs if r["steps"][0]["target"])
    assert any(sp["cached_tokens"] > 0 for sp in spans)
    if mode == "lr":      # every step of lr is a request of its own, with its own prompt
        assert all("prompt_tokens" in s["target"] for r in recs for s in r["steps"] if s["target"])


def test_reset_prefix_cache_empties_the_real_engines(real):
    """VllmEngine.reset_prefix_cache (collect_load.py --cold-cache, before each block): a prompt
    sent again is found in the prefix cache in whole 32-token blocks (vLLM's num_cached_tokens);
    after the reset, on each engine, none of it is."""
    from lrreal.engine import GenRequest

    col, loop, prob = real
    prompt = "Reset check. " + prob.question * 3      # ~150 tokens: several whole blocks

    def cached(engine, i):
        req = GenRequest(request_id=f"reset-{engine.name}-{i}", prompt=prompt, max_tokens=1)
        return loop.run_until_complete(engine.generate(req)).cached_tokens

    for name in ("target", "draft"):
        engine = col.engines[name]
        cached(engine, 0)
        again = cached(engine, 1)
        assert again >= 64 and again % 32 == 0, (name, again)
        loop.run_until_complete(engine.reset_prefix_cache())
        assert cached(engine, 2) == 0, name


# --- collections of their own spec on the module's engines ------------------------------------
def _collect_here(real, out: Path, offset: int = 0, **spec) -> dict:
    """One GSM8K problem as `lr collect` runs it - a Collector of its own spec (its scheduler
    config and verifier, --adaptive-prior resolved from files as a new process resolves it), its
    record written and read back - but on the module's engines: the pool hands the same engines
    to the same engine arguments, so no engine starts, and lr-adaptive's estimator that problems
    on one pair of engines share is dropped first, as a new `lr collect` process starts without
    one."""
    from lrcore.traces import TraceWriter, read_traces
    from lrreal.collect import CollectSpec, Collector
    from lrreal.datasets import load_problems

    col, loop, _ = real
    c = Collector(CollectSpec(**{"dataset": "gsm8k", "limit": 1, "offset": offset, "depth": 2,
                                 "max_tokens": MAX_TOKENS, "max_step_tokens": 16, "probe": False,
                                 "cache_dir": col.spec.cache_dir, "out": str(out)} | spec))
    c.verifier = c.make_verifier()
    starts = col.pool.starts
    for engine in col.pool.engines.values():   # as a new process's engines: no estimator yet
        vars(engine).pop("_adaptive_runs", None)   # (lr_adaptive.run_estimates keeps one on them)

    async def go():
        c.start(pool=col.pool)
        await c.warm_up()
        return await c.run_one(load_problems("gsm8k", 1, offset)[0], 0)

    rec = loop.run_until_complete(go())
    assert col.pool.starts == starts, "the engines are the module's"
    out.parent.mkdir(parents=True, exist_ok=True)
    with TraceWriter(out, resume=True) as w:
        w.write(rec)
    (r,) = read_traces(out)                               # schema + cross-field rules, adaptive's too
    return r


def test_lr_collect_with_the_score_verifier(real, tmp_path):
    """`--mode lr --verifier score` (the SpecReason-style baseline: the target scores each
    drafted step 0-9 in one greedy token) on the real target; the boundary rule off so that steps
    are drafted and scored from the first one on: every decided step has a score digit or the
    exact-match shortcut, and the record names the scorer's prompt."""
    from lrcore.traces import validate_record
    from lrreal.verifiers import SCORE_PROMPT

    rec = _collect_here(real, tmp_path / "score.jsonl", mode="lr", verifier="score",
                        boundary_rule=False)
    validate_record(rec)
    assert rec["mode"] == "lr" and 0 < rec["output_tokens"] <= MAX_TOKENS
    assert rec["run"]["flags"]["verifier"] == "score"
    assert rec["run"]["verifier"]["method"] == "score" and rec["run"]["verifier"]["threshold"] == 7
    assert rec["run"]["verifier"]["prompt"] == {"name": "score", "sha256": SCORE_PROMPT.sha256}
    assert rec["run"]["judge_prompt"] == {"name": "score", "sha256": SCORE_PROMPT.sha256}
    checks = [s["verify"] for s in rec["steps"] if s.get("verify")]
    checks += [v for s in rec["steps"] for v in s.get("judged") or []]
    assert checks, "no drafted step was decided"
    for v in checks:
        # "not-ready": the target's step finished first and the draft was cancelled unjudged
        assert v["method"] in ("score", "not-ready"), v
        if v["method"] != "score":
            continue
        if v["shortcut"]:  # the exact-match shortcut decided: no score asked
            assert v["verdict"] is True and v["score"] is None
        else:  # the real target answered a digit (a reply without one would be an error)
            assert v["error"] is None, v
            assert v["score"] in [float(d) for d in range(10)], v
            assert v["verdict"] is (v["score"] >= 7), v


def test_lr_adaptive_collects_a_valid_record_with_its_decisions(real, tmp_path):
    """lr-adaptive with a small budget on the real engines: a valid record whose every decision
    is recorded, and real step seconds in the estimates (not the prior's 1 s)."""
    from lrcore.adaptive import Decision

    r = _collect_here(real, tmp_path / "adaptive.jsonl", mode="lr-adaptive")
    assert r["mode"] == "lr-adaptive" and 0 < r["output_tokens"] <= MAX_TOKENS
    assert r["output_text"] == "".join(s["text"] for s in r["steps"])
    assert r["engine_stats"]["target"]["forward_passes"]
    ad = r["adaptive"]
    assert ad["config"]["max_depth"] == 2 and ad["config"]["k2s"] == [1]
    decisions = ad["decisions"]
    assert decisions and decisions[0]["position"] == 0
    for d in decisions:
        Decision.from_dict({k: v for k, v in d.items() if k != "position"})
    # the first step follows the chat prompt (no boundary): the target writes it
    assert r["steps"][0]["source"] == "target"
    if len(decisions) > 1:
        assert decisions[-1]["estimates"]["target_step_s"] != 1.0


def test_lr_adaptive_starts_from_the_estimates_an_earlier_run_recorded(real, tmp_path):
    """--adaptive-prior DIR on the real engines: the second run's Estimator starts from the first
    run's `adaptive.final`, read back from the trace directory as another process would, and says
    so."""
    first = tmp_path / "corpus" / "a.jsonl"
    r1 = _collect_here(real, first, mode="lr-adaptive")
    assert r1["adaptive"]["prior_from"] == "neutral" and r1["adaptive"]["final"]
    r2 = _collect_here(real, tmp_path / "b.jsonl", offset=1, mode="lr-adaptive",
                       adaptive_prior=str(first.parent))
    ad = r2["adaptive"]
    assert ad["prior_from"] == f"{first}:1" and ad["prior"] == r1["adaptive"]["final"]
    # one request in flight in both runs: the first decision's count is the prior's too
    assert ad["decisions"][0]["estimates"] == r1["adaptive"]["final"]


def test_calibrate_probe_rescales_a_corpus_profile(real, tmp_path, monkeypatch, run_lr):
    """`lr calibrate probe` on the module's engines: a corpus profile rescaled to this machine's
    speed now. The probe is the real one (lrreal.probe.probe_engines on the running target and
    draft, alone and side by side); what probe_machine adds around it - starting and stopping
    the engines as `lr collect` does - is the module's own start (its Collector), so the test
    hands the command the module's probe instead of a second engine start."""
    from lrreal import probe as probe_mod
    from lrsim.calib.calibrate import calibrate
    from lrsim.calib.profile import load_profile, save_profile
    from lrsim.calib.rescale import machine

    files = [str(ROOT / "traces/corpus/gsm8k" / f) for f in ("ar.jsonl", "lr-d2.jsonl")]
    if not all(Path(f).is_file() for f in files):
        pytest.skip("no corpus traces")
    col, loop, _ = real
    asked = []

    def probe_here(target, draft, target_cores, draft_cores, repeats, cache_dir):
        asked.append((target, draft, target_cores, draft_cores, repeats))
        probes = [loop.run_until_complete(probe_mod.probe_engines(col.pool.engines, salt=77 + i))
                  for i in range(repeats)]
        return probe_mod.summarize(probes, col.run_info["hardware"])

    monkeypatch.setattr(probe_mod, "probe_machine", probe_here)
    doc = calibrate(files, select_placement=False)
    doc["source"]["hardware"]["cpu_model"] = "Another CPU"   # not this machine: a warning
    src = save_profile(doc, tmp_path / "corpus.json")
    out = tmp_path / "today.json"
    code, stdout, err = run_lr("calibrate", "probe", "--profile", src, "-o", out, "--repeats", "1",
                               "--json")
    assert code == 0, err[-2000:]
    assert asked == [("target", "draft", "0", "1", 1)]       # the corpus's binding, both engines
    res = json.loads(stdout)
    before, after = load_profile(src), load_profile(out)
    for role in ("target", "draft"):
        f_dec, f_pre = res["factors"][role]["decode"], res["factors"][role]["prefill"]
        assert 0.2 < f_dec < 5 and 0.2 < f_pre < 5, res
        assert after.doc["latency"][role]["base_s"] == pytest.approx(
            before.doc["latency"][role]["base_s"] * f_dec)
        assert res["probe"]["engines"][role]["decode_s"] > 0
        assert res["probe"]["engines"][role]["contended_decode_s"] > 0   # side by side too
    # the corpus's traces predate the side-by-side probe: its contention stays as fitted
    assert res["contention"] == res["contention_measured"] == {} and "contention" not in after.doc["rescaled"]
    assert res["probe"]["cores"] == {"target": "0", "draft": "1"}
    assert after.doc["rescaled"]["factors"]["target"]["decode"] == res["factors"]["target"]["decode"]
    # the probe names this machine, which is not the profile's: the rescale is only the intercept
    here = machine(res["probe"]["hardware"])
    assert here and after.doc["rescaled"]["probe"]["hardware"] == res["probe"]["hardware"]
    assert res["warnings"] == [f"the profile describes Another CPU; this machine is {here}: a "
                               "probe carries a profile's speed within one machine model, not the "
                               "shape of its batch curve to another; calibrate on traces of that "
                               "machine"]


def test_lr_collect_against_a_faulty_judge_that_dies_mid_run(real, tmp_path):
    """`lr collect --mode lr-sync --verifier judge` on the real engines with a judge that never
    answers well (garbage or an HTTP error, then it dies on its second request): one valid
    record, every judged step rejected with its cause, and the summary `lr collect --json` prints
    (lrreal.summary.summarize of the file) counts them. lr-sync judges every drafted step; the
    boundary rule is off so that steps are drafted from the first one. (The judge faults one by
    one, on fake engines: tests/reliability/test_judge_faults.py.)"""
    import signal

    from lrreal.summary import summarize
    from tests.reliability.test_judge_faults import judge_checks, start_process

    stats = tmp_path / "judge.json"
    proc, url = start_process("--mode", "mixed", "--mix", "garbage=1,http-error=1", "--seed", "0",
                              "--die-after", "1", stats=stats)
    try:
        rec = _collect_here(real, tmp_path / "t.jsonl", mode="lr-sync", verifier="judge",
                            judge_url=url, boundary_rule=False, max_step_tokens=12,
                            temperature=0.8)   # sampled: drafts that differ from the target's steps
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=10)
    [row] = summarize([rec])
    checks = judge_checks([rec])
    assert checks, "no step reached the judge (every draft matched its target step exactly)"
    assert all(v["verdict"] is False and v["error"] for v in checks)
    assert row["verifications_failed"] == len(checks)
    assert set(row["verification_failures_by_cause"]) <= {"bad reply", "http", "connection"}
    served = json.loads(stats.read_text())["served"]
    assert "ok" not in served and sum(served.values()) >= 1
