"""Generate every artifact the catalog's outputs: section configures.

Files whose content did not change are left alone. A file at an output
path that probegen did not generate (no marker line) is refused, and
nothing is written, unless --force. Generated files left in the output
directories by an earlier catalog (a group renamed) are removed.
"""

import os

from probegen.commands import add_options

HELP = "generate every output the catalog configures"


def configure(parser):
    add_options(parser, "catalog", "quiet", "binary", "debug_file", "force")


def run(args) -> int:
    from probegen.catalog import load_catalog
    from probegen.commands.scripts import binary_types
    from probegen.errors import InputError, Location, printable
    from probegen.generators import sync_outputs

    catalog = load_catalog(args.catalog)
    with binary_types(args) as types:
        changes = sync_outputs(catalog, types, args.force)
    if not changes:
        raise InputError("the catalog configures no outputs (add an 'outputs:' section)", Location(str(args.catalog)))
    if not args.quiet:
        for state, path in changes:
            print(printable(f"{state:9} {os.path.relpath(path)}"))
    return 0
