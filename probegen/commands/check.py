"""Check that committed generated files match their catalog.

Exit 1 and name the stale files when one would change if regenerated.
"""

from __future__ import annotations

import os
import sys

from probegen.cli import add_catalog_argument
from probegen.reports import add_format_arguments

HELP = "fail when a generated file is stale against its catalog"


def configure(parser):
    add_catalog_argument(parser)
    add_format_arguments(parser, "stale files")


def run(args) -> int:
    from probegen.errors import printable
    from probegen.generators import render_outputs
    from probegen.files.output import stale
    from probegen.reports import load_catalog_reported

    catalog = load_catalog_reported(args, "check")
    files = render_outputs(catalog)
    out_of_date = stale(files)
    for path in out_of_date:
        print(printable(f"{os.path.relpath(path)}: stale: differs from what {args.catalog} generates "
                        f"(run: probegen generate --catalog {args.catalog})"), file=sys.stderr)
    summary = (f"{len(out_of_date)} of {len(files)} generated file(s) stale" if out_of_date
               else f"{len(files)} generated file(s) up to date")
    if args.format != "text":
        from probegen.errors import Location
        from probegen.reports import Outcome, Result, emit, render, shown_path

        outcome = Outcome("check", str(args.catalog), summary, subjects=[shown_path(f.path) for f in files])
        for file in files:
            if file.path in out_of_date:
                line, what = _difference(file)
                outcome.results.append(Result(
                    "stale-file", f"{what} what {args.catalog} generates (run: probegen generate --catalog "
                    f"{args.catalog})", Location(shown_path(file.path), line)))
        emit(render(outcome, args.format), args.output)
    if out_of_date:
        print(summary, file=sys.stderr)
        return 1
    if args.format == "text":
        print(summary)  # the other formats carry it
    return 0


def _difference(file) -> tuple[int, str]:
    """(the first line where the file on disk differs, or 0; what is
    wrong), for an annotation on that line."""
    from probegen.files.inputs import UnreadableInput, open_seekable

    try:
        stream, size = open_seekable(file.path, "generated file")
    except UnreadableInput:
        return 0, "missing or unreadable: should hold"
    with stream:
        data = stream.read(size)
    if data == file.data:
        return 0, "not executable, unlike"  # stale with the same content: only the mode differs
    ours, theirs = file.data.splitlines(keepends=True), data.splitlines(keepends=True)
    line = next((n for n, (a, b) in enumerate(zip(ours, theirs), 1) if a != b), min(len(ours), len(theirs)) + 1)
    return line, "stale: differs from"
