"""The probe catalog: its model and its loader.

``load_catalog`` keeps each model it builds in probegen's cache, keyed by
the catalog's bytes, its path and probegen's code. Commands that only read
the model (verify, scripts, docs) then start without PyYAML or the loader.
"""

from __future__ import annotations

import hashlib
import pickle
import sys
from pathlib import Path

from probegen import cache
from probegen.catalog.model import (
    Arg, Catalog, EnumDecl, Enumerator, HeaderConfig, OUTPUT_KINDS, Probe, SDT_MAX_ARGS,
)
from probegen.errors import read_input

DEFAULT_CATALOG = "probes.yaml"
_MODELS = "catalogs"

__all__ = [
    "Arg", "Catalog", "DEFAULT_CATALOG", "EnumDecl", "Enumerator", "HeaderConfig",
    "OUTPUT_KINDS", "Probe", "SDT_MAX_ARGS", "load_catalog",
]


def load_catalog(path: str | Path) -> Catalog:
    """Read, check and model a catalog. Raises InputError or CatalogError."""
    path = Path(path)
    data = read_input(path, "catalog file")
    caching = cache.directory(_MODELS) is not None
    if caching:
        key = hashlib.sha256(b"\0".join([
            str(path).encode(), str(path.resolve()).encode(), sys.version.encode(),
            cache.code_fingerprint().encode(), data,
        ])).hexdigest()
        catalog = _cached(key)
        if catalog is not None:
            return catalog
    from probegen.catalog.load import parse_catalog

    catalog = parse_catalog(data, path)  # raises on a bad catalog: nothing is cached
    if caching:
        cache.write(_MODELS, key, pickle.dumps(catalog, pickle.HIGHEST_PROTOCOL))
    return catalog


def _cached(key: str) -> Catalog | None:
    data = cache.read(_MODELS, key)
    if data is None:
        return None
    try:
        catalog = pickle.loads(data)
    except Exception:  # a damaged entry is rebuilt, whatever unpickling raised
        return None
    return catalog if isinstance(catalog, Catalog) else None
