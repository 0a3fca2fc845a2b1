"""The probe catalog: its model and its loader."""

from pathlib import Path

# The model's names, imported on first use: what needs only the C type
# facts (catalog.ctype) does not build the model's classes (~5 ms).
_MODEL_NAMES = ("Arg", "Catalog", "Probe", "Span")  # the ones imported from here


def __getattr__(name):
    if name not in _MODEL_NAMES:
        raise AttributeError(f"module 'probegen.catalog' has no attribute '{name}'")
    from probegen.catalog import model

    return getattr(model, name)


def load_catalog(path: str | Path, header_output=None):
    """Read, check and model a catalog; raises InputError or CatalogError.
    ``header_output``: where the header goes, if not to outputs.header."""
    from probegen.catalog.load import parse_catalog  # PyYAML: only when a catalog is read
    from probegen.files.inputs import read_input

    return parse_catalog(read_input(Path(path), "catalog file"), Path(path), header_output)
