"""One program at two versions against one catalog: tests/c/drift_spdk.c
built as "master" (what tests/catalogs/drift.yaml describes) and as
"v25_09" (-DV25_09: an enum's states reordered, a struct member moved and
retyped, another renamed), both with DWARF (-g)."""

from __future__ import annotations

from pathlib import Path

from helpers import C_DIR, CATALOGS, compile_c
from probegen.catalog import load_catalog
from probegen.generators.header import render_header

DRIFT_CATALOG = CATALOGS / "drift.yaml"
VERSIONS = {"master": (), "v25_09": ("V25_09",)}


def build_drift(directory: Path) -> dict[str, Path]:
    """{version: binary} built in ``directory`` against the catalog's header."""
    include = directory / "include"
    include.mkdir(parents=True, exist_ok=True)
    (include / "drift.h").write_text(render_header(load_catalog(DRIFT_CATALOG)))
    return {
        version: compile_c([C_DIR / "drift_spdk.c"], directory / version, include_dirs=[include],
                           defines=["PGDRIFT_USDT", *defines], extra=["-g"])
        for version, defines in VERSIONS.items()
    }
