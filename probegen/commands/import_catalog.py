"""Write a catalog from the probes found in binaries.

Names come from the notes, as they are (sort__start, throw); argument
types are inferred from each argument's size and sign at the sites that
pass a variable (int32_t, uint64_t, ...; a literal does not vote); given
binaries of both pointer sizes, pointer-wide arguments become uintptr_t
or intptr_t. Argument names and docs are placeholders to edit. SPDK's
arg0 is recognised when every probe of the provider has it. The result
passes `probegen verify` on the same binaries.
"""

from __future__ import annotations

HELP = "write a catalog from the probes in binaries"


def configure(parser):
    parser.add_argument("binaries", nargs="+", metavar="BINARY", help="ELF executables or shared libraries")
    parser.add_argument("--provider", required=True, metavar="NAME", help="the provider whose probes to import")
    parser.add_argument("-o", "--output", metavar="FILE", help="catalog to write (default: stdout; '-' for stdout)")


def run(args) -> int:
    import sys
    from pathlib import Path

    from probegen.elf import ElfError, read_binary
    from probegen.import_catalog import import_catalog

    binaries, failed = [], False
    for path in args.binaries:
        try:
            binaries.append(read_binary(path, pipe_ok=True))
        except ElfError as exc:
            print(exc, file=sys.stderr)
            failed = True
    if failed:
        return 2
    to_file = args.output not in (None, "-")
    text = import_catalog(binaries, args.provider, Path(args.output).name if to_file else "probes.yaml")
    if to_file:
        from probegen.output import GeneratedFile, write_if_changed

        write_if_changed(GeneratedFile(Path(args.output), text))
    else:
        sys.stdout.write(text)
    return 0
