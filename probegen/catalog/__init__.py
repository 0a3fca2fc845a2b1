"""The probe catalog: its model and its loader."""

from __future__ import annotations

from pathlib import Path

from probegen.catalog.model import (
    Arg, Catalog, EnumDecl, Enumerator, HeaderConfig, OUTPUT_KINDS, Probe, SDT_MAX_ARGS, Span, SpanBy, SpanKey,
)
from probegen.errors import read_input

DEFAULT_CATALOG = "probes.yaml"

__all__ = [
    "Arg", "Catalog", "DEFAULT_CATALOG", "EnumDecl", "Enumerator", "HeaderConfig",
    "OUTPUT_KINDS", "Probe", "SDT_MAX_ARGS", "Span", "SpanBy", "SpanKey", "load_catalog",
]


def load_catalog(path: str | Path, header_output=None) -> Catalog:
    """Read, check and model a catalog. Raises InputError or CatalogError.
    ``header_output``: the file the header is written to, when it is not
    the catalog's outputs.header (it names a guard the catalog leaves out)."""
    path = Path(path)
    data = read_input(path, "catalog file")
    from probegen.catalog.load import parse_catalog  # PyYAML: only when a catalog is read

    return parse_catalog(data, path, header_output)
