"""Files users put in their own builds and editors, shipped in the package
so that ``probegen paths`` can say where they are."""

from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent
MAKE_FRAGMENT = DATA_DIR / "probegen.mk"
CMAKE_DIR = DATA_DIR / "cmake"  # holds probegenConfig.cmake, for find_package(probegen)
SCHEMA = DATA_DIR / "catalog.schema.json"  # the catalog's JSON Schema, which the loader checks catalogs against
