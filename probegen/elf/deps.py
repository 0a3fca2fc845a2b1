"""Finding the shared libraries a binary loads, the way ld.so would, and
reading their probes along with the binary's.

Only the places a project controls are searched: the binary's RPATH or
RUNPATH (with $ORIGIN expanded) and directories given by the caller. The
system directories are not read: their libraries are not the project's,
so their probes are not the catalog's business.
"""

from __future__ import annotations

import os
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from probegen.elf.notes import Binary, ElfError, guard_elf, open_elf, read_binary

# Where a library may be found without any search path of the project's.
_SYSTEM_DIRS = ("/lib", "/usr/lib", "/lib64", "/usr/lib64", "/usr/local/lib")


@dataclass(frozen=True)
class DynamicInfo:
    needed: tuple[str, ...]
    rpath: tuple[str, ...]
    runpath: tuple[str, ...]
    elf_class: int
    machine: str


@dataclass(frozen=True)
class Dependencies:
    libraries: tuple[str, ...]  # resolved paths, in breadth-first order
    unresolved: tuple[str, ...]  # DT_NEEDED names found nowhere searched (system libraries left out)


def dynamic_info(path: str | os.PathLike) -> DynamicInfo:
    """DT_NEEDED, DT_RPATH and DT_RUNPATH of one ELF file."""
    shown = str(path)
    elf, stream, _ = open_elf(path)
    with stream:
        return guard_elf(shown, lambda: _dynamic(elf, Path(path)))


def _dynamic(elf, path: Path) -> DynamicInfo:
    from elftools.elf.dynamic import DynamicSection

    origin = str(Path(os.path.realpath(path)).parent)
    needed: list[str] = []
    rpath: list[str] = []
    runpath: list[str] = []
    for section in elf.iter_sections():
        if not isinstance(section, DynamicSection):
            continue
        for tag in section.iter_tags():
            kind = tag.entry.d_tag
            if kind == "DT_NEEDED":
                needed.append(tag.needed)
            elif kind == "DT_RPATH":
                rpath.extend(_expand(tag.rpath, origin))
            elif kind == "DT_RUNPATH":
                runpath.extend(_expand(tag.runpath, origin))
    return DynamicInfo(tuple(needed), tuple(rpath), tuple(runpath), elf.elfclass, elf.header["e_machine"])


def _expand(search_path: str, origin: str) -> list[str]:
    """Split a colon list; $ORIGIN is the directory of the object itself.
    An empty entry means the current directory to ld.so."""
    out = []
    for entry in search_path.split(":"):
        entry = entry.replace("${ORIGIN}", origin).replace("$ORIGIN", origin)
        out.append(entry or ".")
    return out


def _search_dirs(info: DynamicInfo, lib_dirs: list[str]) -> list[str]:
    # ld.so: DT_RPATH only when there is no DT_RUNPATH, then
    # LD_LIBRARY_PATH (our --lib-dir), then DT_RUNPATH.
    dirs = [] if info.runpath else list(info.rpath)
    return dirs + list(lib_dirs) + list(info.runpath)


def _is_system_library(name: str) -> bool:
    for root in _SYSTEM_DIRS:
        if os.path.exists(os.path.join(root, name)):
            return True
        try:
            subdirs = [e.path for e in os.scandir(root) if e.is_dir() and "-linux-" in e.name]
        except OSError:
            continue
        if any(os.path.exists(os.path.join(d, name)) for d in subdirs):
            return True
    return False


def resolve_dependencies(binary: str | os.PathLike, lib_dirs: list[str] = ()) -> Dependencies:
    """Every library the binary needs, directly or through other libraries,
    that is found in RPATH/RUNPATH or ``lib_dirs``. A candidate of another
    ELF class or machine is skipped, as ld.so skips it."""
    root = dynamic_info(binary)
    seen = {os.path.realpath(binary)}
    found: list[str] = []
    unresolved: list[str] = []
    queue = deque([root])
    while queue:
        info = queue.popleft()
        for name in info.needed:
            path = _find(name, _search_dirs(info, lib_dirs), info)
            if path is None:
                if name not in unresolved and not _is_system_library(name):
                    unresolved.append(name)
                continue
            real = os.path.realpath(path)
            if real in seen:
                continue
            seen.add(real)
            found.append(path)
            try:
                queue.append(dynamic_info(path))
            except ElfError:
                pass  # _find already read it; a library broken after that is reported when read
    return Dependencies(tuple(found), tuple(unresolved))


def _find(name: str, dirs: list[str], parent: DynamicInfo) -> str | None:
    if "/" in name:
        candidates = [name]
    else:
        candidates = [os.path.join(d, name) for d in dirs]
    for candidate in candidates:
        if not os.path.isfile(candidate):
            continue
        try:
            info = dynamic_info(candidate)
        except ElfError:
            continue
        if info.elf_class == parent.elf_class and info.machine == parent.machine:
            return os.path.normpath(candidate)
    return None


@dataclass
class Reading:
    """Binaries read for a check, and the libraries they load if followed."""

    binaries: list[Binary] = field(default_factory=list)
    errors: list[ElfError] = field(default_factory=list)  # files that could not be read
    followed: set[str] = field(default_factory=set)  # libraries read because a binary loads them
    unresolved: list[str] = field(default_factory=list)  # needed libraries found nowhere searched
    messages: list[str] = field(default_factory=list)  # the errors and notes, in the order found


def read_binaries(paths, *, follow: bool = False, lib_dirs: list[str] = ()) -> Reading:
    """The probes of each binary named (each may be a pipe) and, with
    ``follow``, of the libraries they load (resolve_dependencies); every
    file once, however often it is named or needed."""
    reading = Reading()
    seen = set()

    def read(path, is_library: bool) -> None:
        real = os.path.realpath(path)
        if real in seen:
            return
        seen.add(real)
        try:
            reading.binaries.append(read_binary(path, pipe_ok=not is_library))
        except ElfError as exc:
            reading.errors.append(exc)
            reading.messages.append(str(exc))
            return
        if is_library:
            reading.followed.add(str(path))

    for path in paths:
        read(path, False)
    for path in paths if follow else ():
        try:
            deps = resolve_dependencies(path, lib_dirs)
        except ElfError:
            continue  # already reported when read
        for library in deps.libraries:
            read(library, True)
        for name in deps.unresolved:
            if name not in reading.unresolved:
                reading.unresolved.append(name)
                reading.messages.append(f"{path}: note: needed library {name} not found in RPATH/RUNPATH or "
                                        "--lib-dir; its probes are not checked")
    return reading
