"""Generators: the catalog model as files, through templates; an output is a module here
declaring ``KIND``, ``WRITES_DIRECTORY`` and ``render_files`` (doc/internals.md, "How to add an output").
"""

import functools
import importlib
import pkgutil
from pathlib import Path
from typing import TYPE_CHECKING

from probegen.errors import InputError

if TYPE_CHECKING:
    from probegen.catalog import Catalog
    from probegen.files.output import GeneratedFile


@functools.cache
def outputs() -> dict:
    """Every output module of this package, by kind (a test keeps the schema's ``outputs``
    equal to it)."""
    modules = (importlib.import_module(f"{__name__}.{info.name}") for info in pkgutil.iter_modules(__path__))
    return {module.KIND: module for module in modules if hasattr(module, "KIND")}


def render_outputs(catalog: "Catalog", types=None) -> "list[GeneratedFile]":
    if any(outputs()[kind].WRITES_DIRECTORY for kind in catalog.outputs):
        require_types_for_members(catalog, types)
    return [file for kind, path in catalog.outputs.items()
            for file in outputs()[kind].render_files(catalog, path, types)]


def require_types_for_members(catalog: "Catalog", types) -> None:
    """Scripts print an argument's ``members:`` only at the offsets a binary's DWARF gives:
    without one, members are an error, not dropped."""
    for probe in catalog.probes:
        for arg in probe.args:
            if arg.members and types is None:
                raise InputError(f"argument '{arg.name}' of probe '{probe.name}' lists members, which scripts read "
                                 "at the offsets a binary's debug info gives: give --binary BINARY", arg.location)


def leftover_files(catalog: "Catalog", files: "list[GeneratedFile]") -> list[Path]:
    """Files probegen generated into the catalog's output directories that are not among
    ``files`` (a group renamed or removed)."""
    from probegen.files.output import leftovers

    directories = [path for kind, path in catalog.outputs.items() if outputs()[kind].WRITES_DIRECTORY]
    return leftovers(directories, [f.path for f in files])


def sync_outputs(catalog: "Catalog", types=None, force: bool = False) -> list[tuple[str, Path]]:
    """Write the catalog's outputs that changed, then remove the generated files it no longer
    produces: ("wrote" | "unchanged" | "removed", path) each. Nothing is written or removed
    where an output path holds a file probegen did not generate, unless ``force``."""
    from probegen.files.output import remove_generated, write_all

    files = render_outputs(catalog, types)
    changes = write_all(files, force)
    for path in leftover_files(catalog, files):
        if remove_generated(path):
            changes.append(("removed", path))
    return changes
