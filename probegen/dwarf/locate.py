"""Finding a binary's DWARF: in the binary, in a named debug file, or in a
separate debug file found by build id or ``.gnu_debuglink``.

Distributions strip binaries and ship the debug info apart, under
``/usr/lib/debug/.build-id/xx/rest.debug``; SPDK builds usually keep it in
the binary. Compressed sections (``-gz``) are decompressed by pyelftools.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from elftools.elf.elffile import ELFFile

from probegen.dwarf.damage import Damaged, reading
from probegen.elf.notes import open_elf
from probegen.errors import InputError, NoDebugInfo

DEFAULT_DEBUG_DIRS = ("/usr/lib/debug",)


@dataclass
class DebugInfo:
    """An open ELF file that holds DWARF for ``binary``."""

    binary: Path
    path: Path  # the file the DWARF is read from (the binary or its debug file)
    elf: ELFFile
    build_id: str | None
    stream: object  # kept open as long as ``elf`` is used

    def close(self) -> None:
        self.stream.close()


def build_id(elf: ELFFile) -> str | None:
    """The GNU build id as lowercase hex, or None."""
    for section in elf.iter_sections():
        if section.header.sh_type != "SHT_NOTE":
            continue
        for note in section.iter_notes():
            if note["n_type"] == "NT_GNU_BUILD_ID":
                return note["n_desc"]
    return None


def _debuglink(elf: ELFFile) -> str | None:
    section = elf.get_section_by_name(".gnu_debuglink")
    if section is None:
        return None
    return section.data().split(b"\0", 1)[0].decode("utf-8", "replace") or None


def _has_dwarf(elf: ELFFile) -> bool:
    # A stripped debug file keeps .debug_info as SHT_NOBITS in the binary.
    for name in (".debug_info", ".zdebug_info"):
        section = elf.get_section_by_name(name)
        if section is not None and section.header.sh_type != "SHT_NOBITS":
            return True
    return False


def _candidates(binary: Path, elf: ELFFile, ident: str | None, debug_dirs):
    if ident and len(ident) > 2:
        for root in debug_dirs:
            yield Path(root) / ".build-id" / ident[:2] / f"{ident[2:]}.debug"
    link = _debuglink(elf)
    if link:
        here = binary.resolve().parent
        yield here / link
        yield here / ".debug" / link
        for root in debug_dirs:
            yield Path(root) / str(here).lstrip("/") / link


def open_debug_info(binary, debug_file=None, debug_dirs=DEFAULT_DEBUG_DIRS) -> DebugInfo:
    """Open ``binary`` and the file that carries its DWARF.

    Raises InputError with a message saying what to do when there is none,
    or that a file is damaged.
    """
    binary = Path(binary)
    elf, stream, _ = open_elf(binary)
    try:
        return _find_debug_info(binary, stream, elf, debug_file, debug_dirs)
    except BaseException:
        stream.close()
        raise


def _check(path: Path, stream, elf: ELFFile):
    """(build id, whether it has DWARF) of an open ELF file."""
    try:
        with reading(path):
            ident = build_id(elf)
            has_dwarf = _has_dwarf(elf)
            if has_dwarf:
                check_compressed_sizes(elf)
            return ident, has_dwarf
    except BaseException:
        stream.close()
        raise


def _find_debug_info(binary: Path, stream, elf, debug_file, debug_dirs) -> DebugInfo:
    ident, has_dwarf = _check(binary, stream, elf)
    if debug_file is not None:
        debug_file = Path(debug_file)
        delf, dstream, _ = open_elf(debug_file)
        other, debug_has_dwarf = _check(debug_file, dstream, delf)
        if ident and other and ident != other:
            dstream.close()
            raise InputError(
                f"{debug_file} is not the debug file of {binary}: "
                f"build id {other} is not {ident}"
            )
        if not debug_has_dwarf:
            dstream.close()
            raise InputError(f"{debug_file} has no DWARF debug info (.debug_info)")
        stream.close()
        return DebugInfo(binary, debug_file, delf, ident, dstream)
    if has_dwarf:
        return DebugInfo(binary, binary, elf, ident, stream)
    with reading(binary):
        candidates = list(_candidates(binary, elf, ident, debug_dirs))
    for candidate in candidates:
        if not candidate.is_file():
            continue
        delf, dstream, _ = open_elf(candidate)
        other, debug_has_dwarf = _check(candidate, dstream, delf)
        if debug_has_dwarf and (not ident or not other or other == ident):
            stream.close()
            return DebugInfo(binary, candidate, delf, ident, dstream)
        dstream.close()
    stream.close()
    where = f" (build id {ident}: none under {', '.join(map(str, debug_dirs))}/.build-id)" if ident else ""
    raise NoDebugInfo(
        f"{binary} has no DWARF debug info{where}: build it with -g, "
        "or give its separate debug file with --debug-file"
    )


# A compressed section says how big it gets: believed only within what
# zlib makes of real DWARF (3-10x), with room to spare; a "zip bomb"
# claiming more is refused before anything is decompressed.
_MAX_EXPANSION = 64
_EXPANSION_SLACK = 1 << 20


def check_compressed_sizes(elf: ELFFile) -> None:
    """Damaged if a compressed debug section claims to expand beyond reason."""
    import struct

    for section in elf.iter_sections():
        name = section.name
        if not name.startswith((".debug", ".zdebug")) or section.header.sh_type == "SHT_NOBITS":
            continue
        stored = section.header.sh_size
        if section.compressed:
            claimed = section.data_size
        elif name.startswith(".zdebug"):  # GNU style: "ZLIB" and the size, big-endian
            elf.stream.seek(section.header.sh_offset)
            head = elf.stream.read(12)
            if len(head) < 12 or head[:4] != b"ZLIB":
                raise Damaged(f"section {name} is not zlib-compressed")
            claimed = struct.unpack(">Q", head[4:])[0]
        else:
            continue
        if claimed > stored * _MAX_EXPANSION + _EXPANSION_SLACK:
            raise Damaged(f"section {name} claims {claimed} bytes uncompressed from {stored}")


def file_key(path: Path) -> tuple[int, int]:
    """Size and mtime in ns: with the build id, what a cache entry is valid for."""
    st = os.stat(path)
    return st.st_size, st.st_mtime_ns
