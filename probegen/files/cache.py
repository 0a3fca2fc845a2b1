"""probegen's cache: data kept between runs because rebuilding it takes
seconds (the DWARF type index of a large binary; see probegen.dwarf.cache).

Entries are plain data (JSON) that their reader validates; never code.
The cache lives in $XDG_CACHE_HOME/probegen (default ~/.cache/probegen)
and is used only while that directory, its subdirectories and every entry
belong to the effective user and are not writable by group or others:
anyone else who can write there chooses what probegen reads (a shared
XDG_CACHE_HOME in CI; a user's own cache under `sudo -E`). Each directory
is opened with O_NOFOLLOW relative to the one checked before it, and the
checks are made on the open descriptors, so renaming or swapping paths
after a check changes nothing. A cache that is refused or cannot be used
costs only time; probegen says why, once, on stderr.
PROBEGEN_NO_CACHE=1 turns the cache off.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
import time
from contextlib import contextmanager

# Entries kept per kind: one per binary indexed.
KEEP = 32
# Larger entries are not read: an index of a very large binary is a few MB.
MAX_ENTRY = 256 << 20
# Temporaries left by a killed writer are removed after this long.
STALE_TMP_SECONDS = 3600

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_warned: set[str] = set()


class _Refused(Exception):
    """The cache directory must not be used; the message says why."""


def location() -> str:
    """Where the cache lives (whether or not it can be used)."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):  # the XDG spec: relative values are ignored
        base = os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "probegen")


def read(kind: str, name: str) -> bytes | None:
    """An entry's bytes, or None (no entry, no usable cache, or an entry
    not made by this user)."""
    with _directory(kind) as where:
        if where is None:
            return None
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=where)
        except OSError:
            return None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or not _is_own(st) or st.st_size > MAX_ENTRY:
                return None
            return _read_all(fd)
        except OSError:
            return None
        finally:
            os.close(fd)


def write(kind: str, name: str, data: bytes) -> None:
    """Store an entry atomically (readers see the old one or the new one),
    readable and writable by this user only; drop the oldest beyond KEEP."""
    with _directory(kind) as where:
        if where is None:
            return
        tmp = f".{name}.{os.getpid()}.tmp"
        try:
            _unlink(tmp, where)  # left by an earlier process with this pid
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                         dir_fd=where)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
            finally:
                os.close(fd)
            os.replace(tmp, name, src_dir_fd=where, dst_dir_fd=where)
        except OSError:
            _unlink(tmp, where)
            return
        _prune(where)


@contextmanager
def _directory(kind: str):
    """A descriptor of the checked directory for ``kind``, or None when the
    cache is off or refused (said once per location on stderr)."""
    if os.environ.get("PROBEGEN_NO_CACHE"):
        yield None
        return
    top = location()
    try:
        where = _open_checked(top, kind)
    except _Refused as refusal:
        _warn(top, str(refusal))
        where = None
    except OSError as exc:  # names relative to a descriptor are shown as the cache's path
        failed = exc.filename if os.path.isabs(str(exc.filename or "")) else top
        _warn(top, f"{failed}: {exc.strerror}")
        where = None
    try:
        yield where
    finally:
        if where is not None:
            os.close(where)


def _open_checked(top: str, kind: str) -> int:
    base = os.path.dirname(top)
    try:
        base_fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)  # ~/.cache may be a link
    except FileNotFoundError:
        _may_create_in(top, _nearest_existing(base))
        os.makedirs(base, 0o700, exist_ok=True)
        base_fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        top_fd = _open_own_dir(base_fd, os.path.basename(top), top, creating_in=base)
    finally:
        os.close(base_fd)
    try:
        return _open_own_dir(top_fd, kind, os.path.join(top, kind), creating_in=None)
    finally:
        os.close(top_fd)


def _open_own_dir(parent_fd: int, name: str, shown: str, creating_in: str | None) -> int:
    """Open parent/name (creating it 0700 if missing) and check it is ours."""
    try:
        fd = os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
    except FileNotFoundError:
        if creating_in is not None:
            # Not in someone else's directory (a user's ~/.cache under sudo -E):
            # the directory would be ours, and in their way.
            _may_create_in(shown, creating_in, os.fstat(parent_fd))
        try:
            os.mkdir(name, 0o700, dir_fd=parent_fd)
        except FileExistsError:
            pass  # made meanwhile: checked below like any other
        fd = os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR) and _is_link(name, parent_fd):
            raise _Refused(f"{shown} is a symbolic link") from None
        raise
    try:
        _check_own(os.fstat(fd), shown)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _check_own(st: os.stat_result, shown: str) -> None:
    if st.st_uid != os.geteuid():
        raise _Refused(f"{shown} belongs to uid {st.st_uid}, not to you (uid {os.geteuid()})")
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise _Refused(f"{shown} is writable by group or others (mode {stat.S_IMODE(st.st_mode):o}; "
                       "chmod go-w it)")


def _may_create_in(shown: str, parent: str, st: os.stat_result | None = None) -> None:
    """Directories are created only in our own directories or sticky ones
    (/tmp), where no one else can remove them."""
    st = st or os.stat(parent)
    if st.st_uid != os.geteuid() and not st.st_mode & stat.S_ISVTX:
        raise _Refused(f"{shown} would be created in {parent}, which belongs to uid {st.st_uid}, "
                       f"not to you (uid {os.geteuid()})")


def _nearest_existing(path: str) -> str:
    while not os.path.lexists(path) and os.path.dirname(path) != path:
        path = os.path.dirname(path)
    return path


def _is_own(st: os.stat_result) -> bool:
    return st.st_uid == os.geteuid() and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _is_link(name: str, parent_fd: int) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=parent_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _read_all(fd: int) -> bytes | None:
    chunks, total = [], 0
    while chunk := os.read(fd, 1 << 20):
        total += len(chunk)
        if total > MAX_ENTRY:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def _unlink(name: str, where: int) -> None:
    try:
        os.unlink(name, dir_fd=where)
    except OSError:
        pass


def _prune(where: int) -> None:
    entries, now = [], time.time()
    for name in os.listdir(where):
        try:
            st = os.stat(name, dir_fd=where, follow_symlinks=False)
        except OSError:
            continue
        if name.startswith("."):
            if name.endswith(".tmp") and now - st.st_mtime > STALE_TMP_SECONDS:
                _unlink(name, where)
        else:
            entries.append((st.st_mtime_ns, name))
    entries.sort()
    for _, name in entries[:-KEEP]:
        _unlink(name, where)


def _warn(top: str, reason: str) -> None:
    if top in _warned:
        return
    _warned.add(top)
    print(f"probegen: warning: running without the cache (slower): {reason}; "
          "PROBEGEN_NO_CACHE=1 turns it off", file=sys.stderr)
