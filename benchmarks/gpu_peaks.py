"""What one CUDA GPU reaches on the two simplest kernels: a device-to-device copy and a bf16 GEMM.

docs/gpu-latency-profile.md ("Roofline check and anomalies", benchmarks/bench_roofline.py) sets
the measured decode and prefill steps against these achievable peaks as well as the datasheet's:
a decode GEMV can at best stream its weights at copy speed, a prefill at best run at GEMM speed.

    python benchmarks/gpu_peaks.py --out benchmarks/results/h100_peaks.json   # ~10 s on an H100

Pure torch, CUDA only. Each kernel: WARMUP untimed calls, then REPS calls each between two
torch.cuda.Event's; the median is reported.
  copy  dst.copy_(src) of a COPY_GIB GiB bf16 buffer (far larger than the 50 MB L2, so it runs
        from and to HBM); bytes moved = read + written = 2 x the buffer
  gemm  torch.matmul of two GEMM_N x GEMM_N bf16 matrices into a preallocated output (large
        enough to be compute-bound); FLOPs = 2 x GEMM_N^3
"""
from __future__ import annotations

import argparse
import datetime
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

COPY_GIB = 2
GEMM_N = 8192
WARMUP, REPS = 5, 30


def timed_ms(torch, fn) -> list[float]:
    """Milliseconds of each of REPS calls, after WARMUP calls that let clocks and caches settle."""
    for _ in range(WARMUP):
        fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(REPS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        out.append(start.elapsed_time(end))
    return out


def copy_bandwidth(torch) -> dict:
    src = torch.ones(COPY_GIB << 29, dtype=torch.bfloat16, device="cuda")   # 2 bytes each
    dst = torch.empty_like(src)
    ms = statistics.median(timed_ms(torch, lambda: dst.copy_(src)))
    moved = 2 * src.numel() * src.element_size()
    return {"buffer_bytes": src.numel() * src.element_size(), "bytes_moved_per_call": moved,
            "reps": REPS, "ms_median": ms, "tb_s": moved / (ms * 1e-3) / 1e12}


def gemm_throughput(torch) -> dict:
    a, b = (torch.randn(GEMM_N, GEMM_N, dtype=torch.bfloat16, device="cuda") for _ in range(2))
    c = torch.empty_like(a)
    ms = statistics.median(timed_ms(torch, lambda: torch.matmul(a, b, out=c)))
    flops = 2 * GEMM_N ** 3
    return {"m": GEMM_N, "n": GEMM_N, "k": GEMM_N, "flops_per_call": flops, "reps": REPS,
            "ms_median": ms, "tflops": flops / (ms * 1e-3) / 1e12}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", help="write the result as JSON here (default: print only)")
    a = ap.parse_args(argv)
    try:
        import torch
    except ImportError:
        sys.exit("gpu_peaks: torch is not installed; run this on the CUDA machine")
    if not torch.cuda.is_available():
        sys.exit("gpu_peaks: no CUDA device (torch.cuda.is_available() is False); run this on a GPU machine")
    from gpu_latency_profile import env_info   # torch version, CUDA, device name, SMs, driver

    res = {"source": "benchmarks/gpu_peaks.py",
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "env": env_info(torch.device("cuda")), "copy": copy_bandwidth(torch),
           "gemm": gemm_throughput(torch)}
    text = json.dumps(res, indent=1) + "\n"
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text(text)
    print(text, end="")


if __name__ == "__main__":
    main()
