"""Writing generated files: atomically, and only when their content changed.

An unchanged file keeps its mtime, so a build that depends on it does not
recompile.

What an output path names decides how it is written:

- a regular file, or nothing yet: written to a temporary beside it, which is
  then renamed over it; readers never see half a file, and a failed write
  leaves the old file as it was;
- a character device or a FIFO (``/dev/null``, ``/dev/stdout``, ``-o >(cmd)``):
  written in place, never renamed over (that would replace the device node);
  a FIFO that no process reads is refused instead of waited on;
- a symbolic link, at the end of the path or in its directories: followed
  (the link stays, its target is written) when the link is owned by the
  user running probegen or by root. A link owned by anyone else is refused:
  in a shared directory it would let its owner choose which file root
  overwrites;
- a directory, a block device or a socket: refused.

Every failure is one line naming the path (exit 2).

A regular file that lacks probegen's marker line (probegen.files.marker) is
someone else's: the commands that write generated outputs ask
(``keep_foreign``) that it not be replaced, unless they are given --force.

Temporaries are named ``.NAME.probegen-PID-RANDOM.tmp`` and locked (flock)
while they exist. SIGINT, SIGTERM and SIGHUP remove them before the process
dies of the signal. Those a SIGKILL leaves behind are removed by the next
run that writes a file in the same directory, or finds it current: only
files of that naming, owned by the same user, whose lock no live process
holds (so concurrent runs leave each other's temporaries alone, whatever
their pids or pid namespaces).
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from probegen.errors import InputError, printable


@dataclass(frozen=True)
class GeneratedFile:
    path: Path
    text: str
    executable: bool = False

    @property
    def data(self) -> bytes:
        return self.text.encode("utf-8")


class UnwritableOutput(InputError):
    """An output that is refused or could not be written (exit 2)."""

    def __init__(self, path, problem: str):
        super().__init__(printable(f"{path}: error: {problem}"))


def is_current(file: GeneratedFile) -> bool:
    """True when the file on disk has exactly this content (and mode).
    Only a regular file can be: a FIFO or a device is not read (it could
    block, or never end)."""
    from probegen.files.inputs import UnreadableInput, open_seekable

    try:
        stream, size = open_seekable(file.path, "generated file")
    except UnreadableInput:
        return False
    try:
        with stream:
            if size != len(file.data) or stream.read(size + 1) != file.data:
                return False
        return not file.executable or os.access(file.path, os.X_OK)
    except OSError:
        return False


class ForeignFile(UnwritableOutput):
    """A file probegen did not write is where an output goes (exit 2)."""

    def __init__(self, path, others: int = 0):
        from probegen.files import marker

        more = f" ({others} more output file(s) likewise)" if others else ""
        shown = path
        if os.path.isabs(path) and not os.path.relpath(path).startswith(".."):
            shown = os.path.relpath(path)  # a catalog's outputs are absolute: shown as generate lists them
        super().__init__(shown, f"not written by probegen (no '{marker.TEXT}' line), not replacing it: "
                                f"give --force to let probegen take it over{more}")


def refuse_foreign(files: list[GeneratedFile]) -> None:
    """ForeignFile naming the first path that holds a regular file without
    probegen's marker. Callers check every file before writing any, so a
    refused run changes nothing."""
    from probegen.files.marker import is_foreign

    foreign = [f.path for f in files if is_foreign(f.path)]
    if foreign:
        raise ForeignFile(foreign[0], len(foreign) - 1)


def write_if_changed(file: GeneratedFile, keep_foreign: bool = False) -> bool:
    """Write the file unless it is current; True if written. UnwritableOutput
    when the path is refused or the write fails. With ``keep_foreign`` (the
    generated outputs, unless --force), ForeignFile when a regular file
    without probegen's marker is there."""
    try:
        target, info, in_place = _target(file.path)
        if in_place or (info is not None and not stat.S_ISREG(info.st_mode)):
            _write_in_place(file.path, target, info, file.data)
            return True
        _sweep(os.path.dirname(target) or ".")
        if is_current(file):
            return False
        if keep_foreign:
            refuse_foreign([file])
        _replace(target, file.data, file.executable)
        return True
    except _MakeDirectoryError as exc:
        raise UnwritableOutput(file.path, f"cannot create directory {exc.filename}: {exc.strerror}") from None
    except _TemporaryError as exc:
        raise UnwritableOutput(file.path, f"cannot create a file in {exc.filename}: {exc.strerror}") from None
    except OSError as exc:
        raise UnwritableOutput(file.path, f"cannot write: {exc.strerror or exc}") from None


def open_stream(path) -> int:
    """A descriptor for output that another program streams (bpftrace -o),
    for a path checked as write_if_changed checks it: links owned by another
    user refused, devices and FIFOs opened in place, other special files
    refused. A regular file is truncated, not replaced. The caller passes
    the descriptor on, so the program never opens the user's path itself."""
    try:
        target, info, in_place = _target(path)
        if info is not None:
            mode = info.st_mode
            if not (stat.S_ISREG(mode) or stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)):
                raise UnwritableOutput(path, f"is {_kind(mode)}; not writing to it")
            fd = _standard_stream(info)
            if fd is not None:
                return os.dup(fd)
        flags = os.O_WRONLY | os.O_CREAT | os.O_NOCTTY | os.O_NONBLOCK
        if not in_place:  # the path was resolved link by link: its end is no link
            flags |= os.O_NOFOLLOW
        try:
            fd = os.open(target, flags, 0o666)
        except OSError as exc:
            if exc.errno == 6:  # ENXIO
                raise UnwritableOutput(path, "no process reads this FIFO") from None
            raise
        opened = os.fstat(fd)
        if stat.S_ISREG(opened.st_mode):
            os.ftruncate(fd, 0)
        os.set_blocking(fd, True)
        return fd
    except OSError as exc:
        raise UnwritableOutput(path, f"cannot write: {exc.strerror or exc}") from None


def write_all(files: list[GeneratedFile], keep_foreign: bool = False) -> list[Path]:
    """Write every file that changed; returns the paths written. With
    ``keep_foreign``, nothing is written when one of the paths holds a file
    that is not probegen's."""
    if keep_foreign:
        refuse_foreign(files)
    return [f.path for f in files if write_if_changed(f, keep_foreign)]


def stale(files: list[GeneratedFile]) -> list[Path]:
    """Paths whose content on disk differs from what would be generated."""
    return [f.path for f in files if not is_current(f)]


# --- What a path leads to ---------------------------------------------------

_MAX_LINKS = 40


def _target(path) -> tuple[str, os.stat_result | None, bool]:
    """(the absolute path a write lands on, its status or None if it does
    not exist yet, whether to write it in place). The path is resolved one
    component at a time, so that every symbolic link on the way, in the
    directories as at the end, is checked for its owner before it is
    followed. A link inside /proc at the end (where /dev/stdout and
    /dev/fd/N lead) names an open file: written in place, not replaced."""
    shown = os.fspath(path)
    current = "/" if shown.startswith("/") else os.getcwd()
    pending = shown.split("/")[::-1]  # components still to resolve, next last
    links = 0
    info = os.lstat(current)
    while pending:
        part = pending.pop()
        if part in ("", "."):
            continue
        if part == "..":
            current = os.path.dirname(current)
            info = os.lstat(current)
            continue
        candidate = os.path.join(current, part)
        try:
            info = os.lstat(candidate)
        except FileNotFoundError:
            return os.path.normpath(os.path.join(candidate, *reversed(pending))), None, False
        if not stat.S_ISLNK(info.st_mode):
            current = candidate
            continue
        if info.st_uid not in (0, os.geteuid()):
            which = "is" if candidate == os.path.abspath(shown) else f"leads to {candidate}, which is"
            raise UnwritableOutput(path, f"{which} a symbolic link owned by another user (uid {info.st_uid}); "
                                   "not writing through it")
        if current.startswith("/proc/") and not any(pending):
            return candidate, os.stat(candidate), True
        links += 1
        if links > _MAX_LINKS:
            raise UnwritableOutput(path, "too many levels of symbolic links")
        target = os.readlink(candidate)
        if target.startswith("/"):
            current = "/"
        pending.extend(target.split("/")[::-1])
    return current, info, False


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"


# --- Writing in place: devices, FIFOs, open files ---------------------------

def _write_in_place(shown, target: str, info: os.stat_result, data: bytes) -> None:
    mode = info.st_mode
    if not (stat.S_ISCHR(mode) or stat.S_ISFIFO(mode) or stat.S_ISREG(mode)):
        raise UnwritableOutput(shown, f"is {_kind(mode)}; not writing to it")
    fd = _standard_stream(info)
    if fd is not None:
        _write_fully(fd, data)
        return
    # Non-blocking open: a FIFO without a reader fails (ENXIO) instead of
    # hanging. A regular file here was reached through /proc: truncated.
    flags = os.O_WRONLY | os.O_NOCTTY | os.O_CLOEXEC | os.O_NONBLOCK
    if stat.S_ISREG(mode):
        flags |= os.O_TRUNC
    try:
        fd = os.open(target, flags)
    except OSError as exc:
        if exc.errno == 6 and stat.S_ISFIFO(mode):  # ENXIO
            raise UnwritableOutput(shown, "no process reads this FIFO") from None
        raise
    try:
        opened = os.fstat(fd)
        if stat.S_IFMT(opened.st_mode) != stat.S_IFMT(mode):
            raise UnwritableOutput(shown, "changed while being opened; not writing to it")
        os.set_blocking(fd, True)
        _write_fully(fd, data)
    finally:
        os.close(fd)


def _standard_stream(info: os.stat_result) -> int | None:
    """1 or 2 if the target is what stdout or stderr already has open (so
    ``-o /dev/stdout >> log`` appends, at the shell's offset)."""
    import sys

    for fd, stream in ((1, sys.stdout), (2, sys.stderr)):
        try:
            if os.path.samestat(os.fstat(fd), info):
                if stream is not None:
                    stream.flush()
                return fd
        except (OSError, ValueError):
            continue
    return None


def _write_fully(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


# --- Atomic replacement of regular files ------------------------------------

class _MakeDirectoryError(OSError):
    pass


class _TemporaryError(OSError):
    pass


def _replace(target: str, data: bytes, executable: bool) -> None:
    directory = os.path.dirname(target) or "."
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as exc:
        raise _MakeDirectoryError(exc.errno, exc.strerror, exc.filename or directory) from None
    umask = os.umask(0)
    os.umask(umask)
    mode = (0o777 if executable else 0o666) & ~umask | stat.S_IRUSR
    with _removed_on_signal():
        fd, temporary = _create_temporary(directory, os.path.basename(target))
        try:
            # The descriptor (and so the lock) is kept until the rename: a
            # run sweeping this directory takes an unlocked temporary for a
            # killed run's.
            try:
                _write_fully(fd, data)
                os.fsync(fd)
                os.fchmod(fd, mode)  # on the descriptor: the name could be swapped for a link
                os.replace(temporary, target)
            finally:
                os.close(fd)
        except BaseException:
            _unlink_quietly(temporary)
            raise
        finally:
            _live_temporaries.discard(temporary)


_live_temporaries: set[str] = set()
_TEMPORARY_TAG = ".probegen-"
# Keeps ".NAME.probegen-PID-RANDOM.tmp" within the 255 bytes of a file name.
_NAME_ROOM = 120


def _create_temporary(directory: str, name: str) -> tuple[int, str]:
    """A new temporary beside the target, open, locked, and registered for
    removal on a signal. Registered before it exists, so that no instant
    leaves it unregistered."""
    import fcntl

    stem = name.encode()[:_NAME_ROOM].decode(errors="ignore")
    while True:
        temporary = os.path.join(directory, f".{stem}{_TEMPORARY_TAG}{os.getpid()}-{os.urandom(6).hex()}.tmp")
        _live_temporaries.add(temporary)
        try:
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            _live_temporaries.discard(temporary)
            if exc.errno == 17:  # EEXIST: that name is taken, draw another
                continue
            raise _TemporaryError(exc.errno, exc.strerror, directory) from None
        except BaseException:
            _live_temporaries.discard(temporary)
            raise
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:
            pass  # a filesystem without locks: the temporary is never swept as stale
        if os.fstat(fd).st_nlink:
            return fd, temporary
        # Another run swept it in the instant before it was locked: start again.
        os.close(fd)
        _live_temporaries.discard(temporary)


_swept: set[str] = set()
_TEMPORARY_NAME = re.compile(r"\..+\.probegen-[0-9]+-[0-9a-f]{12}\.tmp", re.DOTALL)


def is_temporary_name(name: str) -> bool:
    """Whether a file name is one of our temporaries'."""
    return _TEMPORARY_TAG in name and _TEMPORARY_NAME.fullmatch(name) is not None


def _sweep(directory: str) -> None:
    """Remove temporaries of our naming left by killed runs: owned by this
    user and not locked by a live process. Once per directory per run."""
    key = os.path.abspath(directory)
    if key in _swept:
        return
    _swept.add(key)
    import fcntl

    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        if not is_temporary_name(name):
            continue
        path = os.path.join(directory, name)
        try:
            info = os.lstat(path)
            if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
                continue
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held: a live run is writing it
            if os.path.samestat(os.fstat(fd), os.lstat(path)):
                os.unlink(path)
        except OSError:
            pass
        finally:
            os.close(fd)


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


class _removed_on_signal:
    """While writing: SIGINT, SIGTERM and SIGHUP first remove the live
    temporaries, then take their usual course (KeyboardInterrupt, or death
    by the signal). Ignored signals stay ignored."""

    _SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP")

    def __enter__(self):
        import signal

        self.previous = {}
        for name in self._SIGNALS:
            signum = getattr(signal, name)
            try:
                handler = signal.getsignal(signum)
                if handler in (signal.SIG_IGN, None):
                    continue
                signal.signal(signum, self._on_signal)
            except ValueError:  # not the main thread: signals go elsewhere
                break
            self.previous[signum] = handler
        return self

    def __exit__(self, *exc_info):
        import signal

        for signum, handler in self.previous.items():
            signal.signal(signum, handler)

    def _on_signal(self, signum, frame):
        import signal

        for temporary in list(_live_temporaries):
            _unlink_quietly(temporary)
        previous = self.previous.pop(signum)
        signal.signal(signum, previous)
        if callable(previous):
            previous(signum, frame)
        else:
            os.kill(os.getpid(), signum)
