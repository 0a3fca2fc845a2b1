"""Generate bpftrace scripts from the catalog: GROUP.bt for each probe
group, all.bt with every probe, counts.bt counting hits.

Probes are written usdt:__EXE__:NAME; run them with probegen trace PID.
"""

from __future__ import annotations

from probegen.cli import add_catalog_argument

HELP = "generate bpftrace scripts (one per group, all, counts)"


def configure(parser):
    add_catalog_argument(parser)
    parser.add_argument(
        "-o", "--output", metavar="DIR",
        help="directory to write to (default: the catalog's outputs.bpftrace)",
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="print nothing")
    parser.add_argument(
        "--binary", metavar="BINARY",
        help="built binary whose DWARF gives enum names, struct definitions and members to print",
    )
    parser.add_argument("--debug-file", metavar="FILE", help="separate debug file of --binary")


def run(args) -> int:
    from probegen.commands.scripts import write_scripts
    from probegen.generators import bpftrace

    if not args.binary:
        return write_scripts(args, "bpftrace", bpftrace.render_files)
    from probegen.dwarf import DwarfTypes

    with DwarfTypes.open(args.binary, args.debug_file) as types:
        return write_scripts(args, "bpftrace", lambda catalog, out: bpftrace.render_files(catalog, out, types))
