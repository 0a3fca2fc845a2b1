"""One module per command: ``HELP``, ``configure(parser)``, ``run(args)``
(see probegen.cli); and the arguments several commands share."""


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


def add_stamp_argument(parser) -> None:
    """--stamp for make: the output keeps its mtime when unchanged (so
    nothing recompiles), and the stamp, touched on every run, is what make
    compares with the catalog (so the next make does nothing)."""
    parser.add_argument(
        "--stamp", metavar="FILE",
        help="touch FILE after each run (and name it as the depfile's target): a make rule's target "
        "that stays newer than the catalog while the output keeps its old mtime",
    )


def finish(args, output, catalog, template: str) -> None:
    """The depfile (its target the stamp, if any), then the stamp."""
    from pathlib import Path

    from probegen.files import depfile

    if args.depfile:
        depfile.write(args.depfile, args.stamp or output, catalog, template)
    if args.stamp:
        Path(args.stamp).touch()
