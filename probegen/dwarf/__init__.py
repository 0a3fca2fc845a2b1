"""Types from a built binary's DWARF, as plain ``probegen.dwarf.model``
values: structs, members, enums and enumerators.

Knows nothing of catalogs and writes nothing: probegen.generators writes
the C definitions and enum maps, and adapts these types to the script
generators (probegen.generators.typesource). The debug file is found and
checked from its section table (locate.py), then read by drgn (fromdrgn.py
turns its types into the model); a C++ program's by pyelftools (cxx.py,
load.py).
"""

import os

# drgn indexes DWARF on OpenMP threads, and a child forked once they exist
# hangs in its first parallel region (libgomp is not fork-safe): probegen
# trace forks its unprivileged readers. One thread, set before drgn loads
# libgomp, costs nothing measurable (three nvmf types of spdk_tgt: 0.07 s).
os.environ["OMP_NUM_THREADS"] = "1"

from probegen.dwarf.types import DwarfTypes  # noqa: E402

__all__ = ["DwarfTypes"]
