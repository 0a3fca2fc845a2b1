"""Check built binaries against the catalog.

Reads the USDT probes really in the binaries (.note.stapsdt) and reports
every disagreement with the catalog at once, compiler style, each at the
probe's place in the catalog. Where the binaries have DWARF, the catalog's
enums and struct member paths are checked against it too (--no-debug-info
skips that). Exit 0 when all holds, 1 on findings, 2 on
usage or input errors (unreadable files are reported; the others are still
checked).
"""

from probegen.commands import add_options

HELP = "check that built binaries carry the catalog's probes"


def configure(parser):
    parser.add_argument("binaries", nargs="+", metavar="BINARY", help="ELF executables or shared libraries")
    add_options(parser, "catalog")
    parser.add_argument("--allow-extra", action="store_true",
                        help="accept probes of the catalog's provider that the catalog does not list")
    parser.add_argument("--allow-missing-semaphores", action="store_true",
                        help="the binaries were built with a header without probe semaphores (SPDK's own usdt.h): "
                        "their absence is no finding")
    parser.add_argument("--follow", action="store_true",
                        help="also check the shared libraries the binaries load (DT_NEEDED, resolved through "
                        "RPATH/RUNPATH and --lib-dir)")
    parser.add_argument("--lib-dir", action="append", default=[], metavar="DIR",
                        help="directory to search for needed libraries with --follow (repeatable)")
    parser.add_argument("--expect-none", action="store_true",
                        help="check a build configured without USDT: any probe of the catalog's provider "
                        "in the binaries is a finding")
    parser.add_argument("--no-debug-info", action="store_true",
                        help="do not check the catalog's enums and member paths against the binaries' DWARF "
                        "(checked by default where a binary has debug info)")
    add_options(parser, "format", "report")


def run(args) -> int:
    import sys

    from probegen.elf.deps import read_binaries
    from probegen.errors import printable
    from probegen.reports import emit, load_catalog_reported
    from probegen.checks.verify import verify_absent, verify_binaries

    catalog = load_catalog_reported(args)
    reading = read_binaries(args.binaries, follow=args.follow, lib_dirs=args.lib_dir)
    for message in reading.messages:
        print(printable(message), file=sys.stderr)
    binaries, errors = reading.binaries, reading.errors
    if not binaries:
        if args.format in ("sarif", "github"):  # the report CI expects, with why nothing was checked
            emit(_reported(catalog, None, errors, args.format), args.output)
        return 2  # nothing was read (each error is printed): no finding would be true
    if args.expect_none:
        report = verify_absent(catalog, binaries)
    else:
        from contextlib import nullcontext

        from probegen.checks.drift import open_debug_infos

        with nullcontext() if args.no_debug_info else open_debug_infos(catalog, [b.path for b in binaries]) as infos:
            report = verify_binaries(catalog, binaries, allow_extra=args.allow_extra,
                                     followed=frozenset(reading.followed), debug_infos=infos,
                                     allow_missing_semaphores=args.allow_missing_semaphores)
    emit(_reported(catalog, report, errors, args.format), None if args.format == "text" else args.output)
    return 2 if errors else 0 if report.ok else 1


def _reported(catalog, report, errors, form: str) -> str:
    from probegen.errors import Diagnostic
    from probegen.reports import Outcome, render

    summary = report.summary() if report else "verify: no binary could be read"
    if errors and form == "text":  # the CI formats list them
        summary += f"; {len(errors)} file(s) could not be read"
    results = report.findings if report else []  # no subjects: verify's JUnit cases come from its Report
    problems = [Diagnostic(e.location, e.message) for e in errors]
    return render(Outcome("verify", str(catalog.path), summary, results, problems, report=report), form)
