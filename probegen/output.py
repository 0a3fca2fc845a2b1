"""Writing generated files: atomically, and only when their content changed.

An unchanged file keeps its mtime, so a build that depends on it does not
recompile.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class GeneratedFile:
    path: Path
    text: str
    executable: bool = False

    @property
    def data(self) -> bytes:
        return self.text.encode("utf-8")


def is_current(file: GeneratedFile) -> bool:
    """True when the file on disk has exactly this content (and mode).
    Only a regular file can be: a FIFO or a device is not read (it could
    block, or never end)."""
    from probegen.inputs import UnreadableInput, open_seekable

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


def write_if_changed(file: GeneratedFile) -> bool:
    """Write the file atomically unless it is current; True if written."""
    if is_current(file):
        return False
    import tempfile  # only when writing: costly to import

    file.path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{file.path.name}.", suffix=".tmp", dir=file.path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(file.data)
            out.flush()
            os.fsync(out.fileno())
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o777 if file.executable else 0o666
        os.chmod(tmp, mode & ~umask | stat.S_IRUSR)
        os.replace(tmp, file.path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return True


def write_all(files: list[GeneratedFile]) -> list[Path]:
    """Write every file that changed; returns the paths written."""
    return [f.path for f in files if write_if_changed(f)]


def stale(files: list[GeneratedFile]) -> list[Path]:
    """Paths whose content on disk differs from what would be generated."""
    return [f.path for f in files if not is_current(f)]
