"""The probe catalog: its model and its loader."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from probegen.catalog.model import Catalog

DEFAULT_CATALOG = "probes.yaml"

# The model's names, loaded on first use: modules that need only the C type
# facts (catalog.ctype; the struct writer) do not build the model's classes.
_MODEL_NAMES = ("Arg", "Catalog", "EnumDecl", "Enumerator", "HeaderConfig", "Probe",
                "SDT_MAX_ARGS", "Span", "SpanBy", "SpanKey")

__all__ = [*_MODEL_NAMES, "DEFAULT_CATALOG", "load_catalog"]


def __getattr__(name):
    if name not in _MODEL_NAMES:
        raise AttributeError(f"module 'probegen.catalog' has no attribute '{name}'")
    from probegen.catalog import model

    return getattr(model, name)


def load_catalog(path: str | Path, header_output=None) -> Catalog:
    """Read, check and model a catalog. Raises InputError or CatalogError.
    ``header_output``: the file the header is written to, when it is not
    the catalog's outputs.header (it names a guard the catalog leaves out)."""
    from probegen.files.inputs import read_input

    path = Path(path)
    data = read_input(path, "catalog file")
    from probegen.catalog.load import parse_catalog  # PyYAML: only when a catalog is read

    return parse_catalog(data, path, header_output)
