"""Generate BCC tools from the catalog: GROUP.py for each probe group and
all.py with every probe, run with the system's /usr/bin/python3.
"""

from __future__ import annotations

from probegen.cli import add_catalog_argument

HELP = "generate BCC tools (one per group, all)"


def configure(parser):
    add_catalog_argument(parser)
    parser.add_argument(
        "-o", "--output", metavar="DIR",
        help="directory to write to (default: the catalog's outputs.bcc)",
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="print nothing")


def run(args) -> int:
    from probegen.commands.scripts import write_scripts
    from probegen.generators import bcc

    return write_scripts(args, "bcc", bcc.render_files)
