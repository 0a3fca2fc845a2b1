"""The probe catalog: its model and its loader."""

from pathlib import Path

from probegen.catalog.model import Arg, Catalog, Probe, Span  # the names imported from here


def load_catalog(path: str | Path, header_output=None):
    """Read, check and model a catalog; raises InputError or CatalogError.
    ``header_output``: where the header goes, if not to outputs.header."""
    from probegen.catalog.load import parse_catalog  # PyYAML: only when a catalog is read
    from probegen.files.inputs import read_input

    return parse_catalog(read_input(Path(path), "catalog file"), Path(path), header_output)
