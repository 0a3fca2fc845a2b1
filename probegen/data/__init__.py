"""Files users put in their own builds and editors, shipped inside the
package so an installed probegen can say where they are.

``probegen paths`` prints these; build files find them through it
(``$(shell probegen paths --make)``, ``probegen paths --cmake-dir``).
"""

from __future__ import annotations

from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent


def make_fragment() -> Path:
    """probegen.mk, the GNU make fragment."""
    return DATA_DIR / "probegen.mk"


def cmake_dir() -> Path:
    """The directory of probegenConfig.cmake, for find_package(probegen)."""
    return DATA_DIR / "cmake"


def schema() -> Path:
    """The catalog's JSON Schema (the one the loader checks catalogs against)."""
    return DATA_DIR / "catalog.schema.json"
