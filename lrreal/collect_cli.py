"""`lr collect`: run a data set through ar / sd / lr / lr+sd / lr-sync / lr-adaptive /
lr+sd-adaptive on real vLLM engines, or measure step acceptance with the acceptance protocol
(accept)."""
from __future__ import annotations

from typing import List, Optional

import typer

from lrcore import jsonout
from lrcore.cliopts import JSON
from lrcore.limits import MAX_NUM_SEQS


def collect_cmd(
    mode: str = typer.Option("lr", "--mode", help="ar | sd | lr | lr+sd | lr-sync | lr-adaptive | lr+sd-adaptive (depth and width chosen before each speculation, up to --depth and --width; 0 = the target alone) | accept (step acceptance: both models write each step, the verifier judges it, the target's is kept)"),
    dataset: str = typer.Option("gsm8k", "--dataset", help="gsm8k | aime2025 | gpqa | humaneval | PATH.jsonl"),
    limit: Optional[int] = typer.Option(2, "--limit", min=1, help="Number of problems."),
    offset: int = typer.Option(0, "--offset", min=0, help="Skip this many problems first."),
    samples: int = typer.Option(1, "--samples", min=1, max=100_000, help="Samples per problem."),
    depth: int = typer.Option(4, "--depth", min=1, max=64, help="LR tree depth (lr-sync: drafted steps per cycle; adaptive modes: the deepest they may choose)."),
    width: int = typer.Option(1, "--width", min=1, max=16, help="Child drafts per tree node (>1 needs sampling; adaptive modes: the widest they may choose)."),
    verifier: str = typer.Option("exact", "--verifier", help="exact | embedding[:T] | random[:P] | judge | judge-logprob[:T] | score[:T] (the target scores the drafted step 0-9, accept >= T, default 7)"),
    judge_url: Optional[str] = typer.Option(None, "--judge-url", help="OpenAI-compatible judge server (lr judge serve)."),
    judge_timeout: float = typer.Option(30.0, "--judge-timeout", min=0.01, max=3600.0, help="Seconds per judge attempt (the whole reply)."),
    judge_retries: int = typer.Option(2, "--judge-retries", min=0, max=100, help="Extra judge attempts on timeouts, 5xx, 429, refused connections."),
    judge_prompt: str = typer.Option("default", "--judge-prompt", help="Judge prompt template: default | paper (the paper's protocol, steps between <s1>/<s2> markers) | FILE.json."),
    max_tokens: int = typer.Option(512, "--max-tokens", min=1, max=1_000_000, help="Total output budget per problem (cut exactly)."),
    max_step_tokens: int = typer.Option(100, "--max-step-tokens", min=1, max=1_000_000, help="A step ends at a stop string (--step-stop) or after this many tokens (reference: 100)."),
    boundary_rule: bool = typer.Option(True, "--boundary-rule/--no-boundary-rule", help="Draft only after a context ending in a stop string (reference)."),
    step_stop: Optional[List[str]] = typer.Option(None, "--step-stop", help="A step ends at this string (repeatable; escapes such as \\n decoded; default \\n\\n, a blank line, as in the paper)."),
    judge_timing: str = typer.Option("eager", "--judge-timing", help="lr/lr+sd: eager judges a draft as soon as it and its parent's target step exist (reference); deferred: once the parent is the root."),
    seed: int = typer.Option(0, "--seed", help="Run seed; per-request seeds derive from it."),
    temperature: float = typer.Option(0.0, "--temperature", min=0.0, max=100.0, help="0 = greedy (paper: 0.6)."),
    top_p: float = typer.Option(1.0, "--top-p", min=0.0, max=1.0),
    top_k: int = typer.Option(0, "--top-k", min=0, max=1_000_000, help="0 = off."),
    out: str = typer.Option("traces.jsonl", "--out", help="Trace file (JSONL, appended)."),
    resume: bool = typer.Option(False, "--resume", help="Continue an existing trace file, skipping finished records."),
    target: str = typer.Option("target", "--target", help="Target model: packaged name/alias or local HF folder."),
    draft: str = typer.Option("draft", "--draft", help="Draft model: packaged name/alias or local HF folder."),
    cache_dir: Optional[str] = typer.Option(None, "--cache-dir", help="Model cache (default $LR_CACHE_DIR or ~/.cache/lr-toolkit)."),
    dtype: str = typer.Option("float32", "--dtype", help="vLLM dtype (float32 is fastest on these CPUs)."),
    max_model_len: int = typer.Option(4096, "--max-model-len", min=64, max=10_000_000),
    kv_cache_space: int = typer.Option(2, "--kv-cache-space", min=1, max=1024, help="GiB of KV cache per engine (VLLM_CPU_KVCACHE_SPACE)."),
    enable_prefix_caching: bool = typer.Option(True, "--enable-prefix-caching/--no-enable-prefix-caching"),
    block_size: int = typer.Option(32, "--block-size", min=32, max=4096, help="KV block size = prefix-cache granularity (multiple of 32 on CPU)."),
    max_num_seqs: int = typer.Option(32, "--max-num-seqs", min=1, max=MAX_NUM_SEQS, help="Sequences per engine pass, each engine (vLLM's flag; recorded, calibrated as the profile's cap)."),
    num_speculative_tokens: int = typer.Option(6, "--num-speculative-tokens", min=1, max=64, help="n-gram SD tokens (sd, lr+sd)."),
    prompt_lookup_max: int = typer.Option(2, "--prompt-lookup-max", min=1, max=64, help="n-gram SD lookup size."),
    target_cores: str = typer.Option("auto", "--target-cores", help="VLLM_CPU_OMP_THREADS_BIND of the target engine (auto: all cores alone, 3/4 beside a draft)."),
    draft_cores: str = typer.Option("auto", "--draft-cores", help="VLLM_CPU_OMP_THREADS_BIND of the draft engine (auto: the remaining cores)."),
    execute_code: bool = typer.Option(False, "--execute-code", help="Grade HumanEval by running its tests, in a sandbox (Linux namespaces via util-linux unshare)."),
    tensor_parallel_size: int = typer.Option(1, "--tensor-parallel-size", min=1, max=1024, help="GPUs: the target engine's tensor parallelism (vLLM's flag; paper: 2)."),
    draft_tensor_parallel_size: int = typer.Option(1, "--draft-tensor-parallel-size", min=1, max=1024, help="GPUs: the draft engine's tensor parallelism."),
    gpu_memory_utilization: Optional[float] = typer.Option(None, "--gpu-memory-utilization", help="GPUs: the target's share of each of its GPUs' memory (vLLM's flag; default 0.9)."),
    draft_gpu_memory_utilization: Optional[float] = typer.Option(None, "--draft-gpu-memory-utilization", help="GPUs: the draft's share (engines on one GPU must sum to <= 1)."),
    target_devices: Optional[str] = typer.Option(None, "--target-devices", help="GPUs of the target engine, e.g. 0,1 (its CUDA_VISIBLE_DEVICES)."),
    draft_devices: Optional[str] = typer.Option(None, "--draft-devices", help="GPUs of the draft engine, e.g. 2."),
    probe: bool = typer.Option(True, "--probe/--no-probe", help="Time a reference pass per engine around each record (~5 s; lets calibration correct for machine speed); under load once, before the run."),
    concurrency: int = typer.Option(1, "--concurrency", min=1, max=256, help="Requests in flight on the same engines (closed loop; with --request-rate: the cap)."),
    request_rate: Optional[float] = typer.Option(None, "--request-rate", "--rate", min=0.0001, max=1e6, help="Requests/s, seeded Poisson arrivals (vLLM bench's name; default: all at once)."),
    equal_resources: bool = typer.Option(False, "--equal-resources", help="ar/sd: give the target the cores lr gives target and draft (the equal-resources baseline)."),
    adaptive_prior: Optional[str] = typer.Option(None, "--adaptive-prior", help="lr-adaptive: start the estimates from a JSON file of them, the last lr-adaptive record of a trace file, or of the newest file in a trace directory (none there: neutral)."),
    as_json: bool = JSON,
):
    """Run problems through a mode on real engines; write one trace record per (problem, sample, mode)."""
    from lrcore.errors import UserError

    from .collect import CollectSpec, collect
    from .summary import summarize
    from .scheduler.steps import DEFAULT_STEP_STOP, decode_escapes
    from .shutdown import Interrupted
    from lrcore.traces import read_traces

    stops = tuple(decode_escapes(s, "--step-stop") for s in step_stop) if step_stop else DEFAULT_STEP_STOP
    spec = CollectSpec(mode=mode, dataset=dataset, limit=limit, offset=offset, samples=samples,
                       depth=depth, width=width, verifier=verifier, judge_url=judge_url,
                       judge_timeout_s=judge_timeout, judge_retries=judge_retries,
                       judge_prompt=judge_prompt, step_stop=stops,
                       max_tokens=max_tokens, max_step_tokens=max_step_tokens,
                       boundary_rule=boundary_rule, judge_timing=judge_timing, seed=seed,
                       temperature=temperature,
                       top_p=top_p, top_k=top_k, out=out, resume=resume, target=target, draft=draft,
                       cache_dir=cache_dir, dtype=dtype, max_model_len=max_model_len,
                       kv_cache_space_gib=kv_cache_space, enable_prefix_caching=enable_prefix_caching,
                       block_size=block_size, max_num_seqs=max_num_seqs,
                       num_speculative_tokens=num_speculative_tokens,
                       prompt_lookup_max=prompt_lookup_max, target_cores=target_cores,
                       draft_cores=draft_cores, execute_code=execute_code, probe=probe,
                       tensor_parallel_size=tensor_parallel_size,
                       draft_tensor_parallel_size=draft_tensor_parallel_size,
                       gpu_memory_utilization=gpu_memory_utilization,
                       draft_gpu_memory_utilization=draft_gpu_memory_utilization,
                       target_devices=target_devices, draft_devices=draft_devices,
                       concurrency=concurrency, request_rate=request_rate,
                       equal_resources=equal_resources, adaptive_prior=adaptive_prior)
    spec.validate()  # flags refused before anything slow (data set, trace file, lock, engines)

    try:
        summary = collect(spec) if as_json else _collect_with_progress(spec, collect)
    except Interrupted as e:  # engines are stopped by now; one line and 130 / 143
        written = e.summary.written if e.summary else 0
        err = UserError(f"interrupted by {e.name}: engines stopped; the {written} record(s) written "
                        f"this run are kept in {out}; run again with --resume to continue")
        err.exit_code = e.exit_code
        raise err from None
    rows = summarize(read_traces(out)) if summary.written or summary.skipped else []
    result = {"out": out, "written": summary.written, "skipped": summary.skipped,
              "failed": summary.failed, "summary": rows}
    if as_json:
        print(jsonout.dumps(result))
    else:
        _print_summary(result)
    if summary.failed:
        raise typer.Exit(1)


def _collect_with_progress(spec, collect):
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    state = {"tokens": 0, "wall": 0.0, "prop": 0, "acc": 0}
    from lrcore.tables import plain

    # the data set may be a path: shown as text (no markup, no format fields, control characters
    # escaped), never parsed
    cols = [TextColumn("{task.description}", markup=False, style="bold"), BarColumn(), MofNCompleteColumn(),
            TextColumn("{task.fields[tps]} tok/s"), TextColumn("accept {task.fields[acc]}"),
            TimeElapsedColumn()]
    with Progress(*cols, transient=False) as bar:
        task = bar.add_task(plain(f"{spec.mode} {spec.dataset}"), total=None, tps="-", acc="-")

        def on_start(total, skipped):
            bar.update(task, total=total, completed=skipped)

        def on_record(rec):
            state["tokens"] += rec["output_tokens"]
            state["wall"] += rec["wall_time_s"]
            state["prop"] += rec["step_acceptance"]["proposed"]
            state["acc"] += rec["step_acceptance"]["accepted"]
            tps = f"{state['tokens'] / state['wall']:.2f}" if state["wall"] else "-"
            acc = f"{state['acc'] / state['prop']:.2f}" if state["prop"] else "-"
            bar.update(task, advance=1, tps=tps, acc=acc)

        return collect(spec, on_record=on_record, on_start=on_start)


def _print_summary(result: dict) -> None:
    from lrcore.tables import console, styled, table

    con = console()
    con.print(f"wrote {result['written']} record(s) to {result['out']} "
              f"(skipped {result['skipped']} already recorded)")
    for f in result["failed"]:
        con.print(styled(("failed", "red"), f" {f['problem_id']} sample {f['sample']}: {f['error']}"))
    if not result["summary"]:
        return
    # Two-line headers and the failures' causes under the table: 8 columns fit in 80.
    t = table(f"Summary of {result['out']}",
              ("mode", "records", "accuracy", "tok/s", "speedup\nvs AR", "step\naccept", "SD\naccept",
               "verify\nfailed"), text=("mode",))
    fmt = lambda v, f="{:.3f}": "-" if v is None else f.format(v)
    for r in result["summary"]:
        t.add_row(r["mode"], str(r["records"]), fmt(r["accuracy"], "{:.1%}"), fmt(r["tokens_per_s"], "{:.2f}"),
                  fmt(r["speedup_vs_ar"], "{:.2f}x"), fmt(r["step_acceptance"]), fmt(r["sd_acceptance"]),
                  _failed_cell(r))
    con.print(t)
    causes = [f"{r['mode']}: {c}" for r in result["summary"] if (c := _failure_causes(r))]
    if causes:
        con.print("verify failed by cause: " + "; ".join(causes))
    for r in result["summary"]:
        if ld := r.get("load"):
            rate = f", {'/'.join(f'{x:g}' for x in ld['request_rate'])} req/s" if ld["request_rate"] else ""
            con.print(f"{r['mode']} under load (concurrency {'/'.join(map(str, ld['concurrency']))}{rate}): "
                      f"p50 TTFT {_s(ld['ttft_p50_s'])}, TPOT {_s(ld['tpot_p50_s'])}, "
                      f"queue {_s(ld['queue_p50_s'])}, latency {_s(ld['latency_p50_s'])}")
    groups = [g for r in result["summary"] for g in r.get("step_acceptance_by_verifier_dataset") or []]
    if groups:
        from lrcore.acceptance import format_estimate

        con.print("accept mode: step acceptance per judged draft (alpha1), 95% Wilson interval:")
        for g in groups:
            con.print(f"  {g['verifier']}, {g['dataset']}: {format_estimate(g)}")


def _s(v) -> str:
    return "-" if v is None else f"{v:.2f} s"


def _failed_cell(row: dict) -> str:
    """"3/41": failed verifications (each recorded as a rejection) of all verifications."""
    if not row.get("verifications"):
        return "-"
    return f"{row['verifications_failed']}/{row['verifications']}"


def _failure_causes(row: dict) -> str:
    """"timeout 2, http 1": the failed verifications by cause ("" if none)."""
    if not row.get("verifications"):
        return ""
    return ", ".join(f"{k} {v}" for k, v in sorted(row["verification_failures_by_cause"].items()))


def register(app: typer.Typer) -> None:
    app.command("collect")(collect_cmd)
