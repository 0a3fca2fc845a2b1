"""Check that committed generated files match their catalog.

Exit 1 and name the stale files when one would change if regenerated.
"""

from __future__ import annotations

import os
import sys

from probegen.cli import add_catalog_argument

HELP = "fail when a generated file is stale against its catalog"


def configure(parser):
    add_catalog_argument(parser)


def run(args) -> int:
    from probegen.catalog import load_catalog
    from probegen.generators import render_outputs
    from probegen.output import stale

    catalog = load_catalog(args.catalog)
    files = render_outputs(catalog)
    out_of_date = stale(files)
    for path in out_of_date:
        print(f"{os.path.relpath(path)}: stale: differs from what {args.catalog} generates "
              f"(run: probegen generate --catalog {args.catalog})", file=sys.stderr)
    if out_of_date:
        print(f"{len(out_of_date)} of {len(files)} generated file(s) stale", file=sys.stderr)
        return 1
    print(f"{len(files)} generated file(s) up to date")
    return 0
