"""Reading USDT probes from ELF binaries (``.note.stapsdt``) and finding the
shared libraries a binary loads. Knows nothing of catalogs."""

from probegen.elf.argspec import Address, ArgSpecError, Constant, Memory, NoteArg, Register, Unknown, parse_args
from probegen.elf.deps import Dependencies, Reading, read_binaries, resolve_dependencies
from probegen.elf.notes import Binary, BinaryProbe, ElfError, ProbeSite, read_binary

__all__ = [
    "Address", "ArgSpecError", "Binary", "BinaryProbe", "Constant", "Dependencies", "ElfError", "Memory",
    "NoteArg", "ProbeSite", "Reading", "Register", "Unknown", "parse_args", "read_binaries", "read_binary",
    "resolve_dependencies",
]
