"""Types from a built binary's DWARF: C definitions bpftrace accepts, enum
tables, and a probegen.generators.typesource.TypeSource for the script generators.

Knows nothing of catalogs. Read with pyelftools; only the DIEs of the types
asked for are parsed, found through an index cached per build id.
"""

from probegen.dwarf.types import DwarfTypes, to_ctype

__all__ = ["DwarfTypes", "to_ctype"]
