"""What the bpftrace and bcc commands share: pick the output directory,
render, write what changed."""

from __future__ import annotations

import os
from pathlib import Path


def write_scripts(args, kind: str, render_files) -> int:
    from probegen.catalog import load_catalog
    from probegen.errors import InputError
    from probegen.output import write_if_changed

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
