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

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile

from probegen.errors import InputError

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


def _open_elf(path: Path):
    try:
        stream = open(path, "rb")
    except OSError as exc:
        raise InputError(f"cannot open {path}: {exc.strerror}") from None
    try:
        return stream, ELFFile(stream)
    except ELFError:
        stream.close()
        raise InputError(f"{path}: not an ELF file") from None


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

    Raises InputError with a message saying what to do when there is none.
    """
    binary = Path(binary)
    stream, elf = _open_elf(binary)
    ident = build_id(elf)
    if debug_file is not None:
        debug_file = Path(debug_file)
        dstream, delf = _open_elf(debug_file)
        other = build_id(delf)
        if ident and other and ident != other:
            dstream.close()
            stream.close()
            raise InputError(
                f"{debug_file} is not the debug file of {binary}: "
                f"build id {other} is not {ident}"
            )
        stream.close()
        if not _has_dwarf(delf):
            dstream.close()
            raise InputError(f"{debug_file} has no DWARF debug info (.debug_info)")
        return DebugInfo(binary, debug_file, delf, ident, dstream)
    if _has_dwarf(elf):
        return DebugInfo(binary, binary, elf, ident, stream)
    for candidate in _candidates(binary, elf, ident, debug_dirs):
        if not candidate.is_file():
            continue
        dstream, delf = _open_elf(candidate)
        other = build_id(delf)
        if _has_dwarf(delf) and (not ident or not other or other == ident):
            stream.close()
            return DebugInfo(binary, candidate, delf, ident, dstream)
        dstream.close()
    stream.close()
    where = f" (build id {ident}: none under {', '.join(map(str, debug_dirs))}/.build-id)" if ident else ""
    raise InputError(
        f"{binary} has no DWARF debug info{where}: build it with -g, "
        "or give its separate debug file with --debug-file"
    )


def file_key(path: Path) -> tuple[int, int]:
    """Size and mtime in ns: with the build id, what a cache entry is valid for."""
    st = os.stat(path)
    return st.st_size, st.st_mtime_ns
