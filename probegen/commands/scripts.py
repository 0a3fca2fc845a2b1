"""What the bpftrace and bcc commands share, and the optional DWARF type
source (also generate's, check's and lint's)."""

import contextlib
import os
from pathlib import Path

from probegen.commands import add_options


def configure(parser) -> None:
    """The bpftrace or bcc command's options (the command: the last word of ``parser.prog``)."""
    add_options(parser, "catalog")
    parser.add_argument("-o", "--output", metavar="DIR",
                        help=f"directory to write to (default: the catalog's outputs.{parser.prog.split()[-1]})")
    add_options(parser, "quiet", "binary", "debug_file", "force")


def binary_types(args):
    """The DWARF of --binary (and --debug-file), or None, for a with statement."""
    if not args.binary:
        return contextlib.nullcontext()
    from probegen.dwarf import DwarfTypes

    return DwarfTypes.open(args.binary, getattr(args, "debug_file", None))


def run(args) -> int:
    """The bpftrace or bcc command (``args.command``)."""
    import importlib

    from probegen.catalog import load_catalog
    from probegen.errors import CommandError, InputError, Location, printable
    from probegen.files.output import write_all
    from probegen.generators import require_types_for_members

    kind = args.command
    with binary_types(args) as types:
        catalog = load_catalog(args.catalog)
        output = args.output or catalog.outputs.get(kind)
        if output is None:
            raise CommandError(f"no output: give -o DIR or set outputs.{kind} in the catalog")
        output = Path(output)
        if output.exists() and not output.is_dir():
            raise InputError("not a directory", Location(str(output)))
        require_types_for_members(catalog, types)
        files = importlib.import_module(f"probegen.generators.{kind}").render_files(catalog, output, types)
    for state, path in write_all(files, args.force):
        if not args.quiet:
            print(printable(f"{state:9} {os.path.relpath(path)}"))
    return 0
