"""Pausing Python's cyclic garbage collector around bulk work.

Loading a catalog, importing jinja2 and rendering build many objects and no
reference cycles worth collecting: each collection pass walks every young
object, and on a 2,000-probe header they cost more time than they free
memory.

Pausing alone only defers that work: the first collection after the pause
walks everything built during it. When probegen is the program (the CLI),
the process ends soon after the command, so the pause instead ends by
freezing what was built (``gc.freeze``): no collection walks it again, and
reference counting still frees it. Called as a library, the pause ends
with collection simply re-enabled.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager

_process_ends_after_command = False


def process_ends_after_command() -> None:
    """Told by the CLI when probegen runs as its own process."""
    global _process_ends_after_command
    _process_ends_after_command = True


@contextmanager
def gc_paused():
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            if _process_ends_after_command:
                gc.freeze()
            gc.enable()
