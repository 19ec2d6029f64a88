"""The machine an `lr collect` run uses: which cores each engine is bound to (vLLM on CPU pins its
OpenMP threads, VLLM_CPU_OMP_THREADS_BIND), the Intel OpenMP preload, and the hardware a run
records. Two engines running at once get disjoint cores; the equal-resources baseline gives the
target the union of both."""
from __future__ import annotations

import os
import platform
import re
from pathlib import Path

from lrcore.errors import UserError
from lrcore.modes import DRAFT_MODES

IOMP_LIB = "libiomp5.so"  # Intel OpenMP bundled in the venv: ~1.7x faster CPU decode here


def check_cores(flag: str, cores: str) -> None:
    """VLLM_CPU_OMP_THREADS_BIND syntax: auto, nobind, or CPU ids/ranges ("0-2,5", "|" per rank)
    on CPUs this machine has; vLLM would only fail inside the engine core."""
    if cores in ("auto", "nobind"):
        return
    ncpu = os.cpu_count() or 1
    ok = bool(re.fullmatch(r"\d+(-\d+)?(,\d+(-\d+)?)*(\|\d+(-\d+)?(,\d+(-\d+)?)*)*", cores))
    ids = [int(x) for x in re.findall(r"\d+", cores)] if ok else []
    if not ok or max(ids) >= ncpu:
        raise UserError(f"{flag} {cores!r}: use auto, nobind or CPU ids like 0-{ncpu - 1} "
                        f"(this machine has CPUs 0-{ncpu - 1})")


ISA_FLAGS = {"avx", "avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni", "amx_tile", "amx_bf16"}


def cpu_identity(cpuinfo: str) -> dict:
    """The first CPU of /proc/cpuinfo: its model name, and (a virtual machine may name every host
    generation alike, "AMD EPYC") its family, model and the vector units the engines' kernels use,
    which tell hosts of one name apart."""
    first = cpuinfo.split("\n\n", 1)[0]
    cpu = {k.strip(): v.strip() for k, _, v in (ln.partition(":") for ln in first.splitlines())}
    info = {}
    if "model name" in cpu:
        info["cpu_model"] = cpu["model name"]
    if "cpu family" in cpu:
        info["cpu_id"] = f"family {cpu['cpu family']} model {cpu.get('model', '?')} " \
                         f"stepping {cpu.get('stepping', '?')}"
    if "flags" in cpu:
        info["cpu_isa"] = sorted(set(cpu["flags"].split()) & ISA_FLAGS)
    return info


def hardware() -> dict:
    info = {"platform": platform.platform(), "machine": platform.machine(),
            "cpus": os.cpu_count(), "python": platform.python_version()}
    try:
        info |= cpu_identity(Path("/proc/cpuinfo").read_text())
        mem = Path("/proc/meminfo").read_text().split("\n", 1)[0].split()
        info["mem_gib"] = round(int(mem[1]) / 2**20, 1)
    except OSError:
        pass
    try:  # which boot of which machine: runs of different boots are not timed alike (calib/equal.py)
        info["boot_id"] = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        pass
    try:
        import torch
        info["torch"] = torch.__version__
        if torch.cuda.is_available():
            info["gpu"] = torch.cuda.get_device_name(0)
    except Exception:
        pass
    return info


def preload_iomp() -> str | None:
    """Make spawned engine cores load Intel OpenMP (LD_PRELOAD is read at process start, and each
    vLLM engine core is a freshly spawned process, so setting it here is enough)."""
    import sys
    lib = Path(sys.prefix) / "lib" / IOMP_LIB
    if not lib.is_file() or os.environ.get("LR_NO_IOMP"):
        return None
    # An engine started earlier in this process without it made vLLM add torch's libgomp here;
    # vLLM refuses both OpenMP runtimes at once (an assertion in its engine core), so drop it.
    keep = [p for p in os.environ.get("LD_PRELOAD", "").split(":") if p and "libgomp" not in p]
    if not any(IOMP_LIB in p for p in keep):
        keep.insert(0, str(lib))
    os.environ["LD_PRELOAD"] = ":".join(keep)
    return str(lib)


def default_binding(mode: str, ncpu: int | None = None) -> tuple[str, str | None]:
    """Cores for (target, draft). Alone, the target gets every core. Two engines that run at
    the same time get disjoint cores: sharing them makes both OpenMP pools spin against each other
    (measured here: 2-4 s per target token shared vs ~0.7 s on its own core)."""
    n = ncpu or os.cpu_count() or 1
    if mode not in DRAFT_MODES or n == 1:
        return f"0-{n - 1}" if n > 1 else "0", (f"0-{n - 1}" if n > 1 else "0")
    split = max(1, n - max(1, n // 4))  # draft: a quarter of the cores, at least one
    target = "0" if split == 1 else f"0-{split - 1}"
    draft = str(split) if split == n - 1 else f"{split}-{n - 1}"
    return target, draft


def equal_resources_cores(target_cores: str, draft_cores: str, ncpu: int | None = None) -> str:
    """The target's binding for the equal-resources baseline: the union of the cores an lr run
    gives its target and its draft (each "auto" resolved as lr resolves it)."""
    auto_t, auto_d = default_binding("lr", ncpu)
    ids: set[int] = set()
    for cores in (auto_t if target_cores == "auto" else target_cores,
                  auto_d if draft_cores == "auto" else draft_cores):
        if cores == "nobind":
            return "nobind"
        for part in cores.replace("|", ",").split(","):
            lo, _, hi = part.partition("-")
            ids.update(range(int(lo), int(hi or lo) + 1))
    ids_s, runs = sorted(ids), []
    for i in ids_s:
        if runs and i == runs[-1][1] + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return ",".join(f"{a}-{b}" if b > a else str(a) for a, b in runs)
