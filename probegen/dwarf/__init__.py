"""Types from a built binary's DWARF as plain ``probegen.dwarf.model`` values;
it knows no catalog and writes nothing (probegen.generators does). locate.py
finds and checks the debug file, drgn reads it (fromdrgn.py), or for C++
pyelftools (cxx.py).
"""

import os

# drgn indexes DWARF on OpenMP threads, and a child forked once they exist
# hangs (libgomp is not fork-safe): trace forks its unprivileged readers.
# One thread, set before drgn loads libgomp, costs nothing measurable.
os.environ["OMP_NUM_THREADS"] = "1"


def __getattr__(name):
    # DwarfTypes loads drgn (tens of ms): only when a binary is read, not for the model alone.
    if name == "DwarfTypes":
        from probegen.dwarf.types import DwarfTypes

        return DwarfTypes
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
