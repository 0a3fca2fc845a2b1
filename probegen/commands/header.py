"""Generate the C header of USDT probe macros from the catalog.

Writes only when the content changed, so builds do not recompile.
"""

from __future__ import annotations

import os
import sys

from probegen import depfile, stamp
from probegen.cli import add_catalog_argument
from probegen.gcpause import gc_paused

HELP = "generate the C header of probe macros"


def configure(parser):
    add_catalog_argument(parser)
    parser.add_argument(
        "-o", "--output", metavar="FILE",
        help="header to write (default: the catalog's outputs.header; '-' for stdout)",
    )
    depfile.add_argument(parser)


def run(args) -> int:
    key = None if args.output == "-" else _stamp(args)
    if key and stamp.is_fresh(key):
        return 0  # same inputs, outputs untouched since: nothing to do
    # Imports, loading and rendering: bulk work with no cycles to collect.
    with gc_paused():
        return _generate(args, key)


def _generate(args, key: str | None) -> int:
    from probegen.catalog import load_catalog
    from probegen.errors import InputError
    from probegen.generators.header import TEMPLATE, render_header
    from probegen.output import GeneratedFile, write_if_changed

    catalog = load_catalog(args.catalog)
    output = args.output or catalog.outputs.get("header")
    if output is None:
        raise InputError("probegen header: no output: give -o FILE or set outputs.header in the catalog")
    if str(output) == "-":
        if args.depfile:
            raise InputError("probegen header: --depfile needs an output file, not stdout")
        sys.stdout.write(render_header(catalog))
        return 0
    from pathlib import Path

    output = Path(output)
    write_if_changed(GeneratedFile(output, render_header(catalog)))
    if args.depfile:
        depfile.write(args.depfile, output, args.catalog, TEMPLATE)
    if key:
        stamp.record(key, [output, *([args.depfile] if args.depfile else [])])
    return 0


def _stamp(args) -> str | None:
    if not stamp.enabled():
        return None
    try:
        with open(args.catalog, "rb") as f:
            catalog = f.read()
    except OSError:
        return None  # loading reports it
    return stamp.stamp("header", os.path.abspath(args.catalog), catalog, str(args.output), str(args.depfile))
