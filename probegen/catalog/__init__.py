"""The probe catalog: its model and its loader."""

from probegen.catalog.load import load_catalog, parse_catalog
from probegen.catalog.model import (
    Arg, Catalog, EnumDecl, Enumerator, HeaderConfig, OUTPUT_KINDS, Probe, SDT_MAX_ARGS,
)

DEFAULT_CATALOG = "probes.yaml"

__all__ = [
    "Arg", "Catalog", "DEFAULT_CATALOG", "EnumDecl", "Enumerator", "HeaderConfig",
    "OUTPUT_KINDS", "Probe", "SDT_MAX_ARGS", "load_catalog", "parse_catalog",
]
