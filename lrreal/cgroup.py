"""The sandbox's memory cgroup (lrreal/sandbox.py): find our own cgroup, make a child with a
memory limit (and a pids limit) for one run, read its peak and OOM kills, kill what is left in
it and remove it; and whether one can be made here at all (probed once, by making one).

Kernel interface only (files under /sys/fs/cgroup): cgroup v2 where our cgroup's children can
get the memory controller, else cgroup v1's memory hierarchy where it is writable (as root).
"""
from __future__ import annotations

import os
import secrets
import signal
import time

REAP_S = 5.0                # after a kill: time for the cgroup's processes to be gone


def _unescape(path: str) -> str:  # /proc/self/mountinfo writes space, tab, newline, \ as \ooo
    out, i = [], 0
    while i < len(path):
        if path[i] == "\\" and path[i + 1:i + 4].isdigit():
            out.append(chr(int(path[i + 1:i + 4], 8)))
            i += 4
        else:
            out.append(path[i])
            i += 1
    return "".join(out)


def own_dir(controller: str) -> str | None:
    """The folder of our own cgroup in the hierarchy with `controller` (v1), or in cgroup v2's
    (controller "")."""
    own = {}
    with open("/proc/self/cgroup") as f:
        for line in f:
            parts = line.rstrip("\n").split(":", 2)
            if len(parts) == 3:
                for c in parts[1].split(","):
                    own.setdefault(c, parts[2])
    if controller not in own:
        return None
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            a, b = left.split(), right.split()
            if len(a) < 5 or len(b) < 3:
                continue
            if not (b[0] == "cgroup2" and controller == "" or b[0] == "cgroup" and controller
                    and controller in b[2].split(",")):
                continue
            root, point, path = _unescape(a[3]).rstrip("/"), _unescape(a[4]), own[controller]
            if root and not (path == root or path.startswith(root + "/")):
                continue  # this mount shows another part of the hierarchy
            d = os.path.normpath(point + "/" + path[len(root):])
            if os.path.isdir(d):
                return d
    return None


def _write(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


def _read_int(path: str, key: str | None = None) -> int | None:
    """The number in a cgroup file, or after `key` in a flat keyed one (None: not there)."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return None
    for line in text.splitlines():
        words = line.split()
        if key is None and len(words) == 1 and words[0].isdigit():
            return int(words[0])
        if key is not None and len(words) == 2 and words[0] == key and words[1].isdigit():
            return int(words[1])
    return None


class Cgroup:
    """One run's cgroups (kernel interface, files): with cgroup v2 one folder with memory.max,
    memory.swap.max 0, memory.oom.group 1 and pids.max; with v1 one in the memory hierarchy
    (memory.limit_in_bytes, memory.memsw.limit_in_bytes) and, where writable, one in the pids
    hierarchy. Each is a child of our own cgroup there, so that limits above still hold."""

    def __init__(self, memory_bytes: int, tasks: int):
        self.dirs: list[str] = []
        self.v2 = False
        name = f"lr-sandbox-{os.getpid()}-{secrets.token_hex(4)}"
        pids_max = str(tasks + 2)  # + unshare and the namespace's init
        try:
            parent = own_dir("")
            if parent is not None and "memory" in self._words(parent, "cgroup.controllers"):
                self.v2 = True
                for c in ("memory", "pids"):  # for our cgroup's children (EBUSY where our cgroup
                    try:                      # holds processes and is not the root: unusable)
                        if c in self._words(parent, "cgroup.controllers") \
                                and c not in self._words(parent, "cgroup.subtree_control"):
                            _write(os.path.join(parent, "cgroup.subtree_control"), f"+{c}")
                    except OSError:
                        if c == "memory":
                            raise
                d = self._make(parent, name)
                _write(os.path.join(d, "memory.max"), str(memory_bytes))
                for f, v in (("memory.swap.max", "0"), ("memory.oom.group", "1"), ("pids.max", pids_max)):
                    if os.path.exists(os.path.join(d, f)):
                        _write(os.path.join(d, f), v)
                return
            parent = own_dir("memory")
            if parent is None:
                raise OSError("no cgroup v2 with the memory controller, no cgroup v1 memory hierarchy")
            d = self._make(parent, name)
            _write(os.path.join(d, "memory.limit_in_bytes"), str(memory_bytes))
            try:  # memory + swap: exists only with swap accounting
                _write(os.path.join(d, "memory.memsw.limit_in_bytes"), str(memory_bytes))
            except OSError:
                pass
            parent = own_dir("pids")
            if parent is not None:
                try:
                    _write(os.path.join(self._make(parent, name), "pids.max"), pids_max)
                except OSError:
                    pass  # RLIMIT_NPROC still caps the tasks
        except BaseException:
            self.remove()
            raise

    @staticmethod
    def _words(d: str, f: str) -> list[str]:
        with open(os.path.join(d, f)) as fh:
            return fh.read().split()

    def _make(self, parent: str, name: str) -> str:
        d = os.path.join(parent, name)
        os.mkdir(d)
        self.dirs.append(d)
        return d

    def procs(self) -> list[str]:
        return [os.path.join(d, "cgroup.procs") for d in self.dirs]

    def stats(self) -> tuple[int | None, int | None]:
        """(peak memory in bytes, processes OOM-killed at the limit); None where not reported."""
        d = self.dirs[0]
        if self.v2:
            return _read_int(os.path.join(d, "memory.peak")), \
                _read_int(os.path.join(d, "memory.events"), "oom_kill")
        return _read_int(os.path.join(d, "memory.max_usage_in_bytes")), \
            _read_int(os.path.join(d, "memory.oom_control"), "oom_kill")

    def remove(self) -> None:
        """SIGKILL whatever is still inside (nothing, normally: the namespace died with its
        init), wait until it is gone (bounded), remove the folders."""
        deadline = time.monotonic() + REAP_S
        for d in reversed(self.dirs):
            while os.path.isdir(d):
                try:
                    with open(os.path.join(d, "cgroup.procs")) as f:
                        pids = [int(p) for p in f.read().split()]
                except OSError:
                    pids = []
                if pids:
                    try:
                        _write(os.path.join(d, "cgroup.kill"), "1")  # v2, Linux 5.14+: all at once
                    except OSError:
                        for pid in pids:
                            try:
                                os.kill(pid, signal.SIGKILL)
                            except OSError:
                                pass
                else:
                    try:
                        os.rmdir(d)
                        break
                    except OSError:
                        pass
                if time.monotonic() > deadline:
                    break  # left behind (a process the kernel cannot kill): bounded anyway
                time.sleep(0.01)
        self.dirs = [d for d in self.dirs if os.path.isdir(d)]


_why: str | None = None
_probed = False


def unavailable(memory_bytes: int, tasks: int) -> str | None:
    """Why no memory cgroup can be made here (None: it can); probed once, by making one with
    these limits."""
    global _why, _probed
    if not _probed:
        try:
            Cgroup(memory_bytes, tasks).remove()
            _why = None
        except OSError as e:
            _why = f"{e.strerror or e}{': ' + e.filename if e.filename else ''}"
        _probed = True
    return _why


def give_up(why: str) -> None:
    """A made cgroup could not be entered after all (the probe passed): none from now on."""
    global _why, _probed
    _why, _probed = why, True
