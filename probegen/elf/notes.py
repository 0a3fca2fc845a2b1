"""Reading the USDT probes of an ELF file from its ``.note.stapsdt`` notes.

Each note is one probe site. Its descriptor holds three addresses (the
probe's pc, the link-time address of ``.stapsdt.base``, the semaphore or
0), each as wide as the ELF class, then three NUL-terminated strings:
provider, name, arguments. pyelftools finds the section; its notes are
walked here with struct, from the section's bytes read at once (the note
layout is the ELF spec's, the descriptor SystemTap's, which pyelftools
does not parse; its generic note walker costs ~50 us a note, too slow for
binaries with tens of thousands of sites).

Knows nothing of catalogs: it reports what the binary holds.
"""

from __future__ import annotations

import os
import re
import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING

from probegen.errors import InputError
from probegen.files.inputs import UnreadableInput, open_seekable

if TYPE_CHECKING:  # the DWARF reader opens files here and decodes no notes
    from probegen.elf.argspec import NoteArg

_NAME = re.compile(r"[A-Za-z0-9_]+\Z")  # provider and probe names in a note
_NAME_BYTES = re.compile(rb"[A-Za-z0-9_]+\Z")

_MAGIC = b"\x7fELF"
NOTE_SECTION = ".note.stapsdt"
BASE_SECTION = ".stapsdt.base"
NOTE_OWNER = "stapsdt"
NT_STAPSDT = 3
# SPDK has ~150 probe sites, the largest users tens of thousands; reading
# 100,000 notes takes about half a second. A crafted section of millions
# of empty notes would take many seconds: refused instead.
MAX_NOTES = 100_000

# Every note starts with three 4-byte words (n_namesz, n_descsz, n_type)
# in both ELF classes; name and descriptor are each padded to 4 bytes.
_NOTE_HEADER = 12
_OWNER = NOTE_OWNER.encode() + b"\0"

# uname-style names of the machines Debian builds for; the width and byte
# order pick the variant (ppc64 vs ppc64le, mips vs mips64el).
MACHINES = {
    "EM_X86_64": "x86_64",
    "EM_386": "i386",
    "EM_AARCH64": "aarch64",
    "EM_ARM": "arm",
    "EM_PPC64": "ppc64",
    "EM_PPC": "ppc",
    "EM_S390": "s390",
    "EM_MIPS": "mips",
    "EM_MIPS_RS3_LE": "mips",
    "EM_RISCV": "riscv",
    "EM_LOONGARCH": "loongarch",
}


def machine_name(e_machine: str | int) -> str:
    """pyelftools names the machines it knows ('EM_X86_64') and gives the
    bare number of others: that becomes 'EM_12345', a string like the rest."""
    return e_machine if isinstance(e_machine, str) else f"EM_{e_machine}"


def type_name(e_type: str | int) -> str:
    """'ET_DYN'; an e_type pyelftools does not know as 'ET_65000'."""
    return e_type if isinstance(e_type, str) else f"ET_{e_type}"


def arch_name(machine: str, elf_class: int, little_endian: bool) -> str:
    """'x86_64', 'ppc64le', 's390x', 'mips64el', 'riscv64'; a machine
    without a short name by its ELF name ('EM_SPARCV9', 'EM_12345')."""
    name = MACHINES.get(machine)
    if name is None:
        return machine
    if name == "s390" and elf_class == 64:
        return "s390x"
    if name == "ppc64" and little_endian:
        return "ppc64le"
    if name == "mips":
        return ("mips64" if elf_class == 64 else "mips") + ("el" if little_endian else "")
    if name in ("riscv", "loongarch"):
        return f"{name}{elf_class}"
    return name


class ElfError(InputError):
    """A file that cannot be read as an ELF binary with USDT notes."""

    def __init__(self, path: str, problem: str):
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: error: {problem}")


@dataclass(frozen=True)
class ProbeSite:
    """One place in the code where a probe fires (one note)."""

    address: int  # pc, adjusted for prelinking as tracers do
    semaphore: int  # 0 when the probe has none; adjusted like address
    base: int  # the note's recorded .stapsdt.base address
    args: tuple[NoteArg, ...]
    args_text: str  # the raw argument string, as readelf prints it


@dataclass(frozen=True)
class BinaryProbe:
    provider: str
    name: str
    sites: tuple[ProbeSite, ...]

    @property
    def key(self) -> tuple[str, str]:
        return self.provider, self.name


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
        return arch_name(self.machine, self.elf_class, self.little_endian)

    @property
    def site_count(self) -> int:
        return sum(len(p.sites) for p in self.probes)

    def providers(self) -> list[str]:
        return sorted({p.provider for p in self.probes})


def open_elf(path: str | os.PathLike, *, pipe_ok: bool = False):
    """Open a path as an ELFFile; ElfError for anything that is not one.
    The one ELF opener: the notes, the dynamic section and the DWARF
    (probegen.dwarf) are all read through it.

    Regular files only, unless ``pipe_ok``: then a pipe (``<(cat BIN)``)
    is copied to a temporary file first (see probegen.files.inputs).
    Returns (ELFFile, file object, size); the caller closes the file.
    """
    stream, size = open_elf_file(path, pipe_ok=pipe_ok)
    try:
        from elftools.elf.elffile import ELFFile

        return guard_elf(str(path), lambda: ELFFile(stream)), stream, size
    except BaseException:
        stream.close()
        raise


def open_elf_file(path: str | os.PathLike, *, pipe_ok: bool = False):
    """open_elf's checks without pyelftools, for a reader that parses the
    file itself (probegen.dwarf.locate): (file object, size)."""
    shown = str(path)
    try:
        stream, size = open_seekable(path, "ELF binary", pipe_ok=pipe_ok, head=len(_MAGIC),
                                     check_head=lambda head: _check_magic(shown, head), missing="no such file")
    except UnreadableInput as exc:
        raise ElfError(shown, exc.problem) from None
    try:
        _check_magic(shown, stream.read(len(_MAGIC)))  # a pipe's was checked before copying
        stream.seek(0)
        return stream, size
    except BaseException:
        stream.close()
        raise


def _check_magic(shown: str, head: bytes) -> None:
    if not head:
        raise ElfError(shown, "empty file, not an ELF binary")
    if head != _MAGIC:
        raise ElfError(shown, "not an ELF file (no ELF magic number)")


def guard_elf(shown: str, action):
    """Run a pyelftools call; its many exception types on malformed input
    (ELFError, construct's parse errors, struct.error, ValueError, ...)
    become one ElfError naming the file."""
    try:
        return action()
    except ElfError:
        raise
    except Exception as exc:  # noqa: BLE001 - see docstring
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ElfError(shown, f"truncated or malformed ELF ({detail})") from None


def read_binary(path: str | os.PathLike, *, pipe_ok: bool = False) -> Binary:
    """Every USDT probe of one ELF file, sites grouped by provider and name
    in the order of their first note. ``pipe_ok``: the user named this
    file, and may have named a pipe (see open_elf)."""
    shown = str(path)
    elf, stream, file_size = open_elf(path, pipe_ok=pipe_ok)
    with stream:
        return guard_elf(shown, lambda: _read(elf, shown, file_size))


def _read(elf, shown: str, file_size: int) -> Binary:
    header = elf.header
    notes = elf.get_section_by_name(NOTE_SECTION)
    base_section = elf.get_section_by_name(BASE_SECTION)
    stapsdt_base = base_section["sh_addr"] if base_section is not None else None
    grouped: dict[tuple[str, str], list[ProbeSite]] = {}
    if notes is not None:
        if notes["sh_type"] != "SHT_NOTE":
            raise ElfError(shown, f"section {NOTE_SECTION} is not a note section ({notes['sh_type']})")
        end = notes["sh_offset"] + notes["sh_size"]
        if end > file_size:
            raise ElfError(shown, f"section {NOTE_SECTION} ends at byte {end}, past the end of the file ({file_size} bytes)")
        stream = elf.stream
        stream.seek(notes["sh_offset"])
        data = stream.read(notes["sh_size"])
        if len(data) != notes["sh_size"]:
            raise ElfError(shown, f"section {NOTE_SECTION} could not be read in full")
        reader = _NoteReader(shown, elf.elfclass // 8, elf.little_endian, machine_name(header["e_machine"]),
                             stapsdt_base)
        grouped = reader.read(data, notes["sh_offset"])
    return Binary(
        path=shown,
        elf_class=elf.elfclass,
        machine=machine_name(header["e_machine"]),
        elf_type=type_name(header["e_type"]),
        little_endian=elf.little_endian,
        has_notes=notes is not None,
        stapsdt_base=stapsdt_base,
        probes=tuple(BinaryProbe(p, n, tuple(sites)) for (p, n), sites in grouped.items()),
    )


class _NoteReader:
    """Walks the notes of one .note.stapsdt section. Sites of a probe
    repeat its provider, name and often its argument string: each distinct
    string is checked and decoded once (NoteArg is immutable, so sites
    share the tuple)."""

    def __init__(self, shown: str, width: int, little_endian: bool, machine: str, stapsdt_base: int | None):
        self.shown, self.width, self.machine, self.stapsdt_base = shown, width, machine, stapsdt_base
        order = "<" if little_endian else ">"
        self.header = struct.Struct(order + "3I")
        self.addresses = struct.Struct(order + ("3Q" if width == 8 else "3I"))
        self.mask = (1 << (8 * width)) - 1
        self.names: dict[bytes, tuple[str, str]] = {}  # b"provider\0name" -> (provider, name)
        self.args: dict[bytes, tuple[str, tuple[NoteArg, ...]]] = {}  # raw argument string -> (text, decoded)

    def read(self, data: bytes, section_offset: int) -> dict[tuple[str, str], list[ProbeSite]]:
        """Sites by (provider, name), in the order of their first note.
        Offsets in messages are the file's."""
        shown, header, addresses = self.shown, self.header.unpack_from, self.addresses.unpack_from
        names, arguments, width = self.names, self.args, self.width
        end = len(data)
        grouped: dict[tuple[str, str], list[ProbeSite]] = {}
        offset = count = 0
        while offset + _NOTE_HEADER < end:  # trailing padding is no note (as pyelftools reads it)
            count += 1
            if count > MAX_NOTES:
                raise ElfError(shown, f"section {NOTE_SECTION} holds more than {MAX_NOTES} notes; "
                                      "no real binary has that many probe sites")
            namesz, descsz, note_type = header(data, offset)
            name_at = offset + _NOTE_HEADER
            desc_at = name_at + ((namesz + 3) & ~3)
            desc_end = desc_at + descsz
            note_at, offset = offset, desc_at + ((descsz + 3) & ~3)
            if offset > end:
                raise ElfError(shown, f"note at byte {section_offset + note_at} of {NOTE_SECTION}: "
                                      "its sizes point past the section")
            if note_type != NT_STAPSDT or not data.startswith(_OWNER, name_at, desc_at):
                continue
            if descsz < 3 * width:
                raise ElfError(shown, f"stapsdt note at byte {section_offset + note_at}: descriptor of {descsz} "
                                      "bytes is too short for three addresses")
            pc, base, semaphore = addresses(data, desc_at)
            strings_at = desc_at + 3 * width
            # The three strings, looked up as bytes; a string not seen yet
            # (or a note short of three NULs) takes the checking path.
            provider_end = data.find(b"\0", strings_at, desc_end)
            name_end = data.find(b"\0", provider_end + 1, desc_end) if provider_end >= 0 else -1
            args_end = data.find(b"\0", name_end + 1, desc_end) if name_end >= 0 else -1
            if args_end < 0:
                self._strings(data[desc_at:desc_end], f"stapsdt note at byte {section_offset + note_at}")
            key = names.get(data[strings_at:name_end])
            decoded = arguments.get(data[name_end + 1:args_end])
            if key is None or decoded is None:
                key, decoded = self._check(data[strings_at:provider_end], data[provider_end + 1:name_end],
                                           data[name_end + 1:args_end], f"stapsdt note at byte {section_offset + note_at}")
            # Prelinking moves sections but not the addresses inside notes;
            # tracers shift pc (and the semaphore) by how far .stapsdt.base moved.
            if self.stapsdt_base and base:
                delta = self.stapsdt_base - base
                pc = (pc + delta) & self.mask
                if semaphore:
                    semaphore = (semaphore + delta) & self.mask
            site = ProbeSite(pc, semaphore, base, decoded[1], decoded[0])
            sites = grouped.get(key)
            if sites is None:
                grouped[key] = [site]
            else:
                sites.append(site)
        return grouped

    def _strings(self, desc: bytes, where: str) -> list[bytes]:
        """Raises for a descriptor without three NUL-terminated strings."""
        strings = desc[3 * self.width:].split(b"\0")
        if len(strings) < 4:
            raise ElfError(self.shown, f"{where}: provider, name and arguments are not three NUL-terminated strings")
        return strings

    def _check(self, raw_provider: bytes, raw_name: bytes, raw_args: bytes, where: str):
        """((provider, name), (argument text, decoded arguments)) of a note
        with a string not seen before: checked and decoded (problems in the
        order of the messages), and remembered for the notes that repeat it."""
        shown, raw_key = self.shown, raw_provider + b"\0" + raw_name
        key = self.names.get(raw_key)
        decoded = self.args.get(raw_args)
        if key is None and decoded is not None and _NAME_BYTES.match(raw_provider) and _NAME_BYTES.match(raw_name):
            # A new probe with a known argument string: C names are plain
            # ASCII, nothing else to check (the common case).
            key = self.names[raw_key] = (raw_provider.decode("ascii"), raw_name.decode("ascii"))
            return key, decoded
        if key is None:
            provider, name, args_text = (_text(raw_provider, shown, where, "provider"), _text(raw_name, shown, where, "name"),
                                         _text(raw_args, shown, where, "arguments"))
            for value, what in ((provider, "provider"), (name, "name")):
                if not _NAME.match(value):
                    raise ElfError(shown, f"{where}: {what} {value!r} is not a C identifier")
            key = self.names[raw_key] = (provider, name)
        else:
            provider, name = key
            args_text = _text(raw_args, shown, where, "arguments")
        if decoded is None:
            from probegen.elf.argspec import ArgSpecError, parse_args

            try:
                args = parse_args(args_text, self.machine)
            except ArgSpecError as exc:
                raise ElfError(shown, f"{where} ({provider}:{name}): {exc}") from None
            decoded = self.args[raw_args] = (args_text, args)
        return key, decoded


def _text(raw: bytes, shown: str, where: str, what: str) -> str:
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError:
        raise ElfError(shown, f"{where}: {what} is not ASCII text") from None
    if not text.isprintable():
        raise ElfError(shown, f"{where}: {what} contains control characters")
    return text
