"""Clean SIGINT/SIGTERM for runs that start vLLM engines (no orphans after SIGKILL: `reaper`).

`signals_to_exceptions()`: SIGINT / SIGTERM end the run with `Interrupted` (exit 130 / 143 in
the CLI) after the engines are stopped: during engine start-up the new engine processes are
terminated, inside the event loop the main task is cancelled (its `finally` stops the engines),
never in the middle of appending a record; a watchdog SIGKILLs what is left and exits if
stopping stalls (see the notes above `_SignalState`). `EngineGuard` (re-exported from
`lrreal.reaper`) stops what a SIGKILLed run leaves behind.
"""
from __future__ import annotations

import contextlib
import os
import signal
import threading

from .reaper import EngineGuard, _is_resource_tracker, cmdline, descendants, terminate

__all__ = ["Interrupted", "EngineGuard", "signals_to_exceptions", "cancel_on_signal",
           "engine_start", "critical"]

SHUTDOWN_WATCHDOG_S = 45.0      # after a signal: engines must be stopped by then, else SIGKILL
HANDLED = (signal.SIGINT, signal.SIGTERM)


class Interrupted(KeyboardInterrupt):
    """SIGINT/SIGTERM arrived. A KeyboardInterrupt, so code that lets Ctrl-C through (asyncio,
    `except Exception` handlers, the engine start-up error translation) lets this through too."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum
        self.exit_code = 128 + signum   # the shell's convention: 130 SIGINT, 143 SIGTERM
        self.summary = None             # filled in by the collector (records written so far)

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name


# ------------------------------------------------------------------------------ signals
# Where a signal lands decides what it does (measured on the vLLM CPU engines: raising an
# exception from inside vLLM's start-up wait left the process hung in its cleanup):
# - while engines start (`engine_start()`): our new child processes get SIGTERM, so the start
#   fails through vLLM's own error path, and `Interrupted` replaces that error afterwards;
# - inside the collector's event loop (`cancel_on_signal(task)`): the main task is cancelled,
#   so its `finally` stops the engines from inside their loop, as a normal exit does;
# - elsewhere: `Interrupted` is raised at once (after `critical()` regions).
# A second signal is ignored; a watchdog SIGKILLs our children and exits if stopping stalls.

class _SignalState:
    def __init__(self):
        self.got: int | None = None
        self.defer = 0
        self.pending = False
        self.starting = 0
        self.task = None
        self.loop = None
        self.err_fd: int | None = None   # our real stderr (engine start-up redirects fd 2)
        self.summary = None


_state = _SignalState()


def _say(msg: str) -> None:
    fd = _state.err_fd if _state.err_fd is not None else 2
    with contextlib.suppress(OSError):
        os.write(fd, (msg + "\n").encode())


def _children() -> list[int]:
    return [p for p in descendants(os.getpid())
            if not _is_resource_tracker(p) and "lrreal.reaper reap" not in cmdline(p)]


def _interrupted(signum: int) -> Interrupted:
    e = Interrupted(signum)
    e.summary = _state.summary
    return e


def _handler(signum, frame):
    name = signal.Signals(signum).name
    if _state.got is not None:
        _say(f"lr: {name} again: already stopping")
        return
    _state.got = signum
    _say(f"lr: {name}: stopping the engines (records already written are kept)")
    t = threading.Timer(SHUTDOWN_WATCHDOG_S, _watchdog, args=(signum,))
    t.daemon = True
    t.start()
    if _state.starting:
        threading.Thread(target=terminate, args=(_children(),), daemon=True).start()
    task, loop = _state.task, _state.loop
    if task is not None and not task.done() and loop is not None and loop.is_running():
        loop.call_soon_threadsafe(task.cancel)
        return
    if _state.defer:
        _state.pending = True
        return
    raise _interrupted(signum)


def _watchdog(signum: int) -> None:
    _say(f"lr: engines did not stop within {SHUTDOWN_WATCHDOG_S:.0f} s; killing them")
    for p in descendants(os.getpid()):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(p, signal.SIGKILL)
    os._exit(128 + signum)


@contextlib.contextmanager
def signals_to_exceptions():
    """SIGINT/SIGTERM end the block with `Interrupted` (whatever error the stopping caused on
    the way). Yields the state: set `.summary` to what the caller wants `Interrupted` to carry.
    Only the main thread can own signal handlers; elsewhere this is a no-op."""
    if threading.current_thread() is not threading.main_thread():
        yield _SignalState()
        return
    import faulthandler

    _state.__init__()
    _state.err_fd = os.dup(2)
    err = os.fdopen(os.dup(_state.err_fd), "w")
    faulthandler.register(signal.SIGUSR1, file=err, all_threads=True)  # `kill -USR1`: stuck where?
    old = {s: signal.signal(s, _handler) for s in HANDLED}
    try:
        yield _state
    except BaseException as e:
        if _state.got is not None and not isinstance(e, Interrupted):
            raise _interrupted(_state.got) from None
        raise
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        faulthandler.unregister(signal.SIGUSR1)
        err.close()
        os.close(_state.err_fd)
        _state.err_fd = None
    if _state.got is not None and _state.pending:
        raise _interrupted(_state.got)


def cancel_on_signal(task) -> None:
    """From now on a signal cancels TASK (the collector's main task) instead of raising."""
    _state.task, _state.loop = task, task.get_loop()


@contextlib.contextmanager
def engine_start():
    """Engines starting: a signal terminates our new children instead of raising in vLLM."""
    _state.starting += 1
    _state.defer += 1
    try:
        yield
    finally:
        _state.starting -= 1
        _state.defer -= 1
        if _state.got is not None:
            _state.pending = False
            raise _interrupted(_state.got)


@contextlib.contextmanager
def critical():
    """A region a signal must not cut (appending a record): `Interrupted` is raised after it."""
    _state.defer += 1
    try:
        yield
    finally:
        _state.defer -= 1
        if not _state.defer and _state.pending:
            _state.pending = False
            raise _interrupted(_state.got)
