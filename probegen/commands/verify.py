"""Check built binaries against the catalog.

Reads the USDT probes really in the binaries (.note.stapsdt) and reports
every disagreement with the catalog at once, compiler style, each at the
probe's place in the catalog. Exit 0 when all holds, 1 on findings, 2 on
usage or input errors (unreadable files are reported; the others are still
checked).
"""

from __future__ import annotations

from probegen.cli import add_catalog_argument

HELP = "check that built binaries carry the catalog's probes"


def configure(parser):
    parser.add_argument("binaries", nargs="+", metavar="BINARY", help="ELF executables or shared libraries")
    add_catalog_argument(parser)
    parser.add_argument("--allow-extra", action="store_true",
                        help="accept probes of the catalog's provider that the catalog does not list")
    parser.add_argument("--follow", action="store_true",
                        help="also check the shared libraries the binaries load (DT_NEEDED, resolved through "
                        "RPATH/RUNPATH and --lib-dir)")
    parser.add_argument("--lib-dir", action="append", default=[], metavar="DIR",
                        help="directory to search for needed libraries with --follow (repeatable)")
    parser.add_argument("--expect-none", action="store_true",
                        help="check a build configured without USDT: any probe of the catalog's provider "
                        "in the binaries is a finding")
    parser.add_argument("--format", choices=("text", "json", "junit"), default="text",
                        help="text (default), json, or junit XML for CI")
    parser.add_argument("-o", "--output", metavar="FILE",
                        help="write the json/junit report here instead of stdout ('-': stdout)")


def run(args) -> int:
    import sys

    from probegen.catalog import load_catalog
    from probegen.elf import ElfError, read_binary, resolve_dependencies
    from probegen.verify import report_json, report_junit, verify_absent, verify_binaries

    catalog = load_catalog(args.catalog)
    binaries, errors, followed, unresolved = [], [], set(), []
    seen = set()

    def read(path, is_library):
        import os

        real = os.path.realpath(path)
        if real in seen:
            return
        seen.add(real)
        try:
            binaries.append(read_binary(path, pipe_ok=not is_library))
        except ElfError as exc:
            errors.append(exc)
            print(exc, file=sys.stderr)
            return
        if is_library:
            followed.add(str(path))

    for path in args.binaries:
        read(path, False)
    if args.follow:
        for path in list(args.binaries):
            try:
                deps = resolve_dependencies(path, args.lib_dir)
            except ElfError:
                continue  # already reported when read
            for library in deps.libraries:
                read(library, True)
            for name in deps.unresolved:
                if name not in unresolved:
                    unresolved.append(name)
                    print(f"{path}: note: needed library {name} not found in RPATH/RUNPATH or --lib-dir; "
                          "its probes are not checked", file=sys.stderr)

    if not binaries:
        return 2  # nothing was read (each error is printed): no finding would be true
    if args.expect_none:
        report = verify_absent(catalog, binaries)
    else:
        report = verify_binaries(catalog, binaries, allow_extra=args.allow_extra, followed=frozenset(followed))
    if args.format == "text":
        for finding in report.findings:
            print(finding)
        print(report.summary() + (f"; {len(errors)} file(s) could not be read" if errors else ""))
    else:
        import json

        text = (json.dumps(report_json(report, errors), indent=1) + "\n" if args.format == "json"
                else report_junit(report, errors))
        if args.output and args.output != "-":
            from pathlib import Path

            from probegen.output import GeneratedFile, write_if_changed

            write_if_changed(GeneratedFile(Path(args.output), text))
        else:
            sys.stdout.write(text)
    if errors:
        return 2
    return 0 if report.ok else 1
