"""Files users put in their own builds and editors, shipped in the package
so that ``probegen paths`` can say where they are."""

from __future__ import annotations

from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent


def make_fragment() -> Path:
    return DATA_DIR / "probegen.mk"


def cmake_dir() -> Path:
    """The directory of probegenConfig.cmake, for find_package(probegen)."""
    return DATA_DIR / "cmake"


def schema() -> Path:
    """The catalog's JSON Schema, which the loader checks catalogs against."""
    return DATA_DIR / "catalog.schema.json"
