"""Generators: each turns the catalog model into files through a template.

A generator module has ``render_files(catalog, output) -> list[GeneratedFile]``;
``output`` is the path the catalog's ``outputs:`` gives for its kind.
"""

from __future__ import annotations

import importlib

from probegen.catalog import Catalog
from probegen.files.output import GeneratedFile

GENERATORS = {
    "header": "probegen.generators.header",
    "bpftrace": "probegen.generators.bpftrace",
    "bcc": "probegen.generators.bcc",
    "docs": "probegen.generators.docs",
}


def render_outputs(catalog: Catalog) -> list[GeneratedFile]:
    """Every file the catalog's ``outputs:`` asks for."""
    files: list[GeneratedFile] = []
    for kind, path in catalog.outputs.items():
        module = GENERATORS.get(kind)
        if module is None:
            continue
        files.extend(importlib.import_module(module).render_files(catalog, path))
    return files
