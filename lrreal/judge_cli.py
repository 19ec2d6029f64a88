"""`lr judge serve|ask`: run the LLM judge server, and ask a running one about two steps."""
from __future__ import annotations

import asyncio
import signal
import sys
import time
from typing import Optional

import typer

from lrcore import jsonout
from lrcore.cliopts import JSON


app = typer.Typer(help="LLM judge for step verification: `vllm serve` on loopback, and a client.",
                  no_args_is_help=True)


class _Stop(Exception):
    pass


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _on_stop_signal(signum, frame):
    """First SIGINT/SIGTERM/SIGHUP: stop. Further ones are ignored so they cannot cut the
    server's shutdown short (it is bounded: SIGTERM, then SIGKILL after a grace period)."""
    for s in STOP_SIGNALS:
        signal.signal(s, signal.SIG_IGN)
    raise _Stop(signal.Signals(signum).name)


@app.command()
def serve(
    model: str = typer.Option(..., "--model", help="Packaged model name/alias (draft, target) or a "
                              "local Hugging Face folder."),
    port: int = typer.Option(0, "--port", min=0, max=65535, help="Loopback port; 0 = a free one."),
    dtype: str = typer.Option("float32", "--dtype", help="vLLM --dtype (float32 is fastest on these CPUs)."),
    max_model_len: int = typer.Option(2048, "--max-model-len", min=256, max=1 << 20,
                                       help="vLLM --max-model-len."),
    kv_cache_space: float = typer.Option(1.0, "--kv-cache-space", min=0.25, max=1024.0,
                                         help="GiB of KV cache (vLLM --kv-cache-memory-bytes; fractions allowed)."),
    max_num_seqs: int = typer.Option(16, "--max-num-seqs", min=1, max=4096, help="vLLM --max-num-seqs."),
    startup_timeout: float = typer.Option(600.0, "--startup-timeout", min=1.0, max=86400.0,
                                          help="Seconds to wait for /health."),
    log_file: Optional[str] = typer.Option(None, "--log-file", help="Server log (default: a temp file)."),
    api_key: Optional[str] = typer.Option(None, "--api-key", envvar="LR_JUDGE_API_KEY", show_envvar=True,
                                          help="Require this key (vLLM's --api-key: `Authorization: Bearer KEY` "
                                               "on /v1/*); clients send $LR_JUDGE_API_KEY."),
    tensor_parallel_size: int = typer.Option(1, "--tensor-parallel-size", min=1, max=1024, help="GPUs: vLLM's --tensor-parallel-size."),
    gpu_memory_utilization: Optional[float] = typer.Option(None, "--gpu-memory-utilization", help="GPUs: vLLM's --gpu-memory-utilization (share of each GPU; default 0.9)."),
    devices: Optional[str] = typer.Option(None, "--devices", help="GPUs: the server's CUDA_VISIBLE_DEVICES, e.g. 3 (the paper: the judge on its own GPU)."),
    as_json: bool = JSON,
):
    """Start a judge (`vllm serve` on 127.0.0.1), print its URL, serve until Ctrl-C/SIGTERM.

    Waits until /health answers; holds /tmp/lr-vllm.lock while the server lives; stopping
    terminates the server's whole process group."""
    from .engine import check_dtype
    from .judge_server import JudgeServer, JudgeServerConfig
    from .verifiers.judge import check_api_key

    from .engine import check_gpu_layout

    check_dtype(dtype)
    check_api_key(api_key or None, "--api-key")
    cfg = JudgeServerConfig(model, port=port, dtype=dtype, max_model_len=max_model_len,
                            kv_cache_space_gib=kv_cache_space, max_num_seqs=max_num_seqs,
                            startup_timeout_s=startup_timeout, log_path=log_file,
                            api_key=api_key or None, tensor_parallel_size=tensor_parallel_size,
                            gpu_memory_utilization=gpu_memory_utilization, devices=devices)
    check_gpu_layout({"judge": (cfg.engine_args(), "--", "--devices")})   # before any wait or load
    srv = JudgeServer(cfg)
    previous = {s: signal.signal(s, _on_stop_signal) for s in STOP_SIGNALS}
    stopped_by = None
    try:
        srv.start()
        info = {"url": srv.url, "model": str(srv.model_path), "served_model_name": "judge",
                "pid": srv.proc.pid, "log": str(srv.log_path), "startup_s": round(srv.startup_s, 1)}
        if as_json:
            print(jsonout.dumps(info), flush=True)
        else:
            print(f"judge ready at {srv.url} (model {srv.model_path.name}, started in "
                  f"{srv.startup_s:.0f} s, log {srv.log_path})", flush=True)
            print(f"use: lr collect ... --verifier judge --judge-url {srv.url}   (Ctrl-C stops it)"
                  + ("; clients need LR_JUDGE_API_KEY set to the key" if api_key else ""), flush=True)
        while srv.alive():
            time.sleep(1.0)
        tail = " | ".join(srv.log_tail(3))
        from lrcore.errors import UserError

        raise UserError(f"judge server exited unexpectedly; log {srv.log_path}; last lines: {tail}")
    except _Stop as e:
        stopped_by = str(e)
    finally:
        for s in STOP_SIGNALS:  # the shutdown below must run to its end
            signal.signal(s, signal.SIG_IGN)
        srv.stop()
        for s, h in previous.items():
            signal.signal(s, h)
    if stopped_by:
        print(f"judge: stopped on {stopped_by}; the server and its processes have exited",
              file=sys.stderr, flush=True)


@app.command()
def ask(
    target: str = typer.Option(..., "--target", help="The target's step (s1)."),
    draft: str = typer.Option(..., "--draft", help="The draft's step (s2)."),
    judge_url: str = typer.Option(..., "--judge-url", help="http://HOST:PORT of a running judge."),
    verifier: str = typer.Option("judge", "--verifier", help="judge or judge-logprob[:T] "
                                 "(also exact, embedding[:T], random[:P])."),
    judge_timeout: float = typer.Option(30.0, "--judge-timeout", min=0.01, max=3600.0, help="Seconds per attempt."),
    judge_retries: int = typer.Option(2, "--judge-retries", min=0, max=100, help="Extra attempts on failure."),
    judge_prompt: str = typer.Option("default", "--judge-prompt", help="Judge prompt template: default | paper | FILE.json (see lr collect)."),
    no_shortcut: bool = typer.Option(False, "--no-shortcut", help="Skip the exact-match shortcut."),
    as_json: bool = JSON,
):
    """Ask a verifier whether two steps agree (a quick check of a judge server)."""
    from .verifiers import load_judge_prompt, make_verifier

    prompt = load_judge_prompt(judge_prompt)  # checked whatever the verifier
    v = make_verifier(verifier, judge_url=judge_url, judge_timeout_s=judge_timeout,
                      judge_retries=judge_retries, shortcut=not no_shortcut, judge_prompt=prompt)

    async def once():
        try:
            return await v.verify(target, draft)
        finally:
            await v.aclose()

    r = asyncio.run(once())
    out = r.as_dict() | {"duration_s": r.duration_s}
    if getattr(v, "prompt", None) is not None:  # an LLM judge: the template it was asked with
        out["judge_prompt"] = v.prompt.describe()
    if as_json:
        print(jsonout.dumps(out))
        return
    word = "accepted" if r.accepted else "rejected"
    extra = f", score {r.score:.3f}" if r.score is not None else ""
    extra += ", exact-match shortcut" if r.shortcut else ""
    extra += f", error: {r.error}" if r.error else ""
    from lrcore.tables import plain

    print(plain(f"{word} by {r.method} in {r.duration_s * 1000:.0f} ms{extra}"))  # server text


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="judge")
