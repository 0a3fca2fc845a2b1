"""Check that committed generated files match their catalog.

Exit 1 and name the stale files: those that would change if regenerated,
and generated files in the output directories that the catalog no longer
produces (left behind when a group was renamed; generate removes them).
"""

import os
import sys

from probegen.commands import add_options

HELP = "fail when a generated file is stale against its catalog"


def configure(parser):
    add_options(parser, "catalog", "format", "report", "binary", "debug_file", what="stale files")


def run(args) -> int:
    from probegen.commands.scripts import binary_types
    from probegen.errors import Diagnostic, Location, printable
    from probegen.files.output import stale
    from probegen.generators import leftover_files, render_outputs
    from probegen.reports import Outcome, emit, load_catalog_reported, render, shown_path

    catalog = load_catalog_reported(args)
    with binary_types(args) as types:
        files = render_outputs(catalog, types)
    out_of_date = stale(files)
    leftovers = leftover_files(catalog, files)
    run_generate = f"run: probegen generate --catalog {args.catalog}"
    gone = f"generated, but {args.catalog} no longer generates it ({run_generate}, which removes it)"
    generated = f"what {args.catalog} generates ({run_generate})"
    for file in out_of_date:
        print(printable(f"{os.path.relpath(file.path)}: stale: differs from {generated}"), file=sys.stderr)
    for path in leftovers:
        print(printable(f"{os.path.relpath(path)}: stale: {gone}"), file=sys.stderr)
    summary = (f"{len(out_of_date)} of {len(files)} generated file(s) stale" if out_of_date
               else f"{len(files)} generated file(s) up to date")
    if leftovers:
        summary += f"; {len(leftovers)} file(s) no longer generated"
    if args.format != "text":
        outcome = Outcome("check", str(args.catalog), summary, subjects=[shown_path(f.path) for f in files])
        for file in out_of_date:
            line, what = _difference(file)
            outcome.results.append(Diagnostic(Location(shown_path(file.path), line), f"{what} {generated}",
                                              rule="stale-file"))
        outcome.results += [Diagnostic(Location(shown_path(path)), gone, rule="leftover-file") for path in leftovers]
        emit(render(outcome, args.format), args.output)
    if out_of_date or leftovers:
        print(printable(summary), file=sys.stderr)
        return 1
    if args.format == "text":
        print(printable(summary))  # the other formats carry it
    return 0


def _difference(file) -> tuple[int, str]:
    """(the first line where the file on disk differs, or 0; what is wrong), for an annotation."""
    from probegen.files.inputs import UnreadableInput, open_seekable

    try:
        stream, size = open_seekable(file.path, "generated file")
    except UnreadableInput:
        return 0, "missing or unreadable: should hold"
    with stream:
        data = stream.read(size)
    if data == file.data:
        return 0, "not executable, unlike"  # stale with the same content: only the mode differs
    same = os.path.commonprefix([file.data.splitlines(keepends=True), data.splitlines(keepends=True)])
    return len(same) + 1, "stale: differs from"
