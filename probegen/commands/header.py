"""Generate the C header of USDT probe macros from the catalog.

Writes only when the content changed, so builds do not recompile.
"""

from pathlib import Path

from probegen.catalog import load_catalog
from probegen.commands import add_options, write_output
from probegen.errors import CommandError, InputError
from probegen.generators.header import TEMPLATE, render_header

HELP = "generate the C header of probe macros"
ADD_HELP = False  # -h is dtrace's (see configure)


def configure(parser):
    # -h is dtrace's "write a header", which a build swapping dtrace for
    # probegen passes: it must not print help and write nothing (--help does).
    parser.add_argument("--help", action="help", help="show this help message and exit")
    parser.add_argument("-h", dest="dtrace_h", action="store_true",
                        help="accepted as `dtrace -h` takes it: write the header (help is --help)")
    add_options(parser, "catalog")
    parser.add_argument("-o", "--output", metavar="FILE",
                        help="header to write (default: the catalog's outputs.header; '-' for stdout)")
    add_options(parser, "depfile", "stamp", "force")
    parser.add_argument("-s", "--provider-file", metavar="FILE.d",
                        help="make the header from a SystemTap/DTrace provider file instead of a catalog, as "
                        "`dtrace -h -s FILE.d -o FILE.h` does (same macros; no `dtrace -G` object needed)")
    parser.add_argument("--print-enable-macro", action="store_true",
                        help="print the catalog's header.enable_macro (what a build defines to compile the probes "
                        "in) and write nothing; the CMake module reads it this way")


def run(args) -> int:
    if args.provider_file:  # dtrace -h's job: a section per provider, each with its guard; FILE.h by default
        from probegen.importers.dfile import catalogs_of

        if args.print_enable_macro:  # which writes nothing: not the header of -s
            raise CommandError("--print-enable-macro reads the catalog (-c), not a provider file (-s)")

        output = args.output or Path(args.provider_file).with_suffix(".h").name
        catalogs = catalogs_of(args.provider_file, header_output=output)
        return write_output(args, output, lambda _: "\n".join(render_header(c) for c in catalogs), args.provider_file,
                            TEMPLATE)
    # With -o, a guard the catalog does not set is made from that file's name.
    named_output = args.output if args.output and not args.print_enable_macro else None
    catalog = load_catalog(args.catalog, header_output=named_output)
    if args.print_enable_macro:
        print(catalog.header.enable_macro or "")  # none: style dtrace, always compiled in
        return 0
    output = args.output or catalog.outputs.get("header")
    if output is None:
        raise InputError("probegen header: no output: give -o FILE or set outputs.header in the catalog")
    return write_output(args, output, lambda _: render_header(catalog), args.catalog, TEMPLATE)
