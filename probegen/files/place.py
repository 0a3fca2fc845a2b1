"""Where an output lands: a directory descriptor and a name in it, the path walked from ``/``
a directory at a time (doc/security.md, "Writing, by descriptor").
"""

import contextlib
import errno
import os
import stat
from dataclasses import dataclass

from probegen.errors import InputError, Location

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_MAX_LINKS = 40


class UnwritableOutput(InputError):
    def __init__(self, path, problem: str):
        super().__init__(problem, Location(str(path)))


@dataclass
class Place(contextlib.AbstractContextManager):
    dir_fd: int                     # the final directory, checked
    directory: str                  # its path, for messages
    name: str                       # the last component
    info: os.stat_result | None     # lstat of dir/name, None when missing
    proc: bool                      # a /proc link at the end (/dev/stdout, /dev/fd/N): written in place
    path: str                       # the path as given, for messages

    def __exit__(self, *exc_info):
        os.close(self.dir_fd)


def locate(path, create: bool, strict: bool = True) -> Place:
    """The checked place for ``path``, or UnwritableOutput, FileNotFoundError (a missing directory,
    not ``create``) or OSError. Not ``strict``: for reading only, owners go unchecked."""
    shown = os.fspath(path)
    absolute = shown if shown.startswith("/") else os.path.join(os.getcwd(), shown)
    pending = [part for part in reversed(absolute.split("/")) if part not in ("", ".")]  # to walk, next last
    fd, current, links = os.open("/", DIR_FLAGS), "/", 0
    try:
        while True:
            if pending in ([], [".."]):
                raise UnwritableOutput(shown, "is a directory; not writing to it")
            part = pending.pop()
            last = not pending
            candidate = os.path.normpath(os.path.join(current, part))  # '..': current's parent
            try:
                info = os.stat(part, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                if last:
                    return _final(fd, current, part, None, strict, shown)
                if not create:
                    raise
                try:
                    with contextlib.suppress(FileExistsError):  # made meanwhile: opened and checked like any other
                        os.mkdir(part, 0o777, dir_fd=fd)
                except OSError as exc:
                    raise UnwritableOutput(shown, f"cannot create directory {candidate}: {exc.strerror}") from None
                info = os.stat(part, dir_fd=fd, follow_symlinks=False)
            if stat.S_ISLNK(info.st_mode):
                if strict and info.st_uid not in (0, os.geteuid()):
                    which = "is" if candidate == os.path.normpath(absolute) else f"leads to {candidate}, which is"
                    raise UnwritableOutput(shown, f"{which} a symbolic link owned by another user (uid {info.st_uid}); "
                                                  "not writing through it")
                if last and current.startswith("/proc/"):
                    return _final(fd, current, part, os.stat(part, dir_fd=fd), strict, shown, proc=True)
                links += 1
                if links > _MAX_LINKS:
                    raise UnwritableOutput(shown, "too many levels of symbolic links")
                target = os.readlink(part, dir_fd=fd)
                if target.startswith("/"):
                    os.close(fd)
                    fd, current = os.open("/", DIR_FLAGS), "/"
                pending.extend(part for part in reversed(target.split("/")) if part not in ("", "."))
                continue
            if last:
                return _final(fd, current, part, info, strict, shown)
            if not stat.S_ISDIR(info.st_mode):
                raise OSError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), candidate)
            fd, current = _enter(fd, part, candidate, strict, shown), candidate
    except BaseException:
        os.close(fd)
        raise


def _enter(fd: int, part: str, path: str, strict: bool, shown: str) -> int:
    """Open ``part`` of ``fd``, checked that no other user can change its entries; then close ``fd``."""
    inner = os.open(part, DIR_FLAGS, dir_fd=fd)
    try:
        info = os.fstat(inner)
        who = _who_can_write(info)
        if strict and who and not info.st_mode & stat.S_ISVTX:
            raise UnwritableOutput(shown, f"passes through {path}, which {who} can write; not writing through it")
    except BaseException:
        os.close(inner)
        raise
    os.close(fd)
    return inner


def _final(fd: int, directory: str, name: str, info, strict: bool, shown: str, proc: bool = False) -> Place:
    here = os.fstat(fd)
    if strict and here.st_uid not in (0, os.geteuid()):
        raise UnwritableOutput(shown, f"would be written in {directory}, which belongs to uid {here.st_uid}; "
                                      "not writing there")
    return Place(fd, directory, name, info, proc, shown)


def _who_can_write(info: os.stat_result) -> str | None:
    """Who, besides this user and root, can change the directory's entries."""
    if info.st_uid not in (0, os.geteuid()):
        return f"its owner (uid {info.st_uid})"
    if info.st_mode & stat.S_IWOTH:
        return "every user"
    return f"group {info.st_gid}" if info.st_mode & stat.S_IWGRP and info.st_gid != os.getegid() else None
