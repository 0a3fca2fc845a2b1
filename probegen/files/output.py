"""Writing generated files: atomically, only when their content changed (an
unchanged file keeps its mtime, so builds do not recompile), relative to the
descriptor of the directory probegen.files.place walked to (doc/security.md,
"Writing, by descriptor"). A regular file is replaced by renaming a locked
temporary over it; a character device or FIFO is written in place.
"""

import contextlib
import errno
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from probegen.errors import InputError, Location
from probegen.files.inputs import KINDS
from probegen.files.marker import TEXT as MARKER, marked_at
from probegen.files.place import READ_FLAGS, MakeDirectoryError, Place, Refused, holds_at, locate


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
        super().__init__(problem, Location(str(path)))


class ForeignFile(UnwritableOutput):
    """A file probegen did not write is where an output goes (exit 2)."""

    def __init__(self, path, others: int = 0):
        more = f" ({others} more output file(s) likewise)" if others else ""
        shown = path
        if os.path.isabs(path) and not os.path.relpath(path).startswith(".."):
            shown = os.path.relpath(path)  # a catalog's outputs are absolute: shown as generate lists them
        super().__init__(shown, f"not written by probegen (no '{MARKER}' line), not replacing it: "
                                f"give --force to let probegen take it over{more}")


def _read_at(path, check) -> bool:
    """``check(place)`` of a path walked for reading (no owner checked:
    reading decides no write); False when it cannot be (the write says why)."""
    try:
        with locate(path, create=False, strict=False) as place:
            return check(place)
    except (Refused, OSError):
        return False


def _is_current_at(place: Place, data: bytes, executable: bool) -> bool:
    """The file on disk has exactly this content (and mode). Only a regular
    file can be current: a FIFO or a device is not read (it could block)."""
    if place.proc or place.info is None or not stat.S_ISREG(place.info.st_mode):
        return False
    found = holds_at(place.dir_fd, place.name, data)
    return found is not None and (not executable or bool(found.st_mode & stat.S_IXUSR))


def refuse_foreign(files: list[GeneratedFile]) -> None:
    """ForeignFile for the first path holding a regular file without the
    marker, checked for every file before any is written (the write checks
    again, on the descriptor)."""
    foreign = [f.path for f in files if _read_at(f.path, lambda place: marked_at(place.dir_fd, place.name) is False)]
    if foreign:
        raise ForeignFile(foreign[0], len(foreign) - 1)


@contextlib.contextmanager
def _writable(path):
    """The checked place for writing ``path``; every failure as UnwritableOutput."""
    try:
        with locate(path, create=True) as place:
            yield place
    except Refused as exc:
        raise UnwritableOutput(path, str(exc)) from None
    except MakeDirectoryError as exc:
        raise UnwritableOutput(path, f"cannot create directory {exc.filename}: {exc.strerror}") from None
    except OSError as exc:
        raise UnwritableOutput(path, f"cannot write: {exc.strerror or exc}") from None


def write_if_changed(file: GeneratedFile, keep_foreign: bool = False) -> bool:
    """Write the file unless it is current; True if written."""
    with _writable(file.path) as place:
        if place.proc or (place.info is not None and not stat.S_ISREG(place.info.st_mode)):
            fd = _open_target(place, create=False)  # a device, a FIFO, a file through /proc
            try:
                _write_fully(fd, file.data)
            finally:
                os.close(fd)
            return True
        _sweep(place)
        data = file.data
        if _is_current_at(place, data, file.executable):
            return False
        if keep_foreign and marked_at(place.dir_fd, place.name) is False:
            raise ForeignFile(file.path)
        _replace(place, data, file.executable)
        return True


def open_stream(path) -> int:
    """A descriptor for output another program streams (bpftrace -o), the
    path checked as for write_if_changed; a regular file is created or
    truncated in place. The program is given the descriptor, never the path."""
    with _writable(path) as place:
        return _open_target(place, create=True)


def write_all(files: list[GeneratedFile]) -> list[Path]:
    """Write every file that changed; the paths written."""
    return [f.path for f in files if write_if_changed(f)]


def stale(files: list[GeneratedFile]) -> list[Path]:
    """Paths whose content on disk differs from what would be generated."""
    return [f.path for f in files
            if not _read_at(f.path, lambda place, f=f: _is_current_at(place, f.data, f.executable))]


def _check_kind(place: Place, mode: int) -> None:
    if not (stat.S_ISREG(mode) or stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)):
        raise UnwritableOutput(place.path, f"is {KINDS.get(stat.S_IFMT(mode), 'a special file')}; "
                                           "not writing to it")


def _open_target(place: Place, create: bool) -> int:
    """A descriptor to write ``place`` in place, a regular file truncated:
    stdout's or stderr's own when the target is what they have open (so
    ``-o /dev/stdout >> log`` appends, at the shell's offset). Opened
    non-blocking: a FIFO without a reader fails (ENXIO) instead of
    hanging. A /proc link is followed: it names one of our open files."""
    if place.info is not None:
        _check_kind(place, place.info.st_mode)
        fd = _standard_stream(place.info)
        if fd is not None:
            return os.dup(fd)
    flags = os.O_WRONLY | os.O_NOCTTY | os.O_NONBLOCK | os.O_CLOEXEC | (os.O_CREAT if create else 0)
    try:
        fd = os.open(place.name, flags | (0 if place.proc else os.O_NOFOLLOW), 0o666, dir_fd=place.dir_fd)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise UnwritableOutput(place.path, "no process reads this FIFO") from None
        raise
    try:
        mode = os.fstat(fd).st_mode
        _check_kind(place, mode)
        if not create and stat.S_IFMT(mode) != stat.S_IFMT(place.info.st_mode):
            raise UnwritableOutput(place.path, "changed while being opened; not writing to it")
        if stat.S_ISREG(mode):
            os.ftruncate(fd, 0)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _standard_stream(info: os.stat_result) -> int | None:
    """1 or 2 if the target is what stdout or stderr already has open."""
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


def _replace(place: Place, data: bytes, executable: bool) -> None:
    umask = os.umask(0)
    os.umask(umask)
    mode = (0o777 if executable else 0o666) & ~umask | stat.S_IRUSR
    with _removed_on_signal():
        fd, temporary = _create_temporary(place)
        try:
            # The descriptor, and so the lock, is kept until the rename: a
            # sweeping run takes an unlocked temporary for a killed run's.
            try:
                _write_fully(fd, data)
                os.fsync(fd)
                os.fchmod(fd, mode)
                os.rename(temporary, place.name, src_dir_fd=place.dir_fd, dst_dir_fd=place.dir_fd)
            finally:
                os.close(fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary, dir_fd=place.dir_fd)
            raise
        finally:
            _live_temporaries.discard((place.dir_fd, temporary))


# (directory descriptor, name): the descriptor stays open while its temporary lives.
_live_temporaries: set[tuple[int, str]] = set()
_TEMPORARY_TAG = ".probegen-"
_NAME_ROOM = 120  # keeps ".NAME.probegen-PID-RANDOM.tmp" within a name's 255 bytes


def _create_temporary(place: Place) -> tuple[int, str]:
    """A new temporary beside the target, open and locked; registered for
    removal on a signal before it exists, so no instant leaves it out."""
    import fcntl

    stem = place.name.encode()[:_NAME_ROOM].decode(errors="ignore")
    while True:
        temporary = f".{stem}{_TEMPORARY_TAG}{os.getpid()}-{os.urandom(6).hex()}.tmp"
        _live_temporaries.add((place.dir_fd, temporary))
        try:
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                         dir_fd=place.dir_fd)
        except OSError as exc:
            _live_temporaries.discard((place.dir_fd, temporary))
            if exc.errno == errno.EEXIST:  # that name is taken, draw another
                continue
            raise UnwritableOutput(place.path, f"cannot create a file in {place.directory}: {exc.strerror}") from None
        except BaseException:
            _live_temporaries.discard((place.dir_fd, temporary))
            raise
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:
            pass  # a filesystem without locks: the temporary is never swept as stale
        if os.fstat(fd).st_nlink:
            return fd, temporary
        # Another run swept it in the instant before it was locked: start again.
        os.close(fd)
        _live_temporaries.discard((place.dir_fd, temporary))


_swept: set[tuple[int, int]] = set()
_TEMPORARY_NAME = re.compile(r"\..+\.probegen-[0-9]+-[0-9a-f]{12}\.tmp", re.DOTALL)


def is_temporary_name(name: str) -> bool:
    """Whether a file name is one of our temporaries'."""
    return _TEMPORARY_TAG in name and _TEMPORARY_NAME.fullmatch(name) is not None


def _sweep(place: Place) -> None:
    """Remove temporaries of our naming left by killed runs in the place's
    directory (by its descriptor): owned by this user and not locked by a
    live process. Once per directory per run."""
    here = os.fstat(place.dir_fd)
    if (here.st_dev, here.st_ino) in _swept:
        return
    _swept.add((here.st_dev, here.st_ino))
    import fcntl

    try:
        names = os.listdir(place.dir_fd)
    except OSError:
        return
    for name in names:
        if not is_temporary_name(name):
            continue
        try:
            fd = os.open(name, READ_FLAGS, dir_fd=place.dir_fd)
        except OSError:
            continue
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
                continue
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held: a live run is writing it
            if os.path.samestat(info, os.stat(name, dir_fd=place.dir_fd, follow_symlinks=False)):
                os.unlink(name, dir_fd=place.dir_fd)
        except OSError:
            pass
        finally:
            os.close(fd)


@contextlib.contextmanager
def _removed_on_signal():
    """While writing, SIGINT, SIGTERM and SIGHUP first remove the live
    temporaries, then take their usual course (KeyboardInterrupt, or death
    by the signal). Ignored signals stay ignored."""
    import signal

    previous = {}

    def on_signal(signum, frame):
        for dir_fd, temporary in list(_live_temporaries):
            with contextlib.suppress(OSError):
                os.unlink(temporary, dir_fd=dir_fd)
        handler = previous.pop(signum)
        signal.signal(signum, handler)
        if callable(handler):
            handler(signum, frame)
        else:
            os.kill(os.getpid(), signum)

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        try:
            handler = signal.getsignal(signum)
            if handler in (signal.SIG_IGN, None):
                continue
            signal.signal(signum, on_signal)
        except ValueError:  # not the main thread: signals go elsewhere
            break
        previous[signum] = handler
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
