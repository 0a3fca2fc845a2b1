"""Print C definitions of a binary's structs, unions and enums, taken from
its DWARF, in a form bpftrace 0.17 loads (no typedefs; layout forced with
explicit padding); or enum name maps for bpftrace and BCC scripts.
"""

HELP = "struct and enum definitions for bpftrace from a binary's DWARF"


def configure(parser):
    parser.add_argument("binary", metavar="BINARY", help="ELF binary or library built with -g")
    parser.add_argument("--type", "-t", dest="types", action="append", default=[], metavar="NAME",
                        help="struct, union or enum to define (bare name, as pahole -C takes it); repeatable")
    parser.add_argument("--enum", "-e", dest="enums", action="append", default=[], metavar="NAME",
                        help="enum to define, or to make a name map of with --enum-map; repeatable")
    parser.add_argument("--debug-file", metavar="FILE", help="separate debug file (default: found by build id)")
    parser.add_argument("--annotate", action="store_true", help="add pahole-style offset/size comments")
    parser.add_argument("--enum-map", choices=("bpftrace", "bcc"),
                        help="print the --enum enums as name maps: a bpftrace BEGIN block or Python dicts for BCC")
    parser.add_argument("--strip-prefix", default="", metavar="PREFIX",
                        help="prefix to strip from enumerator names in maps")
    parser.add_argument("-o", "--output", metavar="FILE", help="file to write (default: stdout)")


def run(args) -> int:
    from probegen.dwarf import DwarfTypes
    from probegen.generators.structs import render_definitions, render_enum_maps
    from probegen.errors import InputError
    from probegen.reports import emit

    if args.enum_map and (not args.enums or args.types):
        raise InputError("probegen structs: --enum-map takes --enum NAME (and no --type)")
    if not args.types and not args.enums:
        raise InputError("probegen structs: name at least one --type NAME or --enum NAME")
    with DwarfTypes.open(args.binary, args.debug_file) as types:
        if args.enum_map:
            text = render_enum_maps(types, args.enums, args.enum_map, args.strip_prefix)
        else:
            text = render_definitions(types, args.types, args.enums, annotate=args.annotate)
    emit(text, args.output)
    return 0
