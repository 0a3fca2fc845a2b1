"""List the USDT probes in ELF executables and shared libraries.

For every probe: provider, name, each site's address (a probe the compiler
inlined or duplicated has several), semaphore, and each argument decoded
from its note: size, sign, and where it lives (register, constant, address,
memory).
"""

HELP = "list the USDT probes in ELF binaries"


def configure(parser):
    parser.add_argument("binaries", nargs="+", metavar="BINARY", help="ELF executables or shared libraries")
    parser.add_argument("--format", choices=("text", "json"), default="text",
                        help="text (default) or json (shape documented in probegen/elf/listing.py)")
    parser.add_argument("--provider", metavar="NAME", help="only probes of this provider")


def run(args) -> int:
    import json
    import sys
    from dataclasses import replace

    from probegen.elf.deps import read_binaries
    from probegen.errors import printable_lines
    from probegen.elf.listing import listing_json, listing_text

    reading = read_binaries(args.binaries)  # each file once, however often it is named
    for message in reading.messages:
        print(printable_lines(message), file=sys.stderr)
    binaries = [replace(binary, probes=tuple(p for p in binary.probes if p.provider == args.provider))
                if args.provider else binary for binary in reading.binaries]
    if args.format == "text":
        sys.stdout.write("".join(map(listing_text, binaries)))
    if args.format == "json":
        # One line: indenting takes json's pure-Python encoder, 3x slower on 20,000
        # sites. The listing is a tree, so the cycle check is only cost.
        sys.stdout.write(json.dumps(listing_json(binaries, reading.errors), check_circular=False) + "\n")
    return 2 if reading.errors else 0
