"""Generate the catalog's BCC tool, PROVIDER.py (every probe and span), run
with the system's /usr/bin/python3.
"""

from probegen.commands.scripts import configure, run  # noqa: F401 (this command's)

HELP = "generate the BCC tool (PROVIDER.py: every probe and span)"
