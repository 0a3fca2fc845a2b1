"""Writing generated files: atomically, only when their content changed (so builds do not recompile),
by the descriptor of the directory probegen.files.place walked to (doc/security.md). A regular file is
replaced by renaming a locked temporary over it, a device or FIFO written in place; a file without the
marker (probegen.files.marker) is neither replaced nor removed.
"""

import contextlib
import errno
import fcntl
import os
import re
import signal
import stat
import sys
from dataclasses import dataclass
from pathlib import Path

from probegen.files.inputs import KINDS
from probegen.files.marker import TEXT as MARKER, has_marker
from probegen.files.place import READ_FLAGS, Place, UnwritableOutput, locate

_HEAD_BYTES = 4096  # room for a #! line and the marker line after it
_CHUNK = 1 << 20  # how much of a file _is_current_at compares at a time


@dataclass(frozen=True)
class GeneratedFile:
    path: Path
    text: str
    executable: bool = False

    @property
    def data(self) -> bytes:
        return self.text.encode("utf-8")


def _foreign(path, others: int = 0) -> UnwritableOutput:
    more = f" ({others} more output file(s) likewise)" if others else ""
    relative = os.path.relpath(path)  # a catalog's outputs are absolute: shown as generate lists them
    shown = relative if os.path.isabs(path) and not relative.startswith("..") else path
    return UnwritableOutput(shown, f"not written by probegen (no '{MARKER}' line), not replacing it: "
                                   f"give --force to let probegen take it over{more}")


def _regular_at(dir_fd, name, use):
    """``use(status, stream)`` of ``name`` in the directory ``dir_fd``, or None if it is no regular
    file (a link, a FIFO or a device is never opened: that could block or act on it) or cannot be read."""
    try:
        if not stat.S_ISREG(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
            return None
        with open(name, "rb", opener=lambda name, _: os.open(name, READ_FLAGS, dir_fd=dir_fd)) as stream:
            info = os.fstat(stream.fileno())
            return use(info, stream) if stat.S_ISREG(info.st_mode) else None
    except OSError:
        return None


def _marked_at(dir_fd, name) -> bool | None:
    return _regular_at(dir_fd, name, lambda info, stream: has_marker(stream.read(_HEAD_BYTES)))


def _is_current_at(place: Place, data: bytes, executable: bool) -> bool:
    """The regular file holds exactly ``data`` (and is executable if it should be), compared
    a megabyte at a time, so a big output is never held twice."""
    def holds(info, stream) -> bool:
        if info.st_size != len(data) or executable and not info.st_mode & stat.S_IXUSR:
            return False
        view = memoryview(data)
        chunks_equal = (stream.read(_CHUNK) == view[start:start + _CHUNK] for start in range(0, len(data), _CHUNK))
        return all(chunks_equal) and not stream.read(1)

    return bool(_regular_at(place.dir_fd, place.name, holds))


def _read_at(path, check) -> bool:
    """``check(place)`` of a path walked for reading (owners unchecked: reading decides no write), or False."""
    try:
        with locate(path, create=False, strict=False) as place:
            return check(place)
    except (UnwritableOutput, OSError):
        return False


def refuse_foreign(files: list[GeneratedFile]) -> None:
    """Refuse the first path holding a regular file without the marker, before any is written
    (the write checks again, on the descriptor)."""
    foreign = [f.path for f in files if _read_at(f.path, lambda place: _marked_at(place.dir_fd, place.name) is False)]
    if foreign:
        raise _foreign(foreign[0], len(foreign) - 1)


def stale(files: list[GeneratedFile]) -> list[GeneratedFile]:
    """The files whose content on disk differs from what would be generated."""
    return [f for f in files if not _read_at(f.path, lambda place, f=f: _is_current_at(place, f.data, f.executable))]


def leftovers(directories, produced) -> list[Path]:
    """Files at the top of ``directories`` that carry the marker but are not among
    the ``produced`` paths (a group renamed); links, devices and FIFOs are not opened."""
    wanted = {os.path.abspath(p) for p in produced}
    found: list[Path] = []
    for directory in sorted({os.path.abspath(d) for d in directories}):
        try:
            entries = sorted(os.scandir(directory), key=lambda entry: entry.name)
        except OSError:
            continue
        found += [Path(entry.path) for entry in entries if entry.path not in wanted
                  and not _TEMPORARY_NAME.fullmatch(entry.name) and _marked_at(None, entry.path)]
    return found


def remove_generated(path) -> bool:
    """Remove a file that carries the marker, checked by its directory's descriptor; True if removed."""
    try:
        with locate(path, create=False) as place:
            if not _marked_at(place.dir_fd, place.name):  # a /proc link is not opened: no marker
                return False
            os.unlink(place.name, dir_fd=place.dir_fd)
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise UnwritableOutput(path, f"cannot remove this file, no longer generated: {exc.strerror}") from None
    return True


@contextlib.contextmanager
def _writable(path):
    try:
        with locate(path, create=True) as place:
            yield place
    except OSError as exc:
        raise UnwritableOutput(path, f"cannot write: {exc.strerror or exc}") from None


def write_if_changed(file: GeneratedFile, keep_foreign: bool = False) -> bool:
    """Write the file unless it is current; True if written."""
    with _writable(file.path) as place:
        if place.proc or (place.info is not None and not stat.S_ISREG(place.info.st_mode)):
            with open(_open_target(place, create=False), "wb") as stream:  # a device, a FIFO, a file through /proc
                stream.write(file.data)
            return True
        _sweep(place)
        data = file.data
        if _is_current_at(place, data, file.executable):
            return False
        if keep_foreign and _marked_at(place.dir_fd, place.name) is False:
            raise _foreign(file.path)
        _replace(place, data, file.executable)
        return True


def open_stream(path) -> int:
    """A descriptor for output another program streams (bpftrace -o), the path checked as for
    write_if_changed; a regular file truncated in place."""
    with _writable(path) as place:
        return _open_target(place, create=True)


def write_all(files: list[GeneratedFile], force: bool = False) -> list[tuple[str, Path]]:
    """("wrote" or "unchanged", path) of each file; unless ``force``, none is written while
    one path holds a file without the marker."""
    if not force:
        refuse_foreign(files)
    return [("wrote" if write_if_changed(f, not force) else "unchanged", f.path) for f in files]


def _check_kind(place: Place, mode: int) -> None:
    if not (stat.S_ISREG(mode) or stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)):
        raise UnwritableOutput(place.path, f"is {KINDS.get(stat.S_IFMT(mode), 'a special file')}; "
                                           "not writing to it")


def _open_target(place: Place, create: bool) -> int:
    """A descriptor to write ``place`` in place, a regular file truncated, or stdout's or stderr's own if
    they have it open (``-o /dev/stdout >> log`` appends). A FIFO without a reader fails instead of hanging."""
    if place.info is not None:
        _check_kind(place, place.info.st_mode)
        for fd, stream in ((1, sys.stdout), (2, sys.stderr)):
            with contextlib.suppress(OSError, ValueError):
                if os.path.samestat(os.fstat(fd), place.info):
                    if stream is not None:
                        stream.flush()
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


def _replace(place: Place, data: bytes, executable: bool) -> None:
    umask = os.umask(0)
    os.umask(umask)
    mode = (0o777 if executable else 0o666) & ~umask | stat.S_IRUSR
    with _removed_on_signal():
        fd, temporary = _create_temporary(place)
        try:  # the descriptor, so the lock, is kept until the rename: _sweep removes unlocked temporaries
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
            os.fchmod(fd, mode)
            os.rename(temporary, place.name, src_dir_fd=place.dir_fd, dst_dir_fd=place.dir_fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary, dir_fd=place.dir_fd)
            raise
        finally:
            os.close(fd)
            _live_temporaries.discard((place.dir_fd, temporary))


# (directory descriptor, name): the descriptor stays open while its temporary lives.
_live_temporaries: set[tuple[int, str]] = set()
_NAME_ROOM = 120  # keeps ".NAME.probegen-PID-RANDOM.tmp" within a name's 255 bytes
_TEMPORARY_NAME = re.compile(r"\..+\.probegen-[0-9]+-[0-9a-f]{12}\.tmp", re.DOTALL)


def _create_temporary(place: Place) -> tuple[int, str]:
    """A new temporary beside the target, open and locked; registered for removal on a signal before it exists."""
    stem = os.fsdecode(os.fsencode(place.name)[:_NAME_ROOM])  # a name's bytes: it may not be UTF-8
    while True:
        temporary = f".{stem}.probegen-{os.getpid()}-{os.urandom(6).hex()}.tmp"
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
        with contextlib.suppress(OSError):  # a filesystem without locks: the temporary is never swept as stale
            fcntl.flock(fd, fcntl.LOCK_EX)
        if os.fstat(fd).st_nlink:
            return fd, temporary
        # Another run swept it in the instant before it was locked: start again.
        os.close(fd)
        _live_temporaries.discard((place.dir_fd, temporary))


_swept: set[tuple[int, int]] = set()


def _sweep(place: Place) -> None:
    """Remove temporaries left by killed runs in the place's directory (this user's, not locked by a
    live run), once per directory per run."""
    here = os.fstat(place.dir_fd)
    if (here.st_dev, here.st_ino) in _swept:
        return
    _swept.add((here.st_dev, here.st_ino))

    def remove_if_dead(name, info, stream) -> None:
        if info.st_uid == os.geteuid():
            fcntl.flock(stream.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)  # held: a live run is writing it
            if os.path.samestat(info, os.stat(name, dir_fd=place.dir_fd, follow_symlinks=False)):
                os.unlink(name, dir_fd=place.dir_fd)

    try:
        names = os.listdir(place.dir_fd)
    except OSError:
        return
    for name in filter(_TEMPORARY_NAME.fullmatch, names):
        _regular_at(place.dir_fd, name, lambda info, stream, name=name: remove_if_dead(name, info, stream))


@contextlib.contextmanager
def _removed_on_signal():
    """SIGINT, SIGTERM and SIGHUP first remove the live temporaries, then take
    their usual course (KeyboardInterrupt, or death by the signal)."""
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
        handler = signal.getsignal(signum)
        if handler not in (signal.SIG_IGN, None):
            with contextlib.suppress(ValueError):  # not the main thread: signals go elsewhere
                signal.signal(signum, on_signal)
                previous[signum] = handler
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
