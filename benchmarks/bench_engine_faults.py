"""How long an engine or judge server that cannot start takes to say so (docs/reliability.md,
section 4): each fault run through a real `lr` process on the packaged models, timed from start to
its one-line error (Python start-up included), beside vLLM's own refusal of the same KV-cache fault
with the checks before start switched off (what a user waited for before them); and how long a
real `lr judge serve` (the packaged draft) takes to stop, with its whole process group, on SIGTERM
while serving and on SIGINT during start-up.

    .venv/bin/python benchmarks/bench_engine_faults.py [--out benchmarks/results/engine_faults.json]
    .venv/bin/python benchmarks/bench_engine_faults.py --render   # the .md from the .json

Run it alone (vLLM's refusal loads the target's weights; the others must not load anything).
A fault whose line is not the expected one, or whose exit code is not 2, stops the benchmark.
"""
from __future__ import annotations

import json
import os
import re
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from write import bench_main  # noqa: E402

LR = [sys.executable, "-c", "import cli; cli.main()"]
# vLLM's own refusal: the same KV fault as "kv-too-small" with lrreal's checks before start off.
VLLM_REFUSAL = """
import asyncio, sys
from lrreal import engine_checks
from lrreal.engine import EngineArgs, VllmEngine
from lrreal.lock import vllm_lock
from lrcore.errors import UserError
engine_checks.check_engine_fits = lambda *a, **k: None
eng = VllmEngine("target", EngineArgs(model=sys.argv[1], max_model_len=32768, kv_cache_space_gib=1))
async def start():
    try:
        eng.start()
    finally:
        eng.shutdown()
try:
    with vllm_lock():
        asyncio.run(start())
except UserError as e:
    print("lr: error: " + str(e).splitlines()[0], file=sys.stderr)
    sys.exit(2)
"""


def damaged_copy(target: Path, dest: Path, fault: str) -> Path:
    """The packaged target linked file by file into `dest`, one file damaged (or all removed)."""
    dest.mkdir()
    for f in target.iterdir():
        if f.name != "lr-model.json" and fault != "empty":
            (dest / f.name).symlink_to(f)
    if fault == "corrupt-config":
        (dest / "config.json").unlink()
        (dest / "config.json").write_text('{"model_type": "qwen2", "hidden_size": \n')
    elif fault == "truncated-weights":
        (dest / "model.safetensors").unlink()
        with open(target / "model.safetensors", "rb") as src:
            (dest / "model.safetensors").write_bytes(src.read(50_000_000))
    return dest


def faults(target: Path, draft: Path, tmp: Path, port: int) -> list[tuple[str, list, str, str]]:
    """(fault, argv, what the one line must contain, when it is caught) per fault."""
    collect = ["collect", "--mode", "ar", "--limit", "1", "--out", str(tmp / "t.jsonl"), "--json"]
    bad = {f: damaged_copy(target, tmp / f, f) for f in ("corrupt-config", "truncated-weights", "empty")}
    return [
        ("--target /nonexistent", collect + ["--target", "/nonexistent"], "no such folder", "before"),
        ("unknown model name", ["judge", "serve", "--model", "no-such-model"], "unknown model", "before"),
        ("corrupt config.json", collect + ["--target", str(bad["corrupt-config"])],
         "config.json is not valid JSON", "before"),
        ("truncated weights", collect + ["--target", str(bad["truncated-weights"])],
         "truncated: 50,000,000 of", "before"),
        ("empty model folder", collect + ["--target", str(bad["empty"])], str(bad["empty"]), "before"),
        ("--kv-cache-space 200", collect + ["--kv-cache-space", "200"], "not enough memory", "before"),
        ("--max-model-len 100000", collect + ["--max-model-len", "100000"],
         "more than the model's maximum context", "before"),
        ("KV cache too small for one request", collect + ["--kv-cache-space", "1", "--max-model-len", "32768"],
         "not enough KV cache for one request", "before"),
        ("judge serve --port P, P in use", ["judge", "serve", "--model", str(draft), "--port", str(port)],
         "is already in use", "before"),
        ("KV cache too small, vLLM's own refusal (checks off)", ["-c", VLLM_REFUSAL, str(target)],
         "not enough KV cache for one request", "vllm"),
    ]


def time_fault(argv: list, expect: str) -> tuple[float, str]:
    cmd = [sys.executable, *argv] if argv[0] == "-c" else LR + argv
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=600)
    dt = time.monotonic() - t0
    errors = [ln for ln in p.stderr.splitlines() if ln.startswith("lr: error: ")]
    if p.returncode != 2 or len(errors) != 1 or expect not in errors[0] or "Traceback" in p.stderr:
        raise SystemExit(f"bench_engine_faults: {argv[:3]}: exit {p.returncode}, expected one line "
                         f"with {expect!r}; stderr: {p.stderr.strip()[-400:]}")
    return dt, errors[0]


def read_line(proc: subprocess.Popen, stream, timeout_s: float) -> str:
    """The next line `proc` writes to `stream` ('' when it exits or `timeout_s` passes)."""
    deadline, buf = time.monotonic() + timeout_s, b""
    while time.monotonic() < deadline and proc.poll() is None:
        if select.select([stream], [], [], 0.5)[0]:
            ch = os.read(stream.fileno(), 1)
            if not ch:
                break
            buf += ch
            if ch == b"\n":
                break
    return buf.decode()


def time_stop(draft: Path, sig: signal.Signals, serving: bool) -> float:
    """Seconds from `sig` to a clean exit (0, the stop line last, no live process left in the
    server's group) of `lr judge serve`: once it serves (`serving`), or 3 s into the server's start-up."""
    from lrreal.judge_server import _group_alive

    args = LR + ["judge", "serve", "--model", str(draft), "--kv-cache-space", "1", "--max-model-len",
                 "1024", "--max-num-seqs", "2", "--json"]
    proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        if serving:
            server = json.loads(read_line(proc, proc.stdout, 900) or "{}").get("pid")
        else:
            line = read_line(proc, proc.stderr, 300)
            while line and "judge: vllm serve" not in line:   # past "waiting for the lock"
                line = read_line(proc, proc.stderr, 300)
            server = int(line.split("(pid ", 1)[1].split(",")[0]) if "(pid " in line else None
            time.sleep(3.0)
        if server is None:
            raise SystemExit(f"bench_engine_faults: the judge server did not start: "
                             f"{proc.stderr.read().decode()[-400:] if proc.poll() is not None else 'no line'}")
        t0 = time.monotonic()
        proc.send_signal(sig)
        code = proc.wait(120)
        dt = time.monotonic() - t0
        last = proc.stderr.read().decode().strip().splitlines()[-1:]
        want = f"judge: stopped on {sig.name}; the server and its processes have exited"
        alive = _group_alive(server)
        if code != 0 or last != [want] or alive:
            raise SystemExit(f"bench_engine_faults: judge {sig.name}: exit {code}, last line {last}, "
                             f"server group alive: {alive}")
        return dt
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


def measure() -> dict:
    from lrreal import models
    from lrreal.binding import hardware

    cache = models.cache_dir()
    target, draft = models.prepare("target", cache), models.prepare("draft", cache)
    rows = []
    with tempfile.TemporaryDirectory() as d, socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        for name, argv, expect, when in faults(target, draft, Path(d), busy.getsockname()[1]):
            dt, line = time_fault(argv, expect)
            print(f"{dt:6.1f} s  {name}", flush=True)
            rows.append({"fault": name, "caught": when, "seconds": round(dt, 2),
                         "line": re.sub(re.escape(d), "<tmp>", line)})
    stops = []
    for sig, serving, when in ((signal.SIGTERM, True, "while serving"), (signal.SIGINT, False, "during start-up")):
        dt = time_stop(draft, sig, serving)
        print(f"{dt:6.1f} s  judge serve {sig.name} {when}", flush=True)
        stops.append({"signal": sig.name, "when": when, "seconds": round(dt, 2)})
    return {"cpu_model": hardware().get("cpu_model", "unknown"), "date": time.strftime("%Y-%m-%d"),
            "faults": rows, "judge_stops": stops}


def summary(doc: dict) -> str:
    """The one-line figure the README's reliability table and docs/reliability.md's row 4 carry."""
    before = [r["seconds"] for r in doc["faults"] if r["caught"] == "before"]
    vllm = [r["seconds"] for r in doc["faults"] if r["caught"] == "vllm"]
    return (f"{len(before)} faults caught before anything loads in {min(before):.1f}-{max(before):.1f} s; "
            f"vLLM's own refusal of the KV fault, the checks off: {max(vllm):.1f} s")


def render(doc: dict) -> str:
    lines = [f"Time to the one-line error (`benchmarks/bench_engine_faults.py`, {doc['date']}, "
             f"{doc['cpu_model']}; a real `lr` process each, Python start-up included): "
             f"{summary(doc)}.", "", "| fault | caught | time to error s |", "|---|---|---|"]
    for r in doc["faults"]:
        caught = "before loading" if r["caught"] == "before" else "by vLLM"
        lines.append(f"| {r['fault']} | {caught} | {r['seconds']:.1f} |")
    stops = ", ".join(f"{s['signal']} {s['when']} {s['seconds']:.1f} s" for s in doc["judge_stops"])
    lines += ["", f"`lr judge serve` (the packaged draft) stopped cleanly, exit 0 and no process left in "
              f"its group: {stops}."]
    return "\n".join(lines) + "\n"


def main() -> None:
    bench_main(__doc__, "engine_faults", measure, render, "engine start")


if __name__ == "__main__":
    main()
