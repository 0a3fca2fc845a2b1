"""Reading USDT probes from ELF binaries (``.note.stapsdt``) and finding the
shared libraries a binary loads. Knows nothing of catalogs.

Names load on first use: the DWARF reader opens files through elf.notes
and needs none of the rest."""

import importlib

_MODULE_OF = {"Constant": "argspec", "Memory": "argspec", "Register": "argspec", "Unknown": "argspec",
              "read_binaries": "deps", "ElfError": "notes", "read_binary": "notes"}


def __getattr__(name):
    if name not in _MODULE_OF:
        raise AttributeError(f"module 'probegen.elf' has no attribute '{name}'")
    return getattr(importlib.import_module(f"probegen.elf.{_MODULE_OF[name]}"), name)
