"""Reading USDT probes from ELF binaries (``.note.stapsdt``) and finding the
shared libraries a binary loads. Knows nothing of catalogs. Each module is
imported by name: the DWARF reader opens files through elf.notes and needs
none of the rest."""
