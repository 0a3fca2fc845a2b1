"""Check hand-written bpftrace scripts against the probe catalog.

Reports, compiler style (script:line:column), usdt probes the catalog does
not have or with the wrong provider, argN past a probe's arguments, str()
on arguments that are not strings and strings printed without it, printf
conversions that do not fit the argument's type or count, and struct
members that do not exist. Exit 0: clean; 1: findings; 2: a script, the
catalog or the binary could not be read or parsed.
"""

from __future__ import annotations

import sys

from probegen.cli import add_catalog_argument

HELP = "check hand-written bpftrace scripts against the catalog"


def configure(parser):
    parser.add_argument("scripts", nargs="+", metavar="SCRIPT", help="bpftrace scripts (.bt)")
    add_catalog_argument(parser)
    parser.add_argument(
        "--binary", metavar="BINARY",
        help="built binary with DWARF: check struct members used in casts against it",
    )


def open_types(binary: str):
    """The binary's TypeSource (probegen.dwarf), or an InputError saying
    why there is none."""
    from probegen.errors import InputError

    try:
        from probegen import dwarf
    except ImportError:
        raise InputError("probegen lint: --binary needs probegen.dwarf, which is not installed") from None
    opener = getattr(dwarf, "open_types", None) or getattr(getattr(dwarf, "DwarfTypes", None), "open", None)
    if opener is None:
        raise InputError("probegen lint: --binary: this probegen.dwarf provides no TypeSource")
    return opener(binary)


def run(args) -> int:
    from probegen.catalog import load_catalog
    from probegen.errors import InputError
    from probegen.lint import lint_file

    catalog = load_catalog(args.catalog)
    types = open_types(args.binary) if args.binary else None
    findings = failed = 0
    for script in args.scripts:
        try:
            diagnostics = lint_file(script, catalog, types, args.binary or "the binary")
        except InputError as exc:
            print(exc, file=sys.stderr)
            failed += 1
            continue
        for diagnostic in diagnostics:
            print(diagnostic)
        findings += len(diagnostics)
    checked = len(args.scripts) - failed
    summary = f"{findings} finding{'s' if findings != 1 else ''} in {checked} script{'s' if checked != 1 else ''}"
    if failed:
        summary += f"; {failed} script{'s' if failed != 1 else ''} could not be read or parsed"
    print(summary)
    if failed:
        return 2
    return 1 if findings else 0
