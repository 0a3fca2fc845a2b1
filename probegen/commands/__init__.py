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
