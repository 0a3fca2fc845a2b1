"""Finding a binary's DWARF: in the binary, in a named debug file, or in a
separate debug file found by build id or ``.gnu_debuglink``.

Distributions strip binaries and ship the debug info apart, under
``/usr/lib/debug/.build-id/xx/rest.debug``; SPDK builds usually keep it in
the binary. The binary is untrusted (``trace`` runs as root on a traced
process's files): its debug link is a base name, looked for only in the
standard places, and a file found is used only if its build id, or where
either side has none the link's CRC, says it is this binary's.
"""

from __future__ import annotations

import struct
import zlib
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
    """The GNU build id as lowercase hex, or None. The owner is checked:
    a probe note (owner stapsdt) has type 3 too."""
    for section in elf.iter_sections():
        if section.header.sh_type != "SHT_NOTE":
            continue
        for note in section.iter_notes():
            if note["n_name"] == "GNU" and note["n_type"] == "NT_GNU_BUILD_ID" and isinstance(note["n_desc"], str):
                return note["n_desc"]
    return None


def _debuglink(elf: ELFFile) -> tuple[str, int] | None:
    """(base name, CRC-32) of the debug link; None if there is none or it
    names anything but a file in the directory searched."""
    section = elf.get_section_by_name(".gnu_debuglink")
    if section is None:
        return None
    data = section.data()
    name, _, _ = data.partition(b"\0")
    end = (len(name) + 4) & ~3  # the name, its NUL, padding to 4; then the CRC
    if not name or b"/" in name or name in (b".", b"..") or len(data) < end + 4:
        return None
    return name.decode("utf-8", "surrogateescape"), struct.unpack_from("<I" if elf.little_endian else ">I", data, end)[0]


def _crc32(stream) -> int:
    stream.seek(0)
    crc = 0
    while chunk := stream.read(1 << 20):
        crc = zlib.crc32(chunk, crc)
    return crc


def _has_dwarf(elf: ELFFile) -> bool:
    # A stripped debug file keeps .debug_info as SHT_NOBITS in the binary.
    for name in (".debug_info", ".zdebug_info"):
        section = elf.get_section_by_name(name)
        if section is not None and section.header.sh_type != "SHT_NOBITS":
            return True
    return False


def _candidates(binary: Path, elf: ELFFile, ident: str | None, debug_dirs):
    """(path, CRC-32 wanted or None) of each place the debug file may be."""
    if ident and len(ident) > 2:
        for root in debug_dirs:
            yield Path(root) / ".build-id" / ident[:2] / f"{ident[2:]}.debug", None
    link = _debuglink(elf)
    if link:
        name, crc = link
        here = binary.resolve().parent
        for where in (here, here / ".debug", *(Path(root) / str(here).lstrip("/") for root in debug_dirs)):
            yield where / name, crc


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
                _check_claims(elf)
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
    for candidate, crc in candidates:
        if not candidate.is_file():
            continue
        delf, dstream, _ = open_elf(candidate)
        other, debug_has_dwarf = _check(candidate, dstream, delf)
        ours = other == ident if ident and other else crc is not None and _crc32(dstream) == crc
        if debug_has_dwarf and ours:
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
# claiming more is refused before anything is decompressed. elfutils
# (under drgn) inflates no more than the claim; pyelftools inflates the
# whole stream, so before it reads one, inflate_within_claims checks
# each stream against its claim with a hard cap.
_MAX_EXPANSION = 64
_EXPANSION_SLACK = 1 << 20


def _compressed(elf: ELFFile):
    """(name, claimed size, stored size, where its stream is: (file
    offset, length), whether zlib) of each compressed debug section."""
    for section in elf.iter_sections():
        name, header = section.name, section.header
        if not name.startswith((".debug", ".zdebug")) or header.sh_type == "SHT_NOBITS":
            continue
        if section.compressed:
            skip = elf.structs.Elf_Chdr.sizeof()
            yield (name, section.data_size, header.sh_size, (header.sh_offset + skip, header.sh_size - skip),
                   section._compression_type == "ELFCOMPRESS_ZLIB")
        elif name.startswith(".zdebug"):  # GNU style: "ZLIB" and the size, big-endian
            elf.stream.seek(header.sh_offset)
            head = elf.stream.read(12)
            if len(head) < 12 or head[:4] != b"ZLIB":
                raise Damaged(f"section {name} is not zlib-compressed")
            yield (name, struct.unpack(">Q", head[4:])[0], header.sh_size,
                   (header.sh_offset + 12, header.sh_size - 12), True)


def _check_claims(elf: ELFFile) -> None:
    """Damaged if a compressed debug section claims to expand beyond reason."""
    for name, claimed, stored, _, _ in _compressed(elf):
        if claimed > stored * _MAX_EXPANSION + _EXPANSION_SLACK:
            raise Damaged(f"section {name} claims {claimed} bytes uncompressed from {stored}")


def inflate_within_claims(elf: ELFFile) -> None:
    """Damaged if a compressed debug section inflates to more than it
    claims; never inflates more than the claim and one chunk."""
    for name, claimed, _, (offset, length), is_zlib in _compressed(elf):
        if not is_zlib:
            raise Damaged(f"section {name} is compressed otherwise than with zlib")
        elf.stream.seek(offset)
        data = elf.stream.read(max(length, 0))
        inflater, total = zlib.decompressobj(), 0
        while total <= claimed and not inflater.eof:
            out = inflater.decompress(data, 1 << 20)
            if not out and not inflater.unconsumed_tail:
                break  # the stream ends early: the parser reading it says so
            total += len(out)
            data = inflater.unconsumed_tail
        if total > claimed:
            raise Damaged(f"section {name} inflates to more than the {claimed} bytes it claims")
