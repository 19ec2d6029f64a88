"""The simulator's compiled hot path: the event loop, the engines and their KV caches, token-level
SD, the world, the lr-async tree, the roofline model's iteration time and the devices, compiled
to C by mypyc (the mypy project's compiler for type-annotated Python) from the same source files.

    python -m lrsim.native build [--if-stale]   # compile (`make native`: make test, demo, bench)
    python -m lrsim.native status [--json]      # built? fresh? in use?

The Python modules stay the source and the reference: the compiled ones run the same operations
on the same values (floats are C doubles either way), so a seeded run gives the same summary
bit for bit (tests/sim/test_native.py compares both on every policy). Compiled modules are used
only when the build is fresh: the manifest holds the SHA-256 of every module of `lrsim/sim` at
build time, and one changed file sends the whole simulator back to plain Python until the next
build, so an edit is never shadowed by an old binary. `LRSIM_PURE=1` forces plain Python.

Layout: the build writes `lrsim/_native/` (not in git): the extensions under their package paths
(`lrsim/sim/engine.<abi>.so`, ...) and `manifest.json`. `enable` puts that folder first on the
package's `__path__` (lrsim/sim/__init__.py, lrsim/sim/policies/__init__.py), so that an import
finds the extension before the .py beside it. `LRSIM_NATIVE_ROOT` points elsewhere (the tests
build into a temporary folder).
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import sysconfig
import time
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent          # lrsim/
REPO = PACKAGE.parent
# the modules compiled, by path from the repository root: where a simulated step spends its time
# (a profile of lr-async at 256 concurrent requests: engine 39%, lr_async 28%, the loop 11%);
# world.py: the helpers the policies call per job (target_job, draft_job, cancel, commit) and
# the step statistics (1.07x single request, 1.08x at 256 concurrent, compiled with it);
# kvcache.py: the KV cache's bookkeeping at every batch boundary of an engine with a KV spec
# (1.10x at 256 concurrent on a 300k-token cache; nothing to gain without one); tokensd.py:
# token-level SD's rounds per step (SDStream.rounds_for), under SD (k2 = 4: 1.04x single
# request, 1.07x at 256 concurrent); roofline_time.py: the roofline model's iteration time, which
# the engine calls compiled (one per chunk; Roofline.forward calls it too); devices.py: the
# devices whose busy time every chunk end adds to. Measured and left
# out: verifier.py (1.00x) and latency.py (0.98x with its classes kept Python classes, as a
# Config needs them)
MODULES = ("lrsim/sim/dispatch.py", "lrsim/sim/engine.py", "lrsim/sim/world.py",
           "lrsim/sim/kvcache.py", "lrsim/sim/tokensd.py", "lrsim/sim/policies/lr_async.py",
           "lrsim/sim/roofline_time.py", "lrsim/sim/devices.py")
GROUP = "lrsim.sim.hot"           # one shared library: calls between the modules stay native
# mypy's settings for the build: types are checked in the compiled modules only (those they
# import are read for their types); SimPy and NumPy are opaque (Any), so code that calls them
# compiles to ordinary Python calls
MYPY_INI = """\
[mypy]
ignore_missing_imports = True
follow_imports = silent
check_untyped_defs = True
[mypy-simpy.*]
follow_imports = skip
[mypy-numpy.*]
follow_imports = skip
"""
SETUP = """\
import sys
from setuptools import setup
from mypyc.build import mypycify
modules = sys.argv[1:]
sys.argv = [sys.argv[0], "build_ext", "--inplace"]
setup(name="lrsim-native", ext_modules=mypycify(["--config-file", "mypyc.ini", *modules],
      group_name=%r, opt_level="3"))
""" % GROUP


def root() -> Path:
    return Path(os.environ.get("LRSIM_NATIVE_ROOT") or PACKAGE / "_native")


def _abi() -> str:
    return f"{sys.implementation.cache_tag}{sysconfig.get_config_var('EXT_SUFFIX')}"


def digest() -> dict[str, str]:
    """SHA-256 of every module of the simulator (lrsim/sim, policies included): the compiled
    modules and those whose names and types they read."""
    out = {}
    for p in sorted((PACKAGE / "sim").rglob("*.py")):
        out[p.relative_to(REPO).as_posix()] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def state() -> dict:
    """Whether compiled modules are built, fresh (built from today's sources, for this Python)
    and in use, and why not."""
    where = root()
    st = {"root": str(where), "modules": list(MODULES), "built": False, "fresh": False,
          "active": False, "reason": ""}
    try:
        manifest = json.loads((where / "manifest.json").read_text())
    except (OSError, ValueError):
        st["reason"] = "not built (python -m lrsim.native build)"
        return st
    st["built"] = True
    st["built_at"] = manifest.get("built_at")
    if manifest.get("abi") != _abi():
        st["reason"] = f"built for {manifest.get('abi')}, this Python is {_abi()}"
        return st
    now = digest()
    changed = sorted(k for k in set(now) | set(manifest.get("sources", {}))
                     if now.get(k) != manifest["sources"].get(k))
    if changed:
        st["reason"] = f"stale: {changed[0]} changed since the build" + (
            f" (and {len(changed) - 1} more)" if len(changed) > 1 else "")
        return st
    st["fresh"] = True
    if os.environ.get("LRSIM_PURE"):
        st["reason"] = "LRSIM_PURE is set"
        return st
    st["active"] = True
    return st


_STATE: dict | None = None


def enable(path: list, package: str) -> None:
    """Put the compiled modules of `package` first on its `__path__` when the build is fresh
    (called once per package, at the top of its __init__)."""
    global _STATE
    if _STATE is None:
        _STATE = state()
    if _STATE["active"]:
        path.insert(0, str(root().joinpath(*package.split("."))))


def in_use() -> bool:
    """Whether this process runs the compiled modules (they are imported from the build)."""
    import lrsim.sim.engine as engine
    return not engine.__file__.endswith(".py")


def build(if_stale: bool = False, quiet: bool = False) -> dict:
    """Compile MODULES into root(), replacing the build there (a new folder swapped in whole, so
    a process that has the old one loaded keeps it); `if_stale`: only if it is missing or stale.
    Returns state(), with `rebuilt`."""
    import fcntl                      # the build's modules: imported by a build only, not by every
    #                                   `import lrsim.sim` (enable, state)
    try:
        import mypyc  # noqa: F401
    except ImportError:
        raise SystemExit("lrsim.native: mypyc is not installed (pip install mypy)") from None
    dest = root()
    dest.parent.mkdir(parents=True, exist_ok=True)
    # one build at a time per folder (`make test` and `make demo` started together): the second
    # waits, then finds the first's build fresh
    with open(dest.with_name(dest.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if if_stale and state()["fresh"]:
            return state() | {"rebuilt": False}
        return _build(dest, quiet) | {"rebuilt": True}


def _build(dest: Path, quiet: bool) -> dict:
    import shutil
    import subprocess
    import tempfile

    sources = digest()
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="lrsim-native-") as tmp:
        work = Path(tmp)
        for pkg in ("lrsim", "lrcore"):       # the compiled modules and what they import
            shutil.copytree(REPO / pkg, work / pkg,
                            ignore=shutil.ignore_patterns("_native", "__pycache__", "*.so"))
        (work / "mypyc.ini").write_text(MYPY_INI)
        (work / "setup_native.py").write_text(SETUP)
        log = work / "build.log"
        with log.open("w") as out:
            rc = subprocess.call([sys.executable, "setup_native.py", *MODULES], cwd=work,
                                 stdout=out, stderr=subprocess.STDOUT)
        if rc != 0:
            tail = [ln for ln in log.read_text().splitlines() if "error" in ln.lower()][-5:]
            raise SystemExit("lrsim.native: the build failed (exit %d): %s" % (
                rc, " | ".join(tail) or log.read_text()[-800:]))
        suffix = sysconfig.get_config_var("EXT_SUFFIX")
        built = [m[:-3] + suffix for m in MODULES] + [GROUP.replace(".", "/") + "__mypyc" + suffix]
        fresh = dest.with_name(dest.name + f".new-{os.getpid()}")
        shutil.rmtree(fresh, ignore_errors=True)
        for rel in built:
            target = fresh / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(work / rel, target)
        (fresh / "manifest.json").write_text(json.dumps({
            "abi": _abi(), "modules": list(MODULES), "sources": sources,
            "built_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "build_s": round(time.perf_counter() - t0, 1)}, indent=1) + "\n")
    old = dest.with_name(dest.name + f".old-{os.getpid()}")
    if dest.exists():
        dest.rename(old)
    fresh.rename(dest)
    shutil.rmtree(old, ignore_errors=True)
    st = state()
    if not quiet:
        print(f"lrsim.native: built {len(MODULES)} modules in {time.perf_counter() - t0:.0f} s "
              f"into {dest}")
    return st


def main(argv: list[str] | None = None) -> int:
    import argparse
    ap = argparse.ArgumentParser(prog="python -m lrsim.native", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="compile the simulator's hot modules")
    b.add_argument("--if-stale", action="store_true", help="only if the build is missing or stale")
    s = sub.add_parser("status", help="whether compiled modules are built, fresh and in use")
    s.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    if a.cmd == "build":
        if not build(if_stale=a.if_stale)["rebuilt"]:
            print(f"lrsim.native: up to date ({root()})")
        return 0
    st = state()
    if a.json:
        print(json.dumps(st))
    else:
        print(("compiled modules in use" if st["active"] else "plain Python: " + st["reason"])
              + f" ({st['root']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
