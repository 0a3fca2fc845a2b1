"""Finding a binary's DWARF: in the binary, in a named debug file, or in a
separate one found by build id or ``.gnu_debuglink``, used only if it is
this binary's (doc/security.md). The ELF header and section table are read
here with struct: importing pyelftools alone takes 20 ms, a third of
``structs`` on spdk_tgt (issue 22). ``reading(path)``: how the DWARF
readers report damage.
"""

import os
import struct
import zlib
from contextlib import contextmanager
from pathlib import Path

from probegen.elf.notes import open_elf_file
from probegen.errors import InputError, Location, NoDebugInfo

DEFAULT_DEBUG_DIRS = ("/usr/lib/debug",)
_SHT_NOTE, _SHT_NOBITS, _SHF_COMPRESSED = 7, 8, 0x800


class Damaged(Exception):
    """Damage the parsers let by (cycles, absurd sizes), found by probegen's own checks."""


@contextmanager
def reading(path):
    """Whatever parsing raises (drgn's and libdw's errors are plain Exceptions;
    pyelftools, trusting what it reads, raises almost anything) as one
    InputError line naming the file."""
    try:
        yield
    except InputError:
        raise
    except Exception as exc:
        if isinstance(exc, Damaged):
            text = str(exc)
        else:
            detail = str(exc) if not isinstance(exc, KeyError) else repr(exc.args[0]) if exc.args else ""
            text = f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
        text = " ".join(text.split())  # one line
        text = text if len(text) <= 160 else text[:157] + "..."
        raise InputError(f"damaged or truncated ELF/DWARF: {text}", Location(str(path))) from None


class Elf:
    """Class, byte order and sections (name, type, flags, file offset, size)."""

    def __init__(self, stream, size: int):
        self.stream, self.size = stream, size
        ident = self._read(0, 16)
        if ident[4] not in (1, 2) or ident[5] not in (1, 2):
            raise Damaged(f"ELF class {ident[4]}, data encoding {ident[5]}")
        self.elfclass, self.little_endian = 32 * ident[4], ident[5] == 1
        order = "<" if self.little_endian else ">"
        wide = self.elfclass == 64
        header = struct.Struct(order + ("40xQ10xHHH" if wide else "32xI10xHHH"))
        shoff, shentsize, shnum, shstrndx = header.unpack(self._read(0, header.size))
        entry = struct.Struct(order + ("IIQ8xQQI" if wide else "III4xIII"))
        if not shoff:
            self.sections = []
            return
        if shentsize < entry.size:
            raise Damaged(f"section headers of {shentsize} bytes")
        first = entry.unpack(self._read(shoff, entry.size))
        shnum = shnum or first[4]  # more than 0xff00 sections: section 0's size says how many
        shstrndx = first[5] if shstrndx == 0xFFFF else shstrndx
        table = self._read(shoff, shnum * shentsize)
        rows = [entry.unpack_from(table, i * shentsize) for i in range(shnum)]
        names = self._read(rows[shstrndx][3], rows[shstrndx][4]) if shstrndx < shnum else b""
        # A name is read to its NUL within 256 bytes: in a hostile table, every name may run to its end.
        self.sections = [(names[n:n + 256].partition(b"\0")[0].decode("utf-8", "replace"),
                          kind, flags, offset, length) for n, kind, flags, offset, length, _ in rows]

    def _read(self, offset: int, length: int) -> bytes:
        if offset + length > self.size:
            raise Damaged(f"{length} bytes at {offset:#x} are past the end of the file")
        self.stream.seek(offset)
        return self.stream.read(length)


class DebugInfo:
    """An open ELF file that holds DWARF for ``binary``."""

    def __init__(self, binary: Path, path: Path, elf: Elf, build_id: str | None):
        self.binary, self.path, self.elf, self.build_id = binary, path, elf, build_id

    def close(self) -> None:
        self.elf.stream.close()


def build_id(elf: Elf) -> str | None:
    """Lowercase hex, or None. The owner is checked: a probe note has type 3 too."""
    fmt = "<III" if elf.little_endian else ">III"
    notes = [row for row in elf.sections if row[1] == _SHT_NOTE]
    # Each note section is searched whole: a hostile file's may all hold the same bytes, thousands of times.
    if sum(row[4] for row in notes) > elf.size:
        raise Damaged("note sections overlap")
    for row in notes:
        data, at = elf._read(*row[3:]), 0
        while at + 12 <= len(data):
            namesz, descsz, kind = struct.unpack_from(fmt, data, at)
            name_at, desc_at = at + 12, at + 12 + (namesz + 3) // 4 * 4
            if kind == 3 and data[name_at:name_at + namesz] == b"GNU\0":  # NT_GNU_BUILD_ID
                return data[desc_at:desc_at + descsz].hex()
            at = desc_at + (descsz + 3) // 4 * 4
    return None


def _crc32(stream) -> int:
    stream.seek(0)
    crc = 0
    while chunk := stream.read(1 << 20):
        crc = zlib.crc32(chunk, crc)
    return crc


def _debug_link(elf: Elf) -> tuple[bytes, int | None]:
    """The .gnu_debuglink's file name and CRC-32; (b"", None) if there is none or it is cut short."""
    link = next((row for row in elf.sections if row[0] == ".gnu_debuglink"), None)
    data = elf._read(*link[3:]) if link else b""
    name = data.partition(b"\0")[0]
    end = (len(name) + 4) & ~3  # the name, its NUL, padding to 4; then the CRC
    if not name or len(data) < end + 4:
        return b"", None
    return name, struct.unpack_from("<I" if elf.little_endian else ">I", data, end)[0]


def _candidates(binary: Path, elf: Elf, ident: str | None, debug_dirs):
    """(path, CRC-32 wanted or None) of each place the debug file may be; a
    debug link naming anything but a file in the directory searched is ignored."""
    if ident and len(ident) > 2:
        for root in debug_dirs:
            yield Path(root) / ".build-id" / ident[:2] / f"{ident[2:]}.debug", None
    name, crc = _debug_link(elf)
    if name and b"/" not in name and name not in (b".", b".."):
        here = binary.resolve().parent
        for where in (here, here / ".debug", *(Path(root) / str(here).lstrip("/") for root in debug_dirs)):
            yield where / name.decode("utf-8", "surrogateescape"), crc


def _open(path: Path) -> tuple[Elf, str | None, bool]:
    """(sections, build id, whether it has DWARF) of the ELF file at ``path``, left open."""
    stream, size = open_elf_file(path)
    try:
        with reading(path):
            elf = Elf(stream, size)
            ident = build_id(elf)
            # A binary whose debug info was moved out keeps .debug_info as SHT_NOBITS.
            has_dwarf = any(row[0] in (".debug_info", ".zdebug_info") and row[1] != _SHT_NOBITS for row in elf.sections)
            # A compressed debug section may not claim to expand beyond reason.
            for name, claimed, stored, _, _ in _compressed(elf) if has_dwarf else ():
                if claimed > stored * _MAX_EXPANSION + _EXPANSION_SLACK:
                    raise Damaged(f"section {name} claims {claimed} bytes uncompressed from {stored}")
            return elf, ident, has_dwarf
    except BaseException:
        stream.close()
        raise


def open_debug_info(binary, debug_file=None, debug_dirs=DEFAULT_DEBUG_DIRS) -> DebugInfo:
    """The file that carries the DWARF of ``binary``, open; InputError saying
    what to do when there is none, or that a file is damaged."""
    binary = Path(binary)
    elf, ident, has_dwarf = _open(binary)
    if has_dwarf and debug_file is None:
        return DebugInfo(binary, binary, elf, ident)
    try:
        if debug_file is not None:
            debug_file = Path(debug_file)
            delf, other, debug_has_dwarf = _open(debug_file)
            with reading(binary):
                crc = None if ident and other else _debug_link(elf)[1]  # without build ids, the link's CRC says
            if ident and other and ident != other:
                problem = f"is not the debug file of {binary}: build id {other} is not {ident}"
            elif crc is not None and (actual := _crc32(delf.stream)) != crc:
                problem = f"is not the debug file of {binary}: CRC-32 {actual:08x} is not the debug link's {crc:08x}"
            else:
                problem = None if debug_has_dwarf else "has no DWARF debug info (.debug_info)"
            if problem:
                delf.stream.close()
                raise InputError(f"{debug_file} {problem}")
            return DebugInfo(binary, debug_file, delf, ident)
        with reading(binary):
            candidates = list(_candidates(binary, elf, ident, debug_dirs))
        for candidate, crc in candidates:
            if os.path.isfile(candidate):  # a name too long for the file system is no file either
                delf, other, debug_has_dwarf = _open(candidate)
                ours = other == ident if ident and other else crc is not None and _crc32(delf.stream) == crc
                if debug_has_dwarf and ours:
                    return DebugInfo(binary, candidate, delf, ident)
                delf.stream.close()
    finally:
        elf.stream.close()
    where = f" (build id {ident}: none under {', '.join(map(str, debug_dirs))}/.build-id)" if ident else ""
    raise NoDebugInfo(f"{binary} has no DWARF debug info{where}: build it with -g, "
                      "or give its separate debug file with --debug-file")


# A compressed section's claimed size is believed up to what zlib makes of
# real DWARF (3-10x), with room to spare (doc/security.md).
_MAX_EXPANSION = 64
_EXPANSION_SLACK = 1 << 20


def _compressed(elf: Elf):
    """(name, claimed size, stored size, (file offset, length) of its stream,
    whether zlib) of each compressed debug section."""
    chdr = struct.Struct(("<" if elf.little_endian else ">") + ("I4xQ" if elf.elfclass == 64 else "II"))
    skip = 24 if elf.elfclass == 64 else 12
    for name, kind, flags, offset, size in elf.sections:
        if not name.startswith((".debug", ".zdebug")) or kind == _SHT_NOBITS:
            continue
        if flags & _SHF_COMPRESSED:
            ch_type, claimed = chdr.unpack(elf._read(offset, chdr.size))
            yield name, claimed, size, (offset + skip, size - skip), ch_type == 1  # ELFCOMPRESS_ZLIB
        elif name.startswith(".zdebug"):  # GNU style: "ZLIB" and the size, big-endian
            elf.stream.seek(offset)
            head = elf.stream.read(12)
            if len(head) < 12 or head[:4] != b"ZLIB":
                raise Damaged(f"section {name} is not zlib-compressed")
            yield name, struct.unpack(">Q", head[4:])[0], size, (offset + 12, size - 12), True


def inflate_within_claims(elf: Elf) -> None:
    """Damaged if a compressed debug section inflates to more than it claims
    (pyelftools would inflate it whole); inflates at most the claim and a byte
    (the claim was bounded by _open). A stream that ends early is the parser's to report."""
    for name, claimed, _, (offset, length), is_zlib in _compressed(elf):
        if not is_zlib:
            raise Damaged(f"section {name} is compressed otherwise than with zlib")
        elf.stream.seek(offset)
        inflated = zlib.decompressobj().decompress(elf.stream.read(max(length, 0)), claimed + 1)
        if len(inflated) > claimed:
            raise Damaged(f"section {name} inflates to more than the {claimed} bytes it claims")
