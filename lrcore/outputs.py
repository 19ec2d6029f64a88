"""Outputs never destroy inputs: the one check and the one writer behind every file `lr` writes.

    out = check_output(path, "--out", inputs=[*traces, profile])   # before any work
    write_atomic(out, text)                                          # after it
    with atomic_path(out) as tmp: fig.savefig(tmp)                   # writers that need a path

`check_output` refuses, with one line naming the flag (`lr: error: --out X: ...`, exit 2):
    * the same file as any input (compared by device and inode, so symlinks and hard links to an
      input are caught too);
    * a device, FIFO or socket (`-o /dev/full` must not replace the device node);
    * a directory where a file is expected (and a file where a directory is expected);
    * `/` or an existing non-empty system directory (`lr plot --out /etc`);
    * a path under a regular file (`-o notes.txt/x.json`), or a folder we may not write;
    * an existing read-only file;
    * (with `suffixes`) a file name whose extension the writer cannot produce.

`write_atomic` writes a temporary file in the target's folder, fsyncs it and renames it over the
target (`os.replace`), so a crash, a full disk or a signal leaves either the old file or the new
one, never a half-written file; a failure is one line naming the flag and the cause.

`distinct_inputs` refuses the same input file given twice (by inode), so no file is counted twice.

Part of lrcore: the simulator (lrsim), the real backend (lrreal), `analysis` and the `lr` CLI all
import it; it imports neither lrsim nor lrreal.
"""
from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path
from typing import Iterable, Iterator

from .errors import UserError

# Directories an output must never be written into when they already hold files: the file system
# root and the top-level system folders (FHS). A typo like `lr plot --out /` or `--out /etc` fails.
SYSTEM_DIRS = frozenset({"/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64",
                         "/libx32", "/media", "/mnt", "/opt", "/proc", "/root", "/run", "/sbin",
                         "/srv", "/sys", "/tmp", "/usr", "/var", "/usr/bin", "/usr/lib",
                         "/usr/local", "/usr/sbin", "/usr/share", "/var/lib", "/var/log"})


def _stat(p: Path) -> os.stat_result | None:
    try:
        return os.stat(p)                         # follows symlinks: the file the name reaches
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError:
        return None


def _kind(st: os.stat_result) -> str:
    m = st.st_mode
    if stat.S_ISCHR(m):
        return "a character device"
    if stat.S_ISBLK(m):
        return "a block device"
    if stat.S_ISFIFO(m):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(m):
        return "a socket"
    if stat.S_ISDIR(m):
        return "a directory"
    return "a special file"


def same_file(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    """Whether two paths name the same existing file (device + inode, symlinks followed)."""
    sa, sb = _stat(Path(a)), _stat(Path(b))
    return sa is not None and sb is not None and (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def _check_parent(p: Path, flag: str) -> None:
    """The nearest existing ancestor must be a writable directory (missing folders are created)."""
    anc = Path(os.path.abspath(p)).parent
    while not os.path.lexists(anc) and anc.parent != anc:
        anc = anc.parent
    st = _stat(anc)
    if st is None or not stat.S_ISDIR(st.st_mode):
        raise UserError(f"{flag} {p}: {anc} is a file, not a directory (an output cannot go under "
                        "a regular file)")
    if not os.access(anc, os.W_OK | os.X_OK):
        raise UserError(f"{flag} {p}: cannot write into {anc} (permission denied): choose a "
                        "folder you can write")


def check_output(path: str | os.PathLike, flag: str = "--out", inputs: Iterable = (),
                 suffixes: Iterable[str] | None = None, what: str = "file") -> Path:
    """Refuse an output file that would destroy an input, a device or a directory (see module
    docstring); returns the path. `inputs` may hold None (optional inputs not given)."""
    p = Path(path)
    if str(path) == "":
        raise UserError(f"{flag}: an empty path; name the {what} to write")
    st = _stat(p)
    if st is not None and not stat.S_ISREG(st.st_mode):
        if stat.S_ISDIR(st.st_mode):
            raise UserError(f"{flag} {p}: is a directory; name the {what} to write (e.g. {p}/out"
                            f"{next(iter(suffixes), '') if suffixes else ''})")
        raise UserError(f"{flag} {p}: is {_kind(st)}, not a regular file: refusing to write to it")
    for i in inputs:
        if i is not None and same_file(p, i):
            shown = "" if os.fspath(i) == os.fspath(p) else f" ({i})"
            raise UserError(f"{flag} {p}: is an input of this command{shown}; writing it would "
                            "destroy that input: choose another output file")
    if suffixes is not None:
        ok = sorted({s.lower() for s in suffixes})
        if p.suffix.lower() not in ok:
            raise UserError(f"{flag} {p}: unsupported file type {p.suffix or '(no extension)'!r}; "
                            f"use one of {', '.join(ok)}")
    _check_parent(p, flag)
    if st is not None and not os.access(p, os.W_OK):
        raise UserError(f"{flag} {p}: the file is read-only; refusing to replace it")
    return p


def check_output_dir(path: str | os.PathLike, flag: str = "--out", inputs: Iterable = (),
                     writes: Iterable[str] = ()) -> Path:
    """An output directory: not a file, not `/` or a non-empty system folder, not under a file,
    writable; no input may be one of the files it will write (`writes`: names relative to it; a
    name ending in "/" stands for everything in that sub-folder, "*/" for every sub-folder)."""
    p = Path(path)
    if str(path) == "":
        raise UserError(f"{flag}: an empty path; name the directory to write into")
    st = _stat(p)
    if st is not None and not stat.S_ISDIR(st.st_mode):
        what = "a regular file" if stat.S_ISREG(st.st_mode) else _kind(st)
        raise UserError(f"{flag} {p}: is {what}, not a directory; name a directory for the output")
    real = os.path.realpath(p)
    if real in SYSTEM_DIRS and (real == "/" or (st is not None and any(os.scandir(real)))):
        raise UserError(f"{flag} {p}: is the system directory {real}; name a directory of your own")
    if st is not None:
        if not os.access(p, os.W_OK | os.X_OK):
            raise UserError(f"{flag} {p}: cannot write into it (permission denied)")
    else:
        _check_parent(p, flag)
    root = Path(real)
    for i in inputs:
        if i is None:
            continue
        ri = Path(os.path.realpath(i))
        if ri == root:
            raise UserError(f"{flag} {p}: is an input of this command ({i})")
        for w in writes:
            if w == "*/":          # anything in any sub-folder
                hit = root in ri.parents and ri.parent != root
            elif w.endswith("/"):
                hit = root / w.rstrip("/") in ri.parents
            else:
                hit = ri == root / w
            if hit:
                raise UserError(f"{flag} {p}: would overwrite the input {i}; write the output "
                                "elsewhere")
    return p


def distinct_inputs(paths: Iterable, flag: str) -> list:
    """The paths, refusing one given twice (the same file under two names counts as twice)."""
    seen: dict[tuple[int, int], object] = {}
    out = []
    for p in paths:
        st = _stat(Path(p))
        if st is not None and stat.S_ISREG(st.st_mode):
            key = (st.st_dev, st.st_ino)
            if key in seen:
                first = seen[key]
                same = "" if os.fspath(first) == os.fspath(p) else f" and {p}"
                raise UserError(f"{flag} {first}{same}: the same file is given twice; each input "
                                "file counts once: give it once")
            seen[key] = p
        out.append(p)
    return out


def _new_file_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, flag: str = "--out") -> Iterator[Path]:
    """Yields a temporary path beside `path` (same extension, so writers that pick a format by
    extension work); on success it is fsynced and renamed over `path`, on failure removed."""
    p = Path(path)
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{p.stem}.", suffix=f".tmp{p.suffix}",
                                   dir=p.parent if str(p.parent) else ".")
        os.close(fd)
    except OSError as e:
        raise UserError(f"{flag} {p}: cannot write ({e.strerror or e})") from None
    tmp_p = Path(tmp)
    try:
        yield tmp_p
        st = _stat(p)
        os.chmod(tmp_p, stat.S_IMODE(st.st_mode) if st is not None else _new_file_mode())
        with open(tmp_p, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp_p, p)
        _fsync_dir(p.parent)
    except OSError as e:
        raise UserError(f"{flag} {p}: cannot write ({e.strerror or e}); "
                        f"{'the previous file is unchanged' if p.exists() else 'nothing written'}") from None
    finally:
        with contextlib.suppress(OSError):
            tmp_p.unlink()


def _fsync_dir(d: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(d if str(d) else ".", os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_atomic(path: str | os.PathLike, data: str | bytes, flag: str = "--out") -> Path:
    """Write `data` to `path` atomically (temporary file beside it + os.replace)."""
    raw = data.encode() if isinstance(data, str) else data
    with atomic_path(path, flag) as tmp:
        try:
            with open(tmp, "wb") as f:
                f.write(raw)
        except OSError as e:
            raise UserError(f"{flag} {path}: cannot write ({e.strerror or e}); "
                            f"{'the previous file is unchanged' if Path(path).exists() else 'nothing written'}") from None
    return Path(path)
