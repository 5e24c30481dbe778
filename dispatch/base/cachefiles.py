"""The files dispatch keeps (calibrations, saved histories): written whole or not at all, read
only when they are plain files of a sane size.

A write goes to a temporary file of a name no one can guess, created in the destination's
folder (``O_CREAT | O_EXCL``, as ``tempfile.mkstemp`` makes one, so a symbolic link planted there is never
followed), then renamed over the destination (``os.replace``, which replaces a link rather than
writing through it). Readers see the old file or the new one, never half of one; concurrent
writers never share a temporary name.

A read opens the file with ``O_NOFOLLOW | O_NONBLOCK`` and checks that it is a regular file
(``fstat``) before reading at most ``limit`` bytes: a symbolic link (to ``/dev/zero``, say), a
FIFO or a folder at a cache path is refused at once instead of hanging or filling the memory.

Folders dispatch creates are private to the user (mode 0700). A folder that already exists
(``DISPATCH_CACHE_DIR`` pointing at a team's shared folder) is used as it is: the rules above
let no one with write access to it make dispatch write outside it, follow a link, block or
raise in a user's calls; what they can do is leave a well-formed calibration that routes calls
more slowly (results stay NumPy's on every target).
"""

from __future__ import annotations

import errno
import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

from dispatch.base import settings

__all__ = ["CALIBRATION_PREFIX", "MAX_BYTES", "cache_dir", "calibrations", "listed", "private_dir", "read_json",
           "read_text", "sha256", "user_cache_dir", "write_text"]

# A full calibration of an 8-GPU machine is about 200 KB, a long program's saved history a few MB.
MAX_BYTES = 64 * 2**20
# Files are written readable by the folder's other users (a shared cache's point); a folder
# dispatch creates is 0700, so in the default cache nobody else can reach them.
FILE_MODE = 0o644

# The names of kept files and the checks of their contents are SHA-256 digests, made by the
# interpreter's own module where it has one: ``hashlib`` loads OpenSSL first, a few milliseconds
# of a script's start, for the same digest.
try:
    from _sha2 import sha256 as _sha256  # Python 3.12 and later
except ImportError:
    try:
        from _sha256 import sha256 as _sha256  # Python 3.11
    except ImportError:  # an interpreter without them
        from hashlib import sha256 as _sha256

# A machine's calibration is the file ``calibration-<its fingerprint>.json`` in the cache folder.
CALIBRATION_PREFIX = "calibration-"

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)  # absent on Windows, which has no FIFOs to fear
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


def user_cache_dir(app: str) -> Path:
    """The platform's user cache folder for ``app`` (``platformdirs.user_cache_dir(app,
    appauthor=False)``). On Linux it is the XDG rule's, read here: ``platformdirs`` loads
    ``tempfile``, ``shutil`` and the compressors, 10 ms of a script's first routed call."""
    android = os.environ.get("ANDROID_DATA") == "/data" and os.environ.get("ANDROID_ROOT") == "/system"
    if sys.platform.startswith("linux") and not android:
        base = os.environ.get("XDG_CACHE_HOME", "")
        return Path(base if base.strip() else os.path.expanduser("~/.cache"), app)
    import platformdirs

    return Path(platformdirs.user_cache_dir(app, appauthor=False))


def cache_dir() -> Path:
    """``$DISPATCH_CACHE_DIR``, else the platform's user cache directory for ``dispatch``
    (``platformdirs.user_cache_dir``: ``~/.cache/dispatch`` on Linux, ``~/Library/Caches/dispatch``
    on macOS): where calibrations and what scripts learned are kept."""
    chosen = settings.cache_dir()
    if chosen is not None:
        return chosen
    return user_cache_dir("dispatch")


def listed(folder: Path) -> list[str]:
    """The names in ``folder``, sorted (none where it cannot be read): ``os.listdir``, as
    ``Path.glob`` compiles its pattern first, a share of a script's first routed call."""
    try:
        return sorted(os.listdir(folder))
    except OSError:
        return []


def calibrations() -> list[str]:
    """The names of the calibration files in the cache folder, whatever machine they were made for."""
    return [name for name in listed(cache_dir()) if name.startswith(CALIBRATION_PREFIX) and name.endswith(".json")]


def sha256(data: bytes) -> str:
    """The SHA-256 digest of ``data``, in hexadecimal (``hashlib.sha256(data).hexdigest()``)."""
    return _sha256(data).hexdigest()


def private_dir(folder: str | Path) -> Path:
    """``folder``, created (with any missing parents) with mode 0700 where it does not exist.

    Raises
    ------
    NotADirectoryError
        Where ``folder`` or one of its parents is something else than a folder.
    """
    folder = Path(folder)
    missing = []
    here = folder
    while not here.is_dir():
        if os.path.lexists(here) and not here.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, "the cache folder is not a folder", str(here))
        missing.append(here)
        if here.parent == here:
            break
        here = here.parent
    for part in reversed(missing):
        try:
            part.mkdir(mode=0o700)
        except FileExistsError:  # made meanwhile by another process
            if not part.is_dir():
                raise NotADirectoryError(errno.ENOTDIR, "the cache folder is not a folder", str(part)) from None
    return folder


def write_text(path: str | Path, text: str, sync: bool = True) -> Path:
    """Write ``text`` to ``path`` atomically (see the module docstring); returns ``path``.

    ``sync=False`` leaves out the ``fsync`` before the rename: after a power loss the file may be
    empty or torn (its reader then ignores it), never half of an old and half of a new one while
    the machine runs. For files worth less than the 20-80 ms an ``fsync`` took at a script's end
    on a shared disk (what a script's runs learned)."""
    path = Path(path)
    folder = private_dir(path.parent)
    fd, tmp = _new_file(folder, path.name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            if sync:
                os.fsync(handle.fileno())  # the rename must not land before the contents
        os.chmod(tmp, FILE_MODE)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return path


def _new_file(folder: Path, name: str) -> tuple[int, str]:
    """A new file in ``folder`` of a name no one can guess, open for writing, as
    ``tempfile.mkstemp`` makes one (``O_CREAT | O_EXCL``, mode 0600), without importing
    ``tempfile``, whose ``shutil`` and compressors took 5 ms of a script's end."""
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    for _ in range(100):
        tmp = os.path.join(folder, f".{name}.{os.urandom(8).hex()}.tmp")
        try:
            return os.open(tmp, flags, 0o600), tmp
        except FileExistsError:  # taken: another name
            continue
    raise FileExistsError(errno.EEXIST, "no unused temporary name found", str(folder))


def read_text(path: str | Path, limit: int = MAX_BYTES) -> str:
    """The text of the regular file at ``path``, of at most ``limit`` bytes.

    Raises
    ------
    FileNotFoundError
        Where nothing is at ``path``.
    OSError
        Where ``path`` is a symbolic link, not a regular file, larger than ``limit``, or unreadable.
    UnicodeDecodeError
        Where the bytes are not UTF-8.
    """
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OSError(errno.ELOOP, "a symbolic link, not followed", str(path)) from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        if info.st_size > limit:
            raise OSError(errno.EFBIG, f"larger than {limit} bytes", str(path))
        chunks, size = [], 0
        while chunk := os.read(fd, min(1 << 20, limit + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:  # grew while being read
                raise OSError(errno.EFBIG, f"larger than {limit} bytes", str(path))
    finally:
        os.close(fd)
    return b"".join(chunks).decode("utf-8")


def read_json(path: str | Path, limit: int = MAX_BYTES) -> Any:
    """The JSON value in the regular file at ``path`` (``read_text``'s errors, and ``ValueError``
    where the text is not JSON)."""
    text = read_text(path, limit)
    try:
        return json.loads(text)
    except RecursionError:  # nested deeper than the parser's stack
        raise ValueError(f"{path}: JSON nested too deeply") from None
