"""Generate the C header of USDT probe macros from the catalog.

Writes only when the content changed, so builds do not recompile.
"""

from __future__ import annotations

import sys
from pathlib import Path

from probegen import depfile
from probegen.catalog import load_catalog
from probegen.cli import add_catalog_argument
from probegen.errors import InputError
from probegen.generators.header import TEMPLATE, render_header
from probegen.output import GeneratedFile, write_if_changed

HELP = "generate the C header of probe macros"


def configure(parser):
    add_catalog_argument(parser)
    parser.add_argument(
        "-o", "--output", metavar="FILE",
        help="header to write (default: the catalog's outputs.header; '-' for stdout)",
    )
    depfile.add_argument(parser)


def run(args) -> int:
    catalog = load_catalog(args.catalog)
    output = args.output or catalog.outputs.get("header")
    if output is None:
        raise InputError("probegen header: no output: give -o FILE or set outputs.header in the catalog")
    if str(output) == "-":
        if args.depfile:
            raise InputError("probegen header: --depfile needs an output file, not stdout")
        sys.stdout.write(render_header(catalog))
        return 0
    output = Path(output)
    write_if_changed(GeneratedFile(output, render_header(catalog)))
    if args.depfile:
        depfile.write(args.depfile, output, args.catalog, TEMPLATE)
    return 0

