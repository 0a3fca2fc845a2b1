"""Reading USDT probes from ELF binaries (``.note.stapsdt``) and finding the
shared libraries a binary loads. Knows nothing of catalogs.

The names below are loaded on first use, so a reader that needs only one
module (the DWARF reader opens files through elf.notes) does not import
the others."""

import importlib

_MODULE_OF = {
    **dict.fromkeys(("Address", "ArgSpecError", "Constant", "Memory", "NoteArg", "Register", "Unknown",
                     "parse_args"), "argspec"),
    **dict.fromkeys(("Dependencies", "Reading", "read_binaries", "resolve_dependencies"), "deps"),
    **dict.fromkeys(("Binary", "BinaryProbe", "ElfError", "ProbeSite", "read_binary"), "notes"),
}

__all__ = sorted(_MODULE_OF)


def __getattr__(name):
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'probegen.elf' has no attribute '{name}'")
    return getattr(importlib.import_module(f"probegen.elf.{module}"), name)
