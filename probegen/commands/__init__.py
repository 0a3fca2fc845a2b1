"""One module per command: ``HELP``, ``configure(parser)``, ``run(args)``
(see probegen.cli); and what several commands share."""


def add_catalog_argument(parser) -> None:
    parser.add_argument(
        "--catalog", "-c", default="probes.yaml", metavar="FILE",
        help="probe catalog (default: ./probes.yaml)",
    )


def add_force_argument(parser) -> None:
    """--force for commands that write generated files."""
    parser.add_argument(
        "--force", action="store_true",
        help="replace files that probegen did not generate (those without its marker line)",
    )


def add_output_arguments(parser, output_help: str) -> None:
    """-o, --depfile, --stamp and --force of the commands that write one file
    for a build. With --stamp, for make, the output keeps its mtime when
    unchanged (so nothing recompiles) and the stamp, touched on every run, is
    what make compares with the catalog."""
    parser.add_argument("-o", "--output", metavar="FILE", help=output_help)
    parser.add_argument(
        "--depfile", metavar="FILE",
        help="also write a make-syntax depfile listing what the output was made from "
        "(for meson custom_target(depfile:), ninja and make)",
    )
    parser.add_argument(
        "--stamp", metavar="FILE",
        help="touch FILE after each run (and name it as the depfile's target): a make rule's target "
        "that stays newer than the catalog while the output keeps its old mtime",
    )
    add_force_argument(parser)


def write_output(args, command: str, output, render, source, template: str) -> int:
    """``render(path)`` written to ``output`` ('-': ``render(None)`` on
    stdout), then the depfile (made from ``source`` and ``template``; its
    target the stamp, if any), then the stamp."""
    import sys
    from pathlib import Path

    from probegen.errors import InputError
    from probegen.files import depfile
    from probegen.files.output import GeneratedFile, write_if_changed

    if str(output) == "-":
        if args.depfile:
            raise InputError(f"probegen {command}: --depfile needs an output file, not stdout")
        sys.stdout.write(render(None))
        return 0
    output = Path(output)
    write_if_changed(GeneratedFile(output, render(output)), keep_foreign=not args.force)
    if args.depfile:
        depfile.write(args.depfile, args.stamp or output, source, template)
    if args.stamp:
        Path(args.stamp).touch()
    return 0
