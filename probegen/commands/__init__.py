def add_force_argument(parser) -> None:
    """--force for commands that write generated files."""
    parser.add_argument(
        "--force", action="store_true",
        help="replace files that probegen did not generate (those without its marker line)",
    )
