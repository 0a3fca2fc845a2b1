"""Pausing Python's cyclic garbage collector around bulk work.

Loading a catalog, importing jinja2 and rendering build many objects and no
reference cycles worth collecting meanwhile: each collection pass walks
every live object, and on a 2,000-probe header they cost more time than
they free memory.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager


@contextmanager
def gc_paused():
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
