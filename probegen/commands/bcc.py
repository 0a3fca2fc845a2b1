"""Generate the catalog's BCC tool, PROVIDER.py (every probe and span), run
with the system's /usr/bin/python3.
"""

from probegen.commands import scripts

HELP = "generate the BCC tool (PROVIDER.py: every probe and span)"


def configure(parser):
    scripts.configure(parser, "bcc")


run = scripts.run
