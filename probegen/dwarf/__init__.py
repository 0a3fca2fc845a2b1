"""Types from a built binary's DWARF, as plain ``probegen.dwarf.model``
values: structs, members, enums and enumerators.

Knows nothing of catalogs and writes nothing: probegen.generators writes
the C definitions and enum maps, and adapts these types to the script
generators (probegen.generators.typesource). The debug file is found and
checked from its section table (locate.py), then read by drgn (fromdrgn.py
turns its types into the model); a C++ program's by pyelftools (cxx.py,
load.py).
"""

from probegen.dwarf.types import DwarfTypes

__all__ = ["DwarfTypes"]
