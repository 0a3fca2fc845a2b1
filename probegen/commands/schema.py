"""Print the catalog's JSON Schema.

Editors validate and complete probes.yaml with it: save it in your tree
(``probegen schema > catalog.schema.json``) and point the catalog's first
line at it (``# yaml-language-server: $schema=catalog.schema.json``), or
point that line at ``probegen paths --schema``, the installed copy.
"""

import sys

HELP = "print the catalog's JSON Schema (for editors)"


def run(args) -> int:
    from probegen import data

    sys.stdout.write(data.SCHEMA.read_text("utf-8"))
    return 0
