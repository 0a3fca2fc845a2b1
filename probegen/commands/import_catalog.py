"""Write a catalog from the probes found in binaries.

With --from-d FILE.d, names, argument names and docs come from the
provider file and types from what the binaries pass; each difference is a
note on stderr, at the file's line. Without it, names come from the notes, as they are (sort__start, throw); argument
types are inferred from each argument's size and sign at the sites that
pass a variable (int32_t, uint64_t, ...; a literal does not vote); given
binaries of both pointer sizes, pointer-wide arguments become void *
(intptr_t when signed). Argument names and docs are placeholders to edit. SPDK's
arg0 is recognised when every probe of the provider has it. The result
passes `probegen verify` on the same binaries.
"""

HELP = "write a catalog from the probes in binaries"


def configure(parser):
    parser.add_argument("binaries", nargs="*", metavar="BINARY",
                        help="ELF executables or shared libraries, or one SystemTap/DTrace provider file (NAME.d)")
    parser.add_argument("--from-d", metavar="FILE.d",
                        help="import a SystemTap/DTrace provider file (what `dtrace -h -s` reads; a single "
                        "argument ending in .d is read so too): names and docs from it; given binaries too, "
                        "the argument types they pass, each difference noted")
    parser.add_argument("--provider", metavar="NAME",
                        help="the provider whose probes to import (needed for binaries, and for a "
                        "provider file declaring several)")
    parser.add_argument("-o", "--output", metavar="FILE", help="catalog to write (default: stdout; '-' for stdout)")


def run(args) -> int:
    import sys
    from pathlib import Path

    from probegen.elf.deps import read_binaries
    from probegen.errors import CommandError, Location, printable, printable_lines
    from probegen.importers import dfile
    from probegen.importers.binaries import checked_text, infer_catalog
    from probegen.reports import emit

    provider_file = args.from_d
    if provider_file is None and len(args.binaries) == 1 and Path(args.binaries[0]).suffix == ".d":
        provider_file, args.binaries = args.binaries[0], []
    if provider_file is None and not args.binaries:
        raise CommandError("give the binaries to import from, or a provider file (FILE.d)")
    if provider_file is None and args.provider is None:
        raise CommandError("--provider NAME is needed to import from binaries")
    name = Path(args.output).name if args.output not in (None, "-") else "probes.yaml"
    reading = read_binaries(args.binaries)  # each file once, however often it is named
    for message in reading.messages:
        print(printable_lines(message), file=sys.stderr)
    if reading.errors:
        return 2
    if provider_file is None:
        text = checked_text(infer_catalog(reading.binaries, args.provider), name,
                            f"the probes of '{args.provider}' cannot form a catalog")
    else:  # with binaries, the types they pass, each difference noted
        source = dfile.read_provider_file(provider_file)
        imported, notes = (dfile.merged_catalog(source, args.provider, reading.binaries) if reading.binaries
                           else (dfile.imported_catalog(source, args.provider), []))
        text = checked_text(imported, name, f"provider '{imported.provider}' cannot form a catalog",
                            Location(str(provider_file)))
        for note in notes:
            print(printable(note), file=sys.stderr)
    emit(text, args.output)
    return 0
