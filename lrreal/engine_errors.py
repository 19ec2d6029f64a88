"""Engine start-up faults -> one line that names the cause and what to do.

A vLLM engine that cannot start fails late (after 20-90 s of imports and weight loading) and
obscurely: the engine-core process prints a multi-line traceback, and the caller only gets
"Engine core initialization failed. See root cause above". This module does three things:

- `check_model_folder` / `check_engine_fits` (from `lrreal.engine_checks`): cheap checks before
  anything is loaded;
- `StartupCapture`: routes this process's stderr, and so the spawned engine core's, through a
  pipe while the engine starts, so its traceback is kept (and written to a log file) instead of
  flooding the terminal; after a successful start the engine's output passes through as before;
- `translate`: turns the exception plus the captured log into a `UserError` with one line.
"""
from __future__ import annotations

import os
import re
import sys
import tempfile
import threading
import time
from collections import deque

from lrcore.errors import UserError

from .engine_checks import StartContext

CAPTURE_LINES = 400          # log lines kept in memory while an engine starts
DRAIN_S = 3.0                # after a failed start: wait this long for the dying core's last words


# ------------------------------------------------------------------------ capture while starting

class StartupCapture:
    """While an engine starts, this process's fd 2 is a pipe read by a thread: the engine core
    (a spawned process, which inherits fd 2 for its whole life) writes its start-up log there.
    `done(ok=True)`: restore fd 2; the engine's later output passes through to the real stderr.
    `done(ok=False)`: restore fd 2, wait briefly for the dying core's last lines, keep them all."""

    def __init__(self, name: str = "engine"):
        self.name = name
        self.lines: deque[str] = deque(maxlen=CAPTURE_LINES)
        self._saved: int | None = None
        self._passthrough = False
        self._thread: threading.Thread | None = None
        self._partial = b""

    def __enter__(self) -> "StartupCapture":
        try:
            sys.stderr.flush()
        except (AttributeError, ValueError, OSError):
            pass
        self._saved = os.dup(2)
        r, w = os.pipe()
        os.dup2(w, 2)
        os.close(w)
        self._thread = threading.Thread(target=self._pump, args=(r,), daemon=True,
                                        name=f"lr-{self.name}-stderr")
        self._thread.start()
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.done(ok=exc_type is None)

    def _pump(self, r: int) -> None:
        with os.fdopen(r, "rb", buffering=0) as pipe:
            while chunk := pipe.read(65536):
                if self._passthrough and self._saved is not None:
                    try:
                        os.write(self._saved, chunk)
                    except OSError:
                        pass
                    continue
                data = self._partial + chunk
                *full, self._partial = data.split(b"\n")
                self.lines.extend(x.decode(errors="replace").rstrip("\r") for x in full)
        if self._partial:
            self.lines.append(self._partial.decode(errors="replace"))
            self._partial = b""

    def done(self, ok: bool) -> None:
        if self._saved is None or self._thread is None:
            return
        try:
            sys.stderr.flush()
        except (AttributeError, ValueError, OSError):
            pass
        self._passthrough = ok
        os.dup2(self._saved, 2)  # this process writes to the real stderr again
        if not ok:
            self._thread.join(DRAIN_S)  # EOF comes once the dying core's processes exit

    def text(self) -> str:
        return "\n".join(list(self.lines) + ([self._partial.decode(errors="replace")] if self._partial else []))

    def save(self) -> str | None:
        """Write what was captured to a log file (kept for the user); returns its path."""
        try:
            fd, path = tempfile.mkstemp(prefix=f"lr-{self.name}-start-", suffix=".log")
            with os.fdopen(fd, "w") as f:
                f.write(self.text() + "\n")
            return path
        except OSError:
            return None


# ------------------------------------------------------------------------ translation

_RULES: list[tuple[str, str]] = [
    # vLLM-CPU worker: requested KV space larger than the node's free memory
    (r"Available memory on node \d+ \((?P<avail>[\d.]+)/(?P<total>[\d.]+) GiB\) on kv cache allocation "
     r"is less than requested memory for kv \((?P<kv>[\d.]+) GiB\)",
     "{head}: not enough memory for the KV cache: {kv} GiB requested, {avail} of {total} GiB free "
     "after loading the model: lower --kv-cache-space, or stop other runs using memory"),
    # KV space smaller than one max-length request
    (r"max seq len \((?P<mml>\d+)\), \((?P<need>[\d.]+) GiB KV cache is needed, which is larger than "
     r"the available KV cache memory \((?P<have>[\d.]+) GiB\)(?:.*?estimated maximum model length is "
     r"(?P<fit>\d+))?",
     "{head}: not enough KV cache for one request of --max-model-len {mml}: it needs {need} GiB, "
     "--kv-cache-space gives {have} GiB: lower --max-model-len to {fit} or less, or raise "
     "--kv-cache-space"),
    (r"User-specified max_model_len \((?P<mml>\d+)\) is greater than the derived max_model_len "
     r"\((?:max_position_embeddings=)?(?P<mx>\d+)",
     "{head}: --max-model-len {mml} is more than the model's maximum context ({mx} tokens): lower "
     "--max-model-len"),
    (r"config file at '(?P<path>[^']+)' is not a valid JSON",
     "{head}: {path} is not valid JSON (the model folder is damaged): copy the folder again, or for a "
     "packaged model delete its folder and run `lr models prepare NAME`"),
    (r"(?i)error while attempting to bind on address \((?P<addr>[^)]*)\): (?:\[errno \d+\] )?address "
     r"already in use",
     "{head}: address {addr} is already in use by another process: omit --port to use a free port, "
     "or stop what holds it"),
    (r"(?i)(?:zmq\w*error|zmq\.error)[^\n]*?(?P<why>address already in use|address in use|permission "
     r"denied|no such file or directory|too many open files)",
     "{head}: the engine core could not open its local socket (zmq: {why}): a stale vLLM process may "
     "hold it; stop leftover vLLM processes and retry"),
    (r"(?i)(?:SafetensorError|safetensors_rust\.SafetensorError|HeaderTooLarge|MetadataIncompleteBuffer|"
     r"incomplete metadata)[: ]*(?P<why>[^\n]*)",
     "{head}: the model's weights are damaged ({why}): copy the folder again, or for a packaged "
     "model delete its folder and run `lr models prepare NAME`"),
    (r"(?i)(?P<why>MemoryError|Cannot allocate memory|std::bad_alloc|can't allocate memory|"
     r"DefaultCPUAllocator: not enough memory|out of memory)",
     "{head}: out of memory while starting ({why}): lower --kv-cache-space or --max-model-len, or "
     "stop other runs using memory"),
]
_GENERIC = ("Engine core initialization failed", "WorkerProc initialization failed",
            "See root cause above", "please check the stack trace above")
_ERROR_LINE = re.compile(r"\b(?P<type>[A-Za-z_][\w.]*(?:Error|Exception)): (?P<msg>.+)$")
_KILLED = re.compile(r"Failed core proc\(s\): \{[^}]*: (?P<code>-?\d+)\}")


def _chain_text(exc: BaseException | None) -> str:
    parts, seen = [], set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        parts.append(f"{type(exc).__name__}: {exc}")
        exc = exc.__cause__ or exc.__context__
    return "\n".join(parts)


def _one_line(s: str, limit: int = 300) -> str:
    s = " ".join(s.split())
    return s if len(s) <= limit else s[: limit - 3] + "..."


def translate(exc: BaseException | None, log: str, ctx: StartContext) -> UserError:
    """The UserError for an engine that failed to start: the first known cause found in the
    exception chain or the log, else the last concrete error line, else the exit code."""
    text = _chain_text(exc) + "\n" + (log or "")
    where = f"; full log {ctx.log_path}" if ctx.log_path else ""
    for pattern, message in _RULES:
        m = re.search(pattern, text)
        if m:
            fields = {k: (v if v is not None else "?") for k, v in m.groupdict().items()}
            return UserError(_one_line(message.format(head=ctx.head(), **fields)) + where)
    for line in reversed(text.splitlines()):
        m = _ERROR_LINE.search(line)
        if m and not any(g in line for g in _GENERIC):
            return UserError(f"{ctx.head()} {ctx.failed()}: {_one_line(m['type'] + ': ' + m['msg'])}"
                             f"{where or ': run again with VLLM_LOGGING_LEVEL=DEBUG to see more'}")
    codes = [int(c) for c in _KILLED.findall(text)]
    if codes:
        code = min(codes)  # a signal (negative) says more than the exit code 1 it caused
        why = (f"killed by signal {-code}" + (" (SIGKILL: often the kernel's out-of-memory killer)"
                                              if code == -9 else "")) if code < 0 else f"exit code {code}"
        return UserError(f"{ctx.head()}: the engine core died during start-up ({why}) without a Python "
                         f"error: check free memory (`free -g`) and the model folder's files{where}")
    return UserError(f"{ctx.head()} {ctx.failed()}: {_one_line(_chain_text(exc) or 'no error text')}{where}")


def translated_start(ctx: StartContext, start, capture_name: str = "engine"):
    """Run `start()` under a StartupCapture; any failure becomes a one-line UserError."""
    cap = StartupCapture(capture_name)
    t0 = time.monotonic()
    with cap:
        try:
            return start()
        except UserError:
            raise
        except BaseException as e:
            if isinstance(e, (KeyboardInterrupt, SystemExit)):
                raise
            cap.done(ok=False)
            ctx.log_path = cap.save()
            err = translate(e, cap.text(), ctx)
            err.startup_s = time.monotonic() - t0
            raise err from None
