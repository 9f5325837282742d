"""Atomic writes, a cross-process lock, and folders built once and renamed or swapped into place."""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from perfsuite.errors import PerfsuiteError

T = TypeVar("T")


def cache_home(part: str) -> Path:
    """perfsuite's cache folder ``part``: ``$XDG_CACHE_HOME/perfsuite/<part>``, else
    ``~/.cache/perfsuite/<part>``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "perfsuite" / part


def umask() -> int:
    """This process's umask: from ``/proc/self/status`` where Linux gives it, else by
    setting it and setting it back (for an instant, another thread's new file would
    get no mask)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0)
    os.umask(mask)
    return mask


def made_dir(prefix: str, parent: Path) -> Path:
    """A new folder in ``parent`` with the mode a plain ``mkdir`` gives it (``mkdtemp``
    makes it 0700 whatever the umask), to be renamed into place."""
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    os.chmod(folder, 0o777 & ~umask())
    return folder


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so readers see the old file or the whole new one, never
    half, with the mode a plain ``open`` gives a new file (the umask's)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~umask())
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    """Text version of :func:`atomic_write_bytes` (UTF-8)."""
    atomic_write_bytes(path, text.encode("utf-8"))


@contextlib.contextmanager
def file_lock(path: Path, waiting: str | None = None) -> Iterator[None]:
    """Hold an exclusive advisory lock on ``path`` (created if needed) for the block;
    where another process holds it, print ``waiting`` (if given) once, then wait."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if waiting is not None:
                print(waiting, flush=True)
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def sha256_file(path: Path) -> str:
    """The sha256 of a file's bytes, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def discard_dir(path: Path) -> None:
    """Move a folder out of the way first (atomic), then delete it."""
    trash = Path(tempfile.mkdtemp(prefix=".trash-", dir=path.parent))
    os.rename(path, trash / path.name)
    shutil.rmtree(trash, ignore_errors=True)


#: renameat2(2) flag: swap two paths atomically (Linux 3.15+, glibc 2.28+)
RENAME_EXCHANGE = 2
AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two existing paths; False where the system cannot."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p]
    renameat2.argtypes += [ctypes.c_uint]
    done = renameat2(AT_FDCWD, os.fsencode(a), AT_FDCWD, os.fsencode(b), RENAME_EXCHANGE)
    if done == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False  # a file system or kernel without RENAME_EXCHANGE
    raise OSError(code, os.strerror(code), str(b))


def replace_dir(new: Path, final: Path) -> None:
    """Put the folder ``new`` in the place of ``final`` (a sibling), as one step.

    Readers see the old folder whole or the new one whole: the two are swapped
    atomically where the kernel can (``renameat2(RENAME_EXCHANGE)``), else the old one
    is renamed aside first. The old folder is then deleted.
    """
    if not final.exists():
        os.rename(new, final)
        return
    if _exchange(new, final):
        shutil.rmtree(new, ignore_errors=True)  # ``new`` now holds the old folder
        return
    trash = Path(tempfile.mkdtemp(prefix=f".{final.name}.old-", dir=final.parent))
    os.rename(final, trash / final.name)
    try:
        os.rename(new, final)
    except BaseException:
        os.rename(trash / final.name, final)  # put the old folder back
        raise
    finally:
        shutil.rmtree(trash, ignore_errors=True)


def build_dir_once(
    final: Path, load: Callable[[Path], T | None], build: Callable[[Path], None], what: str
) -> T:
    """The folder at ``final`` as ``load`` accepts it, building it once if it is missing or bad.

    ``load`` returns ``None`` for a folder that is absent, incomplete or altered. The build
    happens under a lock next to ``final`` (so two processes end with one good copy), into a
    temporary folder renamed into place (so readers never see half of it); a bad folder is
    moved away first, and build folders left by killed processes are removed.
    """
    found = load(final)
    if found is not None:
        return found
    parent = final.parent
    with file_lock(parent / f".{final.name}.lock"):
        found = load(final)  # another process may have built it meanwhile
        if found is not None:
            return found
        if final.exists():
            discard_dir(final)
        for stale in parent.glob(f".{final.name}.build-*"):
            shutil.rmtree(stale, ignore_errors=True)  # only the lock holder builds
        tmp = made_dir(f".{final.name}.build-", parent)
        try:
            build(tmp)
            os.rename(tmp, final)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    found = load(final)
    if found is None:  # pragma: no cover - only if someone alters it within microseconds
        raise PerfsuiteError(f"{what} {final} failed verification right after it was built")
    return found


def check_replaceable(out: Path, is_own: Callable[[Path], bool], advice: str) -> None:
    """Refuse to let a report folder replace ``out`` unless it is absent, or a real
    folder whose every entry ``is_own`` accepts, and the nearest existing folder above
    it takes a new folder. Raises :class:`PerfsuiteError` ``"{out}: <why>; {advice}"``
    (``out`` made absolute), never deleting anything."""
    out = Path(os.path.abspath(out))
    if out.exists() or out.is_symlink():
        if out.is_symlink() or not out.is_dir():
            raise PerfsuiteError(f"{out}: not a folder; {advice}")
        foreign = sorted(entry.name for entry in out.iterdir() if not is_own(entry))
        if foreign:
            more = " ..." if len(foreign) > 3 else ""
            raise PerfsuiteError(
                f"{out}: holds {', '.join(foreign[:3])}{more}, which the report would "
                f"replace; {advice}"
            )
    above = next(p for p in out.parents if p.exists())
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".perfsuite-report-check-", dir=above))
    except OSError as exc:
        raise PerfsuiteError(
            f"{out}: cannot create a folder in {above} ({exc.strerror}); "
            "name a folder you can write"
        ) from None
