"""Generate BCC tools from the catalog: GROUP.py for each probe group and
all.py with every probe, run with the system's /usr/bin/python3.
"""

from __future__ import annotations

from probegen.commands import scripts

HELP = "generate BCC tools (one per group, all)"


def configure(parser):
    scripts.configure(parser, "bcc")


def run(args) -> int:
    from probegen.generators import bcc

    return scripts.run(args, "bcc", bcc.render_files)
