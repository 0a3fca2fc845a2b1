"""One module per command: ``HELP``, ``configure(parser)`` (if it has options), ``run(args)``
(see probegen.cli); and what several commands share."""

# The options several commands take, declared once: (flags, argparse keywords; a help's {}: what --format reports).
OPTIONS = {
    "catalog": (("--catalog", "-c"), {"default": "probes.yaml", "metavar": "FILE",
                                      "help": "probe catalog (default: ./probes.yaml)"}),
    "quiet": (("-q", "--quiet"), {"action": "store_true", "help": "print nothing"}),
    "binary": (("--binary",), {"metavar": "BINARY", "help": "built binary whose DWARF gives enum names, struct "
                               "definitions and members to print"}),
    "debug_file": (("--debug-file",), {"metavar": "FILE", "help": "separate debug file of --binary"}),
    "depfile": (("--depfile",), {"metavar": "FILE", "help": "also write a make-syntax depfile listing what the "
                                 "output was made from (for meson custom_target(depfile:), ninja and make)"}),
    "stamp": (("--stamp",), {"metavar": "FILE", "help": "touch FILE after each run (and name it as the depfile's "
                             "target): a make rule's target that stays newer than the catalog while the output "
                             "keeps its old mtime"}),
    "force": (("--force",), {"action": "store_true", "help": "replace files that probegen did not generate (those "
                             "without its marker line)"}),
    "format": (("--format",), {"choices": ("text", "json", "junit", "sarif", "github"), "default": "text",
                               "help": "how to report {}: text (default), json, junit XML, sarif (SARIF 2.1.0, for "
                               "GitHub code scanning and other SARIF viewers) or github (workflow-command "
                               "annotations on the lines of a pull request)"}),
    "report": (("-o", "--output"), {"metavar": "FILE", "help": "write the json/junit/sarif/github report here "
                                    "instead of stdout ('-': stdout)"}),
}


def add_options(parser, *names: str, what: str = "findings") -> None:
    """The OPTIONS ``names``, in that order; ``what``: what --format reports."""
    for name in names:
        flags, keywords = OPTIONS[name]
        parser.add_argument(*flags, **{**keywords, "help": keywords["help"].format(what)})


def write_output(args, output, render, source, template: str) -> int:
    """``render(path)`` written to ``output`` ('-': ``render(None)`` on stdout),
    then the depfile of ``source`` and ``template``, then the stamp."""
    import sys
    from pathlib import Path

    from probegen.errors import InputError
    from probegen.files import depfile
    from probegen.files.output import GeneratedFile, write_if_changed

    if str(output) == "-":
        if args.depfile:
            raise InputError(f"probegen {args.command}: --depfile needs an output file, not stdout")
        sys.stdout.write(render(None))
    else:
        output = Path(output)
        write_if_changed(GeneratedFile(output, render(output)), keep_foreign=not args.force)
        if args.depfile:
            depfile.write(args.depfile, args.stamp or output, source, template)
    if args.stamp:  # with -o - too: a make rule waits for it, and --help promises it after each run
        Path(args.stamp).touch()
    return 0
