"""What the bpftrace and bcc commands share: their options, the optional
DWARF type source, picking the output directory, writing what changed."""

from __future__ import annotations

import os
from pathlib import Path

from probegen.cli import add_catalog_argument


def configure(parser, kind: str) -> None:
    add_catalog_argument(parser)
    parser.add_argument(
        "-o", "--output", metavar="DIR",
        help=f"directory to write to (default: the catalog's outputs.{kind})",
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="print nothing")
    parser.add_argument(
        "--binary", metavar="BINARY",
        help="built binary whose DWARF gives enum names, struct definitions and members to print",
    )
    parser.add_argument("--debug-file", metavar="FILE", help="separate debug file of --binary")


def run(args, kind: str, render_files) -> int:
    if not args.binary:
        return write_scripts(args, kind, render_files)
    from probegen.dwarf import DwarfTypes
    from probegen.generators.typesource import TypeSource

    with DwarfTypes.open(args.binary, args.debug_file) as types:
        return write_scripts(args, kind, lambda catalog, out: render_files(catalog, out, TypeSource(types)))


def write_scripts(args, kind: str, render_files) -> int:
    from probegen.catalog import load_catalog
    from probegen.errors import InputError
    from probegen.files.output import write_if_changed

    catalog = load_catalog(args.catalog)
    output = args.output or catalog.outputs.get(kind)
    if output is None:
        raise InputError(f"probegen {kind}: error: no output: give -o DIR or set outputs.{kind} in the catalog")
    output = Path(output)
    if output.exists() and not output.is_dir():
        raise InputError(f"{output}: error: not a directory")
    for file in render_files(catalog, output):
        written = write_if_changed(file)
        if not args.quiet:
            print(f"{'wrote' if written else 'unchanged':9} {os.path.relpath(file.path)}")
    return 0
