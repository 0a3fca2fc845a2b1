"""Check hand-written bpftrace scripts against the probe catalog.

Reports, compiler style (script:line:column), usdt probes the catalog does
not have or with the wrong provider, argN past a probe's arguments, str()
on arguments that are not strings and strings printed without it, printf
conversions that do not fit the argument's type or count, and struct
members that do not exist. Exit 0: clean; 1: findings; 2: a script, the
catalog or the binary could not be read or parsed.
"""

import sys

from probegen.commands import add_options
from probegen.errors import InputError, printable_lines

HELP = "check hand-written bpftrace scripts against the catalog"


def configure(parser):
    parser.add_argument("scripts", nargs="+", metavar="SCRIPT", help="bpftrace scripts (.bt)")
    add_options(parser, "catalog")
    parser.add_argument("--binary", metavar="BINARY",
                        help="built binary with DWARF: check struct members used in casts against it")
    add_options(parser, "format", "report")


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def run(args) -> int:
    from probegen.checks.lint import lint_file
    from probegen.commands.scripts import binary_types
    from probegen.reports import Outcome, emit, load_catalog_reported, problem_of, render

    catalog = load_catalog_reported(args)
    findings, failed = [], []
    with binary_types(args) as types:
        for path in args.scripts:
            try:
                findings += lint_file(path, catalog, types, args.binary)
            except InputError as exc:
                print(printable_lines(str(exc)), file=sys.stderr)
                failed.append(problem_of(path, exc))
    summary = f"{_count(len(findings), 'finding')} in {_count(len(args.scripts) - len(failed), 'script')}"
    if failed:
        summary += f"; {_count(len(failed), 'script')} could not be read or parsed"
    outcome = Outcome("lint", str(args.catalog), summary, findings, failed, [str(s) for s in args.scripts])
    emit(render(outcome, args.format), None if args.format == "text" else args.output)  # -o: a CI format's
    return 2 if failed else 1 if findings else 0
