"""Opening the files a user names: catalogs, scripts, binaries, debug files. Nothing named may block,
read without end or be opened for its side effects (doc/security.md): a path is looked at before it is
opened, and only regular files, and pipes where the caller takes one, are read, within a size bound.
"""

import io
import os
import re
import stat
from typing import BinaryIO, Callable

from probegen.errors import InputError, Location

# A catalog of 2,000 probes is ~0.3 MB and its generated scripts a few MB:
# 16 MiB is far above any real catalog or script, and still parses in seconds.
TEXT_LIMIT = 16 << 20
PIPE_LIMIT = 1 << 30  # a binary through a pipe, copied for pyelftools; SPDK's with debug info are 100-300 MB

_CHUNK = 1 << 16
KINDS = {stat.S_IFDIR: "a directory", stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device",
         stat.S_IFSOCK: "a socket", stat.S_IFIFO: "a FIFO or pipe"}


class UnreadableInput(InputError):
    def __init__(self, path, problem: str):
        super().__init__(problem, Location(str(path)))


def _size_text(limit: int) -> str:
    return f"{limit >> 30} GiB" if limit % (1 << 30) == 0 else f"{limit >> 20} MiB"


def _check_kind(path, mode: int, what: str, pipe_ok: bool) -> None:
    if stat.S_ISDIR(mode):
        article = "an" if what[0] in "aeiouAEIOU" else "a"
        raise UnreadableInput(path, f"is a directory, not {article} {what}")
    if not stat.S_ISREG(mode) and not (pipe_ok and stat.S_ISFIFO(mode)):
        raise UnreadableInput(path, f"not a regular file ({KINDS.get(stat.S_IFMT(mode), 'a special file')})")


def _open(path, what: str, pipe_ok: bool, missing: str | None = None) -> tuple[BinaryIO, int | None, bytes]:
    """(binary stream, size, first bytes): a regular file's size, nothing read yet; a pipe's size is
    None, its first bytes read already in one non-blocking read (the end at once: no process writes to it)."""
    held = _held_descriptor(path)
    if held is not None:
        return held, os.fstat(held.fileno()).st_size, b""
    try:
        _check_kind(path, os.stat(path).st_mode, what, pipe_ok)  # before opening: that could block or act
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        raise UnreadableInput(path, missing or f"no such {what}") from None
    except (OSError, ValueError) as exc:
        raise UnreadableInput(path, f"cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        info = os.fstat(fd)  # what was opened, should the path have changed since
        _check_kind(path, info.st_mode, what, pipe_ok)
        if stat.S_ISREG(info.st_mode):
            return os.fdopen(fd, "rb"), info.st_size, b""
        try:
            first = os.read(fd, _CHUNK)
        except BlockingIOError:
            first = None  # a writer that has written nothing yet
        except OSError as exc:
            raise UnreadableInput(path, f"cannot read: {exc.strerror}") from None
        if first == b"":
            raise UnreadableInput(path, "nothing to read: no process writes to this FIFO or pipe")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb"), None, first or b""
    except BaseException:
        os.close(fd)
        raise


_HELD = re.compile(r"/proc/self/fd/([0-9]+)")


def _held_descriptor(path):
    """A regular file held open as /proc/self/fd/N, read through that descriptor (nobody, in
    probegen.files.unprivileged, could not open it again), positionally: each stream keeps its offset."""
    match = _HELD.fullmatch(str(path))
    if match is None:
        return None
    fd = int(match[1])
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None  # a pipe or a device: opened by name, as any other
        return io.BufferedReader(_PositionalReader(os.dup(fd)))
    except OSError:
        return None


class _PositionalReader(io.RawIOBase):
    """A descriptor read with pread, at an offset of its own."""

    def __init__(self, fd: int):
        self.fd, self.position = fd, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self.fd

    def readinto(self, buffer) -> int:
        count = os.preadv(self.fd, [buffer], self.position)
        self.position += count
        return count

    def seek(self, offset: int, whence: int = 0) -> int:
        base = {0: 0, 1: self.position, 2: os.fstat(self.fd).st_size}[whence]
        self.position = max(0, base + offset)
        return self.position

    def close(self) -> None:
        if not self.closed:
            os.close(self.fd)
        super().close()


def read_input(path, what: str) -> bytes:
    """All bytes of a text input (a regular file or a pipe), at most TEXT_LIMIT."""
    stream, size, first = _open(path, what, pipe_ok=True)
    with stream:
        if size is not None and size > TEXT_LIMIT:
            raise UnreadableInput(path, f"{what} of {size} bytes is larger than the {_size_text(TEXT_LIMIT)} limit")
        try:
            data = first + stream.read(TEXT_LIMIT + 1 - len(first))  # first: one read of 64 KiB at most
        except OSError as exc:
            raise UnreadableInput(path, f"cannot read: {exc.strerror}") from None
    if len(data) > TEXT_LIMIT:
        raise UnreadableInput(path, f"{what} is larger than the {_size_text(TEXT_LIMIT)} limit")
    return data


def open_seekable(path, what: str, *, pipe_ok: bool = False, limit: int = PIPE_LIMIT, head: int = 0,
                  check_head: Callable[[bytes], None] | None = None,
                  missing: str | None = None) -> tuple[BinaryIO, int]:
    """A seekable stream and its size, for readers that seek (pyelftools), once ``check_head`` has accepted
    its first ``head`` bytes. A pipe (if ``pipe_ok``) is copied to an unnamed temporary file, at most
    ``limit`` bytes, after that check; ``missing``: the message for a path that does not exist."""
    import tempfile

    stream, size, first = _open(path, what, pipe_ok, missing)
    copy = None
    try:
        first += stream.read(max(0, head - len(first)))  # a pipe: a buffered read, up to end of file
        if check_head is not None:
            check_head(first[:head])
        if size is not None:  # a regular file
            stream.seek(0)
            return stream, size
        with stream:
            copy = tempfile.TemporaryFile()
            size = copy.write(first)
            while size <= limit and (chunk := stream.read(min(_CHUNK, limit + 1 - size))):
                size += copy.write(chunk)
        if size > limit:
            raise UnreadableInput(path, f"more than {_size_text(limit)} through a pipe; give the {what} as a file")
        copy.seek(0)
        return copy, size
    except BaseException as exc:
        stream.close()
        if copy is not None:
            copy.close()
        if isinstance(exc, OSError):
            raise UnreadableInput(path, f"cannot read: {exc.strerror}") from None
        raise
