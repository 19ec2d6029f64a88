"""No orphans after SIGKILL: track the engine processes a run starts and stop them when it dies.

Each vLLM engine is a spawned engine-core process (with helpers of its own) holding ~5-10 GiB.
`EngineGuard` (around engine start-up and shutdown) starts a tiny reaper process that records
our new child processes (pid + start time) every REAPER_POLL_S in a registry file and waits on a
pipe from us: when we die, even by SIGKILL, the kernel closes the pipe and the reaper stops those
processes. On a normal exit the guard stops children that outlived shutdown; before starting it
stops processes a dead owner left in the registry (`kill_stale`, in case the reaper died too).
Without this, a SIGKILLed `lr collect` left its engine cores running (re-parented to init,
~11 GiB each, measured) and the next run could not fit in memory. Ownership is pid + start time:
vLLM renames its processes, which rewrites /proc/PID/environ, so environment tags do not work.

Also the /proc listing helpers (`descendants`, `session_members`, `alive`) used by
`lrreal.shutdown` and the kill test. Run as `python -m lrreal.reaper reap ...` it is the reaper
(imports nothing heavy).
"""
from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REAPER_POLL_S = 0.5             # how often the reaper records new engine processes
TERM_GRACE_S = 5.0              # SIGTERM -> SIGKILL for processes we reap
IGNORED_BY_REAPER = (signal.SIGINT, signal.SIGTERM)  # Ctrl-C hits the group: outlive the owner


# ------------------------------------------------------------------------------ /proc listing

def _stat(pid: int) -> list[str] | None:
    """Fields of /proc/PID/stat after the command name: [state, ppid, pgrp, session, ...]."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def start_time(pid: int) -> int | None:
    """Clock ticks since boot when PID started (stat field 22): tells a reused pid apart."""
    st = _stat(pid)
    return int(st[19]) if st else None


def alive(pid: int) -> bool:
    st = _stat(pid)
    return st is not None and st[0] not in ("Z", "X")


def pids() -> list[int]:
    return [int(d) for d in os.listdir("/proc") if d.isdigit()]


def descendants(pid: int) -> list[int]:
    """Living descendants of PID (by parent links; a child reparented to init is not included)."""
    children: dict[int, list[int]] = {}
    for p in pids():
        st = _stat(p)
        if st and st[0] not in ("Z", "X"):
            children.setdefault(int(st[1]), []).append(p)
    out, todo = [], list(children.get(pid, []))
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def session_members(sid: int) -> list[int]:
    """Living processes of session SID (a child started with start_new_session=True and all its
    descendants, reparented or not, unless one of them calls setsid itself)."""
    return [p for p in pids() if (st := _stat(p)) and st[0] not in ("Z", "X") and int(st[3]) == sid]


def cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def terminate(procs: list[int], grace_s: float = TERM_GRACE_S) -> list[int]:
    """SIGTERM, wait up to grace_s, then SIGKILL. Returns the pids that needed SIGKILL."""
    for p in procs:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(p, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and any(alive(p) for p in procs):
        time.sleep(0.05)
    killed = [p for p in procs if alive(p)]
    for p in killed:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(p, signal.SIGKILL)
    return killed


def wait_gone(procs: list[int], timeout_s: float) -> list[int]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and any(alive(p) for p in procs):
        time.sleep(0.05)
    return [p for p in procs if alive(p)]


# ------------------------------------------------------------------------------ ownership
# vLLM renames its processes (setproctitle), which overwrites /proc/PID/environ: an inherited
# environment tag cannot find them. Ownership is therefore tracked by pid + start time.

def owner_token(pid: int | None = None) -> str:
    pid = pid or os.getpid()
    return f"{pid}:{start_time(pid)}"


def same_process(pid: int, started: int | None) -> bool:
    return alive(pid) and start_time(pid) == started


def owner_alive(token: str) -> bool:
    pid, _, started = token.partition(":")
    try:
        return same_process(int(pid), int(started))
    except ValueError:
        return False


def registry_dir() -> Path:
    return Path(tempfile.gettempdir()) / f"lr-engines-{os.getuid()}"


def _write_registry(path: Path, owner: str, known: dict[int, int]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"owner": owner, "procs": sorted(known.items())}))
    os.replace(tmp, path)


def _stop_known(known: dict[int, int]) -> list[int]:
    """Stop the recorded processes that still run (same start time) and their descendants."""
    targets = [p for p, st in known.items() if same_process(p, st)]
    for p in list(targets):
        targets.extend(d for d in descendants(p) if d not in targets)
    if targets:
        terminate(targets)
    return targets


def kill_stale(log=None) -> list[int]:
    """Stop processes recorded by owners that died without cleaning up (reaper gone too)."""
    stopped: list[int] = []
    for f in sorted(registry_dir().glob("*.json")):
        try:
            data = json.loads(f.read_text())
            if owner_alive(data["owner"]):
                continue
            known = {int(p): int(st) for p, st in data["procs"]}
        except (OSError, ValueError, KeyError, TypeError):
            continue
        left = _stop_known(known)
        if left and log:
            log(f"lr: stopped {len(left)} process(es) left by a killed run: {left}")
        stopped += left
        with contextlib.suppress(OSError):
            f.unlink()
    return stopped


def _is_resource_tracker(pid: int) -> bool:
    # multiprocessing's tracker exits by itself once its pipe closes; it holds no engine memory
    return "multiprocessing.resource_tracker" in cmdline(pid)


class EngineGuard:
    """Context manager around engine start-up and shutdown (see the module docstring).

    Only processes that appear *while* the guard is held are ours: children the caller had
    before (a judge server a test started, say) are left alone."""

    def __init__(self, log=None):
        self.log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
        self._reaper: subprocess.Popen | None = None
        self._pipe_w: int | None = None
        self._before: set[int] = set()

    def __enter__(self) -> "EngineGuard":
        kill_stale(self.log)
        self._before = set(descendants(os.getpid()))
        self._start_reaper()
        return self

    def _start_reaper(self) -> None:
        r, w = os.pipe()  # both non-inheritable: engine cores must not hold the write end
        try:
            self._reaper = subprocess.Popen(
                [sys.executable, "-m", "lrreal.reaper", "reap", str(r), owner_token(),
                 ",".join(map(str, sorted(self._before))), str(os.getpgrp())],
                pass_fds=(r,), stdin=subprocess.DEVNULL,
                cwd=str(Path(__file__).resolve().parents[1]))
            self._pipe_w = w
        except OSError as e:  # no reaper: a SIGKILL may leave engines until the next start
            self.log(f"lr: warning: could not start the orphan reaper ({e})")
            os.close(w)
        finally:
            os.close(r)

    def new_children(self) -> list[int]:
        reaper = self._reaper.pid if self._reaper else None
        return [p for p in descendants(os.getpid())
                if p not in self._before and p != reaper and not _is_resource_tracker(p)]

    def __exit__(self, *exc) -> None:
        left = self.new_children()
        if left:
            killed = terminate(left)
            self.log(f"lr: stopped {len(left)} process(es) that outlived shutdown"
                     + (f" ({len(killed)} needed SIGKILL)" if killed else ""))
        if self._pipe_w is not None:
            os.close(self._pipe_w)   # the reaper sees EOF, finds nothing alive, exits
            self._pipe_w = None
        if self._reaper is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._reaper.wait(timeout=TERM_GRACE_S + 2)


def reap(fd: int, owner: str, before: set[int], pgid: int) -> int:
    """The reaper: record the owner's new descendants every REAPER_POLL_S (in the registry, for
    `kill_stale`) until the owner's pipe closes, then stop those still running, plus orphans of
    the owner's process group spawned since the last poll."""
    import select

    for s in IGNORED_BY_REAPER:
        signal.signal(s, signal.SIG_IGN)
    owner_pid = int(owner.split(":")[0])
    me = os.getpid()  # pgid comes from the owner: it may be dead before we get to ask
    reg = registry_dir() / f"{owner.replace(':', '-')}.json"
    known: dict[int, int] = {}
    while True:
        found = {p: start_time(p) for p in descendants(owner_pid)
                 if p not in before and p != me and p not in known and not _is_resource_tracker(p)}
        if found:
            known.update(found)
            with contextlib.suppress(OSError):
                reg.parent.mkdir(mode=0o700, exist_ok=True)
                _write_registry(reg, owner, known)
        ready, _, _ = select.select([fd], [], [], REAPER_POLL_S)
        if ready:
            try:
                if not os.read(fd, 4096):
                    break
            except OSError:
                break
    # The pipe closes before the kernel re-parents the dying owner's children: look both ways.
    for p in descendants(owner_pid) + _orphans_of_group(pgid, owner_pid, start_time(me) or 0,
                                                        before | {me}):
        if p not in before and p != me and not _is_resource_tracker(p):
            known.setdefault(p, start_time(p))
    _stop_known(known)
    with contextlib.suppress(OSError):
        reg.unlink()
    return 0


def _orphans_of_group(pgid: int, owner_pid: int, since: int, exclude: set[int]) -> list[int]:
    """Processes of the owner's process group, started after the reaper, whose parent died (now
    a child of init or of a subreaper outside the group): what the owner spawned in the last
    poll interval before it was killed. A group member with a living parent in the group (a
    sibling command of a shell script) is never one of them."""
    out = []
    for p in pids():
        st = _stat(p)
        if (not st or st[0] in ("Z", "X") or int(st[2]) != pgid or p in exclude
                or int(st[19]) < since or _is_resource_tracker(p)):
            continue
        ppid = int(st[1])
        parent = _stat(ppid)
        if ppid in (1, owner_pid) or parent is None or int(parent[2]) != pgid:
            out.append(p)
    return out


def main(argv: list[str]) -> int:
    if len(argv) == 5 and argv[0] == "reap":
        return reap(int(argv[1]), argv[2], {int(p) for p in argv[3].split(",") if p}, int(argv[4]))
    print("usage: python -m lrreal.reaper reap FD OWNER_TOKEN PID,PID,... PGID", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
