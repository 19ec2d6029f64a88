"""Two engines on one GPU: does the driver alternate their steps, as the simulator's shared
placement assumes, or slice time between them? (docs/planning.md, Limits.)

    python benchmarks/gpu_time_slicing.py --out benchmarks/results/gpu_time_slicing.json  # ~1 min

Two processes (no MPS), memory-bound stand-ins of a target and a draft: each loops a GEMV over a
bf16 weight matrix as large as its model's bytes per decode step (default: the 32B target's
TP = 2 shard, 32e9 * 2 bytes / 2, and a 1.5B draft, 1.5e9 * 2 bytes), every step synchronised and
timed. First each alone (the other process idle), then both together, released by one barrier and
run for the same wall time. Per role, the median step alone and together, against the two models:

  alternation   the simulator's shared device (lrsim/sim/devices.py): the engines take whole
                iterations in turn, so while both are busy a step waits for the other's:
                together = alone + the other's alone
  bandwidth     both stream at once and split the memory bandwidth: a step of B bytes takes
                alone * (B_self + B_other) / B_self while the other streams too (an upper bound
                where the other's steps stop short of covering it)

`--device cpu` runs the same on the CPU (float32, small matrices) as a smoke test of the script;
its figures say nothing about a GPU. Writes --out (.json) and the .md beside it.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import queue
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

ROLES = ("target", "draft")
COLS = 8192                 # GEMV width: a weight matrix of rows x COLS elements
TARGET_GB = 32e9 * 2 / 2 / 1e9    # 32B parameters, bf16, split over TP = 2
DRAFT_GB = 1.5e9 * 2 / 1e9        # 1.5B parameters, bf16
SECONDS = 10.0              # wall time of each phase (alone per role, together)
WARMUP = 5                  # untimed steps before each phase


def worker(role: str, gb: float, device: str, barrier, seconds: float, out) -> None:
    """Allocate `gb` of weights, then per phase: wait at the barrier, loop GEMVs for `seconds`."""
    import torch

    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    rows = max(1, int(gb * 1e9 / (COLS * torch.finfo(dtype).bits // 8)))
    w = torch.empty(rows, COLS, dtype=dtype, device=device).normal_()
    x = torch.ones(COLS, dtype=dtype, device=device)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    for phase in ("target", "draft", "together"):
        barrier.wait()
        steps = []
        if phase in (role, "together"):
            for _ in range(WARMUP):
                torch.mv(w, x)
            sync()
            end = time.perf_counter() + seconds
            while time.perf_counter() < end:
                t0 = time.perf_counter()
                torch.mv(w, x)
                sync()
                steps.append(time.perf_counter() - t0)
        out.put((role, phase, steps, rows * COLS * torch.finfo(dtype).bits // 8))
        barrier.wait()


def measure(device: str, gbs: dict, seconds: float) -> dict:
    ctx = mp.get_context("spawn")           # CUDA cannot be forked
    barrier, out = ctx.Barrier(len(ROLES)), ctx.Queue()
    procs = [ctx.Process(target=worker, args=(r, gbs[r], device, barrier, seconds, out)) for r in ROLES]
    for p in procs:
        p.start()
    got, deadline = [], time.monotonic() + 600 + 3 * (seconds + 10)   # start-up + three phases
    while len(got) < 3 * len(ROLES):
        try:
            got.append(out.get(timeout=1.0))
        except queue.Empty:   # a worker that died (out of memory, say) leaves the other at the barrier
            dead = [r for r, p in zip(ROLES, procs) if p.exitcode not in (None, 0)]
            if dead or time.monotonic() > deadline:
                for p in procs:
                    p.kill()
                why = f"the {dead[0]} process exited" if dead else "the workers stopped reporting"
                sys.exit(f"gpu_time_slicing: {why} (see its error above)")
    for p in procs:
        p.join(timeout=60)
        if p.exitcode != 0:
            sys.exit(f"gpu_time_slicing: the {ROLES[procs.index(p)]} process exited with {p.exitcode}")
    alone = {r: statistics.median(s) for r, ph, s, _ in got if ph == r}
    both = {r: statistics.median(s) for r, ph, s, _ in got if ph == "together"}
    count = {r: len(s) for r, ph, s, _ in got if ph == "together"}
    nbytes = {r: b for r, ph, s, b in got if ph == r}
    rows = {}
    for r in ROLES:
        o = ROLES[1 - ROLES.index(r)]
        rows[r] = {"bytes": nbytes[r], "alone_ms": 1e3 * alone[r], "together_ms": 1e3 * both[r],
                   "steps_together": count[r], "slowdown": both[r] / alone[r],
                   "alternation_ms": 1e3 * (alone[r] + alone[o]),
                   "bandwidth_ms": 1e3 * alone[r] * (nbytes[r] + nbytes[o]) / nbytes[r]}
    return rows


def render(doc: dict) -> str:
    lines = [f"Two processes on one {doc['device_name']} (no MPS), each looping a GEMV over its "
             f"model's bytes per decode step, {doc['seconds']:g} s a phase; median step.", "",
             "| role | weights GB | alone ms | together ms | slowdown | alternation predicts ms | "
             "bandwidth split predicts ms |", "|---|---|---|---|---|---|---|"]
    for r, x in doc["roles"].items():
        lines.append(f"| {r} | {x['bytes'] / 1e9:.2f} | {x['alone_ms']:.3f} | {x['together_ms']:.3f} | "
                     f"{x['slowdown']:.2f}x | {x['alternation_ms']:.3f} | {x['bandwidth_ms']:.3f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    ap.add_argument("--target-gb", type=float, default=TARGET_GB)
    ap.add_argument("--draft-gb", type=float, default=DRAFT_GB)
    ap.add_argument("--seconds", type=float, default=SECONDS)
    ap.add_argument("--out", default="benchmarks/results/gpu_time_slicing.json")
    a = ap.parse_args()
    if min(a.target_gb, a.draft_gb, a.seconds) <= 0:
        sys.exit("gpu_time_slicing: --target-gb, --draft-gb and --seconds must be > 0")
    import torch

    if a.device == "cuda" and not torch.cuda.is_available():
        sys.exit("gpu_time_slicing: no CUDA device (use --device cpu for a smoke run)")
    name = torch.cuda.get_device_name(0) if a.device == "cuda" else "CPU"
    doc = {"device": a.device, "device_name": name, "seconds": a.seconds, "cols": COLS,
           "roles": measure(a.device, {"target": a.target_gb, "draft": a.draft_gb}, a.seconds)}
    from benchmarks.write import write_results

    path = write_results(a.out, doc, render)
    print(path.with_suffix(".md").read_text(), end="")


if __name__ == "__main__":
    main()
