"""Types from a built binary's DWARF, as plain ``probegen.dwarf.model``
values: structs, members, enums and enumerators.

Knows nothing of catalogs and writes nothing: probegen.generators writes
the C definitions and enum maps, and adapts these types to the script
generators (probegen.generators.typesource). Read with pyelftools; only
the DIEs of the types asked for are parsed, found through an index cached
per build id.
"""

from probegen.dwarf.types import DwarfTypes

__all__ = ["DwarfTypes"]
