"""Types from a built binary's DWARF, as plain ``probegen.dwarf.model``
values: structs, members, enums and enumerators.

Knows nothing of catalogs and writes nothing: probegen.generators writes
the C definitions and enum maps, and adapts these types to the script
generators (probegen.generators.typesource). The file is opened with
pyelftools; the DIEs are read straight from their bytes (scan.py for the
index, dies.py for the types), by pyelftools where a form is rare. Only
the DIEs of the types asked for are parsed, found through an index cached
per build id.
"""

from probegen.dwarf.types import DwarfTypes

__all__ = ["DwarfTypes"]
