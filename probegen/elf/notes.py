"""The USDT probes of an ELF file, from its ``.note.stapsdt`` notes: one a
site, its descriptor three addresses as wide as the ELF class (pc, the
link-time ``.stapsdt.base``, the semaphore or 0), then three NUL-terminated
strings: provider, name, arguments.
"""

import os
import re
import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING

from probegen.errors import InputError, Location
from probegen.files.inputs import open_seekable

if TYPE_CHECKING:  # the DWARF reader opens files here and decodes no notes
    from probegen.elf.argspec import NoteArg

_NAME = re.compile(r"[A-Za-z0-9_]+\Z")
_MAGIC = b"\x7fELF"
NOTE_SECTION = ".note.stapsdt"
NT_STAPSDT = 3
_OWNER = b"stapsdt\0"
_NOTE_HEADER = 12  # n_namesz, n_descsz, n_type in both classes; name and descriptor padded to 4
# The largest users have tens of thousands of sites; 100,000 take half a
# second to read. A crafted section of millions of empty notes is refused.
MAX_NOTES = 100_000

# uname's names of Debian's machines; class and byte order fill in the variant.
_ARCHES = {
    "EM_X86_64": "x86_64", "EM_386": "i386", "EM_AARCH64": "aarch64", "EM_ARM": "arm",
    "EM_PPC64": "ppc64{le}", "EM_PPC": "ppc", "EM_S390": "s390{x}", "EM_MIPS": "mips{w}{el}",
    "EM_MIPS_RS3_LE": "mips{w}{el}", "EM_RISCV": "riscv{bits}", "EM_LOONGARCH": "loongarch{bits}",
}


def _named(value: str | int, prefix: str) -> str:
    """pyelftools' name ('EM_X86_64'), or 'EM_12345' where it has none."""
    return value if isinstance(value, str) else f"{prefix}{value}"


class ElfError(InputError):
    """Not an ELF binary with readable USDT notes."""


@dataclass(frozen=True)
class ProbeSite:
    address: int  # pc, adjusted for prelinking as tracers do
    semaphore: int  # 0 when the probe has none; adjusted like address
    base: int  # the note's recorded .stapsdt.base address
    args: "tuple[NoteArg, ...]"
    args_text: str  # the raw argument string, as readelf prints it


@dataclass(frozen=True)
class BinaryProbe:
    provider: str
    name: str
    sites: tuple[ProbeSite, ...]


@dataclass(frozen=True)
class Binary:
    path: str  # as given
    elf_class: int  # 32 or 64
    machine: str  # pyelftools e_machine name, e.g. EM_X86_64; 'EM_12345' when it has none
    elf_type: str  # ET_EXEC, ET_DYN, ...
    little_endian: bool
    has_notes: bool  # a .note.stapsdt section exists
    stapsdt_base: int | None  # address of .stapsdt.base, if present
    probes: tuple[BinaryProbe, ...]

    @property
    def pointer_size(self) -> int:
        return self.elf_class // 8

    @property
    def arch(self) -> str:
        """uname's name ('ppc64le'), else the ELF name ('EM_SPARCV9', 'EM_12345')."""
        wide, little = self.elf_class == 64, self.little_endian
        return _ARCHES.get(self.machine, self.machine).format(
            bits=self.elf_class, x="x" if wide else "", w="64" if wide else "", el="el" if little else "",
            le="le" if little else "")


def probes_by_name(binaries: list[Binary], provider: str) -> dict[str, list[tuple[Binary, BinaryProbe]]]:
    """The provider's probes of every binary, by name, in the order they are first found."""
    grouped: dict[str, list[tuple[Binary, BinaryProbe]]] = {}
    for binary in binaries:
        for probe in binary.probes:
            if probe.provider == provider:
                grouped.setdefault(probe.name, []).append((binary, probe))
    return grouped


def read_elf(path: str | os.PathLike, read, *, pipe_ok: bool = False):
    """``read(ELFFile, file size)``; ElfError for anything not ELF. A pipe
    (only if ``pipe_ok``) is copied first."""
    stream, size = open_elf_file(path, pipe_ok=pipe_ok)
    with stream:
        from elftools.elf.elffile import ELFFile

        return guard_elf(str(path), lambda: read(ELFFile(stream), size))


def open_elf_file(path: str | os.PathLike, *, pipe_ok: bool = False):
    """(file object, size) after read_elf's checks, without pyelftools."""
    try:
        return open_seekable(path, "ELF binary", pipe_ok=pipe_ok, head=len(_MAGIC), check_head=_check_magic,
                             missing="no such file")
    except InputError as exc:  # open_seekable's UnreadableInput, or _check_magic's
        raise ElfError(exc.message, Location(str(path))) from None


def _check_magic(head: bytes) -> None:
    if head != _MAGIC:
        raise InputError("not an ELF file (no ELF magic number)" if head else "empty file, not an ELF binary")


def guard_elf(shown: str, action):
    """``action()``; what pyelftools raises on malformed input (ELFError,
    construct's, struct.error, ...) becomes one ElfError."""
    try:
        return action()
    except ElfError:
        raise
    except Exception as exc:  # noqa: BLE001 - see docstring
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ElfError(f"truncated or malformed ELF ({detail})", Location(shown)) from None


def read_binary(path: str | os.PathLike, *, pipe_ok: bool = False) -> Binary:
    """Sites grouped by provider and name, in the order of their first note."""
    return read_elf(path, lambda elf, file_size: _read(elf, str(path), file_size), pipe_ok=pipe_ok)


def _read(elf, shown: str, file_size: int) -> Binary:
    notes = elf.get_section_by_name(NOTE_SECTION)
    base_section = elf.get_section_by_name(".stapsdt.base")
    stapsdt_base = base_section["sh_addr"] if base_section is not None else None
    machine = _named(elf.header["e_machine"], "EM_")
    grouped: dict[tuple[str, str], list[ProbeSite]] = {}
    if notes is not None:
        if notes["sh_type"] != "SHT_NOTE":
            raise ElfError(f"section {NOTE_SECTION} is not a note section ({notes['sh_type']})", Location(shown))
        start, size = notes["sh_offset"], notes["sh_size"]
        if start + size > file_size:
            raise ElfError(f"section {NOTE_SECTION} ends at byte {start + size}, past the end of the file "
                           f"({file_size} bytes)", Location(shown))
        elf.stream.seek(start)
        data = elf.stream.read(size)
        if len(data) != size:
            raise ElfError(f"section {NOTE_SECTION} could not be read in full", Location(shown))
        grouped = _sites(data, start, shown, elf.elfclass // 8, "<" if elf.little_endian else ">", machine,
                         stapsdt_base)
    return Binary(shown, elf.elfclass, machine, _named(elf.header["e_type"], "ET_"), elf.little_endian,
                  notes is not None, stapsdt_base,
                  tuple(BinaryProbe(p, n, tuple(sites)) for (p, n), sites in grouped.items()))


def _sites(data: bytes, section_offset: int, shown: str, width: int, order: str, machine: str,
           stapsdt_base: int | None) -> dict[tuple[str, str], list[ProbeSite]]:
    """Sites by (provider, name); offsets in messages are the file's. Walked
    with struct (pyelftools' walker takes twice as long as this whole reader);
    each distinct string is checked and decoded once, sites share the result."""
    header, addresses = struct.Struct(order + "3I"), struct.Struct(order + ("3Q" if width == 8 else "3I"))
    mask = (1 << (8 * width)) - 1
    names: dict[tuple[bytes, bytes], tuple[str, str]] = {}
    decoded_args: "dict[bytes, tuple[str, tuple[NoteArg, ...]]]" = {}  # raw string -> (text, decoded)
    grouped: dict[tuple[str, str], list[ProbeSite]] = {}
    end, offset, count = len(data), 0, 0
    while offset + _NOTE_HEADER < end:  # trailing padding is no note (as pyelftools reads it)
        count += 1
        if count > MAX_NOTES:
            raise ElfError(f"section {NOTE_SECTION} holds more than {MAX_NOTES} notes; "
                           "no real binary has that many probe sites", Location(shown))
        namesz, descsz, note_type = header.unpack_from(data, offset)
        name_at = offset + _NOTE_HEADER
        desc_at = name_at + ((namesz + 3) & ~3)
        note_at, offset = section_offset + offset, desc_at + ((descsz + 3) & ~3)
        if offset > end:
            raise ElfError(f"note at byte {note_at} of {NOTE_SECTION}: its sizes point past the section",
                           Location(shown))
        if note_type != NT_STAPSDT or not data.startswith(_OWNER, name_at, desc_at):
            continue
        if descsz < 3 * width:
            raise ElfError(f"stapsdt note at byte {note_at}: descriptor of {descsz} bytes is too short "
                           "for three addresses", Location(shown))
        pc, base, semaphore = addresses.unpack_from(data, desc_at)
        strings = data[desc_at + 3 * width:desc_at + descsz].split(b"\0", 3)
        if len(strings) < 4:
            raise ElfError(f"stapsdt note at byte {note_at}: provider, name and arguments are not "
                           "three NUL-terminated strings", Location(shown))
        key = names.get((strings[0], strings[1]))
        decoded = decoded_args.get(strings[2])
        if key is None or decoded is None:
            where = f"stapsdt note at byte {note_at}"
            provider, name, args_text = (_text(raw, shown, where, what) for raw, what in
                                         zip(strings, ("provider", "name", "arguments")))
            for value, what in ((provider, "provider"), (name, "name")):
                if not _NAME.match(value):
                    raise ElfError(f"{where}: {what} {value!r} is not a C identifier", Location(shown))
            key = names[strings[0], strings[1]] = (provider, name)
        if decoded is None:
            from probegen.elf.argspec import ArgSpecError, parse_args

            try:
                args = parse_args(args_text, machine)
            except ArgSpecError as exc:
                raise ElfError(f"{where} ({provider}:{name}): {exc}", Location(shown)) from None
            decoded = decoded_args[strings[2]] = (args_text, args)
        # Prelinking moves sections but not the addresses inside notes;
        # tracers shift pc (and the semaphore) by how far .stapsdt.base moved.
        if stapsdt_base and base:
            delta = stapsdt_base - base
            pc = (pc + delta) & mask
            semaphore = (semaphore + delta) & mask if semaphore else 0
        grouped.setdefault(key, []).append(ProbeSite(pc, semaphore, base, decoded[1], decoded[0]))
    return grouped


def _text(raw: bytes, shown: str, where: str, what: str) -> str:
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError:
        raise ElfError(f"{where}: {what} is not ASCII text", Location(shown)) from None
    if not text.isprintable():
        raise ElfError(f"{where}: {what} contains control characters", Location(shown))
    return text
