"""Generate every artifact the catalog's outputs: section configures.

Files whose content did not change are left alone.
"""

from __future__ import annotations

import os

from probegen.cli import add_catalog_argument

HELP = "generate every output the catalog configures"


def configure(parser):
    add_catalog_argument(parser)
    parser.add_argument("-q", "--quiet", action="store_true", help="print nothing")


def run(args) -> int:
    from probegen.catalog import load_catalog
    from probegen.errors import InputError
    from probegen.generators import render_outputs
    from probegen.files.output import write_if_changed

    catalog = load_catalog(args.catalog)
    files = render_outputs(catalog)
    if not files:
        raise InputError(f"{args.catalog}: error: the catalog configures no outputs (add an 'outputs:' section)")
    for file in files:
        written = write_if_changed(file)
        if not args.quiet:
            state = "wrote" if written else "unchanged"
            print(f"{state:9} {os.path.relpath(file.path)}")
    return 0
