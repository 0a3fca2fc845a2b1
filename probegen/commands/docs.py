"""Generate the Markdown reference of every probe from the catalog.

Writes only when the content changed. Without -o and without outputs.docs
in the catalog, prints to stdout.
"""

from __future__ import annotations

import sys
from pathlib import Path

from probegen.files import depfile
from probegen.commands import add_catalog_argument, add_force_argument, add_stamp_argument, finish

HELP = "generate the Markdown reference of every probe"


def configure(parser):
    add_catalog_argument(parser)
    parser.add_argument(
        "-o", "--output", metavar="FILE",
        help="Markdown file to write (default: the catalog's outputs.docs, else stdout; '-' for stdout)",
    )
    depfile.add_argument(parser)
    add_stamp_argument(parser)
    add_force_argument(parser)


def run(args) -> int:
    from probegen.catalog import load_catalog
    from probegen.errors import InputError
    from probegen.generators.docs import TEMPLATE, render_docs
    from probegen.files.output import GeneratedFile, write_if_changed

    catalog = load_catalog(args.catalog)
    output = args.output or catalog.outputs.get("docs") or "-"
    if str(output) == "-":
        if args.depfile:
            raise InputError("probegen docs: --depfile needs an output file, not stdout")
        sys.stdout.write(render_docs(catalog))
        return 0
    output = Path(output)
    write_if_changed(GeneratedFile(output, render_docs(catalog, output)), keep_foreign=not args.force)
    finish(args, output, args.catalog, TEMPLATE)
    return 0
