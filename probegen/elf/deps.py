"""The shared libraries a binary loads, found as ld.so finds them, and their
probes read with the binary's. Only the places a project controls are
searched: RPATH or RUNPATH ($ORIGIN expanded) and the caller's directories;
the system's libraries are not the project's, nor their probes the catalog's.
"""

import glob
import os
from collections import deque
from dataclasses import dataclass, field

from probegen.elf.notes import Binary, ElfError, read_binary, read_elf

# Where a library may be found without any search path of the project's.
_SYSTEM_DIRS = ("/lib", "/usr/lib", "/lib64", "/usr/lib64", "/usr/local/lib")


@dataclass(frozen=True)
class DynamicInfo:
    needed: tuple[str, ...]
    rpath: tuple[str, ...]
    runpath: tuple[str, ...]
    elf_class: int
    machine: str


def dynamic_info(path: str | os.PathLike) -> DynamicInfo:
    """DT_NEEDED, DT_RPATH and DT_RUNPATH of one ELF file."""
    return read_elf(path, lambda elf, _: _dynamic(elf, path))


def _dynamic(elf, path: str | os.PathLike) -> DynamicInfo:
    origin = os.path.dirname(os.path.realpath(path))
    tags = {"DT_NEEDED": [], "DT_RPATH": [], "DT_RUNPATH": []}
    for section in elf.iter_sections("SHT_DYNAMIC"):  # pyelftools' DynamicSection
        for tag in section.iter_tags():
            kind = tag.entry.d_tag
            if kind == "DT_NEEDED":
                tags[kind].append(tag.needed)
            elif kind in tags:
                # A colon list; $ORIGIN is the object's own directory, an empty entry the current one.
                tags[kind].extend(entry.replace("${ORIGIN}", origin).replace("$ORIGIN", origin) or "."
                                  for entry in (tag.rpath if kind == "DT_RPATH" else tag.runpath).split(":"))
    return DynamicInfo(*map(tuple, tags.values()), elf.elfclass, elf.header["e_machine"])


def _is_system_library(name: str) -> bool:
    return any(os.path.exists(os.path.join(root, name))
               or glob.glob(os.path.join(root, "*-linux-*", glob.escape(name))) for root in _SYSTEM_DIRS)


def resolve_dependencies(binary: str | os.PathLike, lib_dirs: list[str] = ()) -> tuple[list[str], list[str]]:
    """(libraries, unresolved): the paths of every library the binary needs,
    directly or not, found in RPATH/RUNPATH or ``lib_dirs`` (breadth first),
    and the names found nowhere searched, system libraries left out."""
    seen = {os.path.realpath(binary)}
    found: list[str] = []
    unresolved: dict[str, None] = {}  # in the order found; a list's `in` is quadratic on thousands of names
    queue = deque([(dynamic_info(binary), ())])
    while queue:
        info, loaders_rpath = queue.popleft()
        # ld.so: where an object has no DT_RUNPATH, DT_RPATH (its own, then its loaders' up to the
        # executable, each loader's if it has no DT_RUNPATH); then LD_LIBRARY_PATH (our --lib-dir), then DT_RUNPATH.
        rpath = (*(() if info.runpath else info.rpath), *loaders_rpath)  # also the one its libraries inherit
        dirs = [*(() if info.runpath else rpath), *lib_dirs, *info.runpath]
        for name in info.needed:
            path, library = _find(name, dirs, info)
            if path is None:
                if name not in unresolved and not _is_system_library(name):
                    unresolved[name] = None
            elif (real := os.path.realpath(path)) not in seen:
                seen.add(real)
                found.append(path)
                queue.append((library, rpath))
    return found, list(unresolved)


def _find(name: str, dirs: list[str], parent: DynamicInfo) -> tuple[str | None, DynamicInfo | None]:
    """The first candidate of the parent's ELF class and machine, and its DynamicInfo."""
    for candidate in [name] if "/" in name else [os.path.join(d, name) for d in dirs]:
        try:
            info = dynamic_info(candidate) if os.path.isfile(candidate) else None
        except ElfError:
            continue
        if info and info.elf_class == parent.elf_class and info.machine == parent.machine:
            return os.path.normpath(candidate), info
    return None, None


@dataclass
class Reading:
    """Binaries read for a check, and the libraries they load if followed."""

    binaries: list[Binary] = field(default_factory=list)
    errors: list[ElfError] = field(default_factory=list)  # files that could not be read
    followed: set[str] = field(default_factory=set)  # libraries reached because a binary loads them
    messages: list[str] = field(default_factory=list)  # the errors and notes, in the order found


def read_binaries(paths, *, follow: bool = False, lib_dirs: list[str] = ()) -> Reading:
    """The probes of each binary named (each may be a pipe) and, with
    ``follow``, of the libraries they load; every file once, however often
    it is named or needed."""
    reading = Reading()
    seen, unresolved = set(), set()

    def read(path, is_library: bool) -> None:
        if (real := os.path.realpath(path)) in seen:
            return
        seen.add(real)
        if is_library:
            reading.followed.add(str(path))
        try:
            reading.binaries.append(read_binary(path, pipe_ok=not is_library))
        except ElfError as exc:
            reading.errors.append(exc)
            reading.messages.append(str(exc))

    for path in paths:
        read(path, False)
    for path in paths if follow else ():
        try:
            libraries, missing = resolve_dependencies(path, lib_dirs)
        except ElfError:
            continue  # already reported when read
        for library in libraries:
            read(library, True)
        for name in missing:
            if name not in unresolved:
                unresolved.add(name)
                reading.messages.append(f"{path}: note: needed library {name} not found in RPATH/RUNPATH or "
                                        "--lib-dir; its probes are not checked")
    return reading
