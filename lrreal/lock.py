"""The machine-wide vLLM lock: /tmp/lr-vllm.lock, held while vLLM engines or a judge server live.

A vLLM process is a memory hog (two engines take ~20 GiB), so every process that starts one holds
an exclusive flock on LOCK_PATH first (docs/real-backend.md, "The vLLM lock"), and two runs never
load engines at once. The lock counts as already held, and is not taken again, when its holders
are ancestors of this process (`flock /tmp/lr-vllm.lock lr collect ...`: locking again would wait
for ourselves forever), or by this process (a collector that holds it may start its judge). One
way to take it, one reader of who holds it (`lock_holders`, from /proc/locks):

* `VllmLock`: queues like `flock(1)`, gives up after `timeout_s` with a one-line error (None:
  waits as long as it takes; 0: refuses at once). A judge server holds one for its whole life (the
  server process inherits the locked descriptor).
* `vllm_lock()`: the same lock as a context manager, for in-process engines (`lr collect`,
  `lr calibrate measure`, the probe, the corpus runner): waits, saying once on stderr who holds
  it, or with `wait=False` refuses at once.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import sys
import threading
import time
from pathlib import Path

from lrcore.errors import UserError

LOCK_PATH = "/tmp/lr-vllm.lock"


def lock_holders(path: str = LOCK_PATH) -> list[int]:
    """PIDs holding a flock on `path` (from /proc/locks; empty if unknown).

    A /proc/locks line reads `1: FLOCK ADVISORY WRITE PID MAJ:MIN:INODE 0 EOF`; a process still
    waiting for the lock has its own line with "->" before FLOCK and is not a holder. The lock's
    file is matched by device and inode; when no line names both (stat may report another device
    number than the kernel's lock table, e.g. on btrfs subvolumes) by the inode alone."""
    try:
        st = os.stat(path)
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return []
    exact = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    same_dev, same_ino = [], []
    for line in lines:
        parts = line.split()
        if len(parts) < 6 or parts[1] != "FLOCK":
            continue
        try:
            pid = int(parts[4])
        except ValueError:
            continue
        if parts[5] == exact:
            same_dev.append(pid)
        elif parts[5].endswith(f":{st.st_ino}"):
            same_ino.append(pid)
    return same_dev or same_ino


def ancestors(pid: int) -> list[int]:
    """pid, its parent, grand-parent, ... up to (not including) init (from /proc)."""
    chain = []
    while pid > 1 and pid not in chain:
        chain.append(pid)
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            pid = int(stat.rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return chain


@contextlib.contextmanager
def vllm_lock(path: str = LOCK_PATH, wait: bool = True):
    """Hold the flock that says "vLLM engines live in this process" (a VllmLock) for the block."""
    def say(msg: str) -> None:      # only that it waits: a reused (inherited) lock goes unsaid
        if msg.startswith("waiting"):
            print(f"lr: {msg}", file=sys.stderr, flush=True)

    lock = VllmLock(path, timeout_s=None if wait else 0.0, log=say)
    lock.acquire()
    try:
        yield lock
    finally:
        lock.release()


class VllmLock:
    """Holds /tmp/lr-vllm.lock; a no-op when this process or an ancestor already holds it."""

    def __init__(self, path: str = LOCK_PATH, timeout_s: float | None = 3600.0, log=None):
        self.path, self.timeout_s, self.log = path, timeout_s, log or (lambda msg: None)
        self.fd: int | None = None
        self.inherited_from: int | None = None

    def acquire(self) -> "VllmLock":
        """Queue for the lock like `flock(1)` does (a blocking flock in a helper thread, so
        waiting is fair among waiters), while checking for an ancestor holder and the timeout."""
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        got, state = threading.Event(), {"abandoned": False}
        guard = threading.Lock()

        def wait_for_lock():
            fcntl.flock(fd, fcntl.LOCK_EX)  # blocks in the kernel's queue
            with guard:
                if state["abandoned"]:  # nobody wants it any more: give it back at once
                    os.close(fd)
                    return
                got.set()

        threading.Thread(target=wait_for_lock, daemon=True, name="lr-vllm-lock").start()
        deadline = None if self.timeout_s is None else time.monotonic() + self.timeout_s
        announced = False
        while not got.wait(timeout=0.05 if not announced else 1.0):
            holders = lock_holders(self.path)
            mine = set(ancestors(os.getpid()))
            give_up = None
            if holders and all(h in mine for h in holders):
                self.inherited_from = holders[0]
                self.log(f"{self.path} is held by pid {holders[0]} (this process or its parent): using it")
            elif deadline is not None and time.monotonic() >= deadline:
                give_up = UserError(
                    f"{self.path} is held by pid(s) {holders or '?'}: another vLLM run is active on "
                    "this machine; wait for it to finish and retry" if not self.timeout_s else
                    f"{self.path} is held by pid(s) {holders or '?'} (another vLLM run) for more than "
                    f"{self.timeout_s:g} s; wait for it to finish and retry")
            else:
                if not announced:
                    self.log(f"waiting for {self.path} (held by pid(s) {holders or '?'}: another vLLM run)")
                    announced = True
                continue
            with guard:
                if not got.is_set():
                    state["abandoned"] = True
                    if give_up is not None:
                        raise give_up
                    return self
            break  # acquired just now after all
        self.fd, self.inherited_from = fd, None
        return self

    def release(self) -> None:
        if self.fd is not None:
            fd, self.fd = self.fd, None
            os.close(fd)
